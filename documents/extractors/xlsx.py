"""Excel (.xlsx) extraction with openpyxl in read-only mode: rows stream from the
file, so a huge sheet is read only as far as the limit."""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterator
from typing import Any, BinaryIO

from .archive import check_zip
from .base import ExtractionResult, ExtractOptions, TextBuilder, unreadable


def extract_xlsx(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """Each sheet's name, then its rows, cells separated by tabs (values, not formulas)."""
    check_zip(path, "Excel (.xlsx)", "xl/workbook.xml")
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


def _open(fh: BinaryIO) -> Any:
    import openpyxl

    try:
        return openpyxl.load_workbook(fh, read_only=True, data_only=True)
    except Exception as exc:  # InvalidFileException, KeyError, XML errors
        # openpyxl wraps a sheet's XML error in a message naming the file's path.
        raise unreadable(exc, "its workbook cannot be read") from exc


def _lines(workbook: Any) -> Iterator[str]:
    for sheet in workbook.worksheets:
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
