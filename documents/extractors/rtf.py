"""RTF extraction: the body, then footnotes, headers and footers, then comments
(annotations), as "Comment: …". A text box
(a Word shape) follows the paragraph it is anchored in, as in DOCX; table cells
are separated by tabs, and each row ends its line, as in the other formats.

The RTF is read by a small tokenizer of our own, in one pass. striprtf lends only
its tables (which destinations hold no text, which code page each \\fcharset is):
its reader backtracked quadratically over long lines, split characters beyond
U+FFFF into lone surrogates, read hidden text, dropped notes, headers and footers,
and inserted the URL of every hyperlink into the text.
"""

from __future__ import annotations

import codecs
import os
import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from itertools import chain

from striprtf.striprtf import charset_map, destinations

from .base import (
    CorruptFileError,
    ExtractionResult,
    ExtractOptions,
    TextBuilder,
    comment_line,
    join_notes,
    table_row_lines,
)
from .marks import SYMBOL_FONT
from .text import extract_text

_CUT = "the RTF is incomplete (its end is missing); the upload may have been cut short"
# RTF is 7-bit text: control bytes read as text mean the file is not RTF past its
# first bytes (damage, or other data behind an RTF header). A few are let pass.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_MAX_CONTROLS, _MAX_CONTROL_SHARE = 8, 0.01
_NOT_RTF = "it is not RTF past its first bytes (damaged, or other data behind them)"

# Every character starts a token, so matching at any position succeeds.
_TOKEN = re.compile(
    r"([^\\{}\r\n]+)"  # text
    r"|\\([a-zA-Z]{1,32})(-?\d{1,10})? ?"  # control word; a space after it ends it
    r"|\\'([0-9a-fA-F]{2})"  # a byte in the code page
    r"|\\(.)"  # control symbol; \ before a line end is a paragraph mark
    r"|([{}])"
    r"|[\r\n]+|\\",  # line ends are not text; a lone \ ends the file
    re.DOTALL,
)
_NOTES = frozenset({"footnote"})  # endnotes are footnotes with \ftnalt
# A comment's text (\annotation); its author and date are destinations skipped.
_COMMENTS = frozenset({"annotation"})
# Headers and footers: of every page, left, right and first pages.
_MARGINS = frozenset(
    f"{where}{pages}" for where in ("header", "footer") for pages in ("", "l", "r", "f")
)
# A shape (Word's text boxes) or a group of shapes: only its \shptxt is text.
_SHAPES = frozenset({"shp", "shpgrp", "shpinst"})
# Destinations read in their own way; striprtf skips them all but \listtext.
# (\nesttableprops holds no text, but a nested table's row ends in it.)
# \pntext is the list label of older writers (WordPad, Word 95, PowerPoint).
_READ = _NOTES | _MARGINS | _COMMENTS | _SHAPES
_READ |= {"shptxt", "upr", "ud", "listtext", "pntext"}
_READ |= {"nesttableprops"}
# A field's code, read for one field only: Word's phonetic guide (furigana), an EQ
# field "\o\ad(\s\up 9(かんじ),漢字)" whose result LibreOffice leaves empty. Its
# base text is read where the result holds none; other fields' codes are not text.
_READ |= {"fldinst"}
# A Word form's field (in a field's code): a drop-down's entries (\ffl), the
# chosen one (\ffres, else \ffdefres), shown where its result holds none.
_READ |= {"formfield"}
_DROP_DOWN = "2"  # \fftype's
_MAX_ENTRIES = 25  # Word's most: a hostile field lists no more
_FORM_WORDS = frozenset({"fftype", "ffres", "ffdefres", "ffl"})
_RUBY = re.compile(
    r"^\s*EQ\b.*?\\o(?:\\a[lcdr])?\s*\(\s*\\s\s*\\up\s*-?\d*\s*\([^)]*\)\s*,(.*)\)\s*$",
    re.DOTALL,
)
_MAX_RUBY_CODE = 1_000  # characters: a phonetic guide's code is a short line
_SKIPPED = destinations - _READ
# A paragraph mark still ends its paragraph when hidden: joining the two paragraphs
# could glue their words together.
_BREAKS = {"par": "\n", "sect": "\n\n", "page": "\n\n", "row": "\n", "line": "\n"}
_BREAKS |= {"nestrow": "\n", "\n": "\n", "\r": "\n"}
# Those a text box anchored in the paragraph follows (\line breaks a line only).
_ROWS = frozenset({"row", "nestrow"})
_PARAGRAPH_ENDS = _ROWS | {"par", "sect", "page", "\n", "\r"}
_CELLS = frozenset({"cell", "nestcell"})  # a tab between cells, as other formats
_SAME_EDGE = 20  # twips (a third of a millimetre): cells' edges this close are one
_MAX_COLUMNS = 63  # Word's widest table: a hostile row defines no more
_CHARS = {
    "tab": "\t",
    "emdash": "\u2014",
    "endash": "\u2013",
    "emspace": "\u2003",
    "enspace": "\u2002",
    "qmspace": "\u2005",
    "bullet": "\u2022",
    "lquote": "\u2018",
    "rquote": "\u2019",
    "ldblquote": "\u201c",
    "rdblquote": "\u201d",
    "~": "\xa0",
    "{": "{",
    "}": "}",
    "\\": "\\",
    "_": "-",  # non-breaking hyphen: a plain one, as DOCX's, so search finds the word
    "-": "",  # optional hyphen: shown only where a line breaks
}
# The document's character set, before any \ansicpg.
_CHARSETS = {"ansi": "cp1252", "mac": "mac_roman", "pc": "cp437", "pca": "cp850"}
_SURROGATE = re.compile("[\ud800-\udfff]")
# The Symbol font draws its own characters at its codes: Word's list bullet is its
# 0xB7, which any code page reads as "·" (other symbol fonts, Wingdings, differ).
_SYMBOL = "symbol"
_SYMBOL_NAME = re.compile(r"\bsymbol\b", re.IGNORECASE)
_SYMBOL_TABLE = str.maketrans({chr(code): char for code, char in SYMBOL_FONT.items()})


