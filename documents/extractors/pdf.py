"""PDF extraction: PDFium, pdfplumber, or "auto" (PDFium, repaired page by page)."""

from __future__ import annotations

import ctypes
import logging
import math
import os
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import pairwise
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from .base import (
    BLANK_NOTE,
    CJK,
    DEFAULT_OPTIONS,
    NO_TEXT_NOTE,
    PDF_ENGINES,
    CorruptFileError,
    EncryptedFileError,
    ExtractionError,
    ExtractionResult,
    ExtractOptions,
    TextBuilder,
    UnsupportedFileError,
    comment_line,
    join_notes,
    page_ranges,
)
from .ocr import OcrUnavailable, reader
from .pdf_columns import columns_read_across
from .pdf_files import with_embedded_files
from .pdf_tracking import tracking_undone
from .sniff import PREFIX_BYTES, looks_like_pdf

_EVERYWHERE = (-1e6, -1e6, 1e6, 1e6)  # wider than any crop box: keep all text
_SPARSE_CHARS = 500  # only small pages get the (Python-speed) line-order check
_NO_WIDTH = 0.01  # a text object narrower than this is left out of PDFium's text
_SAMPLE = 24  # characters per page probed for a broken font map
_TURN_SAMPLE = 8  # characters per page probed for sideways text first
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # noise in page text
_GARBLED = re.compile(r"[\x00\x01\x03-\x08\x0b\x0c\x0e-\x1f\x7f\ufffd]")
_DUBIOUS = re.compile(r"[\ue000-\uf8ff\ufffd]|\(cid:\d+\)")  # unreadable glyphs
_WORDLIKE = re.compile(r"[^\W_]")  # a letter or digit
_WORD = re.compile(r"[^\W\d_]{3,}")  # a word (of three letters or more)
# Lines further apart than this many times their (median) height are not lines of
# one text: a table's cells, or its rows.
_CELL_PITCH = 1.6
# Annotations whose /Contents is a person's comment (a popup repeats its parent's),
# read as "Comment: …"; a free-text box's shows on the page, and is read as it shows.
_COMMENTED = {
    getattr(pdfium_c, f"FPDF_ANNOT_{kind}")
    for kind in (
        "TEXT", "FREETEXT", "LINE", "SQUARE", "CIRCLE", "POLYGON", "POLYLINE",
        "HIGHLIGHT", "UNDERLINE", "SQUIGGLY", "STRIKEOUT", "STAMP", "CARET", "INK",
        "FILEATTACHMENT",
    )
}  # fmt: skip
_TEXT_FIELDS = {
    pdfium_c.FPDF_FORMFIELD_TEXTFIELD,
    pdfium_c.FPDF_FORMFIELD_COMBOBOX,
    pdfium_c.FPDF_FORMFIELD_LISTBOX,
}
_FIELD_FORMS = {pdfium_c.FORMTYPE_ACRO_FORM, pdfium_c.FORMTYPE_XFA_FOREGROUND}
# This PDFium reads no XFA, and a hybrid form's fields are read instead: its warning
# about that on every such file says nothing anyone could act on.
logging.getLogger("pypdfium2._helpers.document").addFilter(
    lambda record: "without XFA support" not in record.getMessage()
)
_LEVEL = 0.1  # radians: a baseline turned less than about 6° is level
# Of a glyph's height across a turned baseline (its loose box's): glyphs set one at
# a time further apart than this along it have a space between them (a space is
# about a quarter of it; a kern, far less).
_SIDEWAYS_SPACE = 0.15
# A page with at most this much text over images covering this share of it is read
# from its image too: a stamp, a page or Bates number, a fax header on a scan.
_STAMP_CHARS = 80
_SCANNED_SHARE = 0.6
_LAM, _ALEFS = "\u0644", frozenset("\u0622\u0623\u0625\u0627")  # ل, آأإا
_RTL = re.compile(r"[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")
# A bad OCR layer splits every word into letters ("T h e  q u i c k"). Latin only:
# Chinese or Japanese text is often extracted one character per "word".
_LATIN_LETTER = re.compile(r"^[0-9A-Za-z\u00c0-\u024f]$")
_SPACED_MIN_WORDS = 12
_SPACED_SHARE = 0.6
_MAX_RENDER_PIXELS = 40_000_000  # a page bigger than A1 at 300 dpi is rendered coarser
_SMALL_RENDER_PIXELS = 2_000_000  # smaller than A6 at 300 dpi: see _render
_SCAN_ENLARGEMENT = 3  # a scan is rendered at most this many times its pixels a side
_VERTICAL_SHARE = 0.6  # of a page's characters stacked upright in columns
_VERTICAL_MIN_CHARS = 4
_SAMPLE_STEPS = 100  # pairs of characters looked at first
_NO_PAGES_NOTE = "No text: this PDF has no pages."
_SAME_TEXT = 0.8  # similarity of OCR's reading of a line to the line itself
# Of a font's height: letters further apart than this are two words (a space is
# about a third of it; the kern after a subscript, under a fifth).
_WORD_GAP = 0.3
# Points: a letter drawn again this close to itself is the same letter (faked bold);
# two letters side by side lie further apart, but in print under 3 points high.
_OVERPRINT = 0.5
_CELL_AND_AROUND = [(dx, dy) for dx in (0, -1, 1) for dy in (0, -1, 1)]


@dataclass(slots=True)
class _Page:
    body: str = ""
    extra: str = ""  # annotation and form-field text, outside the content stream
    dubious: float = 0.0  # characters we doubt (broken font map, PUA glyphs)
    image_only: bool = False
    # A few words over an image that fills the page: a scan with a page number or a
    # Bates number stamped on it, its body only in the image.
    stamped_scan: bool = False
    blank: bool = False  # nothing drawn at all (or nothing PDFium could decode)
    damaged: bool = False
    ocr_confidence: float | None = None  # set when the body is OCR's reading
    turned: bool = False  # OCR read it turned upright (a scan on its side)
    attaches_files: bool = False  # a paperclip comment (FileAttachment annotation)

    @property
    def text(self) -> str:
        return "\n".join(t for t in (self.body.strip(), self.extra) if t)


def extract_pdf(
    path: str | os.PathLike[str], options: ExtractOptions = DEFAULT_OPTIONS
) -> ExtractionResult:
    """Extract a PDF's text; pages without usable text are OCRed (``ocr_mode``).
    Then the files embedded in it: named, and the documents among them read."""
    annotated: list[int] = []  # pages with files attached to their annotations
    result = _pages_text(path, options, annotated)
    return with_embedded_files(path, result, options, annotated)


def _pages_text(
    path: str | os.PathLike[str], options: ExtractOptions, annotated: list[int]
) -> ExtractionResult:
    """The text of the PDF's pages; ``annotated`` is given the indices of those
    with files attached to their annotations (read in "auto" only, as comments)."""
    engine = options.pdf_engine
    if engine not in PDF_ENGINES:
        raise ValueError(f"unknown PDF engine {engine!r}; choose one of {PDF_ENGINES}")
    with open(path, "rb") as fh:
        prefix = fh.read(PREFIX_BYTES)
    if not prefix:
        raise CorruptFileError("it is empty (0 bytes); the upload may have failed")
    if not looks_like_pdf(prefix):
        raise UnsupportedFileError("This file is not a PDF.")
    if engine == "pdfplumber":
        pages, total = _plumber_document(path, options.max_pages)
        return _with_ocr(path, pages, total, "pdfplumber", options)
    try:
        pages, total, repaired = _pdfium_document(path, options)
        annotated += [i for i, page in enumerate(pages) if page.attaches_files]
    except CorruptFileError as exc:
        if engine != "auto" or isinstance(exc, EncryptedFileError):
            raise
        # pdfminer recovers some files PDFium refuses; worth a try only on failure.
        # PDFium cannot render such a file either, so there is no OCR here.
        try:
            pages, total = _plumber_document(path, options.max_pages)
            rescued = _result(pages, total, "pdfplumber", options)
        except EncryptedFileError:
            raise
        except ExtractionError:
            raise exc from None
        if rescued.is_empty and rescued.page_count:
            raise
        return rescued
    return _with_ocr(
        path, pages, total, "pdfium+pdfplumber" if repaired else "pdfium", options
    )


def _with_ocr(
    path: str | os.PathLike[str],
    pages: list[_Page],
    total: int,
    extractor: str,
    options: ExtractOptions,
) -> ExtractionResult:
    wanted = [i for i, page in enumerate(pages) if _needs_ocr(page, options.ocr_mode)]
    if not wanted:
        never = options.ocr_mode == "never" and any(
            p.image_only or (not p.text and not p.blank and not p.damaged)
            for p in pages
        )
        why = "OCR is turned off (OCR_MODE=never)." if never else ""
        return _result(pages, total, extractor, options, why)
    try:
        ocr = reader(options)
    except OcrUnavailable as exc:
        return _result(pages, total, extractor, options, str(exc))
    seconds = ocr.seconds
    done = _ocr_pages(path, pages, wanted, ocr, options)
    turned = [i + 1 for i in done if pages[i].turned]
    details = {
        "ocr_pages": page_ranges([i + 1 for i in done]),
        "ocr_page_count": len(done),
        "ocr_ms": round((ocr.seconds - seconds) * 1000),
        # As an image's: where a scan lay on its side, for whoever checks the scanner.
        **({"rotated_pages": page_ranges(turned)} if turned else {}),
    }
    if any(pages[i].ocr_confidence is not None for i in done):
        extractor += "+tesseract"
    return _result(pages, total, extractor, options, details=details)


def _needs_ocr(page: _Page, mode: str) -> bool:
    """A page to read from its image: no text, or text that is no use."""
    if page.blank or page.damaged or mode == "never":
        return False
    body = page.body.strip()
    if mode == "always" or not body or page.stamped_scan:
        return True
    return not _usable(page)


def _usable(page: _Page) -> bool:
    """Whether the page's text layer reads as text (not garbage glyphs, nor an
    OCR layer that split every word into letters)."""
    body = page.body.strip()
    visible = len(body) - body.count(" ") - body.count("\n")
    return not _letter_spaced(body) and page.dubious < 0.5 * max(visible, 1)


def _letter_spaced(body: str) -> bool:
    words = body.split()
    if len(words) < _SPACED_MIN_WORDS:
        return False
    letters = sum(1 for w in words if _LATIN_LETTER.match(w))
    return letters >= _SPACED_SHARE * len(words)


def _ocr_pages(
    path: str | os.PathLike[str],
    pages: list[_Page],
    wanted: list[int],
    ocr: Any,
    options: ExtractOptions,
) -> list[int]:
    """Render and read the wanted pages, in order, until the text is long enough.

    A page OCR reads nothing on keeps what it had. Returns the pages read.
    """
    progress = options.progress
    done, total = len(pages) - len(wanted), len(pages)
    todo = set(wanted)
    read: list[int] = []
    size = 0  # characters before this page, to stop at the text limit
    doc = pdfium.PdfDocument(os.fspath(path))
    try:
        if progress:
            progress(done, total)
        for i, page in enumerate(pages):
            if i in todo and size < options.max_chars:
                bitmap = _render(doc, i, options.ocr_dpi)
                if bitmap is not None:
                    try:
                        found = ocr.read(bitmap.to_pil())
                    finally:
                        bitmap.close()
                    read.append(i)
                    # A stamped scan's reading replaces its few words only if it
                    # finds more: they may be all there is (a picture, a logo).
                    if found.text and (
                        not page.stamped_scan
                        or len(found.text.split()) > 2 * len(page.body.split())
                    ):
                        stamp = page.stamped_scan and _usable(page)
                        page.body = (
                            _with_stamp(found.text, page.body) if stamp else found.text
                        )
                        page.dubious = 0.0
                        page.image_only = False
                        page.turned = bool(found.rotated)
                        confidences = found.confidences or [0]
                        page.ocr_confidence = sum(confidences) / len(confidences) / 100
                done += 1
                if progress:
                    progress(done, total)
            size += len(page.text) + 2
    finally:
        doc.close()
    return read


