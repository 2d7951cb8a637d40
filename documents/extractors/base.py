"""Result type and error hierarchy shared by every extractor.

Pure Python (no Django) so a child process can import it cheaply.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .hyphens import join_hyphenated

NO_TEXT_NOTE = (
    "No text: its pages are damaged, or scans that could not be rendered for OCR."
)
BLANK_NOTE = "No text: the pages are blank, or their content could not be decoded."
# A file that is not paged (a Word file, plain text) with nothing but blank space.
EMPTY_NOTE = "No text: the document is blank."
DEFAULT_MAX_CHARS = 10_000_000
# PDF_ENGINE: PDFium, pdfplumber, or PDFium repaired page by page (extractors/pdf.py).
PDF_ENGINES = ("auto", "pdfium", "pdfplumber")
# Chinese, Japanese and Korean: ideographs, kana, hangul, their punctuation and
# full-width forms (a PDF's: set vertically, tategaki, read column by column; set a
# character at a time, never letter-spaced).
CJK = re.compile(
    r"[\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff"
    r"\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0003134f]"
)


# Told (pages done, pages in all) as a long extraction goes on.
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class ExtractOptions:
    """The settings extraction needs, passed to the (Django-free) child process."""

    pdf_engine: str = "auto"  # one of PDF_ENGINES
    max_chars: int = DEFAULT_MAX_CHARS  # EXTRACTED_TEXT_MAX_CHARS
    max_pages: int = 5_000  # EXTRACTION_MAX_PAGES
    ocr_mode: str = "auto"  # auto: pages without usable text; always; never
    ocr_languages: str = "eng"  # Tesseract's form: "eng+deu"
    ocr_dpi: int = 300  # resolution PDF pages are rendered at for OCR
    tessdata: str | None = None  # None: look where Tesseract's data usually is
    progress: Progress | None = field(default=None, compare=False)


DEFAULT_OPTIONS = ExtractOptions()


def truncated_note(max_chars: int) -> str:
    """The note on a document whose text was cut at the limit."""
    return (
        f"The text was cut at {max_chars:,} characters (EXTRACTED_TEXT_MAX_CHARS); "
        "the rest of the document was not read."
    )


def page_ranges(pages: list[int]) -> str:
    """Page numbers in short form: [1, 2, 3, 7] -> "1-3, 7"."""
    spans: list[list[int]] = []
    for page in pages:
        if spans and page == spans[-1][1] + 1:
            spans[-1][1] = page
        else:
            spans.append([page, page])
    return ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in spans)


def join_notes(*notes: str) -> str:
    """Several notes as one, skipping empty ones."""
    return " ".join(note for note in notes if note)


_CELL_SPACE = re.compile(r"[ \t\r\n]+")
# What is left of a word broken by a hyphen at a line break in a cell, once hyphens
# judged it ("Anglo-" then "Saxon"): the line break goes, not into a space.
_CELL_HYPHEN_BREAK = re.compile(r"(?<=\w[-\u2010])[ \t]*\n[ \t]*(?=\w)")


def outside_tables(
    parent: Any, table: str, blocks: tuple[str, ...], boxes: tuple[str, ...]
) -> Iterator[Any]:
    """The ``blocks`` (paragraphs and the like) and ``table`` elements under
    ``parent``, in document order, not the blocks inside the tables (read with
    them). lxml walks a part without a table; a table is walked once, however deep
    it lies in others. ``boxes``: the blocks that may hold a text box with a table
    in it, which come before it."""
    for child in parent:
        if child.tag == table:
            yield child
        elif not len(child):  # an empty paragraph: lxml's searches cost
            if child.tag in blocks:
                yield child
        elif next(child.iter(table), None) is None:
            yield from child.iter(*blocks)
        else:
            if child.tag in boxes:
                yield child
            yield from outside_tables(child, table, blocks, boxes)


def table_row_lines(cells: list[list[str]]) -> Iterator[str]:
    """A word processor's table row, given each cell's lines: one line of its cells
    separated by tabs (as spreadsheets' rows are read) when every cell holds at
    most one line, a row of data; else each cell's lines in turn, as for a page
    laid out in a table (a letterhead, a CV's two columns), which one line would
    run together. Blank lines are left out; a row that shows no text gives none."""
    cells = [[line for line in lines if line.strip()] for lines in cells]
    if any(len(lines) > 1 for lines in cells):
        for lines in cells:
            yield from lines
        return
    # A tab or a line break inside a cell would read as the next cell or row.
    line = "\t".join(
        _CELL_SPACE.sub(" ", mend_cell_breaks(lines[0])).strip() if lines else ""
        for lines in cells
    )
    if line := line.rstrip("\t"):
        yield line


def mend_cell_breaks(text: str) -> str:
    """A table's or a sheet's cell text, before it is put on one line: a word
    broken by a hyphen at a line break in it ("e-" then "mail") mended as the rest
    of the text's are, judged by the cell's own words and the dictionary (the whole
    text, which hyphens.join_hyphenated reads later, has no line break left there)."""
    if "\n" not in text:
        return text
    text = join_hyphenated(text.replace("\r\n", "\n"))
    return _CELL_HYPHEN_BREAK.sub("", text)


def comment_line(text: str, cell: str = "") -> str:
    """A reviewer's comment as every format reads it, after the text it is on:
    "Comment: …", or "Comment on B3: …" for one on a spreadsheet's `cell`; one
    line, its line breaks spaces (a word broken at one mended, as a cell's); ""
    for a comment without text."""
    text = " ".join(mend_cell_breaks(text).split())
    if not text:
        return ""
    return f"Comment on {cell}: {text}" if cell else f"Comment: {text}"


class TextBuilder:
    """Collects text up to a limit. Extractors stop reading once `add` returns False,
    so a small file that expands enormously never becomes one enormous string."""

    def __init__(self, max_chars: int, separator: str = "\n") -> None:
        self.max_chars = max_chars
        self.separator = separator
        self.truncated = False
        self._parts: list[str] = []
        self._size = 0

    def add(self, piece: str) -> bool:
        """Append one piece (after the separator); False once the limit cut it."""
        if self._parts:
            piece = self.separator + piece
        room = self.max_chars - self._size
        if len(piece) > room:
            piece = piece[:room]
            self.truncated = True
        self._parts.append(piece)
        self._size += len(piece)
        return not self.truncated

    def extend(self, pieces: Iterable[str]) -> bool:
        """Add pieces until the limit cuts one; the rest are never even produced."""
        return all(self.add(piece) for piece in pieces)

    @property
    def text(self) -> str:
        """Everything collected so far."""
        return "".join(self._parts)

    @property
    def note(self) -> str:
        """The truncation note, or "" when everything fitted."""
        return truncated_note(self.max_chars) if self.truncated else ""


@dataclass(frozen=True, slots=True)
class ExtractionResult:
    """Text pulled out of one document, with how far to trust it."""

    text: str
    page_count: int | None
    confidence: float
    extractor: str
    note: str = ""
    # Figures for the attempt's metrics row (e.g. which pages were OCRed, OCR time).
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"confidence must be within 0..1, got {self.confidence!r}")

    @property
    def chars(self) -> int:
        """Number of characters of extracted text."""
        return len(self.text)

    @property
    def is_empty(self) -> bool:
        """True when no visible text came out."""
        return not self.text.strip()


class ExtractionError(Exception):
    """Base class: extraction failed; `error_type` is the queue's error type."""

    error_type: ClassVar[str] = "unknown"
    default_message: ClassVar[str] = "Text extraction failed."

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.default_message)

    @property
    def message(self) -> str:
        """The human-readable message shown to the user."""
        return str(self)

    def without_paths(
        self, path: str | os.PathLike[str] | None = None
    ) -> ExtractionError:
        """This error with file paths taken out of its message (itself if none)."""
        message = hide_paths(str(self), path)
        return self if message == str(self) else _rebuild(type(self), message)

    def __reduce__(self) -> tuple[object, tuple[type[ExtractionError], str]]:
        # Subclass __init__s rewrite their argument, so unpickling must not rerun them.
        return _rebuild, (type(self), str(self))


def _rebuild(cls: type[ExtractionError], message: str) -> ExtractionError:
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)
    return exc


class CorruptFileError(ExtractionError):
    """The file claims a supported format but is damaged or unreadable."""

    error_type = "corruption"

    def __init__(self, reason: str = "it could not be read") -> None:
        super().__init__(f"The file is damaged: {reason}")


class EncryptedFileError(CorruptFileError):
    """The PDF needs a user password; permanent, like corruption."""

    default_message = (
        "This PDF is encrypted and needs a password; upload an unprotected copy."
    )

    def __init__(self, message: str | None = None) -> None:
        # Skip CorruptFileError's "damaged" wording: the file is fine, just locked.
        ExtractionError.__init__(self, message)


class RefusedFileError(CorruptFileError):
    """The file is refused for what reading it would take (a ZIP that would unpack
    to hundreds of megabytes); permanent, like corruption, yet not damaged."""

    default_message = "This file is refused: reading it would take too much memory."

    def __init__(self, message: str | None = None) -> None:
        # Skip CorruptFileError's "damaged" wording: nothing in the file is broken.
        ExtractionError.__init__(self, message)


class UnsupportedFileError(ExtractionError):
    """The file is in no format we read, or in a variant we cannot read."""

    error_type = "unsupported"
    default_message = "This file is not in a format that can be read."


class ExtractorMissingError(ExtractionError):
    """A library the extractor needs is not installed (retryable after install)."""

    error_type = "extractor_missing"
    default_message = "The extractor for this file type is not installed."


# A library's message is cut to this, and to its first line, before a person sees it.
_MAX_REASON = 160
# lxml appends where it parsed from: " (<string>, line 2)" or " (/a/file.xml, line 2)".
_LXML_WHERE = re.compile(r"\s*\([^()]*, line \d+\)$")


# An absolute path of two parts or more (not a URL's, not "and/or"), or a Windows one.
_ABSOLUTE_PATH = re.compile(
    r"(?<![\w.~/:-])/(?:[^\s/'\"<>()\[\],;]+/)+[^\s/'\"<>()\[\],;]*"
    r"|\b[A-Za-z]:\\(?:[^\s\\'\"<>]+\\)+[^\s\\'\"<>]*"
)


def hide_paths(message: str, path: str | os.PathLike[str] | None = None) -> str:
    """A message with the file's path, and any other server path, taken out:
    libraries name the file they failed on, and people must not see where the
    server keeps it."""
    if path is not None:
        for form in sorted({os.fspath(path), os.path.abspath(path)}, key=len)[::-1]:
            message = message.replace(form, "the file")
    return _ABSOLUTE_PATH.sub("…", message)


def short_reason(exc: BaseException) -> str:
    """A library's message as a short, one-line reason fit to show a person."""
    lines = hide_paths(str(exc)).strip().splitlines()
    reason = _LXML_WHERE.sub("", lines[0] if lines else "").strip().rstrip(".")
    reason = reason or type(exc).__name__
    if len(reason) > _MAX_REASON:
        reason = reason[: _MAX_REASON - 1].rstrip() + "…"
    return reason


def _chain(exc: BaseException) -> Iterable[BaseException]:
    """The exception and those it was raised from or while handling, outermost first."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _xml_error_types() -> tuple[type[BaseException], ...]:
    # Imported only once something failed: a child process starts without them.
    from xml.etree.ElementTree import ParseError
    from xml.parsers.expat import ExpatError

    types: list[type[BaseException]] = [ParseError, ExpatError]
    try:
        from lxml.etree import LxmlSyntaxError

        types.append(LxmlSyntaxError)
    except ImportError:
        pass
    try:  # openpyxl parses through defusedxml when it is installed
        from defusedxml import DefusedXmlException

        types.append(DefusedXmlException)
    except ImportError:
        pass
    return tuple(types)


# Office XML never declares a DTD; entity bombs ("billion laughs") do.
DTD_REASON = "a DOCTYPE or entity declaration, which is not allowed"


def parse_xml(data: bytes) -> Any:
    """The root element of XML from an uploaded file, parsed with lxml resolving no
    entity and fetching nothing: the file is someone else's. Raises lxml's
    XMLSyntaxError."""
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    return etree.fromstring(data, parser)


def damaged_xml(exc: BaseException) -> CorruptFileError | None:
    """The plain error for XML that cannot be parsed, found anywhere in the chain
    of `exc` (libraries wrap their parser's error in their own); else None."""
    xml_errors = _xml_error_types()
    for error in _chain(exc):
        if isinstance(error, xml_errors):
            if type(error).__module__.startswith("defusedxml"):
                # DTDForbidden, EntitiesForbidden: their text is a repr.
                reason = DTD_REASON
            else:
                reason = short_reason(error)
            return CorruptFileError(f"its XML cannot be parsed ({reason})")
    return None


def unreadable(exc: BaseException, what: str) -> CorruptFileError:
    """The error for a library that could not read a file: damaged XML said plainly,
    else `what` ("its workbook cannot be read") with the deepest reason given."""
    damaged = damaged_xml(exc)
    if damaged is not None:
        return damaged
    *_, deepest = _chain(exc)
    return CorruptFileError(f"{what} ({short_reason(deepest)})")


def classify(exc: BaseException) -> str:
    """Map an exception to a queue error type."""
    if isinstance(exc, ExtractionError):
        return exc.error_type
    if isinstance(exc, ImportError):  # ModuleNotFoundError is a subclass
        return "extractor_missing"
    if isinstance(exc, TimeoutError):  # also concurrent.futures.TimeoutError
        return "timeout"
    return "unknown"
