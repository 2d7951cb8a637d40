"""RTF extraction: the body, then footnotes, then headers and footers.

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
from itertools import chain

from striprtf.striprtf import charset_map, destinations

from .base import (
    CorruptFileError,
    ExtractionResult,
    ExtractOptions,
    TextBuilder,
    join_notes,
)

_CUT = "the RTF is incomplete (its end is missing); the upload may have been cut short"

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
# Headers and footers: of every page, left, right and first pages.
_MARGINS = frozenset(
    f"{where}{pages}" for where in ("header", "footer") for pages in ("", "l", "r", "f")
)
_READ = _NOTES | _MARGINS
_SKIPPED = destinations - _READ
# A paragraph mark still ends its paragraph when hidden: joining the two paragraphs
# could glue their words together.
_BREAKS = {"par": "\n", "sect": "\n\n", "page": "\n\n", "row": "\n", "cell": "|"}
_BREAKS |= {"nestcell": "|", "line": "\n", "\n": "\n", "\r": "\n"}
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


def extract_rtf(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """Extract the text of an RTF file, up to the limit."""
    with open(path, "rb") as fh:
        data = fh.read()
    body, notes, margins = _read(data.decode("latin-1"))
    # An RTF's text is never longer than the file, so the limit bounds the output.
    text = TextBuilder(options.max_chars)
    text.extend(chain.from_iterable(p.splitlines() for p in (body, *notes, *margins)))
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


def _read(rtf: str) -> tuple[str, list[str], list[str]]:
    """The body's text, each footnote's and each distinct header's or footer's."""
    body: list[str] = []
    notes: list[list[str]] = []
    margins: list[list[str]] = []
    fonts: dict[str, str] = {}  # font number -> its code page, from \fcharset
    # The state a group keeps and its closing brace restores. `out` is where its
    # text goes: None in a destination that holds no text.
    out: list[str] | None = body
    ucskip, hidden, font, in_font_table = 1, False, "", False
    stack: list[tuple[list[str] | None, int, bool, str, bool]] = []
    encoding, default_font, font_defined = "cp1252", "", ""
    skip = 0  # fallback characters still to skip after a \uN
    starred = False  # just after \*: a destination to skip unless we read it
    pending = bytearray()  # \'hh bytes: a double-byte character spans two
    pending_encoding = encoding
    pos, end = 0, len(rtf)
    while pos < end:
        match = _TOKEN.match(rtf, pos)
        pos = match.end()
        chars, word, arg, byte, symbol, brace = match.groups()
        if pending and byte is None:
            if out is not None:  # always: the bytes' group has not changed since
                out.append(pending.decode(pending_encoding, "replace"))
            pending.clear()
        if chars is not None:
            starred = False
            if skip:
                chars, skip = chars[skip:], max(skip - len(chars), 0)
            if out is not None and not hidden:
                out.append(chars)
        elif byte is not None:
            starred = False
            if skip:
                skip -= 1
            elif out is not None and not hidden:
                pending_encoding = fonts.get(font, encoding)
                pending.append(int(byte, 16))
        elif word is not None:
            skip = 0
            if word == "u" and arg is not None:
                if out is not None and not hidden:
                    out.append(chr(int(arg) & 0xFFFF))  # a signed 16-bit number
                skip = ucskip
            elif word == "bin" and arg is not None:
                pos += max(int(arg), 0)  # binary data, of a picture or object
            elif out is None:
                if in_font_table and word == "f":
                    font_defined = arg or ""
                elif in_font_table and word == "fcharset" and arg is not None:
                    charset = charset_map.get(int(arg))
                    if _known(charset):
                        fonts[font_defined] = charset
            elif word in _SKIPPED or starred and word not in _READ:
                out, in_font_table = None, word == "fonttbl"
            elif word in _READ:
                out = []
                (notes if word in _NOTES else margins).append(out)
            elif word in _BREAKS:
                out.append(_BREAKS[word])
            elif word in _CHARS:
                if not hidden:
                    out.append(_CHARS[word])
            elif word == "v":
                hidden = arg != "0"
            elif word == "plain":
                hidden, font = False, default_font
            elif word == "f":
                font = arg or ""
            elif word == "uc":
                ucskip = max(int(arg or 1), 0)
            elif word == "deff":
                default_font = font = arg or ""
            elif word == "ansicpg":
                if _known(f"cp{arg}"):
                    encoding = f"cp{arg}"
            elif word in _CHARSETS:
                encoding = _CHARSETS[word]
            starred = False
        elif symbol is not None:
            skip = 0
            starred = symbol == "*"
            if out is None:
                pass
            elif symbol in _BREAKS:
                out.append(_BREAKS[symbol])
            elif symbol in _CHARS and not hidden:
                out.append(_CHARS[symbol])
        elif brace is not None:
            skip, starred = 0, False
            if brace == "{":
                stack.append((out, ucskip, hidden, font, in_font_table))
            elif not stack:
                break  # a stray closing brace
            else:
                out, ucskip, hidden, font, in_font_table = stack.pop()
                if not stack:
                    break  # the document's group is closed: anything after is not shown
    if pending and out is not None:
        out.append(pending.decode(pending_encoding, "replace"))
    return (
        _joined(body),
        [note for note in (_joined(n).strip() for n in notes) if note],
        list(dict.fromkeys(m for m in (_joined(m).strip() for m in margins) if m)),
    )


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