def _with_stamp(ocr: str, layer: str) -> str:
    """OCR's reading of a scan, with the exact words of the text stamped on it (a
    Bates number, a fax header) that OCR may misread ("ABC-0001 23"): each of the
    stamp's lines takes the place of the line OCR read it as, or goes after the
    rest when OCR read no such line."""
    lines = ocr.split("\n")
    unread = []
    for stamp in filter(None, (line.strip() for line in layer.splitlines())):
        key = _squashed(stamp)
        found = next(
            (k for k, line in enumerate(lines) if _reads_as(_squashed(line), key)),
            None,
        )
        if found is None:
            unread.append(stamp)
        else:
            lines[found] = stamp
    return "\n".join([*lines, *unread])


def _squashed(text: str) -> str:
    return "".join(text.split()).casefold()


def _reads_as(read: str, exact: str) -> bool:
    """Whether OCR's ``read`` is ``exact`` but for a few characters (both
    without spaces)."""
    if not read or abs(len(read) - len(exact)) > (1 - _SAME_TEXT) * len(exact):
        return False
    return SequenceMatcher(None, read, exact, autojunk=False).ratio() >= _SAME_TEXT


def _render(doc: Any, index: int, dpi: int) -> Any:
    """The page as a grey bitmap at ``dpi`` (coarser for huge pages and coarse
    scans), or None."""
    try:
        page = doc[index]
    except pdfium.PdfiumError:
        return None
    try:
        width, height = page.get_size()
        scale = dpi / 72
        if width * height * scale**2 < _SMALL_RENDER_PIXELS:
            # A page this small (a scan whose file claims 2,400 dpi, a till
            # receipt) is rendered at its scan's own resolution when that is finer.
            scale = max(scale, _scan_scale(page))
        elif _scan_only(page):
            # A scan whose file claims 72 dpi (Pillow's and img2pdf's default) has a
            # point per pixel: at 300 dpi it was 17 times its pixels, five times the
            # memory, yet finer than its pixels gives OCR nothing (it enlarges small
            # print itself). Three times keeps scans of 100 dpi or more at 300 dpi;
            # in whole dpi, as scans are made (at 99.99… dpi one lost a pixel).
            scan_dpi = max(round(_scan_scale(page) * 72), 1)
            scale = min(scale, _SCAN_ENLARGEMENT * scan_dpi / 72)
        scale = min(scale, math.sqrt(_MAX_RENDER_PIXELS / max(width * height, 1)))
        return page.render(scale=scale, grayscale=True)
    except pdfium.PdfiumError:
        return None
    finally:
        page.close()


def _scan_scale(page: Any) -> float:
    """Pixels per point of the page's finest image (0 without one)."""
    finest = 0.0
    for image in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=4):
        left, bottom, right, top = image.get_bounds()
        pixels = math.prod(image.get_px_size())
        if right > left and top > bottom:
            finest = max(finest, math.sqrt(pixels / ((right - left) * (top - bottom))))
    return finest


def _scan_only(page: Any) -> bool:
    """Whether all the page draws is images covering most of it (a scan, bare or
    under an invisible OCR layer): no text, lines or annotations that would render
    finer than the images' pixels."""
    if pdfium_c.FPDFPage_GetAnnotCount(page.raw) or _image_share(page) < _SCANNED_SHARE:
        return False
    for obj in page.get_objects(max_depth=4):
        if obj.type == pdfium_c.FPDF_PAGEOBJ_TEXT:
            mode = pdfium_c.FPDFTextObj_GetTextRenderMode(obj.raw)
            if mode != pdfium_c.FPDF_TEXTRENDERMODE_INVISIBLE:
                return False
        elif obj.type not in (pdfium_c.FPDF_PAGEOBJ_IMAGE, pdfium_c.FPDF_PAGEOBJ_FORM):
            return False
    return True


def _result(
    pages: list[_Page],
    total: int,
    extractor: str,
    options: ExtractOptions,
    ocr_note: str = "",
    details: dict[str, Any] | None = None,
) -> ExtractionResult:
    """The document's text (bounded) and confidence from its pages."""
    if not total:
        return ExtractionResult("", 0, 0.0, extractor, _NO_PAGES_NOTE)
    if all(p.damaged for p in pages):
        raise CorruptFileError("none of its pages can be read")
    details = details or {}
    bounded = TextBuilder(options.max_chars, "\n\n")
    for page in pages:
        if page.text and not bounded.add(page.text):
            break
    limit_note = ""
    if total > len(pages) and not bounded.truncated:
        limit_note = (
            f"Only the first {len(pages):,} of {total:,} pages were read "
            "(EXTRACTION_MAX_PAGES)."
        )
    notes = (bounded.note, limit_note)
    text = bounded.text
    if not text.strip():
        if all(p.blank for p in pages):
            note = BLANK_NOTE
        elif "ocr_pages" in details:
            note = "No text: OCR found none on these scanned pages."
        else:
            note = ocr_note or NO_TEXT_NOTE
        return ExtractionResult(
            "", total, 0.0, extractor, join_notes(note, *notes), details
        )
    layer = [p.text for p in pages if p.text and p.ocr_confidence is None]
    chars = sum(len(t) - t.count(" ") - t.count("\n") for t in layer) or 1
    dubious = sum(p.dubious for p in pages if p.ocr_confidence is None)
    quality = max(0.0, 1.0 - dubious / chars)
    scores = []
    unread = []  # pages whose text we could not read
    for number, page in enumerate(pages, 1):
        if page.ocr_confidence is not None:
            scores.append(page.ocr_confidence)
        elif page.text:
            scores.append(quality)
        elif not page.blank:
            scores.append(0.0)
            unread.append(number)
    missing = len(unread)
    note = ocr_note
    if missing:
        # Named for whoever reads this document inside another (an e-mail's).
        details = {**details, "unread_pages": page_ranges(unread)}
        note = f"{missing} of {len(pages)} pages have no readable text"
        if ocr_note:
            note += f" (scanned images or damaged pages): {ocr_note}"
        elif "ocr_pages" in details:
            note += "; OCR found none on them either."
        else:
            note += " (damaged, or scans that could not be rendered for OCR)."
    confidence = round(sum(scores) / len(scores), 3) if scores else 0.0
    return ExtractionResult(
        text, total, confidence, extractor, join_notes(note, *notes), details
    )


def _pdfium_document(
    path: str | os.PathLike[str], options: ExtractOptions
) -> tuple[list[_Page], int, bool]:
    """Pages read with PDFium (up to the page and text limits), their total, and
    whether pdfplumber repaired any."""
    auto = options.pdf_engine == "auto"
    try:
        doc = pdfium.PdfDocument(os.fspath(path))
    except pdfium.PdfiumError as exc:
        raise _load_error(path, exc.err_code) from exc
    try:
        # A hybrid form (AcroForm fields beside an XFA template) has its values in
        # the fields too.
        if auto and doc.get_formtype() in _FIELD_FORMS:
            doc.init_forms()  # needed to read form-field values
        total = len(doc)
        if total == 0:
            raise CorruptFileError("it has no pages")
        read = []
        size = 0
        for i in range(min(total, options.max_pages)):
            read.append(_pdfium_page(doc, i, auto=auto))
            size += len(read[-1][0].text)
            if size >= options.max_chars:  # later pages would be cut off anyway
                break
    finally:
        doc.close()
    pages = [page for page, _ in read]
    # PDFium takes the page tree's /Count on trust: one that overstates its kids
    # (a merging tool's slip) made up pages at the end that "could not be read".
    leaves = _pages_in_tree(path) if pages[-1].damaged else None
    if leaves and leaves < total and all(p.damaged for p in pages[leaves:]):
        pages, read, total = pages[:leaves], read[:leaves], leaves
    suspects = [i for i, (_, suspect) in enumerate(read) if suspect]
    repaired = False
    for i, body in _plumber_pages(path, suspects).items():
        if _prefer_plumber(pages[i], body):
            pages[i].body, pages[i].damaged = body, False
            pages[i].dubious = _dubious(body)
            repaired = True
    return pages, total, repaired


def _pdfium_page(doc: Any, index: int, *, auto: bool) -> tuple[_Page, bool]:
    """Read one page; the flag says pdfplumber should have a look at it too."""
    try:
        page = doc[index]
    except pdfium.PdfiumError:
        return _Page(damaged=True), auto
    try:
        # PDFium orders a page's lines as the page is shown, turned by its /Rotate:
        # lines set upright and turned with the page come out scrambled. Without
        # it, they read as set, and so do lines set sideways (which are ordered
        # along their own baselines either way).
        if page.get_rotation():
            page.set_rotation(0)
        textpage = page.get_textpage()
        if _cut_hidden_text(page, textpage):
            textpage.close()
            textpage = page.get_textpage()
    except pdfium.PdfiumError:
        page.close()
        return _Page(damaged=True), auto
    try:
        count = textpage.count_chars()
        plain = textpage.get_text_range(0, count)
        joins = _joined_breaks(textpage, plain)
        raw = _page_text(textpage, plain, count, joins)
        vertical = ""
        if CJK.search(raw) and _steps_down(textpage, count):
            vertical = _in_columns(_pdfium_glyphs(textpage, count))
        if vertical:
            raw = vertical
        elif _RTL.search(raw):
            raw = _rtl_in_reading_order(textpage, raw, plain, count)
        elif across := columns_read_across(textpage, plain, count):
            raw = across
        elif (
            rows := _rows_if_out_of_order(textpage, plain, count, raw, joins)
        ) and not (
            _turned_text(textpage, count)  # lines set sideways: not rows across
        ):
            raw = rows
        raw = _sideways_read(textpage, plain, count, raw)
        kinds = _object_kinds(page) if count == 0 else set()
        # PDFium marks a line-end hyphen as U+0002 (and drops the line break after
        # it): put both back, for hyphens.join_hyphenated to judge.
        body = raw.replace("\r\n", "\n").replace("\r", "\n").replace("\x02", "-\n")
        body = _CONTROLS.sub("", body)
        body = tracking_undone(textpage, body)
        if _GARBLED.search(raw) and not _WORDLIKE.search(body):
            # Only glyphs a broken font map gave no character (control codes,
            # U+FFFD): what is left of them, spaces and "-", is no text.
            body = ""
        result = _Page(
            body=body,
            image_only=pdfium_c.FPDF_PAGEOBJ_IMAGE in kinds,
            blank=count == 0 and not kinds,
        )
        result.dubious = _dubious(body)
        if not auto:
            return result, False
        unmapped = _unmapped_share(textpage, count)
        result.dubious += unmapped * len(body.strip())
        result.extra, result.attaches_files = _annotation_text(doc, page)
        result.stamped_scan = (
            len(body.strip()) <= _STAMP_CHARS and _image_share(page) >= _SCANNED_SHARE
        )
        suspect = (
            pdfium_c.FPDF_PAGEOBJ_TEXT in kinds  # yet PDFium found no characters
            or (0 < count <= _SPARSE_CHARS and _text_left_out(page))
            or unmapped >= 0.5  # font without a usable Unicode map (garbage letters)
            or len(_GARBLED.findall(raw)) >= 0.25 * max(len(raw.strip()), 1)
            or (
                0 < count <= _SPARSE_CHARS
                and not vertical  # columns: no rows to be out of order
                and not _RTL.search(raw)
                and _label_grid_out_of_order(textpage)
            )
        )
        return result, suspect
    finally:
        textpage.close()
        page.close()


