"""Checks every upload passes before anything is stored: size, type, name."""

from __future__ import annotations

import unicodedata
import zipfile
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import IO, Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler
from django.http import QueryDict, multipartparser
from django.http.multipartparser import LazyStream, MultiPartParser
from django.template.defaultfilters import filesizeformat
from django.utils.datastructures import MultiValueDict

from documents.extractors.detect import (
    detect_named_format,
    read_prefix,
    unsupported_reason,
)
from documents.extractors.formats import (
    Format,
    by_extension,
    by_mime_type,
    named_format,
    with_article,
)
from documents.extractors.sniff import ZIP_MAGIC

MAX_FILENAME_LENGTH = 200
# A file whose own name has nothing usable is called this, with its type's extension.
UNNAMED = "upload"
# What the parser names such a file: nothing usable for check_upload to keep, and
# not "." or "..", which Django's uploaded files refuse as names.
NAMELESS = "..."
# Django's parser takes a file part with an empty file name for a text field.
FILE_AS_TEXT = (
    "The file came as text, not as a file: a file sent with an empty file name "
    "arrives that way. Send it with a name (any name will do)."
)
# Detection runs in the web process on whatever is sent. Opening a ZIP reads its
# whole central directory: a document's takes a few KiB, and a crafted 46 MB one
# listing 900,000 entries held a web process for 20 s and 500 MB.
MAX_ZIP_DIRECTORY_BYTES = 2 * 1024 * 1024
TOO_MANY_MEMBERS = (
    "It is a ZIP archive listing far more files than any document holds; unpack "
    "it and upload the documents it holds."
)
DAMAGED_DIRECTORY = "Its contents are damaged: its directory of parts nests too deep."


@dataclass(frozen=True, slots=True)
class CheckedUpload:
    """An upload that passed the checks, with its safe display name and real type."""

    file: UploadedFile
    filename: str
    mime_type: str


# Names a Windows desktop runs when the file is opened (programs, scripts, shortcuts).
# Uploads are checked by their content, not their names: "notes.bat" holding text is
# kept as text, and must not run when whoever downloads it opens it.
RUNS_WHEN_OPENED = frozenset(
    [
        ".application",
        ".bat",
        ".cmd",
        ".com",
        ".cpl",
        ".exe",
        ".gadget",
        ".hta",
        ".inf",
        ".jar",
        ".js",
        ".jse",
        ".lnk",
        ".msc",
        ".msi",
        ".msp",
        ".pif",
        ".ps1",
        ".psm1",
        ".reg",
        ".scf",
        ".scr",
        ".url",
        ".vb",
        ".vbe",
        ".vbs",
        ".ws",
        ".wsc",
        ".wsf",
        ".wsh",
    ]
)


def download_name(filename: str, mime_type: str) -> str:
    """The name a stored file is handed out under: its own, unless opening a file
    of that name would run it; then with its detected type's extension added."""
    suffix = PurePosixPath(filename).suffix.lower()
    if suffix not in RUNS_WHEN_OPENED:
        return filename
    detected = by_mime_type(mime_type)
    return filename + (detected.extensions[0] if detected else ".bin")


def clean_filename(name: str) -> str:
    """The name to show: no path, no control characters, bounded length."""
    return _usable_name(name) or UNNAMED


def _usable_name(name: str) -> str:
    """What is left of a name to show; empty when nothing usable is."""
    name = PurePosixPath(name.replace("\\", "/")).name
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C").strip(" ")
    if name.startswith(".") and "." not in name[1:]:  # ".txt": an extension alone
        return ""
    name = name.strip(" .")
    if len(name) > MAX_FILENAME_LENGTH:
        suffix = PurePosixPath(name).suffix[:12]
        name = name[: MAX_FILENAME_LENGTH - len(suffix)] + suffix
    return name


class NamelessFileParser(MultiPartParser):
    """Django's multipart parser, except that it keeps a file whose name has nothing
    usable left ("/", "..", control characters only) instead of dropping it: its
    sender did send a file, and "No file was submitted" would say otherwise.

    A name's ``%22`` is read as the ``"`` it stands for: browsers and curl send a
    quote so (the HTML standard's multipart form encoding), on the form and the API
    alike."""

    def sanitize_file_name(self, file_name: str) -> str:
        name = super().sanitize_file_name(file_name)
        return name.replace("%22", '"') if name else NAMELESS


