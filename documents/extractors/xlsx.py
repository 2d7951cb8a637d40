"""Excel (.xlsx) extraction with openpyxl in read-only mode: rows stream from the
file, so a huge sheet is read only as far as the limit."""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterator
from typing import Any, BinaryIO

from .archive import checked_zip, strict_ooxml, strict_refusal
from .base import (
    CorruptFileError,
    ExtractionResult,
    ExtractOptions,
    TextBuilder,
    unreadable,
)

# Sheets Excel does not show; a very hidden one cannot be shown from its menus.
_HIDDEN_STATES = ("hidden", "veryHidden")


def extract_xlsx(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """Each sheet's name, then its rows, cells separated by tabs (values, not formulas)."""
    _check_archive(path)
    text = TextBuilder(options.max_chars)
    # A file object, not a name: openpyxl refuses names without an Excel extension,
    # and stored files are named by the upload.
    with open(path, "rb") as fh:
        workbook = _open(fh)
        try:
            text.extend(_lines(workbook))
        # Rows are parsed as they are read: xml.etree's ParseError (a SyntaxError)
        # for a damaged sheet comes from here, not from opening the workbook.
        except (KeyError, ValueError, TypeError, OSError, SyntaxError) as exc:
            raise unreadable(exc, "its sheets cannot be read") from exc
        except IndexError as exc:  # openpyxl's lookup in the shared-string table
            raise CorruptFileError(
                "a cell refers to text the workbook does not hold "
                "(its shared-string table is incomplete)"
            ) from exc
        finally:
            workbook.close()
    body = text.text.strip("\n")
    return ExtractionResult(
        text=body,
        page_count=None,
        confidence=1.0 if body.strip() else 0.0,
        extractor="xlsx",
        note=text.note,
    )


def _check_archive(path: str | os.PathLike[str]) -> None:
    """Refuse broken zips, zip bombs and Strict OOXML, where openpyxl finds no sheet
    and the workbook would pass for an empty one."""
    with checked_zip(path, "Excel (.xlsx)", "xl/workbook.xml") as archive:
        if strict_ooxml(archive, "xl/workbook.xml"):
            raise strict_refusal("Excel", "Excel Workbook (.xlsx)")


def _open(fh: BinaryIO) -> Any:
    import openpyxl

    try:
        return openpyxl.load_workbook(fh, read_only=True, data_only=True)
    except Exception as exc:  # InvalidFileException, KeyError, XML errors
        # openpyxl wraps a sheet's XML error in a message naming the file's path.
        raise unreadable(exc, "its workbook cannot be read") from exc


def _lines(workbook: Any) -> Iterator[str]:
    for sheet in workbook.worksheets:
        # Hidden rows and columns are read: they often hold what people look up.
        if sheet.sheet_state in _HIDDEN_STATES:
            continue
        yield f"{sheet.title}"
        # Read-only mode stops at the size the sheet declares, which streaming
        # writers (Apache POI's SXSSF) give as A1: read the rows that are there.
        sheet.reset_dimensions()
        for row in sheet.iter_rows(values_only=True):
            cells = [_cell(value) for value in row]
            while cells and not cells[-1]:
                cells.pop()
            if cells:
                yield "\t".join(cells)
        yield ""


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime.datetime) and value.time() == datetime.time():
        return value.date().isoformat()
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return " ".join(str(value).split())