def _cut_hidden_text(page: Any, textpage: Any) -> bool:
    """Take the text the page's crop box hides (a printer's slug and trim marks,
    what Preview's or Acrobat's "Crop" cut away) off the page, as loaded here, so
    that only what the page shows is read; whether there was any. A piece of text
    is hidden when its middle lies outside the box, unless a stretch of it two
    characters long shows (a long line run off the page's edge: its one text
    object would go, and the words the page shows with it)."""
    # PDFium's box, not pypdfium2's get_cropbox: that misses a box the page
    # inherits from its parent (as fpdf2 writes them), and gives Letter instead.
    left, bottom, right, top = page.get_bbox()
    if right <= left or top <= bottom:
        return False  # a crop box off its media box: viewers show the media box

    def hidden(box: _Box) -> bool:
        a, b, c, d = box
        if left <= (a + c) / 2 <= right and bottom <= (b + d) / 2 <= top:
            return False
        # The part shown: its short side across the line, its long one along it.
        shown = min(c, right) - max(a, left), min(d, top) - max(b, bottom)
        across, along = sorted(shown)
        thickness = min(c - a, d - b)  # the line's height, upright or turned
        return across < 0.5 * thickness or along < 2 * thickness

    # PDFium counts the characters inside a box without copying them out: most
    # pages have none outside theirs, and pay no more than the two counts.
    def characters(left: float, bottom: float, right: float, top: float) -> int:
        return pdfium_c.FPDFText_GetBoundedText(
            textpage, left, top, right, bottom, None, 0
        )

    if characters(left, bottom, right, top) >= characters(*_EVERYWHERE):
        return False
    texts = page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_TEXT], max_depth=1)
    cut = [obj for obj in texts if hidden(obj.get_bounds())]
    for obj in cut:  # text inside a form XObject stays: rare, and it is read
        page.remove_obj(obj)
    return bool(cut)


def _page_text(textpage: Any, plain: str, count: int, joins: set[int]) -> str:
    """PDFium's text of the whole page, given its ``plain`` text (a character for
    each index, generated ones included). Its bounded text keeps Thai marks with their
    letters and a superscript on its line, where the plain one breaks them apart;
    but it drops the line ends of turned text (a landscape page, a table or a margin
    note set sideways), gluing the last word of each line to the first of the next.
    Those line ends are taken from the plain text: the ones after turned letters.
    Both glue a line set sideways to an upright one drawn just before or after it:
    a line end is put where the letters turn."""
    bounded = textpage.get_text_bounded(*_EVERYWHERE)
    if len(plain) != count or (
        plain != bounded and plain.replace("\r\n", "") != bounded.replace("\r\n", "")
    ):
        return bounded
    turns = _turns(textpage, plain)
    if plain == bounded and not turns and not joins:
        return bounded
    # The two hold the same characters but for line ends: walk them side by side.
    merged, i, j = [], 0, 0
    while i < len(plain) or j < len(bounded):
        if bounded.startswith("\r\n", j) and i in joins:
            i, j = i + 2, j + 2  # a superscript PDFium set on a line of its own
        elif bounded.startswith("\r\n", j):
            merged.append("\r\n")
            i += 2 if plain.startswith("\r\n", i) else 0
            j += 2
        elif plain.startswith("\r\n", i):
            if _turned(textpage, i - 1):
                merged.append("\r\n")
            elif _apart_on_one_line(textpage, plain, i - 1, i + 2):
                merged.append(" ")
            i += 2
        else:
            if i in turns and merged and merged[-1] != "\r\n":
                merged.append("\r\n")
            merged.append(plain[i])
            i, j = i + 1, j + 1
    return "".join(merged)


def _joined_breaks(textpage: Any, plain: str) -> set[int]:
    """Where PDFium's text (both its texts) breaks a line of print: the index of
    each line end between letters that touch, level with each other, the one
    after it going on to the right. Chrome draws a superscript or subscript (a
    footnote's mark, "m²", a web page's "[1]") in a text object of its own, and
    PDFium starts a line at it and again after it: "Friday." / "1 The roof
    covers 120 m2" / "in all." Letters apart (a table's cells), a line below, or
    a column beside are no join."""
    joins: set[int] = set()
    for found in re.finditer("\r\n", plain):
        before, after = found.start() - 1, found.end()
        # The letters either side, past spaces PDFium made up (no width).
        while before >= 0 and plain[before] == " " and _no_width(textpage, before):
            before -= 1
        while after < len(plain) and plain[after] == " " and _no_width(textpage, after):
            after += 1
        if before < 0 or after >= len(plain) or plain[before] in "\r\n\x02\ufffe":
            continue
        if plain[after] in "\r\n":
            continue
        left, bottom, right, top = textpage.get_charbox(before, loose=True)
        next_left, next_bottom, _, next_top = textpage.get_charbox(after, loose=True)
        height = min(top - bottom, next_top - next_bottom)
        level = min(top, next_top) - max(bottom, next_bottom) >= 0.5 * height > 0
        if level and abs(next_left - right) <= _WORD_GAP * height:
            joins.add(found.start())
    return joins


def _no_width(textpage: Any, index: int) -> bool:
    left, _, right, _ = textpage.get_charbox(index, loose=True)
    return right <= left


def _apart_on_one_line(textpage: Any, plain: str, before: int, after: int) -> bool:
    """Whether two letters the plain text breaks a line between, and the bounded
    text runs together, lie on one line with a gap between them: a table's cells
    ("Apples" and the "3" of its row), not a mark and its letter, nor a superscript
    on its word."""
    if before < 0 or after >= len(plain):
        return False
    if plain[before].isspace() or plain[after].isspace():
        return False
    # Loose boxes (the fonts' heights): a subscript's tight box is small, and the
    # kern after it ("U_i,") would pass for a space.
    left, bottom, right, top = textpage.get_charbox(before, loose=True)
    next_left, next_bottom, _, next_top = textpage.get_charbox(after, loose=True)
    height = max(top - bottom, next_top - next_bottom)
    level = min(top, next_top) - max(bottom, next_bottom) > 0
    return level and next_left - right > _WORD_GAP * height


def _turns(textpage: Any, plain: str) -> set[int]:
    """Where, in lines of ``plain`` that start and end at different angles (an
    upright line and a sideways one run together), the letters turn. Only pages
    with sideways letters among a few sampled pay for two looks at each line."""
    turns: set[int] = set()
    if not _turned_text(textpage, len(plain), _TURN_SAMPLE):
        return turns
    start = 0
    for line in plain.split("\r\n"):
        first, start = start, start + len(line) + 2
        last = first + len(line) - 1
        if len(line) < 2 or _turned(textpage, first) == _turned(textpage, last):
            continue
        before = None
        for k in range(first, last + 1):
            if line[k - first].isspace():
                continue
            turned = _turned(textpage, k)
            if before is not None and turned != before:
                turns.add(k)
            before = turned
    return turns


def _turned(textpage: Any, index: int) -> bool:
    """Whether the character at ``index`` lies on a baseline that is not level."""
    angle = pdfium_c.FPDFText_GetCharAngle(textpage, index)
    return angle >= 0 and abs(math.remainder(angle, math.tau)) > _LEVEL


@dataclass(slots=True)
class _Sideways:
    """A glyph on a turned baseline, where it lies along it and across it."""

    text: str
    angle: float
    start: float  # along the baseline, the way it reads
    end: float
    across: float  # its middle
    height: float  # its font's, across the baseline


def _sideways_read(textpage: Any, plain: str, count: int, text: str) -> str:
    """``text`` with the pieces of each line set sideways a glyph at a time read
    as that line (see _sideways_words). It comes after the steps that put the
    page's lines in order, which find its glyphs by their place in ``plain``
    (right-to-left words); they keep the pieces as lines of their own, or lay
    the page out anew, and then the pieces are left as they read."""
    found = _sideways_words(textpage, plain) if len(plain) == count else {}
    if not found:
        return text
    lines = text.split("\r\n")
    at = 0
    for start, (end, words) in found.items():  # in the page's order
        pieces = plain[start:end].split("\r\n")
        size = len(pieces)
        where = next(
            (
                k
                for k in range(at, len(lines) - size + 1)
                if lines[k : k + size] == pieces
            ),
            None,
        )
        if where is not None:
            lines[where : where + size] = [words]
            at = where + 1
    return "\r\n".join(lines)


def _sideways_words(textpage: Any, plain: str) -> dict[int, tuple[int, str]]:
    """Runs of lines of ``plain`` that are pieces of one line set sideways a glyph
    at a time (a chart's axis title from LibreOffice, fpdf2's rotation()), each
    read as that one line, keyed by where in ``plain`` it starts: where it ends,
    and its text. PDFium takes a text object's direction from its first and last
    glyphs, and one of a single glyph as running the page's way: on a page of
    level lines it breaks such a line between glyphs that lie above the one
    before, and the ones it keeps together come out of order ("U", "nits", "s",
    "o", "dl" for "Units sold"; upside down, "dl os sti n U"). Their glyphs are
    read in the order they lie along their baseline, with a space where they lie
    a space apart. A line PDFium kept whole and in order is left as it reads."""
    pieces = []  # each line: where it starts and ends, its glyphs if sideways
    start = 0
    for line in plain.split("\r\n"):
        first, start = start, start + len(line) + 2
        pieces.append((first, first + len(line), _sideways_line(textpage, line, first)))
    found = {}
    k = 0
    while k < len(pieces):
        first, end, glyphs = pieces[k]
        n = k + 1
        while glyphs and n < len(pieces) and _goes_on_sideways(glyphs, pieces[n][2]):
            glyphs = glyphs + pieces[n][2]
            end, n = pieces[n][1], n + 1
        if n - k >= 2 or any(
            b.start < a.start - 0.1 * a.height for a, b in pairwise(glyphs)
        ):
            found[first] = end, _read_along(glyphs)
        k = n
    return found