def read_part_headers(stream: LazyStream, max_header_size: int) -> tuple:
    """Django's reading of a multipart part's headers, with each header line that
    is not UTF-8 read as Latin-1 first: some old clients send a file name so
    (``filename="r\\xe9sum\\xe9.pdf"``). Django skips such a line as invalid, and
    without its Content-Disposition the whole part: the file vanished, and the form
    and the API said no file was sent. Every byte is a Latin-1 character, so the
    name is read; it is then made safe like any other (``sanitize_file_name``,
    ``clean_filename``). Bytes that are UTF-8 are left as they are."""
    chunk = read = stream.read(max_header_size)
    end = chunk.find(b"\r\n\r\n")
    if end != -1:
        lines = chunk[:end].split(b"\r\n")
        chunk = b"\r\n".join(map(_as_utf8, lines)) + chunk[end:]
    stream.unget(chunk)
    # A Latin-1 byte is two in UTF-8: headers that fitted as sent fit twice the room.
    grown = len(chunk) > len(read)
    return _django_read_part_headers(stream, max_header_size * (2 if grown else 1))


def _as_utf8(line: bytes) -> bytes:
    try:
        line.decode()
    except UnicodeDecodeError:
        return line.decode("latin-1").encode()
    return line


# Django's parser calls this function by its module's name, for every part of every
# multipart body: the upload form's, the API's (DRF's parser) and the admin's.
_django_read_part_headers = multipartparser.parse_boundary_stream
multipartparser.parse_boundary_stream = read_part_headers


class NamelessFileHandler(FileUploadHandler):
    """The first upload handler: has the body parsed by NamelessFileParser.

    Django's request and DRF's parser each run Django's parser; both let a handler
    parse the body instead, so this one hook serves the form and the API alike.
    """

    parsing = False

    def handle_raw_input(
        self,
        input_data: IO[bytes],
        META: dict[str, Any],
        content_length: int,
        boundary: bytes,
        encoding: str | None = None,
    ) -> tuple[QueryDict, MultiValueDict] | None:
        if self.parsing:
            return None  # called back by its own parser: the handlers go on as usual
        self.parsing = True
        try:
            parser = NamelessFileParser(
                META, input_data, self.request.upload_handlers, encoding
            )
            return parser.parse()
        finally:
            self.parsing = False

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None


def check_upload(upload: UploadedFile) -> CheckedUpload:
    """Refuse empty, oversized, unrecognised or mislabelled files with a clear reason."""
    usable = _usable_name(upload.name or "")
    filename = usable or UNNAMED
    limit = settings.MAX_UPLOAD_MB * 1024 * 1024
    if not upload.size:
        raise ValidationError(f"“{filename}” is empty (0 bytes).", code="empty")
    if upload.size > limit:
        raise ValidationError(
            f"“{filename}” is {filesizeformat(upload.size)}; the limit is "
            f"{filesizeformat(limit)}.",
            code="too_large",
        )
    detected, reason = _readable_format(upload.file, filename)
    if detected is None:
        raise ValidationError(
            f"“{filename}” is not a file we can read. {reason}", code="unsupported"
        )
    fmt = named_format(detected, filename, read_prefix(upload.file))
    if fmt is None:
        claimed = by_extension(filename)
        raise ValidationError(
            f"“{filename}” is named like {with_article(claimed.label)} file but is "
            f"{with_article(detected.label)} file. Rename it or upload the right file.",
            code="mismatch",
        )
    if not usable:
        # Kept under a name of ours: a name is only shown, never trusted.
        filename = UNNAMED + next(iter(fmt.extensions), "")
    return CheckedUpload(file=upload, filename=filename, mime_type=fmt.mime_type)


def _readable_format(file: IO[bytes], filename: str) -> tuple[Format | None, str]:
    """The file's format when we read it, else None and why not; bounded for the
    web process (see MAX_ZIP_DIRECTORY_BYTES)."""
    if read_prefix(file).startswith(ZIP_MAGIC) and (
        _zip_directory_bytes(file) > MAX_ZIP_DIRECTORY_BYTES
    ):
        return None, TOO_MANY_MEMBERS
    try:
        detected = detect_named_format(file, filename)
    except RecursionError:
        # olefile walks an OLE file's directory tree by recursion: a crafted one
        # a few thousand entries deep raised out of detection, a server error.
        return None, DAMAGED_DIRECTORY
    if detected is None or not detected.readable:
        return None, unsupported_reason(file)
    return detected, ""


def _zip_directory_bytes(file: IO[bytes]) -> int:
    """The size its end record gives a ZIP's central directory (0 if it has none),
    read as ZipFile reads it (ZIP64 included); the file keeps its position."""
    position = file.tell()
    try:
        end = zipfile._EndRecData(file)
    finally:
        file.seek(position)
    return end[zipfile._ECD_SIZE] if end else 0
