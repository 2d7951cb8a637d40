"""Words set with wide letter-spacing (tracking: CSS letter-spacing, a spaced-out
heading): PDFium puts a space between every two letters, "S p a c e d  o u t",
and a search for the words finds nothing. Where the gaps between the letters
come in two sizes, the small ones within words and the large ones between them,
the words are put back together by where the letters lie."""

from __future__ import annotations

import re
from typing import Any

import pypdfium2.raw as pdfium_c

from .base import CJK

# Four or more single letters, a single space between each.
_SPACED_RUN = re.compile(r"(?<!\S)(?:[^\W\d_] ){3,}[^\W\d_](?!\S)")
# Of a line's height (the font's box): a gap this much wider than the letters'
# own is a space between words; letters this close, with no wider gap on the
# line, are one word (a normal space is wider).
_WORD_GAP = 0.2
_ONE_WORD = 0.15
# Letters a font kerns closer than tracking sets them, that PDFium puts no space
# between: a pair ("Sp", "wo"), or two pairs in a row.
_KERNED = 3


def tracking_undone(textpage: Any, body: str) -> str:
    """``body``, the page's text, with each run of letters PDFium spaced apart
    joined into its words; only spaces PDFium made up are taken out, never ones
    the PDF holds."""
    if not _SPACED_RUN.search(body):
        return body
    # A character for each index (PDFium's text leaves out those it has none for).
    plain = "".join(
        chr(pdfium_c.FPDFText_GetUnicode(textpage, index))
        for index in range(textpage.count_chars())
    )
    pieces, done, cursor = [], 0, 0
    for run in _SPACED_RUN.finditer(body):
        start = plain.find(run.group(), cursor)
        if start < 0:  # the body's lines reordered: look from the page's start
            start = plain.find(run.group())
        if start < 0 or CJK.search(run.group()):
            continue
        end = start + len(run.group())
        cursor = end
        found = _words(textpage, start, run.group())
        if found is None:
            continue
        words, widest = found
        # Letters a font kerns closer ("Sp a c e d", "wo r d s") get no space
        # between them: the run goes on into them, as one word where the gap
        # before them is no wider than the run's own within its words.
        cut_from, cut_to = run.start(), run.end()
        before, after = body[max(done, cut_from - 2) : cut_from], body[cut_to:][:2]
        if before == plain[start - 2 : start] and _joins(
            textpage, plain, start - 1, widest, -1
        ):
            cut_from -= 1
        if after == plain[end : end + 2] and _joins(textpage, plain, end, widest, 1):
            cut_to += 1
        pieces += [body[done:cut_from], words]
        done = cut_to
    return "".join([*pieces, body[done:]]) if pieces else body


def _words(textpage: Any, start: int, run: str) -> tuple[str, float] | None:
    """The run's letters as words, split where the gap between two is wide, and
    the widest gap within a word; None when it is not tracking (a space the PDF
    holds, gaps all alike and wide)."""
    gaps, height = [], 0.0
    for space in range(start + 1, start + len(run), 2):
        if (around := _around(textpage, space)) is None:
            return None
        gap, tallest = around
        gaps.append(gap)
        height = max(height, tallest)
    narrow = min(gaps)
    if narrow < 0 or height <= 0:
        return None
    wide = [gap > narrow + _WORD_GAP * height for gap in gaps]
    if not any(wide) and narrow > _ONE_WORD * height:
        return None  # single letters a normal space apart: "x y z"
    letters = run[::2]
    words = letters[0] + "".join(
        (" " if apart else "") + letter
        for apart, letter in zip(wide, letters[1:], strict=True)
    )
    return words, narrow + _WORD_GAP * height


def _joins(textpage: Any, plain: str, space: int, widest: float, side: int) -> bool:
    """Whether the character at ``space`` is a space PDFium made up between two
    letters of one word: its gap no wider than ``widest`` (the run's gaps within
    its words are, at the most), and the letters on ``side`` of it (-1: before,
    1: after) a kerned pair or so, not a word of their own set without tracking."""
    if not (0 < space < len(plain) - 1 and plain[space] == " "):
        return False
    if not (plain[space - 1].isalpha() and plain[space + 1].isalpha()):
        return False
    letters, at = 0, space + side
    while 0 <= at < len(plain) and plain[at].isalpha() and letters <= _KERNED:
        letters, at = letters + 1, at + side
    if letters > _KERNED:
        return False
    around = _around(textpage, space)
    return around is not None and 0 <= around[0] <= widest


def _around(textpage: Any, space: int) -> tuple[float, float] | None:
    """The gap between the letters either side of the space at ``space``, and the
    taller one's height; None when the space is the PDF's own, not made up."""
    if not pdfium_c.FPDFText_IsGenerated(textpage, space):
        return None
    left = textpage.get_charbox(space - 1, loose=True)
    right = textpage.get_charbox(space + 1, loose=True)
    return right[0] - left[2], max(left[3] - left[1], right[3] - right[1])