def _sideways_line(textpage: Any, line: str, first: int) -> list[_Sideways]:
    """The glyphs of a line of PDFium's text all set on one turned baseline (a
    combining mark with its letter), else none. Only a line that starts turned
    costs more than a look at its first letter."""
    glyphs: list[_Sideways] = []
    for k, char in enumerate(line, first):
        if char.isspace():
            continue
        if not glyphs and not _turned(textpage, k):
            return []
        angle = pdfium_c.FPDFText_GetCharAngle(textpage, k)
        if (
            pdfium_c.FPDFText_IsGenerated(textpage, k) == 1  # a hyphen PDFium put in
            or _strong_rtl(char)  # read against its baseline: left as it is
            or angle < 0  # no angle known
            or abs(math.remainder(angle, math.tau)) <= _LEVEL
            or (
                glyphs
                and abs(math.remainder(angle - glyphs[0].angle, math.tau)) > _LEVEL
            )
        ):
            return []
        if glyphs and unicodedata.category(char) == "Mn":
            glyphs[-1].text += char
            continue
        left, bottom, right, top = textpage.get_charbox(k, loose=True)
        cos, sin = math.cos(angle), math.sin(angle)  # PDFium's angle turns clockwise
        corners = [(x, y) for x in (left, right) for y in (bottom, top)]
        along = [x * cos - y * sin for x, y in corners]
        across = [x * sin + y * cos for x, y in corners]
        glyphs.append(
            _Sideways(
                char,
                angle,
                min(along),
                max(along),
                (min(across) + max(across)) / 2,
                max(across) - min(across),
            )
        )
    if any(abs(g.across - glyphs[0].across) > 0.25 * g.height for g in glyphs):
        return []  # not one baseline (a superscript, two lines run together)
    return glyphs


def _goes_on_sideways(glyphs: list[_Sideways], more: list[_Sideways]) -> bool:
    """Whether the glyphs of ``more`` lie on the baseline of ``glyphs``, among them
    or less than a line's height from either end."""
    if not more:
        return False
    head = glyphs[0]
    height = max(head.height, more[0].height)
    return (
        abs(math.remainder(more[0].angle - head.angle, math.tau)) <= _LEVEL
        and all(abs(g.across - head.across) <= 0.25 * height for g in more)
        and min(g.start for g in more) <= max(g.end for g in glyphs) + height
        and max(g.end for g in more) >= min(g.start for g in glyphs) - height
    )


def _read_along(glyphs: list[_Sideways]) -> str:
    """Glyphs in the order they lie along their baseline, a space put where they
    lie further apart than a kern."""
    text, reach = "", -math.inf
    for glyph in sorted(glyphs, key=lambda g: g.start):
        if text and glyph.start - reach > _SIDEWAYS_SPACE * glyph.height:
            text += " "
        text += glyph.text
        reach = max(reach, glyph.end)
    return text


