"""What Excel shows for a cell's number, date or duration, by the cell's number
format: the format's first section for positives, its second (when there is one) for
negatives, its third for zero, or the sections' conditions ([<=9999999]) choose.
Formats this does not render (fractions, scientific) show a number as General."""

from __future__ import annotations

import datetime
import functools
import operator
import re
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import NamedTuple

from openpyxl.styles.numbers import is_date_format

_Render = Callable[[float], str]
_Dated = datetime.datetime | datetime.time


class NumberFormat(NamedTuple):
    """A cell's number format, parsed once: how it shows a number, a date or time
    of day, and a duration."""

    code: str
    number: _Render
    date: Callable[[_Dated], str]

    def duration(self, value: datetime.timedelta) -> str:
        """A duration by [h]:mm:ss, [mm]:ss or [ss]."""
        return _elapsed(self.code, value)


@functools.lru_cache(maxsize=1024)
def number_format(code: str) -> NumberFormat:
    """The format of this code ("#,##0.00", "dd/mm/yyyy", "General")."""
    return NumberFormat(code, _renderer(code), _date_renderer(code))


# Excel's built-in short date (14) and short date with time (22) follow the
# reader's locale: 28/11/2026 in London is 11/28/2026 in New York, and the file
# does not say which. ISO is the one spelling of them nobody misreads.
LOCALE_DATE_FORMATS = {14: "yyyy-mm-dd", 22: "yyyy-mm-dd h:mm"}


# "quoted", \escaped, [$€-407] currency; _x pads with a space; *x fills; [Red], [h]
_LITERAL = re.compile(
    r'"([^"]*)"|\\(.)|\[\$([^\]-]*)(?:-[0-9A-Fa-f]*)?\]|(_.)|\*.|\[[^\]]*\]'
)
# Commas after the last digit, decimals too, divide by a thousand each: 0.0,"K"
_PLACES = re.compile(r"[0#?][0#?,]*(?:\.[0#?]*)?,*|\.[0#?]+,*")
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


def _renderer(code: str) -> _Render:
    if code in ("General", "@", ""):
        return _general
    sections = _split_sections(code)[:3]
    if any(_CONDITION.search(part) for part in sections):
        return _conditional(sections)
    parsed = [_section(part) for part in sections]
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


# A section's condition, as in Excel's phone number format:
# [<=9999999]###-####;(###) ###-####
_CONDITION = re.compile(r"\[(<>|<=|>=|<|>|=)\s*(-?(?:\d+\.?\d*|\.\d+))\]")
_COMPARE = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "=": operator.eq, "<>": operator.ne,
}  # fmt: skip


def _conditional(sections: list[str]) -> _Render:
    """The first section whose condition the number meets shows it; a section
    without one, what the others leave. As in Excel and LibreOffice, only the first
    section shows a minus sign, unless its condition takes only negatives ([<0])."""
    conditions = [_CONDITION.search(part) for part in sections]
    parsed = [_section(_CONDITION.sub("", part, count=1)) for part in sections]
    renders = [part for part in parsed if part is not None]
    if len(renders) < len(parsed):
        return _general

    def render(value: float) -> str:
        index = next(
            (
                i
                for i, found in enumerate(conditions)
                if not found or _meets(value, found)
            ),
            None,
        )
        if index is None:  # no section for it: Excel fills the cell with #
            return _general(value)
        signed = value < 0 and index == 0 and not _negatives_only(conditions[0])
        try:
            shown = renders[index](abs(value))
        except (InvalidOperation, ValueError):
            return _general(value)
        return f"{'-' if signed else ''}{shown.strip()}"

    return render


def _meets(value: float, condition: re.Match[str]) -> bool:
    return bool(_COMPARE[condition[1]](value, float(condition[2])))


def _negatives_only(condition: re.Match[str] | None) -> bool:
    return (
        condition is not None
        and condition[1] in ("<", "<=")
        and float(condition[2]) <= 0
    )


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
        return _split_digits(bare, places, spelled)
    if not places:
        text = spelled(bare)
        return lambda value: text  # all literal, as "-" for zero
    head, _, tail = bare.partition(places[0])
    before = spelled(head)
    return _number(places[0], before, spelled(tail), scale=100 ** bare.count("%"))


def _split_digits(
    bare: str, groups: list[str], spelled: Callable[[str], str]
) -> _Render | None:
    """Whole digits split by text, as in Excel's ZIP Code + 4 (00000-0000), Social
    Security Number (000-00-0000) and phone number formats: the digits fill the
    groups from the right, and the first group takes any left over."""
    if "%" in bare or any(set(group) - set("0#?") for group in groups):
        return None  # decimals, thousands or a percentage among them: General
    texts = [spelled(text) for text in _PLACES.split(bare)]

    def render(value: float) -> str:
        number = Decimal(f"{value:.15g}").quantize(Decimal(1), rounding=ROUND_HALF_UP)
        digits = f"{number:f}".lstrip("0")
        shown: list[str] = []
        for n in range(len(groups) - 1, -1, -1):
            group = groups[n]
            own = digits if n == 0 else digits[-len(group) :]
            digits = "" if n == 0 else digits[: -len(group)]
            # An empty place: 0 shows a zero, ? a space, # nothing.
            empty = group[: max(0, len(group) - len(own))]
            shown.append(empty.replace("#", "").replace("?", " ") + own)
        shown.reverse()
        return texts[0] + "".join(g + t for g, t in zip(shown, texts[1:], strict=True))

    return render


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


