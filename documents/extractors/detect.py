"""Decide a file's format from its bytes, never from its name."""

from __future__ import annotations

import os
import posixpath
import zipfile
import zlib
from collections.abc import Callable
from typing import Any, BinaryIO, TypeVar
from urllib.parse import unquote

from .base import parse_xml
from .formats import FORMATS, TEXT, Format, accepted_labels, by_extension
from .sniff import (
    OLE_MAGIC,
    PREFIX_BYTES,
    TAR_MAGIC,
    TAR_MAGIC_AT,
    ZIP_MAGIC,
    looks_like_text,
    text_but_for_stray_nuls,
)

_MAX_MARKER_BYTES = 256  # ODF's mimetype entry is one short line
# An OOXML package's relationships and content types: a few KiB in real files.
_MAX_PACKAGE_INDEX_BYTES = 1024 * 1024
_MAIN_RELATIONSHIPS = (  # transitional and Strict Open XML
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument",
    "http://purl.oclc.org/ooxml/officeDocument/relationships/officeDocument",
)
# What reading one member of an archive may raise: damage, an unknown compression
# method, a password.
MEMBER_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    OSError,
    EOFError,
    NotImplementedError,
    RuntimeError,
)
# A log truncated under its writer (logrotate's copytruncate) goes on after a hole
# of NULs as long as the log was: text is looked for this far.
_MAX_LEADING_NUL_BYTES = 64 * 1024 * 1024
# Archives, uploaded by mistake for the documents they hold: named.
_ARCHIVES = (
    (b"\x1f\x8b", "gzip"),
    (b"7z\xbc\xaf\x27\x1c", "7-Zip"),
    (b"Rar!\x1a\x07", "RAR"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"BZh", "bzip2"),
)
T = TypeVar("T")


def _from_start(
    source: str | os.PathLike[str] | BinaryIO, read: Callable[[BinaryIO], T]
) -> T:
    """``read`` the file from its first byte: a path is opened, a file object is
    rewound and keeps its position."""
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as fh:
            return read(fh)
    position = source.tell()
    try:
        source.seek(0)
        return read(source)
    finally:
        source.seek(position)


def detect_format(source: str | os.PathLike[str] | BinaryIO) -> Format | None:
    """Return the format of a file from its content (readable or refused), else None."""
    return _from_start(source, _detect)


def detect_named_format(source: BinaryIO, name: str) -> Format | None:
    """The format of a file from its content, as detect_format; and text with a
    few stray NULs (a log written through a crash, a tool's export) when its name
    promises text: its bytes alone look binary, and the NULs are dropped on reading."""
    detected = detect_format(source)
    if detected is not None:
        return detected
    claimed = by_extension(name)
    if (
        claimed is not None
        and claimed.extractor == TEXT.extractor
        and text_but_for_stray_nuls(read_prefix(source))
    ):
        return claimed
    return None


def detect_mime_type(source: str | os.PathLike[str] | BinaryIO) -> str | None:
    """Return the MIME type of a readable file from its content, else None."""
    fmt = detect_format(source)
    return fmt.mime_type if fmt and fmt.readable else None


def read_prefix(source: str | os.PathLike[str] | BinaryIO) -> bytes:
    """The first bytes detection judges by (a file object keeps its position)."""
    return _from_start(source, lambda fh: fh.read(PREFIX_BYTES))


def unsupported_reason(source: str | os.PathLike[str] | BinaryIO) -> str:
    """Why a file is not read: its format's refusal, or what it is not."""
    fmt = detect_format(source)
    if fmt is not None and not fmt.readable:
        return fmt.refusal
    head = _from_start(source, lambda fh: fh.read(TAR_MAGIC_AT + 8))
    archive = next((name for magic, name in _ARCHIVES if head.startswith(magic)), None)
    if archive is None and head.startswith(TAR_MAGIC, TAR_MAGIC_AT):
        archive = "tar"
    if archive:
        return (
            f"This is a compressed or archived file ({archive}), not a document; "
            "unpack it and upload the documents it holds."
        )
    if head.startswith(OLE_MAGIC):
        return (
            "This looks like an old Office file (.doc, .xls or .ppt) or a "
            "password-protected one; save it in the modern format (DOCX, XLSX or "
            "PPTX) without a password and upload that."
        )
    zipped = [fmt.label for fmt in FORMATS if fmt.zip_member and fmt.readable]
    if head.startswith(ZIP_MAGIC):
        return f"This ZIP archive is not a document we can read ({', '.join(zipped)})."
    return f"Its contents are not {accepted_labels()}."


