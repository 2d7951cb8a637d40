"""PDF extraction: PDFium, pdfplumber, or "auto" (PDFium, repaired page by page)."""

from __future__ import annotations

import ctypes
import os
import re
from dataclasses import dataclass
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from .base import (
    BLANK_NOTE,
    NO_TEXT_NOTE,
    CorruptFileError,
    EncryptedFileError,
    ExtractionError,
    ExtractionResult,
    ExtractOptions,
    UnsupportedFileError,
)
from .sniff import PREFIX_BYTES, looks_like_pdf

ENGINES = ("auto", "pdfium", "pdfplumber")

_EVERYWHERE = (-1e6, -1e6, 1e6, 1e6)  # wider than any crop box: keep all text
_SPARSE_CHARS = 500  # only small pages get the (Python-speed) line-order check
_SAMPLE = 24  # characters per page probed for a broken font map
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # noise in page text
_GARBLED = re.compile(r"[\x00\x01\x03-\x08\x0b\x0c\x0e-\x1f\x7f\ufffd]")
_DUBIOUS = re.compile(r"[\ue000-\uf8ff\ufffd]|\(cid:\d+\)")  # unreadable glyphs
_RTL = re.compile(r"[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")


@dataclass(slots=True)
class _Page:
    body: str = ""
    extra: str = ""  # annotation and form-field text, outside the content stream
    dubious: float = 0.0  # characters we doubt (broken font map, PUA glyphs)
    image_only: bool = False
    blank: bool = False  # nothing drawn at all (or nothing PDFium could decode)
    damaged: bool = False

    @property
    def text(self) -> str:
        return "\n".join(t for t in (self.body.strip(), self.extra) if t)