def _turned_text(textpage: Any, count: int, samples: int = _SAMPLE) -> bool:
    """Whether any of a sample of the page's characters is set sideways."""
    step = max(1, count // samples)
    return any(_turned(textpage, k) for k in range(0, count, step))


def _rtl_in_reading_order(textpage: Any, text: str, plain: str, count: int) -> str:
    """``text`` with every right-to-left word in reading order.

    A producer that shapes Arabic itself (Chrome's "Save as PDF") draws a word's
    glyphs from left to right, each under an ActualText of its own, and PDFium gives
    the letters in that drawing order: reversed. A run of right-to-left letters is
    read along its baseline from right to left, so one laid out the other way is
    turned round, each combining mark (harakat, niqqud) kept after its letter.
    """
    if len(text) != count or plain != text:
        return text  # characters and positions do not pair up: leave it as it is
    chars = list(text)
    _lam_alef_in_order(textpage, chars)
    start = 0
    while start < count:
        if not _strong_rtl(chars[start]):
            start += 1
            continue
        end = start + 1
        while end < count and (
            _strong_rtl(chars[end]) or unicodedata.category(chars[end]) == "Mn"
        ):
            end += 1
        letters = [k for k in range(start, end) if _strong_rtl(chars[k])]
        if _drawn_left_to_right(textpage, letters):
            chars[start:end] = _reversed_clusters(textpage, chars, start, end)
        start = end
    # Last line first: a line whose words move may change length (not its
    # characters' indices on the text page before it).
    kinds = [unicodedata.bidirectional(char) for char in chars]
    rtl_page = kinds.count("R") + kinds.count("AL") >= kinds.count("L")
    starts = [0, *(k + 1 for k, char in enumerate(chars) if char == "\n")]
    ends = [*(k - 1 for k in starts[1:]), count]
    lines = list(zip(starts, ends, strict=True))
    # The page's paragraphs run the way most of its lines in one script read.
    scripts = [{_strong_kind(c) for c in chars[a:b]} - {None} for a, b in lines]
    rtl_lines, ltr_lines = scripts.count({"R"}), scripts.count({"L"})
    lines_rtl = None if rtl_lines == ltr_lines else rtl_lines > ltr_lines
    for start, end in reversed(lines):
        _rtl_words_in_order(
            textpage, chars, start, end, rtl_page=rtl_page, lines_rtl=lines_rtl
        )
    return "".join(chars)


def _rtl_words_in_order(
    textpage: Any,
    chars: list[str],
    start: int,
    end: int,
    *,
    rtl_page: bool,
    lines_rtl: bool | None,
) -> None:
    """Put the words of ``chars[start:end]``, a line with right-to-left words, in
    reading order (in place), by where they lie along its baseline, as the Unicode
    bidi rules lay them out. A right-to-left line reads from its end (the page's
    right, or its left when printed upside down), a run of left-to-right words (a
    product name, and a number after one) in its own order; a left-to-right line
    reads from its start, a run of right-to-left words (and a number or a dash
    between two of them) from its end. PDFium gives a right-to-left line's runs
    of left-to-right words last word first, a left-to-right line's runs of
    right-to-left words in the order they lie, and on an upside-down line the
    letters of a left-to-right word (or the digits of a number) backwards.

    A line with words of both kinds reads its paragraph's way, which the page
    does not state. That is the way most of the page's lines in one script read,
    unless both the line's ragged margin and the script at its two ends (the
    first strong letter at its start, Unicode's rule P2, whichever end that is)
    say otherwise. Without such lines: its margin, else its ends, else right to
    left on a page mostly in such a script, upside down, or with as many
    right-to-left words as others.
    """
    line = "".join(chars[start:end])
    words = [(start + m.start(), start + m.end()) for m in re.finditer(r"\S+", line)]
    rtl = [any(_strong_rtl(c) for c in chars[a:b]) for a, b in words]
    ltr = [
        not r and any(unicodedata.bidirectional(c) == "L" for c in chars[a:b])
        for r, (a, b) in zip(rtl, words, strict=True)
    ]
    if len(words) < 2 or not any(rtl):
        return
    letters = [k for first, last in words for k in range(first, last)]
    angles = [pdfium_c.FPDFText_GetCharAngle(textpage, k) for k in letters]
    if any(
        a < 0 or abs(math.remainder(a - angles[0], math.tau)) > _LEVEL for a in angles
    ):
        return  # not all on one baseline
    angle = angles[0]
    upside_down = abs(math.remainder(angle - math.pi, math.tau)) <= _LEVEL
    along = {}  # how far along the baseline each letter lies
    for k in letters:
        left, bottom, right, top = textpage.get_charbox(k)
        along[k] = (left + right) * math.cos(angle) - (bottom + top) * math.sin(angle)

    def middle(word: tuple[int, int]) -> float:
        return sum(along[k] for k in range(*word)) / (word[1] - word[0])

    # From the line's start on the page (its left when upright) to its end.
    shown = sorted(range(len(words)), key=lambda w: middle(words[w]))
    rtl_line = True
    if any(ltr):
        strong = [rtl[w] for w in shown if rtl[w] or ltr[w]]
        ends = strong[0] if strong[0] == strong[-1] else None
        upright = abs(math.remainder(angle, math.tau)) <= _LEVEL
        aligned = _aligned_right(textpage, letters) if upright else None
        if lines_rtl is not None and not (aligned == ends == (not lines_rtl)):
            rtl_line = lines_rtl
        elif aligned is not None:
            rtl_line = aligned
        elif ends is not None:
            rtl_line = ends
        else:
            rtl_line = rtl_page or upside_down or sum(rtl) >= sum(ltr)
    if rtl_line:
        # A number (European digits) after a left-to-right word belongs to its run.
        for shown_before, w in pairwise(shown):
            if ltr[shown_before] and not rtl[w] and not ltr[w]:
                ltr[w] = any(
                    unicodedata.bidirectional(c) == "EN"
                    for c in chars[slice(*words[w])]
                )
        walk, inner = shown[::-1], ltr
    else:
        # So does anything but a left-to-right word between two right-to-left ones.
        walk, inner = shown, list(rtl)
        strong_at = [n for n, w in enumerate(shown) if rtl[w] or ltr[w]]
        for n, m in pairwise(strong_at):
            if rtl[shown[n]] and rtl[shown[m]]:
                for w in shown[n + 1 : m]:
                    inner[w] = True
    ordered: list[tuple[int, int]] = []
    k = 0
    while k < len(walk):  # as the line reads; a run of the other kind as it reads
        run = k + 1
        while inner[walk[k]] and run < len(walk) and inner[walk[run]]:
            run += 1
        ordered += [words[w] for w in reversed(walk[k:run])]
        k = run
    pieces, after = [], start
    for (a, b), (c, d) in zip(words, ordered, strict=True):
        word, places = chars[c:d], [along[i] for i in range(c, d)]
        if not any(_strong_rtl(char) for char in word):
            word = _as_laid(word, places)
            if rtl_line:
                word = _ends_read_right_to_left(word)
        elif rtl_line:
            word = _numbers_read_right_to_left(word, places)
        pieces += [*chars[after:a], *word]  # the spaces stay where they were
        after = b
    chars[start:end] = [*pieces, *chars[after:end]]


def _as_laid(word: list[str], along: list[float]) -> list[str]:
    """A left-to-right word's (or a number's) characters in the order they lie
    along the baseline, each combining mark kept after its letter: PDFium gives
    them backwards on a line printed upside down, a number's digits backwards
    before a letter ("23H2" as "32H2"), a colon after a word first."""
    clusters: list[tuple[float, list[str]]] = []
    for char, place in zip(word, along, strict=True):
        if clusters and unicodedata.category(char) == "Mn":
            clusters[-1][1].append(char)
        else:
            clusters.append((place, [char]))
    clusters.sort(key=lambda cluster: cluster[0])
    return [char for _, cluster in clusters for char in cluster]


def _ends_read_right_to_left(word: list[str]) -> list[str]:
    """A left-to-right word (a number, a name) of a right-to-left line, as laid out,
    in reading order: the punctuation at its ends reads with the line (Unicode's
    bidi rules N1, N2), so what lies left of it, the sentence's full stop after a
    year or the colon after a chapter's number, comes after it (".2024" is "2024.").
    Brackets are not turned: a producer that names each glyph by the letter it
    stands for (Chrome) names a bracket drawn mirrored by the one it reads as, one
    that names it by its shape (LibreOffice) by the other."""
    core = [k for k, char in enumerate(word) if _bidi(char) in ("L", "EN", "AN")]
    if not core:
        return word
    first, last = core[0], core[-1]
    # A number's sign, currency or percent reads with it ("50%"): rule W5.
    while first > 0 and _bidi(word[first]) == "EN" and _bidi(word[first - 1]) == "ET":
        first -= 1
    while (
        last < len(word) - 1
        and _bidi(word[last]) == "EN"
        and _bidi(word[last + 1]) == "ET"
    ):
        last += 1
    return [*word[last + 1 :][::-1], *word[first : last + 1], *word[:first][::-1]]


def _numbers_read_right_to_left(word: list[str], places: list[float]) -> list[str]:
    """A right-to-left word of a right-to-left line with the runs of other
    characters in it (a number, a name: "ב-2024."'s "-2024.") each in reading order,
    as a word of their own is."""
    read: list[str] = []
    k = 0
    while k < len(word):
        end = k
        while end < len(word) and not _letter_or_mark_rtl(word[end]):
            end += 1
        if end == k:
            read.append(word[k])
            k += 1
            continue
        run = word[k:end]
        if any(_bidi(char) in ("L", "EN", "AN") for char in run):
            run = _ends_read_right_to_left(_as_laid(run, places[k:end]))
        read += run
        k = end
    return read


def _letter_or_mark_rtl(char: str) -> bool:
    return _strong_rtl(char) or unicodedata.category(char) == "Mn"


def _bidi(char: str) -> str:
    return unicodedata.bidirectional(char)


def _aligned_right(textpage: Any, letters: list[int]) -> bool | None:
    """Whether the upright line of ``letters`` lies nearer the page's right edge
    than its left, by more than two ems: a right-to-left paragraph's ragged lines
    end short of the left margin. None when it lies about as near both (a full
    line, a centred one)."""
    left, _, right, _ = textpage.parent.get_bbox()
    boxes = [textpage.get_charbox(k) for k in letters]
    before = min(box[0] for box in boxes) - left
    after = right - max(box[2] for box in boxes)
    size = max(pdfium_c.FPDFText_GetFontSize(textpage, k) for k in letters)
    if abs(before - after) <= 2 * size:
        return None
    return after < before


def _lam_alef_in_order(textpage: Any, chars: list[str]) -> None:
    """Lam-alef ("لا"), one glyph for two letters, read lam first. LibreOffice names
    the glyph's letters alef first ("ال", at the glyph's one origin), which is never
    right: alef joins no letter after it, so no glyph holds an alef and then a lam."""
    for k in range(len(chars) - 1):
        if (
            chars[k] in _ALEFS
            and chars[k + 1] == _LAM
            and _char_origin(textpage, k) == _char_origin(textpage, k + 1)
        ):
            chars[k], chars[k + 1] = _LAM, chars[k]


def _reversed_clusters(textpage: Any, chars: list[str], start: int, end: int) -> str:
    """``chars[start:end]`` in reverse order, each combining mark kept after its
    letter and the letters of one glyph in theirs: a ligature naming two letters
    (lam-alef, "لا") gives two characters at the glyph's one origin."""
    clusters: list[str] = []
    origin = None
    for k in range(start, end):
        previous, origin = origin, _char_origin(textpage, k)
        if clusters and (unicodedata.category(chars[k]) == "Mn" or origin == previous):
            clusters[-1] += chars[k]
        else:
            clusters.append(chars[k])
    return "".join(reversed(clusters))


def _char_origin(textpage: Any, index: int) -> tuple[float, float]:
    x, y = ctypes.c_double(), ctypes.c_double()
    pdfium_c.FPDFText_GetCharOrigin(textpage, index, x, y)
    return x.value, y.value


def _strong_rtl(char: str) -> bool:
    return unicodedata.bidirectional(char) in ("R", "AL")


def _strong_kind(char: str) -> str | None:
    """Which way ``char`` runs: "R", "L", or None when it is not a letter."""
    kind = unicodedata.bidirectional(char)
    return "R" if kind in ("R", "AL") else "L" if kind == "L" else None


def _drawn_left_to_right(textpage: Any, indices: list[int]) -> bool:
    """Whether the characters at ``indices`` advance along their baseline's
    direction (for most of their steps)."""
    if len(indices) < 2:
        return False
    # PDFium's angle turns clockwise: 90° is a baseline running down the page.
    angle = max(pdfium_c.FPDFText_GetCharAngle(textpage, indices[0]), 0.0)
    along = []
    for k in indices:
        left, bottom, right, top = textpage.get_charbox(k)
        along.append(
            (left + right) * math.cos(angle) - (bottom + top) * math.sin(angle)
        )
    forward = sum(b > a for a, b in pairwise(along))
    return 2 * forward > len(along) - 1


@dataclass(slots=True)
class _Glyph:
    """A character drawn on the page, its box in page space (y up)."""

    text: str
    left: float
    bottom: float
    right: float
    top: float
    upright: bool  # on a level baseline, not turned

    @property
    def height(self) -> float:
        return max(self.top - self.bottom, 1e-3)

    @property
    def middle_x(self) -> float:
        return (self.left + self.right) / 2

    @property
    def middle_y(self) -> float:
        return (self.bottom + self.top) / 2


@dataclass(slots=True)
class _Run:
    """Glyphs in a column (down the page) or on a line (across it), in order."""

    glyphs: list[_Glyph]
    down: bool | None = None  # None while it is one glyph
    text: str = ""
    left: float = math.inf
    bottom: float = math.inf
    right: float = -math.inf
    top: float = -math.inf

    def add(self, glyph: _Glyph, text: str) -> None:
        self.glyphs.append(glyph)
        self.text += text
        self.left, self.right = min(self.left, glyph.left), max(self.right, glyph.right)
        self.bottom, self.top = min(self.bottom, glyph.bottom), max(self.top, glyph.top)

    def below(self, glyph: _Glyph) -> bool:
        """Whether ``glyph`` goes on down this column (or beside its last glyph, as
        two digits set across a column do)."""
        last = self.glyphs[-1]
        reach = 0.25 * last.height
        # A column advances a character's width at a time; lines of a single
        # character each (a list of days) lie further apart than they are wide.
        width = max(last.right - last.left, glyph.right - glyph.left)
        pitch = 1.2 * (width if width >= 0.5 * last.height else last.height)
        return (
            self.left - reach <= glyph.middle_x <= self.right + reach
            and glyph.top <= last.top + reach
            and glyph.top >= last.bottom - 2 * reach
            and last.middle_y - glyph.middle_y <= pitch
            and (self.down or glyph.middle_y < last.bottom + reach)
        )

    def beside(self, glyph: _Glyph) -> bool:
        """Whether ``glyph`` goes on along this line, to the right."""
        last = self.glyphs[-1]
        return (
            last.bottom <= glyph.middle_y <= last.top
            and glyph.middle_x > last.middle_x
            and glyph.left - last.right <= 2 * last.height
        )


def _steps_down(textpage: Any, count: int) -> bool:
    """Whether, in a sample of the page's characters, the next one mostly lies
    below rather than beside: a cheap first look for columns, which reading every
    character's box would double the time of every Chinese or Japanese page."""
    x, y = ctypes.c_double(), ctypes.c_double()

    def origin(k: int) -> tuple[float, float]:
        pdfium_c.FPDFText_GetCharOrigin(textpage, k, ctypes.byref(x), ctypes.byref(y))
        return x.value, y.value

    made_up = pdfium_c.FPDFText_IsGenerated  # a space or line end PDFium put in
    down = pairs = 0
    for k in range(0, count - 1, max(1, count // _SAMPLE_STEPS)):
        after = k + 1
        while after < min(count, k + 4) and made_up(textpage, after) == 1:
            after += 1
        if after >= count or made_up(textpage, k) == 1 or made_up(textpage, after) == 1:
            continue
        (x0, y0), (x1, y1) = origin(k), origin(after)
        pairs += 1
        down += abs(x1 - x0) < y0 - y1
    return 2 * down >= pairs > 0


def _pdfium_glyphs(textpage: Any, count: int) -> list[_Glyph]:
    """The page's characters with their boxes, in PDFium's order, without the
    spaces and line ends PDFium made up."""
    glyphs = []
    for k in range(count):
        if pdfium_c.FPDFText_IsGenerated(textpage, k) == 1:
            continue
        char = chr(pdfium_c.FPDFText_GetUnicode(textpage, k))
        # The loose box is the glyph's em square, so columns line up on it; but
        # PDFium leaves it unscaled for a vertical font set at 1 pt and scaled
        # by its matrix: the glyph's own box is added to it.
        left, bottom, right, top = textpage.get_charbox(k, loose=True)
        inner = textpage.get_charbox(k)
        glyphs.append(
            _Glyph(
                char,
                min(left, inner[0]),
                min(bottom, inner[1]),
                max(right, inner[2]),
                max(top, inner[3]),
                upright=not _turned(textpage, k),
            )
        )
    return glyphs


def _plumber_text(page: Any) -> str:
    """pdfplumber's text of a page, column by column when set vertically; only
    what its crop box shows, as PDFium reads it (_cut_hidden_text); and each
    letter once where it is drawn twice over itself (bold faked by drawing the
    text again a hair to the side), as PDFium reads it too."""
    left, top, right, bottom = page.cropbox
    overprinted = _overprinted(page.chars)
    page = page.filter(
        lambda o: (
            left <= (o["x0"] + o["x1"]) / 2 <= right
            and top <= (o["top"] + o["bottom"]) / 2 <= bottom
            and id(o) not in overprinted
        )
    )
    chars = page.chars
    if CJK.search("".join(char["text"] for char in chars[:_SPARSE_CHARS])):
        vertical = _in_columns(
            [
                _Glyph(c["text"], c["x0"], c["y0"], c["x1"], c["y1"], c["upright"])
                for c in chars
            ]
        )
        if vertical:
            return vertical
    return page.extract_text() or ""


def _overprinted(chars: list[dict[str, Any]]) -> set[int]:
    """The ids of pdfplumber's characters drawn again over the same character
    drawn before them, within _OVERPRINT points. Looked up in a grid of cells
    _OVERPRINT wide: pdfplumber's own dedupe_chars made reading a paper take
    five times as long."""
    seen: dict[tuple[str, int, int], tuple[float, float]] = {}
    again = set()
    for char in chars:
        left, top, text = char["x0"], char["top"], char["text"]
        x, y = round(left / _OVERPRINT), round(top / _OVERPRINT)
        for dx, dy in _CELL_AND_AROUND:
            drawn = seen.get((text, x + dx, y + dy))
            if (
                drawn
                and abs(drawn[0] - left) <= _OVERPRINT
                and abs(drawn[1] - top) <= _OVERPRINT
            ):
                again.add(id(char))
                break
        else:
            seen[text, x, y] = left, top
    return again


def _in_columns(glyphs: list[_Glyph]) -> str:
    """The text of a page set vertically (Chinese, Japanese or Korean in columns),
    in reading order: columns from right to left, each read downwards, and a page
    set in tiers (dan) tier by tier from the top. "" for any other page.

    Decided by how the characters lie, not what they are: most of them must be
    upright and stacked in columns, and most of them Chinese, Japanese or Korean
    (which alone is set so). Other text on such a page (a running head, a page
    number) is read where it stands, a line counting as a column.
    """
    runs: list[_Run] = []
    for glyph in glyphs:
        # Spaces, and the second half of a character outside the BMP, carry no
        # position of their own that matters: they go with the run they follow.
        if glyph.text.isspace() or "\udc00" <= glyph.text <= "\udfff":
            if runs:
                runs[-1].text += glyph.text
            continue
        run = runs[-1] if runs else None
        if run is not None and run.down is not False and run.below(glyph):
            run.down = True
            run.add(glyph, glyph.text)
        elif run is not None and run.down is not True and run.beside(glyph):
            gap = glyph.left - run.glyphs[-1].right
            spaced = run.text.endswith(" ") or gap <= 0.25 * glyph.height
            run.down = False
            run.add(glyph, glyph.text if spaced else " " + glyph.text)
        else:
            runs.append(_Run([]))
            runs[-1].add(glyph, glyph.text)
    visible = sum(len(run.glyphs) for run in runs)
    stacked = sum(
        sum(glyph.upright for glyph in run.glyphs) for run in runs if run.down
    )
    cjk = sum(bool(CJK.match(g.text)) for run in runs for g in run.glyphs)
    if (
        stacked < max(_VERTICAL_MIN_CHARS, _VERTICAL_SHARE * visible)
        or 2 * cjk < visible
    ):
        return ""
    text = "\n".join(
        "".join(run.text for run in column).strip()
        for tier in _tiers(runs)
        for column in _columns(tier)
    )
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _tiers(runs: list[_Run]) -> list[list[_Run]]:
    """Runs in bands across the page, from the top: a run is in a band when it
    overlaps the band's height (for a third of its own), or goes on down one of its
    columns (a word set sideways, two digits set across)."""
    tiers: list[list[_Run]] = []
    top = bottom = 0.0
    for run in sorted(runs, key=lambda r: -r.top):
        overlap = min(run.top, top) - max(run.bottom, bottom)
        if tiers and (
            overlap > 0.3 * (run.top - run.bottom)
            or any(_goes_on(above, run) for above in tiers[-1])
        ):
            tiers[-1].append(run)
            bottom = min(bottom, run.bottom)
        else:
            tiers.append([run])
            top, bottom = run.top, run.bottom
    return tiers


def _goes_on(above: _Run, run: _Run) -> bool:
    """Whether ``run`` starts right below ``above``, in the same column (bands of
    columns lie at least a character's width apart)."""
    width = above.right - above.left
    return (
        min(above.right, run.right) - max(above.left, run.left)
        >= 0.5 * min(width, run.right - run.left)
        and above.bottom - width <= run.top <= above.bottom + 0.25 * width
    )


def _columns(tier: list[_Run]) -> list[list[_Run]]:
    """A band's runs in columns from right to left, each column's runs from the
    top: one column split in several runs (a change of font) is read as one."""
    columns: list[list[_Run]] = []
    left = right = 0.0
    for run in sorted(tier, key=lambda r: -(r.left + r.right)):
        narrower = min(run.right - run.left, right - left)
        if columns and min(run.right, right) - max(run.left, left) >= 0.5 * narrower:
            columns[-1].append(run)
            left, right = min(left, run.left), max(right, run.right)
        else:
            columns.append([run])
            left, right = run.left, run.right
    return [sorted(column, key=lambda r: -r.top) for column in columns]


def _image_share(page: Any) -> float:
    """The share of the page that its images cover (overlaps counted twice). The
    page is its box where it lies: a media box need not start at 0, 0 (a page cut
    from a larger sheet, a CAD export: [0 -842 595 0])."""
    x0, y0, x1, y1 = page.get_bbox()
    covered = 0.0
    for image in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=4):
        left, bottom, right, top = image.get_bounds()
        covered += max(0.0, min(right, x1) - max(left, x0)) * max(
            0.0, min(top, y1) - max(bottom, y0)
        )
    return covered / max((x1 - x0) * (y1 - y0), 1.0)


def _text_left_out(page: Any) -> bool:
    """Whether PDFium left some of the page's text out of its characters: it drops a
    text object whose glyphs have no width, as a column of vertical text gets in a
    font that is not embedded when this host has no stand-in with its glyphs (Japanese
    set in Heisei Mincho: the text, from its Unicode map, is there all the same, and
    pdfplumber reads it). An empty one (a space, nothing) has no height either. Asked
    for pages with little text, which a body so lost leaves."""
    texts = page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_TEXT], max_depth=1)
    for text in texts:
        left, bottom, right, top = text.get_bounds()
        if right - left < _NO_WIDTH and top - bottom >= 1:
            return True
    return False


