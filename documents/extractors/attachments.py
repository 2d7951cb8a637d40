"""Files attached to a document (an e-mail's attachments, a winmail.dat's, a PDF's
embedded files), read as an upload of them is, each under a heading with its name,
so that a search finds the document by them; within bounds, and saying what was not
read."""

from __future__ import annotations

import dataclasses
import io
import tempfile
from collections.abc import Iterable, Iterator
from contextvars import ContextVar

from . import registry
from .base import ExtractionResult, ExtractOptions, join_notes, short_reason
from .detect import detect_named_format
from .formats import EMAIL, IMAGES, PDF, REFUSED_PICTURES, TEXT, Format, by_extension
from .text import decode

# Not pictures, nor scans in a PDF: OCR would spend the one timeout a document's
# extraction has on them. So many are read, each so large and so long at most; the
# rest are named only (or read in part), and the note says so.
MAX_READ_ATTACHMENTS = 20
MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024
MAX_ATTACHMENT_PAGES = 500
UNNAMED = "(unnamed attachment)"  # a file attached without a name
_CUT_SHORT = "cut short in the e-mail"
_NOT_OCRED = "scans are not OCRed here"
# Set while an attachment is read: the files attached to it are named, not read (a
# PDF holding twenty PDFs that each hold twenty... would multiply the work).
_READING_ONE: ContextVar[bool] = ContextVar("reading_an_attachment", default=False)


@dataclasses.dataclass(frozen=True, slots=True)
class Attached:
    """One attached file."""

    name: str
    data: bytes
    sent_as_text: bool = False  # declared text (text/*): read in its charset
    charset: str | None = None
    cut: bool = False  # its bytes end early (base64 cut in a truncated e-mail)
    ending: bool = False  # the part a truncated e-mail ends in: maybe cut short


class Attachments:
    """Reads the attached files that are documents, within the bounds above; keeps
    why those not read were not."""

    def __init__(self, options: ExtractOptions) -> None:
        self.options = dataclasses.replace(
            options,
            ocr_mode="never",
            max_pages=min(options.max_pages, MAX_ATTACHMENT_PAGES),
            progress=None,
        )
        self.inside_attachment = _READING_ONE.get()
        self.left = MAX_READ_ATTACHMENTS
        self.past_count = 0  # documents past MAX_READ_ATTACHMENTS, named only
        self.unread: list[str] = []  # "name (why)"
        self.cut: list[str] = []  # read in part: "name (how far)"
        # Of a format not read (old Office files): the names, its advice said once.
        self.refused: dict[Format, list[str]] = {}

    def lines(self, file: Attached) -> Iterator[str]:
        """A heading with the file's name, then its text; nothing when it is not a
        document, or holds no text."""
        data, name = file.data, file.name
        if not data or self.inside_attachment:
            return
        fmt = detect_named_format(io.BytesIO(data), name)
        ending = file.cut or file.ending
        if ending and (fmt is None or not _document(fmt, file)):
            fmt = by_extension(name)  # what is left may not look like one
        if fmt is not None and _refused_document(fmt):
            # An old .doc is a document all the same: its reader is told why its
            # text is missing, and what to do, as an upload of it would be.
            self.refused.setdefault(fmt, []).append(name)
            return
        if fmt is None or not _document(fmt, file):
            return
        if self.too_large(name, len(data)):
            return
        if self.left <= 0:
            self.past_count += 1
            return
        self.left -= 1
        try:
            result = self._text(file, fmt)
        except Exception as exc:  # damage, or a fault: it costs its own text only
            why = f"{_CUT_SHORT}: " if ending else ""
            self.unread.append(f"{name} ({why}{short_reason(exc)})")
            return
        text, pages = result.text, result.page_count
        if not text.strip():
            if ending:
                self.unread.append(f"{name} ({_CUT_SHORT})")
            elif fmt is PDF:
                self.unread.append(f"{name} (no text layer; {_NOT_OCRED})")
            return
        parts = []
        if file.cut:
            parts.append(_CUT_SHORT)
        elif fmt is PDF and pages and pages > self.options.max_pages:
            parts.append(f"its first {self.options.max_pages:,} of {pages:,} pages")
        if fmt is PDF and "unread_pages" in result.details:
            # Its typed pages were read, its scans not: the reader is told which.
            parts.append(_unread_pages(result.details["unread_pages"]))
        if parts:
            self.cut.append(f"{name} ({'; '.join(parts)})")
        yield f"Attachment: {name}"
        yield from text.splitlines()

    def too_large(self, name: str, size: int) -> bool:
        """Whether a file is too large to be read; if so, the note names it."""
        if size <= MAX_ATTACHMENT_BYTES:
            return False
        self.unread.append(f"{name} (over {MAX_ATTACHMENT_BYTES // 2**20} MB)")
        return True

    def past_limit(self, name: str) -> None:
        """A file not opened, as no more are read: counted among those named only
        when its name says it is a document."""
        fmt = by_extension(name)
        if fmt is not None and _document(fmt, Attached(name, b"")):
            self.past_count += 1

    def _text(self, file: Attached, fmt: Format) -> ExtractionResult:
        """The file's text, with its count of pages if it has pages."""
        if fmt.extractor == TEXT.extractor and file.sent_as_text:
            # By its declared charset, as an e-mail's body. NULs carry no text.
            text = decode(file.data, file.charset).replace("\x00", "")
            return ExtractionResult(text, None, 1.0, "email")
        settings = {
            field.name: getattr(self.options, field.name)
            for field in dataclasses.fields(self.options)
            if field.name != "progress"
        }
        reading = _READING_ONE.set(True)
        try:
            with tempfile.NamedTemporaryFile(prefix="attachment-") as fh:
                fh.write(file.data)
                fh.flush()
                return registry.extract(fh.name, mime_type=fmt.mime_type, **settings)
        finally:
            _READING_ONE.reset(reading)

    @property
    def note(self) -> str:
        """What was not read, and why."""
        reasons = self.unread + [
            f"{', '.join(names)} ({_refusal(fmt)})"
            for fmt, names in self.refused.items()
        ]
        unread = f"Attachments not read: {'; '.join(reasons)}." if reasons else ""
        cut = f"Attachments read in part: {'; '.join(self.cut)}." if self.cut else ""
        past = (
            f"Only the first {MAX_READ_ATTACHMENTS} attachments that are documents "
            f"were read; {self.past_count} more are named only."
            if self.past_count
            else ""
        )
        return join_notes(unread, cut, past)