def extract_pdf(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """Extract a PDF's text with the engine of the options (auto, pdfium, pdfplumber)."""
    engine = options.pdf_engine
    if engine not in ENGINES:
        raise ValueError(f"unknown PDF engine {engine!r}; choose one of {ENGINES}")
    with open(path, "rb") as fh:
        prefix = fh.read(PREFIX_BYTES)
    if not prefix:
        raise CorruptFileError("it is empty (0 bytes); the upload may have failed")
    if not looks_like_pdf(prefix):
        raise UnsupportedFileError("This file is not a PDF.")
    if engine == "pdfplumber":
        return _result(_plumber_document(path), "pdfplumber")
    try:
        pages, repaired = _pdfium_document(path, auto=engine == "auto")
    except CorruptFileError as exc:
        if engine != "auto" or isinstance(exc, EncryptedFileError):
            raise
        # pdfminer recovers some files PDFium refuses; worth a try only on failure.
        try:
            rescued = _result(_plumber_document(path), "pdfplumber")
        except EncryptedFileError:
            raise
        except ExtractionError:
            raise exc from None
        if rescued.is_empty:
            raise
        return rescued
    return _result(pages, "pdfium+pdfplumber" if repaired else "pdfium")


def _result(pages: list[_Page], extractor: str) -> ExtractionResult:
    if all(p.damaged for p in pages):
        raise CorruptFileError("none of its pages can be read")
    texts = [p.text for p in pages]
    text = "\n\n".join(t for t in texts if t)
    if not text.strip():
        note = BLANK_NOTE if all(p.blank for p in pages) else NO_TEXT_NOTE
        return ExtractionResult("", len(pages), 0.0, extractor, note)
    chars = sum(len(t) - t.count(" ") - t.count("\n") for t in texts) or 1
    quality = max(0.0, 1.0 - sum(p.dubious for p in pages) / chars)
    with_text = sum(1 for t in texts if t)
    missing = sum(1 for p in pages if p.image_only or p.damaged)
    note = ""
    if missing:
        note = (
            f"{missing} of {len(pages)} pages have no readable text (scanned images or "
            "damaged pages); run OCR to make them searchable."
        )
    confidence = round(quality * with_text / (with_text + missing), 3)
    return ExtractionResult(text, len(pages), confidence, extractor, note)


def _pdfium_document(
    path: str | os.PathLike[str], *, auto: bool
) -> tuple[list[_Page], bool]:
    try:
        doc = pdfium.PdfDocument(os.fspath(path))
    except pdfium.PdfiumError as exc:
        raise _load_error(path, exc.err_code) from exc
    try:
        if auto and doc.get_formtype() == pdfium_c.FORMTYPE_ACRO_FORM:
            doc.init_forms()  # needed to read form-field values
        if len(doc) == 0:
            raise CorruptFileError("it has no pages")
        read = [_pdfium_page(doc, i, auto=auto) for i in range(len(doc))]
    finally:
        doc.close()
    pages = [page for page, _ in read]
    suspects = [i for i, (_, suspect) in enumerate(read) if suspect]
    repaired = False
    for i, body in _plumber_pages(path, suspects).items():
        if _prefer_plumber(pages[i], body):
            pages[i].body, pages[i].damaged = body, False
            pages[i].dubious = len(_DUBIOUS.findall(body))
            repaired = True
    return pages, repaired


def _pdfium_page(doc: Any, index: int, *, auto: bool) -> tuple[_Page, bool]:
    """Read one page; the flag says pdfplumber should have a look at it too."""
    try:
        page = doc[index]
    except pdfium.PdfiumError:
        return _Page(damaged=True), auto
    try:
        textpage = page.get_textpage()
    except pdfium.PdfiumError:
        page.close()
        return _Page(damaged=True), auto
    try:
        raw = textpage.get_text_bounded(*_EVERYWHERE)
        count = textpage.count_chars()
        kinds = _object_kinds(page) if count == 0 else set()
        # PDFium marks a line-end hyphen as U+0002 (and drops the line break after
        # it): put both back, for hyphens.join_hyphenated to judge.
        body = raw.replace("\r\n", "\n").replace("\r", "\n").replace("\x02", "-\n")
        body = _CONTROLS.sub("", body)
        result = _Page(
            body=body,
            image_only=pdfium_c.FPDF_PAGEOBJ_IMAGE in kinds,
            blank=count == 0 and not kinds,
        )
        result.dubious = len(_DUBIOUS.findall(body))
        if not auto:
            return result, False
        unmapped = _unmapped_share(textpage, count)
        result.dubious += unmapped * len(body.strip())
        result.extra = _annotation_text(doc, page)
        suspect = (
            pdfium_c.FPDF_PAGEOBJ_TEXT in kinds  # yet PDFium found no characters
            or unmapped >= 0.5  # font without a usable Unicode map (garbage letters)
            or len(_GARBLED.findall(raw)) >= 0.25 * max(len(raw.strip()), 1)
            or (
                0 < count <= _SPARSE_CHARS
                and not _RTL.search(raw)
                and _label_grid_out_of_order(textpage)
            )
        )
        return result, suspect
    finally:
        textpage.close()
        page.close()


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
    rects = [textpage.get_rect(k) for k in range(textpage.count_rects())]
    rects = [r for r in rects if r[3] > r[1]]
    words = sorted(len(textpage.get_text_bounded(*r).split()) for r in rects)
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


def _annotation_text(doc: Any, page: Any) -> str:
    """Comments, free-text boxes and filled-in form fields: not in the page's text."""
    found: list[str] = []
    form = doc.formenv
    for k in range(pdfium_c.FPDFPage_GetAnnotCount(page)):
        annot = pdfium_c.FPDFPage_GetAnnot(page, k)
        if not annot:
            continue
        try:
            kind = pdfium_c.FPDFAnnot_GetSubtype(annot)
            value = ""
            if kind in (pdfium_c.FPDF_ANNOT_TEXT, pdfium_c.FPDF_ANNOT_FREETEXT):
                value = _utf16(pdfium_c.FPDFAnnot_GetStringValue, annot, b"Contents")
            elif (
                kind == pdfium_c.FPDF_ANNOT_WIDGET
                and form
                and (
                    pdfium_c.FPDFAnnot_GetFormFieldType(form, annot)
                    in (
                        pdfium_c.FPDF_FORMFIELD_TEXTFIELD,
                        pdfium_c.FPDF_FORMFIELD_COMBOBOX,
                    )
                )
            ):
                value = _utf16(pdfium_c.FPDFAnnot_GetFormFieldValue, form, annot)
        finally:
            pdfium_c.FPDFPage_CloseAnnot(annot)
        value = value.strip()
        if value and value not in found:  # one field may have several widgets
            found.append(value)
    return "\n".join(found)


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


def _prefer_plumber(page: _Page, body: str) -> bool:
    """Use pdfplumber's text unless it lost text or is no more readable."""
    if not body.strip():
        return False
    if not page.body.strip():
        return True
    ours = len(page.body.split())
    theirs = len(body.split())
    return theirs >= 0.8 * ours and len(_DUBIOUS.findall(body)) <= page.dubious


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
                    out[i] = pages[i].extract_text() or ""
                    pages[i].close()
    except Exception:  # noqa: S110 - pdfminer raises many types; PDFium's text stands
        pass
    return out


def _plumber_document(path: str | os.PathLike[str]) -> list[_Page]:
    import pdfplumber

    pages: list[_Page] = []
    try:
        with pdfplumber.open(path) as pdf:
            for page in pdf.pages:
                body = page.extract_text() or ""
                empty = not body.strip()
                pages.append(
                    _Page(
                        body,
                        dubious=len(_DUBIOUS.findall(body)),
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
    if not pages:
        raise CorruptFileError("it has no pages")
    return pages


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