# --- Dates and times of day -------------------------------------------------------
# Months and days are named in English: a format's locale ([$-407]) is not followed.
_MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August",
    "September", "October", "November", "December",
)  # fmt: skip
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
# A date format's pieces: "quoted", \escaped, [$€-407] currency (other brackets
# such as [$-409] or [Red] show nothing), _ padding, * fill; the codes of its
# parts; any other character shows as it is.
_DATE_PIECE = re.compile(
    r'"([^"]*)"|\\(.)|\[\$([^\]-]*)[^\]]*\]|\[[^\]]*\]|(_).|\*.'
    r"|(y+|e+|m+|d+|h+|s+|am/pm|a/p|\.0+)|(.)",
    re.I | re.S,
)
_DATE_PARTS = frozenset("ymde")


def _date_renderer(code: str) -> Callable[[_Dated], str]:
    """How the format's first section shows a date and time of day; ISO under a
    format that is not a date's (a date stored as one under General, "0.00")."""
    if not is_date_format(code):
        return _iso
    pieces: list[tuple[str, str]] = []  # (code, as written) or ("", literal)
    for match in _DATE_PIECE.finditer(_split_sections(code)[0]):
        quoted, escaped, currency, pad, part, other = match.groups()
        if part:
            pieces.append((part.lower(), part))
        else:
            literal = next(
                (t for t in (quoted, escaped, currency, other) if t is not None), ""
            )
            pieces.append(("", " " if pad else literal))
    codes = [piece for piece, _ in pieces if piece]
    if not codes:
        return _iso
    pieces = _minutes(pieces)
    twelve_hour = any(piece in ("am/pm", "a/p") for piece in codes)
    shows_date = any(
        piece[:1] in _DATE_PARTS and not piece.endswith("i") for piece, _ in pieces
    )
    places = max((len(piece) - 1 for piece in codes if piece[0] == "."), default=0)

    def render(value: _Dated) -> str:
        if isinstance(value, datetime.time):  # a time of day without a date
            if shows_date:
                return value.isoformat()
            value = datetime.datetime.combine(datetime.date(1900, 1, 1), value)
        value = _rounded(value, places)
        return "".join(
            _date_part(value, piece, written, twelve_hour) if piece else written
            for piece, written in pieces
        )

    return render


def _iso(value: _Dated) -> str:
    return value.isoformat()


def _minutes(pieces: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The pieces with each m or mm that means minutes (right after an hour, or
    right before seconds) as "mi" or "mmi"."""
    codes = [i for i, (piece, _) in enumerate(pieces) if piece]
    found = list(pieces)
    for n, at in enumerate(codes):
        piece, written = pieces[at]
        before = pieces[codes[n - 1]][0] if n else ""
        after = pieces[codes[n + 1]][0] if n + 1 < len(codes) else ""
        if piece in ("m", "mm") and (before[:1] == "h" or after[:1] == "s"):
            found[at] = (piece + "i", written)
    return found


def _rounded(value: datetime.datetime, places: int) -> datetime.datetime:
    """To the fraction of a second the format shows: Excel rounds 13:45:29.6 to
    13:45:30 under hh:mm:ss."""
    step = 10 ** (6 - places)
    micro = round(value.microsecond / step) * step
    return value.replace(microsecond=0) + datetime.timedelta(microseconds=micro)


def _date_part(
    value: datetime.datetime, piece: str, written: str, twelve_hour: bool
) -> str:
    """One code of a date format: yyyy, mmm, d, hh, mi (minutes), ss, AM/PM, .00."""
    size, kind = len(piece), piece[0]
    if piece in ("mi", "mmi"):
        return f"{value.minute:0{size - 1}}"
    if kind == "y":
        return f"{value.year % 100:02}" if size <= 2 else f"{value.year:04}"
    if kind == "e":
        return str(value.year)
    if kind == "m":
        if size <= 2:
            return f"{value.month:0{size}}"
        name = _MONTHS[value.month - 1]
        return {3: name[:3], 5: name[0]}.get(size, name)
    if kind == "d":
        if size <= 2:
            return f"{value.day:0{size}}"
        name = _DAYS[value.weekday()]
        return name[:3] if size == 3 else name
    if kind == "h":
        hour = (value.hour % 12 or 12) if twelve_hour else value.hour
        return f"{hour:0{min(size, 2)}}"
    if kind == "s":
        return f"{value.second:0{min(size, 2)}}"
    if kind == ".":
        return f"{value.microsecond / 1e6:.{size - 1}f}"[1:]
    shown = ("AM", "PM")[value.hour >= 12]
    if piece == "a/p":
        shown = shown[0]
    return shown if written[0].isupper() else shown.lower()