def names_line(names: Iterable[str]) -> Iterator[str]:
    """The block that names a message's or a PDF's attached files, after their text."""
    yield f"Attachments: {', '.join(names)}"


def separated(blocks: Iterable[Iterator[str]], *, after: bool) -> Iterator[str]:
    """The lines of each block that has any, a blank line between blocks (and
    before the first, when it comes after text)."""
    for lines in blocks:
        first = next(lines, None)
        if first is None:
            continue
        if after:
            yield ""
        after = True
        yield first
        yield from lines


def _unread_pages(ranges: str) -> str:
    """ "its pages 2-3, 7 have no text layer and were not read; ..." """
    if ranges.isdigit():
        return f"its page {ranges} has no text layer and was not read; {_NOT_OCRED}"
    return f"its pages {ranges} have no text layer and were not read; {_NOT_OCRED}"


def _refused_document(fmt: Format) -> bool:
    """A document in a format that is not read (an old .doc, .xls or .ppt, an
    Outlook .msg, a password-protected Office file); not a picture, never read."""
    return not fmt.readable and fmt not in REFUSED_PICTURES


def _refusal(fmt: Format) -> str:
    """Its format's refusal, as the reason in a note: "an old Word 97-2003 (DOC)
    file, which cannot be read; open it in Word or LibreOffice, save it as ..."."""
    reason = fmt.refusal.rstrip(".").removeprefix("This is ")
    return reason[:1].lower() + reason[1:] if reason.startswith("This") else reason


def _document(fmt: Format, file: Attached) -> bool:
    """Whether a file of this format is read: a document, not a picture or a
    message (an e-mail reads those it forwards as such). Text is read when sent or
    named as text: a signature (signature.asc) or a key is text too."""
    if not fmt.readable or fmt in IMAGES or fmt is EMAIL:
        return False
    if not fmt.textual:
        return True
    named = by_extension(file.name)
    return file.sent_as_text or (named is not None and named.textual and named.readable)
