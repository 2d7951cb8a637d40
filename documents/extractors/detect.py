"""Decide a file's type from its bytes, never from its name."""

from __future__ import annotations

import codecs
import os
import re
import zipfile
from typing import BinaryIO

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
TEXT = "text/plain"

SUPPORTED_TYPES: dict[str, str] = {PDF: "PDF", DOCX: "Word (DOCX)", TEXT: "Plain text"}

PREFIX_BYTES = 64 * 1024  # enough to judge text; keeps detection O(1) in file size
_PDF_HEADER_WINDOW = 1024  # PDF readers accept junk before %PDF- up to here
_BOMS = (
    codecs.BOM_UTF32_LE,  # before UTF-16 LE: it starts with the same two bytes
    codecs.BOM_UTF32_BE,
    codecs.BOM_UTF8,
    codecs.BOM_UTF16_LE,
    codecs.BOM_UTF16_BE,
)
# Object syntax without a %PDF- header: a PDF whose start was lost, not prose.
_PDF_OBJECT = re.compile(rb"\d+\s+\d+\s+obj\s*<<")
_PDF_STRUCTURE = re.compile(rb"\b(endobj|startxref|trailer|xref)\b")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")
_MAX_CONTROL_SHARE = 0.05  # coloured logs carry some ESC codes; binary has ~12%
# Legacy Office files, and password-protected .docx files, are OLE containers.
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_IMAGES = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"II*\x00", b"MM\x00*")
_BINARY_MAGIC = (*_IMAGES, _OLE, b"PK\x03\x04", b"\x1f\x8b", b"7z\xbc")


def detect_mime_type(source: str | os.PathLike[str] | BinaryIO) -> str | None:
    """Return the MIME type of a PDF, DOCX or text file from its content, else None."""
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as fh:
            return _detect(fh)
    position = source.tell()
    try:
        source.seek(0)
        return _detect(source)
    finally:
        source.seek(position)


def unsupported_reason(source: str | os.PathLike[str]) -> str:
    """A message for a file that is none of the supported types, naming what it is."""
    with open(source, "rb") as fh:
        head = fh.read(8)
    if head.startswith(_OLE):
        return (
            "This looks like an old Word (.doc) file or a password-protected Word "
            "document; save it as .docx without a password and upload it again."
        )
    if head.startswith(_IMAGES):
        return (
            "This is an image, not a PDF, DOCX or plain-text file; "
            "convert it to PDF (with OCR) first."
        )
    if head.startswith(b"PK\x03\x04"):
        return "This ZIP archive is not a Word (.docx) document."
    return "This file is not a PDF, DOCX or plain-text file."


def looks_like_pdf(prefix: bytes) -> bool:
    """True for a %PDF- header near the start, or PDF object syntax without one."""
    if b"%PDF-" in prefix[:_PDF_HEADER_WINDOW]:
        return True
    return bool(_PDF_OBJECT.search(prefix) and _PDF_STRUCTURE.search(prefix))


def _detect(fh: BinaryIO) -> str | None:
    prefix = fh.read(PREFIX_BYTES)
    if not prefix:
        return None
    if prefix.startswith(b"PK\x03\x04") or prefix.startswith(b"PK\x05\x06"):
        fh.seek(0)
        return _detect_zip(fh, prefix)
    if looks_like_pdf(prefix):
        return PDF
    if looks_like_text(prefix):
        return TEXT
    return None


def _detect_zip(fh: BinaryIO, prefix: bytes) -> str | None:
    try:
        with zipfile.ZipFile(fh) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        # No readable central directory (an upload cut short): still call it a
        # DOCX when its first entries are Word parts, so the user hears "damaged
        # Word file" rather than "unsupported type".
        return DOCX if b"word/" in prefix or b"[Content_Types].xml" in prefix else None
    return DOCX if "word/document.xml" in names else None


def looks_like_text(prefix: bytes) -> bool:
    """True when a byte prefix decodes as text with almost no control characters."""
    for bom in _BOMS:
        if prefix.startswith(bom):
            return True
    if prefix.startswith(_BINARY_MAGIC) or b"\x00" in prefix:
        return False
    decoded = _decode_utf8_prefix(prefix)
    if decoded is None:
        decoded = _guess_decode(prefix)
    if decoded is None:
        return False
    return len(_CONTROL.findall(decoded)) <= _MAX_CONTROL_SHARE * max(len(decoded), 1)


def _decode_utf8_prefix(prefix: bytes) -> str | None:
    # Incremental decoding tolerates a multi-byte character cut at the prefix end.
    try:
        return codecs.getincrementaldecoder("utf-8")().decode(prefix, final=False)
    except UnicodeDecodeError:
        return None


def _guess_decode(prefix: bytes) -> str | None:
    from charset_normalizer import from_bytes

    best = from_bytes(prefix).best()
    return None if best is None else str(best)
