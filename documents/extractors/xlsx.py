"""Excel (.xlsx) extraction with openpyxl in read-only mode: rows stream from the
file, so a huge sheet is read only as far as the limit."""

from __future__ import annotations

import datetime
import functools
import os
import re
from collections.abc import Callable, Iterator
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, BinaryIO, NamedTuple

from .archive import checked_zip, strict_ooxml, strict_refusal
from .base import (
    CorruptFileError,
    ExtractionResult,
    ExtractOptions,
    TextBuilder,
    mend_cell_breaks,
    unreadable,
)

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
    for sheet in workbook.worksheets:
        # Hidden rows and columns are read: they often hold what people look up.
        if sheet.sheet_state in _HIDDEN_STATES:
            continue
        yield f"{sheet.title}"
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
    value = cell["value"]
    return (
        recalculates
        and cell["data_type"] == "n"
        and value == 0
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
        self._by_id: dict[int, _Format] = {}

    def format(self, style_id: int) -> _Format:
        found = self._by_id.get(style_id)
        if found is None:
            found = self._by_id[style_id] = _format(self._code(style_id))
        return found

    def _code(self, style_id: int) -> str:
        from openpyxl.styles.numbers import BUILTIN_FORMATS, BUILTIN_FORMATS_MAX_SIZE

        if not 0 <= style_id < len(self._styles):
            return "General"
        number = self._styles[style_id].numFmtId
        if number < BUILTIN_FORMATS_MAX_SIZE:
            return str(BUILTIN_FORMATS.get(number, "General"))
        if number - BUILTIN_FORMATS_MAX_SIZE < len(self._custom):
            return str(self._custom[number - BUILTIN_FORMATS_MAX_SIZE])
        return "General"


# --- Number formats -------------------------------------------------------------------
# What Excel shows for a number: the format's first section for positives, its
# second (when there is one) for negatives, its third for zero. Formats this does
# not render (fractions, scientific, conditions, digits split by text) show as
# General. Dates stay ISO dates: Excel's built-in date formats follow the reader's
# locale, so ISO is the one spelling every search can rely on.

_Render = Callable[[float], str]


class _Format(NamedTuple):
    code: str
    number: _Render
    shows_time: bool  # a date format that shows a time of day


# "quoted", \escaped, [$€-407] currency; _x pads with a space; *x fills; [Red], [h]
_LITERAL = re.compile(
    r'"([^"]*)"|\\(.)|\[\$([^\]-]*)(?:-[0-9A-Fa-f]*)?\]|(_.)|\*.|\[[^\]]*\]'
)
_PLACES = re.compile(r"[0#?][0#?,]*(?:\.[0#?]*)?|\.[0#?]+")
_ELAPSED = re.compile(r"\[(h+|m+|s+)\](?::(mm?))?(?::(ss?))?", re.I)


def _general(value: float) -> str:
    """Up to 15 significant digits, as Excel keeps them: 0.1*3 shows as 0.3."""
    if isinstance(value, int):
        return str(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    shown = f"{value:.15g}"
    if "e" in shown:
        mantissa, exponent = shown.split("e")
        shown = f"{mantissa}E{exponent[0]}{exponent[1:].lstrip('0').zfill(2)}"
    return shown


@functools.lru_cache(maxsize=1024)
def _format(code: str) -> _Format:
    bare = _LITERAL.sub("", code)
    shows_time = re.search(r"[hs]|AM/PM", bare, re.I) is not None
    return _Format(code, _renderer(code), shows_time)


def _renderer(code: str) -> _Render:
    if code in ("General", "@", ""):
        return _general
    parsed = [_section(part) for part in _split_sections(code)[:3]]
    renders = [part for part in parsed if part is not None]
    if len(renders) < len(parsed):
        return _general
    positive = renders[0]
    negative = renders[1] if len(renders) > 1 else None
    zero = renders[2] if len(renders) > 2 else positive

    def render(value: float) -> str:
        # Padding (_) keeps a digit's width for a parenthesis: at the ends, a space.
        try:
            if value > 0:
                return positive(value).strip()
            if value < 0:
                shown = negative(-value) if negative else f"-{positive(-value)}"
                return shown.strip()
            return zero(value).strip()
        except (InvalidOperation, ValueError):  # past 28 digits, or not finite
            return _general(value)

    return render


def _split_sections(code: str) -> list[str]:
    """The format's sections, split at semicolons outside quotes and brackets."""
    sections: list[str] = []
    current: list[str] = []
    quoted = bracket = escaped = False
    for char in code:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif not quoted and char in "[]":
            bracket = char == "["
        elif char == ";" and not quoted and not bracket:
            sections.append("".join(current))
            current = []
            continue
        current.append(char)
    sections.append("".join(current))
    return sections


def _section(part: str) -> _Render | None:
    """One section as a renderer of a number that is not negative, or None."""
    if re.search(r"\[[<>=]", part):  # conditions, as in [>=100]
        return None
    literals: list[str] = []

    def keep(match: re.Match[str]) -> str:
        *spelled, pad = match.groups()  # quoted, escaped, currency; padding
        text = next((one for one in spelled if one is not None), None)
        literals.append(text if text is not None else " " if pad else "")
        return "\x00"  # where the literal goes back

    bare = _LITERAL.sub(keep, part)
    pieces = iter(literals)

    def spelled(side: str) -> str:
        text = "".join(next(pieces) if c == "\x00" else c for c in side)
        return text.replace("@", "")

    general = re.search("general", bare, re.I)
    if general:  # "$"General
        head, tail = spelled(bare[: general.start()]), spelled(bare[general.end() :])
        return lambda value: f"{head}{_general(value)}{tail}"
    if re.search(r"[ymdhs]|AM/PM|E[+-]|/", bare, re.I):
        return None  # a date on a number, scientific, a fraction
    places = _PLACES.findall(bare)
    if len(places) > 1:
        return None  # digits split by text (phone numbers, codes)
    if not places:
        text = spelled(bare)
        return lambda value: text  # all literal, as "-" for zero
    head, _, tail = bare.partition(places[0])
    before = spelled(head)
    return _number(places[0], before, spelled(tail), scale=100 ** bare.count("%"))


def _number(pattern: str, before: str, after: str, scale: int) -> _Render:
    """Digits by a pattern such as #,##0.00: 0 a digit always shown, # and ? one
    shown when needed, a comma between digits groups thousands and one after the
    last digit divides by a thousand."""
    trimmed = pattern.rstrip(",")
    divisor = 1000 ** (len(pattern) - len(trimmed))
    whole, point, fraction = trimmed.partition(".")
    grouped = "," in whole
    least = whole.count("0")
    least_decimals = fraction.count("0")
    quantum = Decimal(1).scaleb(-len(fraction))

    def render(value: float) -> str:
        # Excel keeps 15 significant digits: 1.005 shows as 1.01.
        number = Decimal(f"{value:.15g}") * scale / divisor
        digits = f"{number.quantize(quantum, rounding=ROUND_HALF_UP):f}"
        integer, _, decimals = digits.partition(".")
        decimals = decimals.rstrip("0").ljust(least_decimals, "0")
        integer = integer.lstrip("0").zfill(least)
        if grouped and integer:
            integer = f"{int(integer):,}"
        return f"{before}{integer}{point if decimals else ''}{decimals}{after}"

    return render


def _elapsed(code: str, value: datetime.timedelta) -> str:
    """A duration by [h]:mm:ss, [mm]:ss or [ss]: its first unit counts past 24."""
    seconds = round(value.total_seconds())
    sign, seconds = ("-" if seconds < 0 else ""), abs(seconds)
    match = _ELAPSED.search(code)
    if match is None:
        return f"{sign}{seconds // 3600}:{seconds // 60 % 60:02}:{seconds % 60:02}"
    unit, minutes, secs = match.groups()
    first = {"h": seconds // 3600, "m": seconds // 60, "s": seconds}[unit[0].lower()]
    parts = [str(first).zfill(len(unit))]
    if minutes:
        parts.append(f"{seconds // 60 % 60:02}")
    if secs:
        parts.append(f"{seconds % 60:02}")
    return sign + ":".join(parts)


def _cell(value: object, shown_as: _Format) -> str:
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
        return shown_as.number(value)
    if isinstance(value, datetime.datetime) and (
        value.time() == datetime.time() or not shown_as.shows_time
    ):
        return value.date().isoformat()
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return _elapsed(shown_as.code, value)
    return " ".join(str(value).split())