def _object_kinds(page: Any) -> set[int]:
    # Only asked for pages without characters, so walking the objects stays cheap.
    return {obj.type for obj in page.get_objects(max_depth=4)}


def _unmapped_share(textpage: Any, count: int) -> float:
    """Share of sampled characters whose font has no Unicode mapping for them."""
    if count == 0:
        return 0.0
    sample = range(0, count, max(1, count // _SAMPLE))
    bad = sum(
        1 for i in sample if pdfium_c.FPDFText_HasUnicodeMapError(textpage, i) == 1
    )
    return bad / len(sample)


def _label_grid_out_of_order(textpage: Any) -> bool:
    """True for a page of short labels whose text stream hops between lines.

    Forms, button grids and table cells are often drawn column by column, so
    PDFium (content-stream order) splits each visual row; pdfplumber's row-by-row
    text reads right there. Prose in columns also revisits lines, but its
    fragments are long, which is why the labels test comes first.
    """
    found = [textpage.get_rect(k) for k in range(textpage.count_rects())]
    texts = {r: textpage.get_text_bounded(*r) for r in found if r[3] > r[1]}
    # Punctuation alone (a comma hanging below the line, as a page placed glyph by
    # glyph has it) would make a line of its own, and the page look out of order.
    rects = [r for r, text in texts.items() if _WORDLIKE.search(text)]
    words = sorted(len(texts[r].split()) for r in rects)
    if len(rects) < 4 or words[len(words) // 2] > 3:
        return False
    bands: list[tuple[float, float]] = []
    lines: list[int] = []
    for _, bottom, _, top in rects:
        # Same visual line: vertical overlap of at least half the smaller height.
        line = next(
            (
                j
                for j, (b, t) in enumerate(bands)
                if min(top, t) - max(bottom, b) >= 0.5 * min(top - bottom, t - b)
            ),
            len(bands),
        )
        if line == len(bands):
            bands.append((bottom, top))
        lines.append(line)
    returns, last_seen = 0, {}
    for i, line in enumerate(lines):
        if i and lines[i - 1] != line and line in last_seen:
            returns += len(set(lines[last_seen[line] + 1 : i])) <= 2
        last_seen[line] = i
    return returns >= 2 and 2 * returns >= len(bands)


_Box = tuple[float, float, float, float]  # left, bottom, right, top (y up)
_PROSE_SHARE = 0.2  # of lines starting lowercase, or ending in a hyphen
_COLUMN_WIDTH = 8  # line heights, at the least, of a column of prose's widest line
_MARGIN_LINES = 3  # a running header's or footer's lines, at the most
# Columns of prose side by side in one band, at the most, that _left_first puts
# in order (a newspaper has a handful): each is compared with every piece, and
# taken in turn after the one to its left (a page of a thousand narrow columns
# drawn right to left passed Python's recursion limit; of five thousand, took
# seconds).
_MAX_COLUMNS = 50


@dataclass(slots=True)
class _Line:
    """A line of PDFium's text and the box around it (page space, y up)."""

    text: str
    left: float
    bottom: float
    right: float  # its first character's, until widened
    top: float
    last: int  # its last character, while not widened to it (-1 after)

    def widen(self, box: Callable[[int], _Box]) -> _Line:
        """The line with its right end at its last character's (read on demand:
        most pages never need it)."""
        if self.last >= 0:
            self.right = max(self.right, box(self.last)[2])
            self.last = -1
        return self

    def level_with(self, other: _Line) -> bool:
        """Whether ``other`` overlaps this line's band for half the lower one."""
        return min(self.top, other.top) - max(self.bottom, other.bottom) >= 0.5 * min(
            self.top - self.bottom, other.top - other.bottom
        )

    def above(self, other: _Line) -> bool:
        """Whether ``other`` lies under this line, in part (widened lines)."""
        return min(self.right, other.right) > max(self.left, other.left)

    def beside(self, other: _Line) -> bool:
        """Whether ``other`` lies level with this line, to its left or right."""
        return self.level_with(other) and (
            other.left >= self.right or other.right <= self.left
        )


def _rows_if_out_of_order(
    textpage: Any, plain: str, count: int, raw: str, joins: set[int]
) -> str:
    """The page's text row by row from the top when the order PDFium gives (the
    order it was drawn in) disagrees with where the lines lie, else "".

    Report engines draw a table column by column, or the letterhead last: read as
    drawn, a row's cells come apart, or the title follows the body. Columns of
    prose also go back up the page, but their lines go on with each other's
    sentences (a lowercase start, a hyphen), where headings and cells (short,
    spaced apart) do not: such columns are read as drawn, only a block drawn out
    of place (a letterhead drawn last) put where it lies, band by band.
    """
    if len(plain) != count:
        return ""  # characters and indices do not pair up
    # A hyphen PDFium joined a line at is U+FFFE here, U+0002 in the page's text.
    plain = plain.replace("\ufffe", "\x02")
    runs: list[list[_Line]] = [[]]  # lines, in runs going down the page
    tops = [-math.inf]  # the top of each run
    box = _loose_box_reader(textpage)
    # Lines of print PDFium broke at a superscript (``joins``), each one line again.
    pieces: list[tuple[int, str]] = []  # each line's first index, and its text
    start = 0
    for text in plain.split("\r\n"):
        if start - 2 in joins and pieces:
            pieces[-1] = (pieces[-1][0], pieces[-1][1] + "\r\n" + text)
        else:
            pieces.append((start, text))
        start += len(text) + 2
    for first, text in pieces:
        shown = text.strip(" \x02")  # a hyphen PDFium marks has no box
        if not shown:
            continue
        # A line lies between the boxes of its first and last characters (loose
        # boxes: the font's height, the same for every letter), the last one read
        # only when needed.
        a = first + text.index(shown[0])
        left, bottom, right, top = box(a)
        if top <= bottom:
            continue
        last = a + len(shown) - 1
        line = _Line(text.strip().replace("\r\n", ""), left, bottom, right, top, last)
        run = runs[-1]
        if run and bottom > run[-1].top:  # wholly above the line before
            runs.append(run := [])
            tops.append(top)
        run.append(line)
        tops[-1] = max(tops[-1], top)
    if len(runs) < 2:
        return ""
    cells = climbs = 0
    columns = False  # of prose, side by side
    for (before, top), (after, _) in pairwise(zip(runs, tops, strict=True)):
        head = after[0]
        # Rows side by side start level: look at the first few lines only.
        if head.bottom < top and (
            sum(
                any(a.widen(box).beside(b.widen(box)) for a in before)
                for b in after[:3]
            )
            >= 2
        ):
            texts = [[line.text for line in run] for run in (before, after)]
            if any(map(_numbering, texts)):
                return ""  # a proof's line numbers down the margin
            if any(
                _prose(text) and not (_cells(run) or _cell_rows(run, other, box))
                for text, run, other in zip(
                    texts, (before, after), (after, before), strict=True
                )
            ) or _prose_side_by_side(before, after, box):
                columns = True
                break
            cells += 1
        elif min(before[-1].widen(box).right, head.widen(box).right) > max(
            before[-1].left, head.left
        ):
            # Back up over the line just read: a heading drawn after its body.
            climbs += len(head.text.split()) >= 2
    texts = [[line.text for line in run] for run in runs]
    if any(map(_numbering, texts)):
        return ""
    if columns or (not cells and (climbs < 2 or _prose(sum(texts, [])))):
        # Prose, read as drawn but for blocks drawn out of place; unless the lines
        # here (PDFium's plain text) break where the page's do not: a Thai mark
        # torn from its letter onto a line of its own.
        joined = plain
        for k in sorted(joins, reverse=True):
            joined = joined[:k] + joined[k + 2 :]
        return _bands_from_the_top(runs, tops, box) if raw == joined else ""
    return _text_in_rows([line for run in runs for line in run], box)


def _prose_side_by_side(
    before: list[_Line], after: list[_Line], box: Callable[[int], _Box]
) -> bool:
    """Whether the lines of two runs that lie level with each other (boxes side by
    side, a web page's cards) are prose both, each wrapped onto lines of its own."""
    low = max(min(x.bottom for x in before), min(x.bottom for x in after))
    high = min(max(x.top for x in before), max(x.top for x in after))
    sides = [
        [x for x in run if x.top > low and x.bottom < high] for run in (before, after)
    ]
    if any(sum(bool(_WORD.search(x.text)) for x in side) < 2 for side in sides):
        return False
    return all(
        _prose([x.text for x in side])
        and not (_cells(side) or _cell_rows(side, other, box))
        for side, other in zip(sides, reversed(sides), strict=True)
    )


def _bands_from_the_top(
    runs: list[list[_Line]], tops: list[float], box: Callable[[int], _Box]
) -> str:
    """The runs' text in bands across the page from the top, each band's runs as
    drawn (prose columns side by side share a band), but a column read before the
    one to its right (see _left_first); "" when that is the order they were drawn
    in. A band is a stretch of the page no run crosses the edge of: a letterhead
    drawn last goes first, a footer drawn first last."""
    if len(pieces := _cut_at_leaps(runs)) > len(runs):
        runs, tops = pieces, [max(line.top for line in run) for run in pieces]
    bands: list[list[int]] = []
    floor = math.inf  # the lowest bottom of the band so far
    for k in sorted(range(len(runs)), key=lambda k: -tops[k]):
        if not bands or tops[k] <= floor:
            bands.append([])
        bands[-1].append(k)
        floor = min(floor, min(line.bottom for line in runs[k]))
    order = [k for band in bands for k in sorted(band)]
    lines = [
        line.text
        for band in bands
        for run in _left_first(
            _floats_in_place([runs[k] for k in sorted(band)], box), box
        )
        for line in run
    ]
    if order == sorted(order) and lines == [x.text for run in runs for x in run]:
        return ""
    return "\r\n".join(lines)


def _floats_in_place(
    band: list[list[_Line]], box: Callable[[int], _Box]
) -> list[list[_Line]]:
    """A band's runs as drawn, but a box floated beside the text (a web page's
    sidebar or infobox, which browsers draw before the page's text) read where
    its top lies, after the lines above it: its lines beside the next run's, none
    of them across one, and that run going on from above it (the page's title)
    to below it, across its width (the text wrapped round it; a column beside,
    as a page's menu, has none under it)."""
    placed: list[list[_Line]] = []
    k = 0
    while k < len(band):
        run = band[k]
        after = band[k + 1] if k + 1 < len(band) else []
        if len(run) >= 2 and after and _floated(run, after, box):
            # Boxes one under the other (an infobox, a quote further down), each
            # where it lies: a run leaps down from one to the next.
            gap = 2 * _median_height(run)
            boxes = [[run[0]]]
            for above, line in pairwise(run):
                if above.bottom - line.top >= gap:
                    boxes.append([])
                boxes[-1].append(line)
            start = 0
            for floated in boxes:
                top = max(line.top for line in floated)
                cut = next(
                    (i for i in range(start, len(after)) if after[i].bottom < top),
                    len(after),
                )
                placed += [after[start:cut], floated]
                start = cut
            placed.append(after[start:])
            k += 2
        else:
            placed.append(run)
            k += 1
    return placed


def _floated(run: list[_Line], after: list[_Line], box: Callable[[int], _Box]) -> bool:
    """Whether ``run`` is a box floated beside the lines of ``after``, which
    begins above it and goes on under it."""
    top = max(line.top for line in run)
    if after[0].bottom < top:
        return False  # nothing of the next run above it
    left = min(line.left for line in run)
    right = max(line.widen(box).right for line in run)
    bottom = min(line.bottom for line in run)
    if not any(
        x.top + x.bottom < 2 * bottom  # its middle under the box's foot
        and min(x.widen(box).right, right) > max(x.left, left)
        for x in after
    ):
        return False  # no text under it, across its width
    beside = 0
    for line in run:
        line.widen(box)
        level = [x.widen(box) for x in after if x.level_with(line)]
        if any(not x.beside(line) for x in level):
            return False  # a line across it: no float
        beside += bool(level)
    return 2 * beside >= len(run) and any(_WORD.search(x.text) for x in run)


def _left_first(
    band: list[list[_Line]], box: Callable[[int], _Box]
) -> list[list[_Line]]:
    """A band's runs as drawn, but a column of prose drawn before one wholly to its
    left and level with it in part read after it: the right column drawn first,
    the left one after, and words beside that left column (its heading) with it.
    A column of prose here: two lines of words or more, one of them a column's
    width. A run is cut where a line lies wholly right of the one before (a
    heading over the left column, the right column drawn on after it). Other runs
    (a drawing's labels, runs neither side of each other) keep the order they were
    drawn in."""
    if len(band) < 2:
        return band
    pieces: list[list[_Line]] = []
    for run in band:
        pieces.append([run[0].widen(box)])
        for line in run[1:]:
            before = pieces[-1][-1]
            line.widen(box)
            if line.left >= before.right:  # on down the page, to the right
                pieces.append([])
            pieces[-1].append(line)
    height = _median_height([line for piece in pieces for line in piece])
    edges = [
        (
            min(line.left for line in piece),
            max(line.right for line in piece),
            min(line.bottom for line in piece),
            max(line.top for line in piece),
        )
        for piece in pieces
    ]
    worded = [sum(bool(_WORD.search(line.text)) for line in piece) for piece in pieces]
    columns = {
        k
        for k, piece in enumerate(pieces)
        if worded[k] >= 2
        and max(line.right - line.left for line in piece) >= _COLUMN_WIDTH * height
    }
    if not 2 <= len(columns) <= _MAX_COLUMNS:
        return band

    def left_of(j: int, k: int) -> bool:  # j wholly left of k, level with it in part
        a, b = edges[j], edges[k]
        return a[1] <= b[0] and min(a[3], b[3]) > max(a[2], b[2])

    order: list[int] = []
    taken: set[int] = set()

    def take(k: int) -> None:
        # "Wholly left of" never goes round in a circle.
        taken.add(k)
        if k in columns:
            ahead = [j for j in range(len(pieces)) if j not in taken and left_of(j, k)]
            if columns.intersection(ahead):
                # The column to its left, and the words beside them (its heading).
                for j in ahead:
                    if j not in taken and worded[j]:
                        take(j)
        order.append(k)

    for k in range(len(pieces)):
        if k not in taken:
            take(k)
    return [pieces[k] for k in order]


def _cut_at_leaps(runs: list[list[_Line]]) -> list[list[_Line]]:
    """The runs, each cut where it leaps down from words past the top of another
    run and two or more of its lines of words. A running header drawn last, the
    footer after it, is one run from the top of the page to its foot: a band
    across the whole page, which would keep the header after the body it lies
    above. (A drawing's labels, a letter or a number each, are no header and no
    body; a column whose lines PDFium ran into the next column's leaves gaps
    beside that column's lines, but not beside its top.) The run drawn last is cut
    where it leaps from above all the others to below them, a body of one line
    too."""
    # Room for two lines, at the least.
    least = 2 * _median_height([x for run in runs for x in run])
    leaps = [
        (k, i)
        for k, run in enumerate(runs)
        for i in range(1, len(run))
        if run[i - 1].bottom - run[i].top >= least
    ]
    if not leaps:
        return runs
    heads = [(max(x.top for x in run), k) for k, run in enumerate(runs) if len(run) > 1]
    cuts = set()
    for k, i in leaps:
        above, below = runs[k][i - 1], runs[k][i]
        for head, j in heads:
            if j != k and below.top < head <= above.bottom:
                inside = (
                    x
                    for x in runs[j]
                    if below.top <= x.bottom
                    and x.top <= above.bottom
                    and _WORD.search(x.text)
                )
                if next(inside, None) and next(inside, None):  # two
                    cuts.add((k, i))
                    break
    # The run drawn last, a few lines leaping from above all the rest to a few
    # below it: a header and footer drawn after the body (Chrome's), whatever the
    # body's length.
    last = len(runs) - 1
    rest = [x for run in runs[:last] for x in run]
    for k, i in leaps:
        above, below = runs[k][i - 1], runs[k][i]
        if (
            k == last
            and i <= _MARGIN_LINES
            and len(runs[k]) - i <= _MARGIN_LINES
            and any(_WORD.search(x.text) for x in rest)
            and all(below.top <= x.bottom and x.top <= above.bottom for x in rest)
        ):
            cuts.add((k, i))
    pieces: list[list[_Line]] = []
    for k, run in enumerate(runs):
        pieces.append([run[0]])
        for i in range(1, len(run)):
            if (k, i) in cuts and any(_WORD.search(x.text) for x in pieces[-1]):
                pieces.append([])
            pieces[-1].append(run[i])
    return pieces


def _loose_box_reader(textpage: Any) -> Callable[[int], _Box]:
    """A function giving a character's loose box (its font's height): it is called
    for every line of every page, so it reuses one buffer."""
    rect = pdfium_c.FS_RECTF()
    get, raw, ref = pdfium_c.FPDFText_GetLooseCharBox, textpage.raw, ctypes.byref(rect)

    def box(index: int) -> _Box:
        if not get(raw, index, ref):
            return 0.0, 0.0, 0.0, 0.0
        return rect.left, rect.bottom, rect.right, rect.top

    return box


def _prose(lines: list[str]) -> bool:
    """Whether lines read as running text: many start lowercase or end hyphenated.
    Lines in a script without case (Chinese, Arabic) count as prose too."""
    starts = [m.group() for line in lines if (m := _WORDLIKE.search(line))]
    if not starts:
        return True
    lower = sum(s.islower() for s in starts)
    cased = sum(s.isupper() or s.isdigit() for s in starts)
    hyphens = sum(line.endswith(("-", "\x02")) for line in lines)
    return lower + hyphens >= _PROSE_SHARE * len(lines) or cased < 0.8 * len(starts)


def _median_height(lines: list[_Line]) -> float:
    heights = sorted(x.top - x.bottom for x in lines)
    return heights[len(heights) // 2]


def _cells(run: list[_Line]) -> bool:
    """Whether a column's lines are a table's cells, whatever their case: short
    and further apart than lines of text (an index, a page of formulas, are not)."""
    words = sorted(len(x.text.split()) for x in run if len(x.text) > 2) or [9]
    if len(run) < 3 or words[len(words) // 2] > 3:
        return False
    pitches = sorted(a.top - b.top for a, b in pairwise(run))
    return pitches[len(pitches) // 2] >= _CELL_PITCH * _median_height(run)


def _cell_rows(
    run: list[_Line], other: list[_Line], box: Callable[[int], _Box]
) -> bool:
    """Whether a column's lines are a table's cells too long for _cells (phrases,
    or wrapped onto a second or third line), ``other`` the column beside it: its
    lines fall into blocks (cells) spaced further apart than lines of text, and
    the blocks start level with the blocks beside them (a row's cells). Cells of
    one line each lie as lines of double-spaced prose would: they count only if
    the column's lines mostly do not end where the next one's first word would
    not have fitted (as lines of prose do)."""
    blocks = _blocks(run)
    if len(blocks) < 3 or max(map(len, blocks)) > 3:
        return False
    if any(x.text.endswith(("-", "\x02")) for x in run):
        return False  # a word broken across lines: prose
    if len(blocks) == len(run) and 2 * _wrapped(run, box) >= len(run) - 1:
        return False
    heads = [block[0] for block in _blocks(other)]
    level = sum(any(block[0].level_with(x) for x in heads) for block in blocks)
    return level >= 0.75 * len(blocks)


def _wrapped(run: list[_Line], box: Callable[[int], _Box]) -> int:
    """How many of a column's lines end where the next line's first word would
    not have fitted on them (its width guessed from the next line's)."""
    widths = [x.widen(box).right - x.left for x in run]
    wide = max(widths)
    count = 0
    for k, line in enumerate(run[1:]):
        word = len(line.text.split(" ", 1)[0]) + 1  # with its space
        count += widths[k] + widths[k + 1] * word / len(line.text) > wide
    return count


def _blocks(run: list[_Line]) -> list[list[_Line]]:
    """A column's lines in blocks: a line further under the one before it than
    lines of text are (``_CELL_PITCH``) starts a block."""
    gap = _CELL_PITCH * _median_height(run)
    blocks = [[run[0]]]
    for above, below in pairwise(run):
        if above.top - below.top >= gap or below.top > above.top:
            blocks.append([])
        blocks[-1].append(below)
    return blocks


def _numbering(lines: list[str]) -> bool:
    """Whether lines are mostly numbers counting up (a proof's line numbers in the
    margin, a few run into a printer's mark)."""
    numbers = [int(line) for line in lines if line.isdecimal()]
    return len(numbers) >= max(3, 0.8 * len(lines)) and all(
        b > a for a, b in pairwise(numbers)
    )


def _text_in_rows(lines: list[_Line], box: Callable[[int], _Box]) -> str:
    """``lines`` row by row from the top, each row's pieces from the left.

    Lines alone on their row go down in columns, read one after the other: a box
    in the margin, its lines between a paragraph's, is read beside it, not woven
    into it. A row of several pieces (a table's), or a line across two columns,
    ends the columns above it.
    """
    rows: list[list[_Line]] = []
    for line in sorted(lines, key=lambda x: -x.top):
        row = next((r for r in rows if r[0].level_with(line)), None)
        if row is None:
            rows.append([line])
        else:
            row.append(line)
    out: list[str] = []
    columns: list[list[_Line]] = []
    for row in rows:
        line = row[0].widen(box)
        under = [c for c in columns if c[-1].above(line)]
        if len(row) == 1 and len(under) <= 1:
            if under:
                under[0].append(line)
            else:
                columns.append([line])
            continue
        out += [x.text for column in columns for x in column]  # they end here
        if len(row) == 1:
            columns = [[line]]
        else:
            columns = []
            out.append(" ".join(x.text for x in sorted(row, key=lambda x: x.left)))
    out += [x.text for column in columns for x in column]
    return "\r\n".join(out)


def _annotation_text(doc: Any, page: Any) -> tuple[str, bool]:
    """Comments (on notes, highlights, shapes, stamps...), free-text boxes and the
    values of filled-in form fields: not in the page's text. The flag says a
    comment holds a file (pdf_files reads those)."""
    found: dict[tuple[str, str], None] = {}  # (field name, text), in page order
    attaches_files = False
    form = doc.formenv
    for k in range(pdfium_c.FPDFPage_GetAnnotCount(page)):
        annot = pdfium_c.FPDFPage_GetAnnot(page, k)
        if not annot:
            continue
        try:
            kind = pdfium_c.FPDFAnnot_GetSubtype(annot)
            attaches_files |= kind == pdfium_c.FPDF_ANNOT_FILEATTACHMENT
            name = value = ""
            if kind in _COMMENTED:
                value = _utf16(pdfium_c.FPDFAnnot_GetStringValue, annot, b"Contents")
                if kind != pdfium_c.FPDF_ANNOT_FREETEXT:
                    value = comment_line(value)
            elif (
                kind == pdfium_c.FPDF_ANNOT_WIDGET
                and form
                and pdfium_c.FPDFAnnot_GetFormFieldType(form, annot) in _TEXT_FIELDS
            ):
                value = _utf16(pdfium_c.FPDFAnnot_GetFormFieldValue, form, annot)
                # One field may have several widgets: its value is read once.
                name = _utf16(pdfium_c.FPDFAnnot_GetFormFieldName, form, annot)
        finally:
            pdfium_c.FPDFPage_CloseAnnot(annot)
        # Acrobat ends the lines of a multi-line field or text box with a bare CR.
        value = value.replace("\r\n", "\n").replace("\r", "\n").strip()
        if value:
            found[name, value] = None
    return "\n".join(value for _, value in found), attaches_files


def _utf16(func: Any, *args: Any) -> str:
    size = func(*args, None, 0)  # bytes, including a 2-byte terminator
    if size <= 2:
        return ""
    buffer = (ctypes.c_ushort * (size // 2))()
    func(*args, buffer, size)
    return bytes(buffer)[: size - 2].decode("utf-16-le", errors="replace")


def _load_error(path: str | os.PathLike[str], code: int | None) -> ExtractionError:
    """Turn PDFium's load error code into a message a person can act on."""
    with open(path, "rb") as fh:  # error path only: reading it all is fine
        data = fh.read()
    if b"/BrotliDecode" in data:
        # PDFium fails on this unknown filter without setting an error code, so
        # ``code`` is whatever the process's previous failure left: decide by content.
        return UnsupportedFileError(
            "This PDF uses Brotli compression (a draft PDF 2.0 feature) that "
            "cannot be read yet; save it again with standard compression."
        )
    if code == pdfium_c.FPDF_ERR_PASSWORD:
        if b"/Encrypt" in data:
            return EncryptedFileError()
        return CorruptFileError("its structure is broken (it cannot be opened)")
    if code == pdfium_c.FPDF_ERR_SECURITY and b"/Encrypt" in data:
        return UnsupportedFileError(
            "This PDF uses an unsupported protection scheme; upload an unprotected copy."
        )
    if b"%%EOF" not in data[-2048:]:
        return CorruptFileError(
            "the PDF is incomplete (its end is missing); the upload may have been cut short"
        )
    return CorruptFileError("its PDF structure cannot be parsed")


def _dubious(body: str) -> int:
    """How much of ``body`` is unreadable glyphs, in characters: pdfplumber writes one
    it cannot map as "(cid:12)", seven characters of garbage."""
    return sum(map(len, _DUBIOUS.findall(body)))


def _prefer_plumber(page: _Page, body: str) -> bool:
    """Use pdfplumber's text unless it lost text or is no more readable."""
    if not body.strip():
        return False
    if not page.body.strip():
        # Only what reads as text: "(cid:3)" for every glyph of a font it cannot
        # map either is no better than nothing (which OCR may then read).
        return _usable(_Page(body, dubious=_dubious(body)))
    ours = len(page.body.split())
    theirs = len(body.split())
    return theirs >= 0.8 * ours and _dubious(body) <= page.dubious


def _plumber_pages(path: str | os.PathLike[str], indices: list[int]) -> dict[int, str]:
    """pdfplumber's text for a few pages; a second opinion, so failures are ignored."""
    if not indices:
        return {}
    out: dict[int, str] = {}
    try:
        import pdfplumber  # imported on demand: it costs more than most extractions

        with pdfplumber.open(path) as pdf:
            pages = pdf.pages
            for i in indices:
                if i < len(pages):
                    page = _upright(pages[i])
                    out[i] = _plumber_text(page)
                    page.close()
    except Exception:  # noqa: S110 - pdfminer raises many types; PDFium's text stands
        pass
    return out


def _upright(page: Any) -> Any:
    """pdfplumber's page as set, without its /Rotate: pdfminer lays a turned
    page's text out turned, and pdfplumber orders its lines so (as PDFium does;
    see _pdfium_page)."""
    if not page.rotation:
        return page
    page.close()
    page.page_obj.rotate = 0
    page.page_obj.attrs["Rotate"] = 0
    return type(page)(
        page.pdf,
        page.page_obj,
        page_number=page.page_number,
        initial_doctop=page.initial_doctop,
    )


def _plumber_document(
    path: str | os.PathLike[str], max_pages: int
) -> tuple[list[_Page], int]:
    import pdfplumber

    pages: list[_Page] = []
    try:
        with pdfplumber.open(path) as pdf:
            total = len(pdf.pages)
            no_pages = total == 0 and _empty_page_tree(pdf.doc)
            for page in map(_upright, pdf.pages[:max_pages]):
                body = _plumber_text(page)
                empty = not body.strip()
                pages.append(
                    _Page(
                        body,
                        dubious=_dubious(body),
                        image_only=empty and bool(page.images),
                        blank=empty and not any(page.objects.values()),
                    )
                )
                page.close()
    # pdfminer raises PdfminerException, but also TypeError, RecursionError...
    except Exception as exc:
        if _password_error(exc):
            raise EncryptedFileError() from exc
        raise CorruptFileError("its PDF structure cannot be parsed") from exc
    if not pages and not no_pages:
        raise CorruptFileError("it has no pages")
    return pages, total


def _pages_in_tree(path: str | os.PathLike[str]) -> int | None:
    """How many pages the page tree lists, walked through its /Kids (a kid that
    is no page node counts as a page, damaged or missing); None when it cannot be
    walked."""
    try:
        from pdfminer.pdfdocument import PDFDocument
        from pdfminer.pdfparser import PDFParser
        from pdfminer.pdftypes import PDFObjRef, resolve1

        with open(path, "rb") as fh:
            catalog = PDFDocument(PDFParser(fh)).catalog
            seen: set[int] = set()
            leaves = 0
            stack: list[Any] = [catalog.get("Pages")]
            while stack:
                ref = stack.pop()
                if isinstance(ref, PDFObjRef):
                    if ref.objid in seen:
                        continue
                    seen.add(ref.objid)
                try:
                    node = resolve1(ref)
                except Exception:  # a kid that cannot be loaded: a damaged page
                    node = None
                kids = resolve1(node.get("Kids")) if isinstance(node, dict) else None
                if isinstance(kids, list):
                    stack += kids
                else:
                    leaves += 1
            return leaves
    # pdfminer raises many types (see _plumber_document): PDFium's count stands.
    except Exception:
        return None


def _empty_page_tree(doc: Any) -> bool:
    """Whether a document's page tree is whole and holds no pages (``/Count 0``,
    ``/Kids []``), as a tool that removed every page writes it: not a damaged file
    whose pages cannot be found."""
    from pdfminer.pdftypes import resolve1

    tree = resolve1(doc.catalog.get("Pages"))
    return (
        isinstance(tree, dict)
        and resolve1(tree.get("Count")) == 0
        and resolve1(tree.get("Kids")) == []
    )


def _password_error(exc: BaseException) -> bool:
    from pdfminer.pdfdocument import PDFEncryptionError, PDFPasswordIncorrect

    seen: set[int] = set()
    stack: list[Any] = [exc]
    while stack:
        err = stack.pop()
        if not isinstance(err, BaseException) or id(err) in seen:
            continue
        seen.add(id(err))
        if isinstance(err, (PDFPasswordIncorrect, PDFEncryptionError)):
            return True
        stack += [err.__cause__, err.__context__, *err.args]
    return False