def _detect(fh: BinaryIO) -> Format | None:
    prefix = fh.read(PREFIX_BYTES)
    if not prefix:
        return None
    if prefix.startswith(ZIP_MAGIC):
        fh.seek(0)
        return _detect_zip(fh, prefix)
    if prefix.startswith(OLE_MAGIC):
        fh.seek(0)
        return _detect_ole(fh)
    # A signature is sure, whatever follows it: a winmail.dat holding a PDF holds
    # a PDF's bytes, which a sniff finds; an RTF opening with a picture's raw bytes
    # (\bin) is an RTF all the same.
    for fmt in FORMATS:
        if fmt.signed(prefix):
            return fmt
    for fmt in FORMATS:
        if not fmt.textual and fmt.matches(prefix):
            return fmt
    if not prefix.strip(b"\x00"):
        return TEXT if _text_after_nuls(fh) else None
    if not looks_like_text(prefix):
        return None
    return next((f for f in FORMATS if f.textual and f.matches(prefix)), TEXT)


def _text_after_nuls(fh: BinaryIO) -> bool:
    """True when text follows the NULs a file opens with (within a bound)."""
    fh.seek(0)
    skipped = 0
    while skipped < _MAX_LEADING_NUL_BYTES:
        chunk = fh.read(PREFIX_BYTES)
        if not chunk:
            return False
        start = len(chunk) - len(chunk.lstrip(b"\x00"))
        if start < len(chunk):
            fh.seek(skipped + start)
            return looks_like_text(fh.read(PREFIX_BYTES))
        skipped += len(chunk)
    return False


def _detect_zip(fh: BinaryIO, prefix: bytes) -> Format | None:
    containers = [fmt for fmt in FORMATS if fmt.zip_member]
    try:
        with zipfile.ZipFile(fh) as archive:
            main = office_main_part(archive)
            main_type = _content_type(archive, main) if main else None
            for fmt in containers:
                if main_type in fmt.main_part_types:
                    return fmt
            names = set(archive.namelist())
            for fmt in containers:
                if fmt.zip_member in names and _member_starts_with(archive, fmt):
                    return fmt
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError):
        # No readable central directory (an upload cut short): judge by the member
        # names in the local headers, so the user hears "damaged Word file" rather
        # than "unsupported type".
        for fmt in containers:
            folder = fmt.zip_member.partition("/")[0].encode()
            if folder + b"/" in prefix or (
                fmt.zip_member_content
                and fmt.zip_member.encode() + fmt.zip_member_content in prefix
            ):
                return fmt
    return None


def office_main_part(archive: zipfile.ZipFile) -> str | None:
    """The member holding an Office Open XML package's main part: the target of the
    officeDocument relationship in _rels/.rels, whatever its name; None when the
    package names none it holds."""
    rels = _package_index(archive, "_rels/.rels")
    if rels is None:
        return None
    members = {name.lower(): name for name in archive.namelist()}
    for rel in rels.iter("{*}Relationship"):
        if (
            rel.get("Type") in _MAIN_RELATIONSHIPS
            and rel.get("TargetMode") != "External"
        ):
            # Relative to the package's root, or absolute ("/word/document.xml").
            target = posixpath.normpath("/" + unquote(rel.get("Target") or ""))
            found = members.get(target.lstrip("/").lower())  # part names ignore case
            if found:
                return found
    return None


def _content_type(archive: zipfile.ZipFile, member: str) -> str | None:
    """A package part's content type, from [Content_Types].xml: its own Override,
    else the Default for its extension."""
    types = _package_index(archive, "[Content_Types].xml")
    if types is None:
        return None
    part_name = "/" + member.lower()
    extension = member.rpartition(".")[2].lower()
    for override in types.iter("{*}Override"):
        if unquote(override.get("PartName") or "").lower() == part_name:
            return override.get("ContentType")
    for default in types.iter("{*}Default"):
        if (default.get("Extension") or "").lower() == extension:
            return default.get("ContentType")
    return None


def _package_index(archive: zipfile.ZipFile, member: str) -> Any:
    """The root of a small XML member of the package; None if absent, too large or
    unreadable (detection then goes by member names)."""
    from lxml import etree

    try:
        with archive.open(member) as fh:
            data = fh.read(_MAX_PACKAGE_INDEX_BYTES + 1)
        if len(data) > _MAX_PACKAGE_INDEX_BYTES:
            return None
        return parse_xml(data)
    except (KeyError, etree.XMLSyntaxError, *MEMBER_ERRORS):
        return None


def _member_starts_with(archive: zipfile.ZipFile, fmt: Format) -> bool:
    if not fmt.zip_member_content:
        return True
    with archive.open(fmt.zip_member) as member:
        return member.read(_MAX_MARKER_BYTES).startswith(fmt.zip_member_content)


def _detect_ole(fh: BinaryIO) -> Format | None:
    import olefile

    try:
        with olefile.OleFileIO(fh) as ole:
            streams = {"/".join(entry) for entry in ole.listdir()}
    except (OSError, ValueError, IndexError):  # a damaged container
        return None
    return next((f for f in FORMATS if streams.intersection(f.ole_streams)), None)