def extract_rtf(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """Extract the text of an RTF file, up to the limit; plain text under an RTF
    name (no {\\rtf at its start, past a UTF-8 BOM and white space) as text."""
    with open(path, "rb") as fh:
        data = fh.read().removeprefix(codecs.BOM_UTF8)
    if not data.lstrip().startswith(b"{\\rtf") and not _binary(data):
        # Renamed notes, a tool's "RTF" export: what it shows is its text.
        return extract_text(path, options)
    body, notes, margins, comments = _read(data.decode("latin-1"))
    if _binary(body):
        raise CorruptFileError(_NOT_RTF)
    # An RTF's text is never longer than the file, so the limit bounds the output.
    text = TextBuilder(options.max_chars)
    text.extend(
        chain(
            chain.from_iterable(p.splitlines() for p in (body, *notes, *margins)),
            filter(None, map(comment_line, comments)),
        )
    )
    extracted = text.text.strip("\n")
    note = text.note
    if _unclosed(data):  # cut short: an upload or a save that did not finish
        if not extracted.strip():
            raise CorruptFileError(_CUT)
        note = join_notes(note, f"The text may stop early: {_CUT}.")
    return ExtractionResult(
        text=extracted,
        page_count=None,
        confidence=1.0 if extracted.strip() else 0.0,
        extractor="rtf",
        note=note,
    )


def _binary(text: str | bytes) -> bool:
    """True when more of the text is control characters than RTF or text holds."""
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    controls = len(_CONTROLS.findall(text))
    return controls > max(_MAX_CONTROLS, _MAX_CONTROL_SHARE * len(text))


def read_text(data: bytes) -> str:
    """The body and footnotes of RTF data (a part of a Word file: an RTF chunk)."""
    body, notes, *_ = _read(data.decode("latin-1"))
    return "\n".join([body.strip("\n"), *notes])


def _read(rtf: str) -> tuple[str, list[str], list[str], list[str]]:
    """The body's text, each footnote's, each distinct header's or footer's, and
    each comment's."""
    reader = _Reader()
    reader.read(rtf)
    notes = (_joined(n).strip() for n in reader.notes)
    margins = (_joined(m).strip() for m in reader.margins)
    return (
        _joined(reader.body),
        [note for note in notes if note],
        list(dict.fromkeys(margin for margin in margins if margin)),
        [_joined(comment) for comment in reader.comments],
    )


@dataclass(slots=True)
class _Group:
    """The state a group keeps and its closing brace restores."""

    out: list[str] | None  # where its text goes: None where no text is read
    ucskip: int = 1  # fallback characters after each \uN
    hidden: bool = False
    font: str = ""
    font_table: bool = False  # its \fcharsets give each font's code page
    nested_table: bool = False  # a nested table's row properties: not the row's
    # In a shape or a \upr, whose own text is not read: where the text of its
    # \shptxt (after the paragraph) or its \ud (in place) goes.
    outer: list[str] | None = None
    on_close: Callable[[], None] | None = None  # finishes what the group held
    form: _FormField | None = None  # in a form field's properties

    def nested(self) -> _Group:
        """The state a group inside this one starts with."""
        return _Group(
            self.out,
            self.ucskip,
            self.hidden,
            self.font,
            self.font_table,
            self.nested_table,
            self.outer,
            form=self.form,
        )


@dataclass(slots=True)
class _FormField:
    """A Word form field's properties: its kind, its drop-down's entries and the
    entry chosen (or by default)."""

    kind: str = ""
    entries: list[list[str]] = field(default_factory=list)
    chosen: int | None = None
    default: int = 0

    def shown(self) -> str:
        """The entry a drop-down shows; "" for other fields."""
        count = len(self.entries)
        # Word writes \ffres25 for none chosen: the default is shown.
        at = (
            self.chosen
            if self.chosen is not None and 0 <= self.chosen < count
            else self.default
        )
        if self.kind != _DROP_DOWN or not 0 <= at < count:
            return ""
        return _joined(self.entries[at]).strip()


class _Reader:
    """Reads an RTF in one pass, token by token: the body's text, the notes' and
    the headers' and footers', the comments', each as its pieces."""

    def __init__(self) -> None:
        self.body: list[str] = []
        self.notes: list[list[str]] = []
        self.margins: list[list[str]] = []
        self.comments: list[list[str]] = []
        self.group = _Group(self.body)
        self.stack: list[_Group] = []
        self.fonts: dict[str, str] = {}  # font number -> its code page
        self.font_defined = ""  # the font the font table describes now
        self.encoding, self.default_font = "cp1252", ""
        self.skip = 0  # fallback characters still to skip after a \uN
        self.starred = False  # just after \*: a destination to skip unless read
        self.pending = bytearray()  # \'hh bytes: a double-byte character spans two
        self.pending_encoding = self.encoding
        # Text boxes waiting for the end of the paragraph they are anchored in.
        self.boxes: list[tuple[list[str], list[str]]] = []
        # Where the last \cell's tab is: a row's last cell takes none.
        self.cell_in: list[str] | None = None
        self.cell_end = 0
        # The table row being read (from its first \intbl paragraph): its list,
        # where its text begins and where each \cell's tab stands, for
        # table_row_lines at its \row.
        self.row_in: list[str] | None = None
        self.row_start = 0
        self.cell_tabs: list[int] = []
        # The row's cells' right edges (\cellx, in twips), from its last \trowd
        # that gives them; and the rows of the table read so far, rewritten at its
        # end when a cell spans columns of another row (_end_table).
        self.edges: list[int] = []
        self.new_edges = self.merged = False
        self.table: list[_Row] = []
        self.form: _FormField | None = None  # the field code's form field, if any

    def read(self, rtf: str) -> None:
        """Read the document up to its closing brace (or the end of the file)."""
        # Looked up once: a long document has millions of tokens.
        next_token = _TOKEN.match
        on_text, on_word, on_byte = self._text, self._word, self._byte
        pos, end = 0, len(rtf)
        while pos < end:
            match = next_token(rtf, pos)
            start, pos = pos, match.end()
            chars, word, arg, byte, symbol, brace = match.groups()
            # A line end in the source is no text: a double-byte character's two
            # \'hh bytes may sit on either side of one (writers wrap long lines).
            if self.pending and byte is None and rtf[start] not in "\r\n":
                self._decode_bytes()
            if chars is not None:
                on_text(chars)
            elif word is not None:
                if word == "bin" and arg is not None:
                    pos += max(int(arg), 0)  # binary data, of a picture or object
                on_word(word, arg)
            elif byte is not None:
                on_byte(int(byte, 16))
            elif symbol is not None:
                self._symbol(symbol)
            elif brace == "{":
                self._open()
            elif brace == "}" and not self._close():
                break  # anything after the document's group is not shown
        self._decode_bytes()
        self._end_table()
        for anchor, box in self.boxes:  # no paragraph ended after them
            if text := _box_text(box):
                anchor.append("\n" + text)

    def _text(self, chars: str) -> None:
        self.starred = False
        if self.skip:
            chars, self.skip = chars[self.skip :], max(self.skip - len(chars), 0)
        group = self.group
        if group.out is not None and not group.hidden:
            if self.fonts.get(group.font) == _SYMBOL:
                chars = chars.translate(_SYMBOL_TABLE)
            group.out.append(chars)
        elif group.font_table and _SYMBOL_NAME.search(chars):  # a font's name
            self.fonts[self.font_defined] = _SYMBOL

    def _byte(self, value: int) -> None:
        self.starred = False
        if self.skip:
            self.skip -= 1
        elif self.group.out is not None and not self.group.hidden:
            self.pending_encoding = self.fonts.get(self.group.font, self.encoding)
            self.pending.append(value)

    def _decode_bytes(self) -> None:
        """Add the \\'hh bytes read so far, in their font's code page."""
        if self.pending and self.group.out is not None:
            # The bytes' group has not changed since they were read.
            if self.pending_encoding == _SYMBOL:
                text = self.pending.decode("latin-1").translate(_SYMBOL_TABLE)
            else:
                text = self.pending.decode(self.pending_encoding, "replace")
            self.group.out.append(text)
        self.pending.clear()

    def _word(self, word: str, arg: str | None) -> None:
        self.skip = 0
        starred, self.starred = self.starred, False
        group, out = self.group, self.group.out
        if group.form is not None and word in _FORM_WORDS:
            self._form_word(group.form, word, arg)
        elif word == "u" and arg is not None:
            if out is not None and not group.hidden:
                out.append(chr(int(arg) & 0xFFFF))  # a signed 16-bit number
            self.skip = group.ucskip
        elif out is None:
            if group.font_table:
                self._font(word, arg)
        elif word in _READ:
            self._destination(word, out)
        elif word in _SKIPPED or starred:
            group.out, group.font_table = None, word == "fonttbl"
        elif word in _BREAKS:
            self._break(word, out)
        elif word in _CELLS:
            if word == "cell" and self.row_in is out:
                self.cell_tabs.append(len(out))
            out.append("\t")
            self.cell_in, self.cell_end = out, len(out)
        elif word == "intbl":
            if self.row_in is not out:  # a row's first paragraph: the row begins
                self.row_in, self.row_start, self.cell_tabs = out, len(out), []
        elif word in _CHARS:
            if not group.hidden:
                out.append(_CHARS[word])
        else:
            self._format(word, arg)

    def _font(self, word: str, arg: str | None) -> None:
        """A font table's word: which font it describes, and its code page."""
        if word == "f":
            self.font_defined = arg or ""
        elif word == "fcharset" and arg is not None:
            charset = charset_map.get(int(arg))
            if _known(charset):
                self.fonts[self.font_defined] = charset

    def _destination(self, word: str, out: list[str]) -> None:
        """Start a destination read in its own way (one of _READ)."""
        group = self.group
        if word in _COMMENTS and group.hidden:
            # On text deleted with tracked changes on (or hidden): it goes with it.
            group.out = None
        elif word in _NOTES or word in _MARGINS or word in _COMMENTS:
            group.out, group.outer = [], None
            if word in _NOTES:
                self.notes.append(group.out)
            else:
                (self.comments if word in _COMMENTS else self.margins).append(group.out)
        elif word in _SHAPES:  # a shape's properties are not text
            if group.outer is None:  # else in a group of shapes, at the group's place
                group.outer = group.out
            group.out = []
        elif word == "shptxt":
            box: list[str] = []
            self.boxes.append((out if group.outer is None else group.outer, box))
            group.out, group.outer = box, None
        elif word == "upr":  # its own text repeats its \ud's in the code page
            group.out, group.outer = [], group.out
        elif word == "ud":  # None outside a \upr: skipped
            group.out, group.outer = group.outer, None
        elif word == "nesttableprops":  # read for its \nestrow
            group.nested_table = True
        elif word == "fldinst":
            code: list[str] = []
            group.on_close = partial(self._end_field_code, code, out)
            group.out, self.form = code, None
        elif word == "formfield":  # its properties are no text but its entries'
            group.out, group.form = None, _FormField()
            self.form = group.form
        else:  # listtext, pntext: the number or bullet a list item shows
            label: list[str] = []
            group.on_close = partial(_add_label, label, group.out)
            group.out = label

    def _end_field_code(self, code: list[str], out: list[str]) -> None:
        """A field's code is read: a phonetic guide's base text, or a form's
        drop-down's entry, goes in when the field (the group around its code)
        closes with no result of its own."""
        short = sum(map(len, code)) <= _MAX_RUBY_CODE
        ruby = _RUBY.match(_joined(code)) if short else None
        shown = ruby.group(1).strip() if ruby else ""
        if self.form is not None and not self.group.hidden:
            shown, self.form = self.form.shown(), None
        if not shown or not self.stack:
            return
        field = self.stack[-1]
        if field.on_close is None and field.out is out:
            field.on_close = partial(_add_if_none, shown, out, len(out))

    def _form_word(self, form: _FormField, word: str, arg: str | None) -> None:
        """A word of a form field's properties."""
        if word == "fftype":
            form.kind = arg or "0"
        elif word == "ffres" and arg is not None:
            form.chosen = int(arg)
        elif word == "ffdefres" and arg is not None:
            form.default = int(arg)
        elif word == "ffl" and len(form.entries) < _MAX_ENTRIES:
            entry: list[str] = []
            form.entries.append(entry)
            self.group.out = entry  # its text is the entry's

    def _break(self, word: str, out: list[str]) -> None:
        """A paragraph, line, row or page ends; a row's last cell takes no tab."""
        if word == "row" and self.row_in is out:
            self._end_row(out)
        elif word == "line" and self.row_in is out:
            out.append("\v")  # a break inside a paragraph: no line of the row's own
        else:
            if word in _ROWS and self.cell_in is out and self.cell_end == len(out):
                out.pop()
            out.append(_BREAKS[word])
        if self.boxes and word in _PARAGRAPH_ENDS:
            self._place_boxes(out)

    def _end_row(self, out: list[str]) -> None:
        """The row read since its first paragraph, as ``table_row_lines`` has it: a
        row of data one line, a row of paragraphs (a page laid out in a table)
        cell after cell. A nested table's rows are lines of their outer cell."""
        starts = [self.row_start, *(tab + 1 for tab in self.cell_tabs)]
        texts = [
            "".join(out[start:tab])
            for start, tab in zip(starts, self.cell_tabs, strict=False)
        ]
        texts.append("".join(out[starts[-1] :]))  # text after the last
        # A cell's lines are its paragraphs; a \line breaks one of them.
        cells = [[p.replace("\v", "\n") for p in t.split("\n")] for t in texts]
        if self.table and (
            self.table[-1].out is not out or self.table[-1].at + 1 != self.row_start
        ):  # text between: this row begins another table
            self._end_table()
        del out[self.row_start :]
        out.append(_row_text(cells))
        self.table.append(_Row(out, self.row_start, cells, self.edges))
        self.row_in = None

    def _end_table(self) -> None:
        """Rewrite the rows of the table just read where one has a cell spanning
        columns of another (a merged cell written as one wide cell, as Word and
        LibreOffice do): its columns stay as empty cells, so those below line up,
        as in DOCX and ODT."""
        rows, self.table = self.table, []
        edges = sorted({edge for row in rows for edge in row.edges})
        grid = edges[:1]
        for edge in edges[1:]:  # edges a hair apart are one (a border dragged)
            if edge - grid[-1] > _SAME_EDGE:
                grid.append(edge)
        if len(grid) > _MAX_COLUMNS:
            return  # no table of Word's: each row as written (and no row spread wide)
        for row in rows:
            cells = row.cells
            if cells and not "".join(cells[-1]).strip():
                cells = cells[:-1]  # the text after its last \cell: none
            if len(row.edges) != len(cells) or len(row.edges) == len(grid):
                continue  # edges that do not match its cells, or no span
            columns = [bisect_left(grid, edge - _SAME_EDGE) for edge in row.edges]
            spread: list[list[str]] = []
            for cell, column in zip(cells, columns, strict=True):
                spread += [cell] + [[]] * (column - len(spread))
            row.out[row.at] = _row_text(spread)

    def _place_boxes(self, paragraph_in: list[str]) -> None:
        """Add, after the paragraph just ended, the text boxes anchored in it."""
        waiting = []
        for anchor, box in self.boxes:
            if anchor is not paragraph_in:
                waiting.append((anchor, box))
            elif text := _box_text(box):
                anchor.append(text + "\n")
        self.boxes = waiting

    def _format(self, word: str, arg: str | None) -> None:
        """A word that changes how the text after it is read."""
        group = self.group
        if word in ("trowd", "cellx", "clmrg") and not group.nested_table:
            self._row_edge(word, arg)
        # Hidden text, and text deleted with tracked changes on (DOCX and ODT leave
        # it out too); one flag for both, as they rarely overlap.
        if word in ("v", "deleted"):
            group.hidden = arg != "0"
        elif word == "plain":
            group.hidden, group.font = False, self.default_font
        elif word == "f":
            group.font = arg or ""
        elif word == "uc":
            group.ucskip = max(int(arg or 1), 0)
        elif word == "deff":
            self.default_font = group.font = arg or ""
        elif word == "ansicpg":
            if _known(f"cp{arg}"):
                self.encoding = f"cp{arg}"
        elif word in _CHARSETS:
            self.encoding = _CHARSETS[word]

    def _row_edge(self, word: str, arg: str | None) -> None:
        """A row definition's start (\\trowd), its next cell's right edge, or a
        cell merged into the one before it (\\clmrg: an edge of two, which may
        or may not have a \\cell of its own)."""
        if word in ("trowd", "clmrg"):
            self.new_edges, self.merged = word == "trowd", word == "clmrg"
            return
        if self.new_edges:  # a \trowd with no \cellx keeps the row's edges
            self.edges, self.new_edges = [], False
        if self.merged and self.edges:
            self.edges[-1] = int(arg or 0)  # widens the cell it is merged into
        elif len(self.edges) < _MAX_COLUMNS:
            self.edges.append(int(arg or 0))
        self.merged = False

    def _symbol(self, symbol: str) -> None:
        self.skip = 0
        self.starred = symbol == "*"
        out = self.group.out
        if out is None:
            return
        if symbol in _BREAKS:
            self._break(symbol, out)
        elif symbol in _CHARS and not self.group.hidden:
            out.append(_CHARS[symbol])

    def _open(self) -> None:
        self.skip, self.starred = 0, False
        self.stack.append(self.group)
        self.group = self.group.nested()

    def _close(self) -> bool:
        """Close a group; False once the document's own group (or a stray brace)
        closes."""
        self.skip, self.starred = 0, False
        if not self.stack:
            return False
        if self.group.on_close is not None:
            self.group.on_close()
        self.group = self.stack.pop()
        return bool(self.stack)


@dataclass(slots=True)
class _Row:
    """A table row read: its text stands at ``out[at]``."""

    out: list[str]
    at: int
    cells: list[list[str]]
    edges: list[int]


def _row_text(cells: list[list[str]]) -> str:
    return "".join(line + "\n" for line in table_row_lines(cells))


def _add_label(label: list[str], out: list[str]) -> None:
    """Add a list item's number or bullet, and the tab after it, without the
    layout around it: LibreOffice writes a space before it, and a lone tab
    before a heading that shows no number."""
    text = "".join(label).lstrip()
    if text.strip():
        out.append(text)


def _add_if_none(text: str, out: list[str], start: int) -> None:
    """Add ``text`` where nothing was added since ``start``."""
    if not "".join(out[start:]).strip():
        out.append(text)


def _box_text(box: list[str]) -> str:
    """A text box's paragraphs, without the line ends around them."""
    return "".join(box).strip("\n")


def _joined(pieces: list[str]) -> str:
    """Text as one string, each character beyond U+FFFF, which RTF writes as two
    \\uN halves (a surrogate pair), made whole again."""
    text = "".join(pieces)
    if _SURROGATE.search(text):
        # A lone half, which no text can hold, becomes U+FFFD.
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def _known(encoding: str | None) -> bool:
    """True when Python can decode this code page (striprtf names some it cannot)."""
    try:
        codecs.lookup(encoding or "")
    except LookupError:
        return False
    return encoding is not None


def _unclosed(data: bytes) -> bool:
    """True when groups are opened and never closed: the file's end is lost.
    (Counted at C speed; escaped braces, \\{ and \\}, are text.)"""
    opened = data.count(b"{") - data.count(b"\\{")
    closed = data.count(b"}") - data.count(b"\\}")
    return opened > closed
