"""Two columns of prose that PDFium reads across: a page whose content stream
draws the left column's line, then the right one's on the same baseline, and so on
(some print drivers and converters write pages so). PDFium joins each pair into
one line, and every sentence comes out broken in two. Found by where the lines'
pieces lie, and read column by column."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

_WIDE = 40  # characters per line, on average, of two columns read across
_PIECES = 1.5  # text objects per line, at the least: two per line read across
_SAMPLED = 8  # lines looked at before the page's every line is
_MIN_ROWS = 5  # lines read across, for the page to have columns
_FILLED = 0.8  # of the widest line of a column: a full line of prose
_FILLED_SHARE = 0.7  # of the lines read across, full in both columns
_COLUMN_WIDTH = 8  # line heights, at the least, of a column of prose
_BREAK = 1.6  # times the usual line pitch: a gap between paragraphs (or a table's rows)
_APART = 3  # line heights of blank space: the columns end above it
_EVERYWHERE = 1e6

_Rect = tuple[float, float, float, float]  # left, bottom, right, top (y up)


@dataclass(slots=True)
class _Row:
    """A line of PDFium's text, and where its pieces lie either side of the gutter."""

    text: str
    rects: list[_Rect]
    left: list[_Rect] = field(default_factory=list)
    right: list[_Rect] = field(default_factory=list)
    across: bool = False  # a piece lies over the gutter

    @property
    def top(self) -> float:
        return max(r[3] for r in self.rects)

    @property
    def bottom(self) -> float:
        return min(r[1] for r in self.rects)

    @property
    def height(self) -> float:
        return max(r[3] - r[1] for r in self.rects)


def columns_read_across(textpage: Any, plain: str, count: int) -> str:
    """The page's text with columns of prose read one after the other when PDFium
    ran their lines into each other, else "". Most pages pay for a division and
    one count of PDFium's text objects only."""
    lines = plain.count("\r\n") + 1
    if (
        len(plain) != count
        or lines < _MIN_ROWS
        or len(plain) < _WIDE * lines
        or textpage.count_rects() < _PIECES * lines
    ):
        return ""
    spans, start = [], 0
    for text in plain.split("\r\n"):
        if text.strip():
            spans.append((start, text))
        start += len(text) + 2
    wide = [span for span in spans if len(span[1]) >= _WIDE]
    sample = wide[:: max(1, len(wide) // _SAMPLED)][:_SAMPLED]
    gutter = _common_gap(
        [_gaps(_rects(textpage, *span)) for span in sample],
        need=max(3, len(sample) // 2 + 1),
    )
    if gutter is None:
        return ""
    middle = (gutter[0] + gutter[1]) / 2
    rows = [
        _Row(text.replace("\ufffe", "\x02"), _rects(textpage, a, text))
        for a, text in spans
    ]
    rows = [_placed(row, middle) for row in rows if row.rects]
    if not _prose_columns([row for row in rows if row.left and row.right]):
        return ""
    return _in_reading_order(textpage, sorted(rows, key=lambda r: -r.top), middle)


def _rects(textpage: Any, start: int, text: str) -> list[_Rect]:
    """The boxes of a line's text objects (a piece each)."""
    n = textpage.count_rects(start, len(text))
    rects = [textpage.get_rect(k) for k in range(n)]
    return [r for r in rects if r[2] > r[0] and r[3] > r[1]]


def _gaps(rects: list[_Rect]) -> list[tuple[float, float]]:
    """The gaps along a line wider than its height: not spaces between words."""
    if not rects:
        return []
    height = max(r[3] - r[1] for r in rects)
    gaps = []
    end = -_EVERYWHERE
    for left, _, right, _ in sorted(rects):
        if end > -_EVERYWHERE and left - end >= height:
            gaps.append((end, left))
        end = max(end, right)
    return gaps


def _common_gap(
    lines: list[list[tuple[float, float]]], need: int
) -> tuple[float, float] | None:
    """The stretch across the page that a gap of ``need`` lines or more covers."""
    best: tuple[int, tuple[float, float]] | None = None
    for gaps in lines:
        for a, b in gaps:
            middle = (a + b) / 2
            over = [g for line in lines for g in line if g[0] <= middle <= g[1]]
            if len(over) >= need and (best is None or len(over) > best[0]):
                best = (len(over), (max(g[0] for g in over), min(g[1] for g in over)))
    return best[1] if best else None


def _placed(row: _Row, middle: float) -> _Row:
    """The row with its pieces sorted to either side of the gutter's middle."""
    for rect in row.rects:
        if rect[0] < middle < rect[2]:
            row.across = True
        elif rect[2] <= middle:
            row.left.append(rect)
        else:
            row.right.append(rect)
    return row


def _prose_columns(rows: list[_Row]) -> bool:
    """Whether lines with pieces on both sides of the gutter are two columns of
    prose: many, wide, mostly full in both columns (a table's cells are not), and
    not broken into blocks level with each other (a table's rows are)."""
    if len(rows) < _MIN_ROWS:
        return False
    height = sorted(row.height for row in rows)[len(rows) // 2]
    for side in ("left", "right"):
        widths = [
            max(r[2] for r in getattr(row, side))
            - min(r[0] for r in getattr(row, side))
            for row in rows
        ]
        widest = max(widths)
        full = sum(width >= _FILLED * widest for width in widths)
        if widest < _COLUMN_WIDTH * height or full < _FILLED_SHARE * len(rows):
            return False
        # A gap as wide as a gutter on one side too, down the rows: a third
        # column, a table's (a column of prose has none).
        gaps = [_gaps(getattr(row, side)) for row in rows]
        if _common_gap(gaps, need=max(3, len(rows) // 2 + 1)) is not None:
            return False
    left = _breaks([row.top for row in rows if row.left])
    right = _breaks([row.top for row in rows if row.right])
    level = sum(any(abs(a - b) <= height for b in right) for a in left)
    return not (len(left) >= 2 and level >= 0.75 * len(left))


def _breaks(tops: list[float]) -> list[float]:
    """Where a column's lines, from the top, lie further apart than usual."""
    tops = sorted(tops, reverse=True)
    pitches = sorted(a - b for a, b in pairwise(tops))
    if not pitches:
        return []
    usual = pitches[len(pitches) // 2]
    return [b for a, b in pairwise(tops) if a - b > _BREAK * usual]


def _in_reading_order(textpage: Any, rows: list[_Row], middle: float) -> str:
    """The rows from the top: a line over the gutter as it is, and each stretch of
    lines between two such lines (or wide blank space) column by column, the left
    one first."""
    out: list[str] = []
    block: list[_Row] = []

    def flush() -> None:
        if sum(bool(row.left and row.right) for row in block) >= 2:
            bottom = min(row.bottom for row in block)
            top = max(row.top for row in block)
            for left, right in ((-_EVERYWHERE, middle), (middle, _EVERYWHERE)):
                text = textpage.get_text_bounded(left, bottom, right, top)
                out.extend(line.rstrip() for line in text.split("\r\n"))
        else:
            out.extend(row.text.strip() for row in block)
        block.clear()

    height = sorted(row.height for row in rows)[len(rows) // 2]
    for row in rows:
        if row.across:
            flush()
            out.append(row.text.strip())
            continue
        if block and block[-1].bottom - row.top > _APART * height:
            flush()  # a footer under the columns, on one side of the gutter
        block.append(row)
    flush()
    return "\r\n".join(line for line in out if line.strip())
