"""Excel (.xlsx) extraction with openpyxl in read-only mode: rows stream from the
file, so a huge sheet is read only as far as the limit."""

from __future__ import annotations

import datetime
import math
import os
import re
from collections.abc import Iterator
from typing import Any, BinaryIO

from .archive import checked_zip, strict_ooxml, strict_refusal
from .base import (
    CorruptFileError,
    ExtractionResult,
    ExtractOptions,
    TextBuilder,
    comment_line,
    mend_cell_breaks,
    parse_xml,
    unreadable,
)
from .drawing import FALLBACK, chart_lines, chart_references, paragraph_lines
from .number_formats import LOCALE_DATE_FORMATS, NumberFormat, number_format

# Sheets Excel does not show; a very hidden one cannot be shown from its menus.
_HIDDEN_STATES = ("hidden", "veryHidden")
# Empty cells before a row's value, up to this many in a run, are written (a tab
# each), so a table's columns stay aligned; a longer run, as in a form or a report
# laid out across a wide sheet, is written as this many, not as dozens of tabs.
# Trailing empty cells are not written. ODS rows follow the same rule.
MAX_EMPTY_CELLS = 3


def extract_xlsx(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """Each sheet's name, then its rows, cells separated by tabs (long runs of empty
    cells shortened), each as Excel shows it (its cached value by its number format;
    a formula only where no value is kept)."""
    recalculates = _check_archive(path)
    text = TextBuilder(options.max_chars)
    # A file object, not a name: openpyxl refuses names without an Excel extension,
    # and stored files are named by the upload.
    with open(path, "rb") as fh:
        workbook = _open(fh)
        try:
            text.extend(_lines(workbook, recalculates))
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


def _check_archive(path: str | os.PathLike[str]) -> bool:
    """Refuse broken zips, zip bombs and Strict OOXML, where openpyxl finds no sheet
    and the workbook would pass for an empty one. True if the workbook asks to be
    recalculated on opening."""
    with checked_zip(path, "Excel (.xlsx)", "xl/workbook.xml") as archive:
        if strict_ooxml(archive, "xl/workbook.xml"):
            raise strict_refusal("Excel", "Excel Workbook (.xlsx)")
        # Read here: openpyxl takes a missing fullCalcOnLoad for a true one.
        return _RECALCULATE.search(archive.read("xl/workbook.xml")) is not None


_RECALCULATE = re.compile(rb'<(?:\w+:)?calcPr\b[^>]*\sfullCalcOnLoad="(?:1|true)"')


def _open(fh: BinaryIO) -> Any:
    import openpyxl

    try:
        return openpyxl.load_workbook(fh, read_only=True, data_only=True)
    except Exception as exc:  # InvalidFileException, KeyError, XML errors
        # openpyxl wraps a sheet's XML error in a message naming the file's path.
        raise unreadable(exc, "its workbook cannot be read") from exc


def _lines(workbook: Any, recalculates: bool) -> Iterator[str]:
    """Each shown sheet's name and rows. A workbook written by a program that does
    not calculate (xlsxwriter, openpyxl) asks Excel to recalculate it on opening:
    `recalculates`, and its cached results may be placeholders."""
    styles = _Styles(workbook)
    charts_only = _chartsheet_parts(workbook) if workbook.chartsheets else {}
    drawings_read: set[str] = set()
    for name in workbook.sheetnames:  # in tab order, sheets of a chart among them
        sheet = workbook[name]
        # Hidden rows and columns are read: they often hold what people look up.
        if sheet.sheet_state in _HIDDEN_STATES:
            continue
        yield f"{sheet.title}"
        if name in charts_only:
            yield from _drawing_lines(
                workbook._archive, charts_only[name], drawings_read
            )
            yield ""
            continue
        for cells in _rows(sheet, recalculates):
            line: list[str] = []
            column = 0  # the last value's
            for cell in cells:
                shown = _cell(cell["value"], styles.format(cell["style_id"]))
                if shown:
                    empty = cell["column"] - 1 - column
                    line += [""] * min(empty, MAX_EMPTY_CELLS)
                    line.append(shown)
                    column = cell["column"]
            if line:
                yield "\t".join(line)
        yield from _drawing_lines(
            workbook._archive, sheet._worksheet_path, drawings_read
        )
        yield from _comments(sheet)
        yield ""


def _rows(sheet: Any, recalculates: bool) -> Iterator[list[dict[str, Any]]]:
    """The sheet's rows as openpyxl's parser gives them (value, column, style),
    read from the sheet's XML to the end whatever size the sheet declares (streaming
    writers such as Apache POI's SXSSF declare A1)."""
    # openpyxl's own read-only rows drop a formula whose result was never cached;
    # its parser (pinned in requirements.txt) is used directly to keep it.
    from openpyxl.worksheet._reader import WorkSheetParser

    class Parser(WorkSheetParser):  # type: ignore[misc]
        def parse_cell(self, element: Any) -> dict[str, Any]:
            cell: dict[str, Any] = super().parse_cell(element)
            # A formula comes first in its cell (<f>, then <v>).
            if (
                len(element)
                and element[0].tag == _FORMULA
                and _uncached(cell, element, recalculates)
            ):
                cell["value"] = _formula(element)
                cell["style_id"] = 0
            return cell

    workbook = sheet.parent
    with sheet._get_source() as source:
        parser = Parser(
            source,
            sheet._shared_strings,
            data_only=True,
            epoch=workbook.epoch,
            date_formats=workbook._date_formats,
            timedelta_formats=workbook._timedelta_formats,
        )
        for _, cells in parser.parse():
            yield cells


# Excel 365 keeps a threaded comment in its own part, and as a note for older
# versions whose text opens with this notice, then "Comment:" before the comment.
_THREADED_NOTICE = re.compile(r"^\[Threaded comment\].*?\bComment:", re.S)


def _comments(sheet: Any) -> Iterator[str]:
    """The sheet's comments (notes), after its rows: "Comment on B3: text"."""
    from openpyxl.comments.comment_sheet import CommentSheet
    from openpyxl.packaging.relationship import get_dependents, get_rels_path
    from openpyxl.xml.constants import COMMENTS_NS
    from openpyxl.xml.functions import fromstring

    archive = sheet.parent._archive
    names = set(archive.namelist())
    rels = get_rels_path(sheet._worksheet_path)
    if rels not in names:
        return
    for rel in get_dependents(archive, rels).find(COMMENTS_NS):
        if rel.target not in names:
            continue
        part = CommentSheet.from_tree(fromstring(archive.read(rel.target)))
        for ref, comment in part.comments:
            text = _THREADED_NOTICE.sub("", comment.content or "")
            if line := comment_line(text, ref):
                yield line


_DRAWING = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/drawing"
_XDR = "{http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing}"


def _chartsheet_parts(workbook: Any) -> dict[str, str]:
    """The part of each sheet that is a chart alone (a chartsheet), by its name:
    openpyxl reads its charts into objects, not their text."""
    from openpyxl.reader.workbook import WorkbookParser

    parser = WorkbookParser(workbook._archive, "xl/workbook.xml")
    parser.parse()
    return {
        sheet.name: rel.target
        for sheet, rel in parser.find_sheets()
        if rel.Type.endswith("/chartsheet")
    }


def _drawing_lines(archive: Any, sheet_part: str, read: set[str]) -> Iterator[str]:
    """The text a sheet's drawing lays over its cells, from the top left: its
    text boxes' and shapes' paragraphs, its charts' titles and labels (as DOCX's
    and PPTX's). A drawing in ``read`` is skipped, and each read is added: a
    hostile file relating one large drawing thousands of times had it parsed as
    many times."""
    from lxml import etree

    for drawing in _related(archive, sheet_part, _DRAWING):
        if drawing in read:
            continue
        read.add(drawing)
        try:
            root = parse_xml(archive.read(drawing))
        except (etree.XMLSyntaxError, ValueError):
            continue  # a damaged drawing costs its own text, not the sheet's
        part = _Part(archive, drawing)
        for anchor in sorted(root, key=_anchor_cell):
            for body in anchor.iter(f"{_XDR}txBody"):
                if next(body.iterancestors(FALLBACK), None) is None:
                    yield from paragraph_lines(body)
            for reference in chart_references(anchor):
                yield from chart_lines(reference, part)


def _anchor_cell(anchor: Any) -> tuple[float, float]:
    """The (row, column) of the cell an anchored drawing starts in; an absolute
    one's (or one in mc:AlternateContent) last."""
    start = anchor.find(f"{_XDR}from")
    try:
        return float(start.findtext(f"{_XDR}row")), float(start.findtext(f"{_XDR}col"))
    except (AttributeError, TypeError, ValueError):
        return float("inf"), float("inf")


def _related(archive: Any, name: str, kind: str) -> Iterator[str]:
    """The parts that the part `name` relates to as `kind`."""
    return (
        target
        for _, of_kind, target in _relationships(archive, name)
        if of_kind == kind
    )


def _relationships(archive: Any, name: str) -> list[tuple[str, str, str]]:
    """(id, type, part) of each relationship of the part `name` to a part in the
    package; none when its list is missing or damaged, which costs that part's
    drawings their text, not the workbook's."""
    from openpyxl.packaging.relationship import get_dependents, get_rels_path

    names = set(archive.namelist())
    rels = get_rels_path(name)
    if rels not in names:
        return []
    try:
        found = get_dependents(archive, rels)
    except (SyntaxError, ValueError, TypeError, KeyError):  # XML errors among them
        return []
    return [(rel.Id, rel.Type, rel.target) for rel in found if rel.target in names]


class _Part:
    """A part of the package as drawing.py reads one (python-docx's and
    python-pptx's): ``rels[id].target_part.blob``, read when asked for."""

    def __init__(self, archive: Any, name: str) -> None:
        self.rels = {
            rel_id: _Target(archive, target)
            for rel_id, _, target in _relationships(archive, name)
        }


class _Target:
    def __init__(self, archive: Any, name: str) -> None:
        self._archive, self._name = archive, name

    @property
    def target_part(self) -> _Target:
        return self

    @property
    def blob(self) -> bytes:
        return bytes(self._archive.read(self._name))


_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_FORMULA = f"{_MAIN}f"
_VALUE = f"{_MAIN}v"


def _uncached(cell: dict[str, Any], element: Any, recalculates: bool) -> bool:
    """Whether a formula cell holds no result Excel would show.

    openpyxl writes an empty <v/>; Excel writes one too, typed "str", for a
    formula whose result is the empty string, which is a result. xlsxwriter writes
    0 and asks for a recalculation on opening: a 0 cached there is its
    placeholder (Excel shows the sum); any other number was given on purpose."""
    if cell["value"] is None:
        return element.get("t") != "str"
    # A date format turns the placeholder into a date or time (00:00:00): the
    # number as written decides.
    return (
        recalculates
        and cell["data_type"] in ("n", "d")
        and (element.findtext(_VALUE) or "").strip() in ("0", "0.0")
    )


def _formula(element: Any) -> str:
    # A shared formula's other cells carry only its index, and no text to show.
    text = element.findtext(_FORMULA) or ""
    return f"={text}" if text else ""


class _Styles:
    """Each cell style's number format, parsed once."""

    def __init__(self, workbook: Any) -> None:
        self._styles = getattr(workbook, "_cell_styles", [])
        self._custom = getattr(workbook, "_number_formats", [])
        self._by_id: dict[int, NumberFormat] = {}

    def format(self, style_id: int) -> NumberFormat:
        found = self._by_id.get(style_id)
        if found is None:
            found = self._by_id[style_id] = number_format(self._code(style_id))
        return found

    def _code(self, style_id: int) -> str:
        from openpyxl.styles.numbers import BUILTIN_FORMATS, BUILTIN_FORMATS_MAX_SIZE

        if not 0 <= style_id < len(self._styles):
            return "General"
        number = self._styles[style_id].numFmtId
        if number in LOCALE_DATE_FORMATS:
            return LOCALE_DATE_FORMATS[number]
        if number < BUILTIN_FORMATS_MAX_SIZE:
            return str(BUILTIN_FORMATS.get(number, "General"))
        if number - BUILTIN_FORMATS_MAX_SIZE < len(self._custom):
            return str(self._custom[number - BUILTIN_FORMATS_MAX_SIZE])
        return "General"


def _cell(value: object, shown_as: NumberFormat) -> str:
    if value is None:
        return ""
    if type(value) is str:  # the most common, first
        if "_x" in value:  # Excel writes a line end's CR, and other controls, _x000D_
            from openpyxl.utils.escape import unescape

            value = unescape(value)
        return " ".join(mend_cell_breaks(value).split())
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        # Not a number Excel can hold ("NaN" written by hand): its error's words,
        # not a format's digits around "nan".
        return shown_as.number(value) if math.isfinite(value) else "#NUM!"
    if isinstance(value, datetime.datetime | datetime.time):
        return shown_as.date(value)
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return shown_as.duration(value)
    return " ".join(str(value).split())
