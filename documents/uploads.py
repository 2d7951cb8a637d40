"""Checks every upload passes before anything is stored: size, type, name."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import IO, Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler
from django.http import QueryDict
from django.http.multipartparser import MultiPartParser
from django.template.defaultfilters import filesizeformat
from django.utils.datastructures import MultiValueDict

from documents.extractors.detect import detect_format, read_prefix, unsupported_reason
from documents.extractors.formats import by_extension, named_format, with_article

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


@dataclass(frozen=True, slots=True)
class CheckedUpload:
    """An upload that passed the checks, with its safe display name and real type."""

    file: UploadedFile
    filename: str
    mime_type: str


def clean_filename(name: str) -> str:
    """The name to show: no path, no control characters, bounded length."""
    return _usable_name(name) or UNNAMED


def _usable_name(name: str) -> str:
    """What is left of a name to show; empty when nothing usable is."""
    name = PurePosixPath(name.replace("\\", "/")).name
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C").strip(" .")
    if len(name) > MAX_FILENAME_LENGTH:
        suffix = PurePosixPath(name).suffix[:12]
        name = name[: MAX_FILENAME_LENGTH - len(suffix)] + suffix
    return name


class NamelessFileParser(MultiPartParser):
    """Django's multipart parser, except that it keeps a file whose name has nothing
    usable left ("/", "..", control characters only) instead of dropping it: its
    sender did send a file, and "No file was submitted" would say otherwise."""

    def sanitize_file_name(self, file_name: str) -> str:
        return super().sanitize_file_name(file_name) or NAMELESS


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
    detected = detect_format(upload.file)
    if detected is None or not detected.readable:
        reason = unsupported_reason(upload.file)
        raise ValidationError(
            f"“{filename}” is not a file we can read. {reason}", code="unsupported"
        )
    fmt = named_format(detected, filename, read_prefix(upload.file))
    if fmt is None:
        claimed = by_extension(filename)
        raise ValidationError(
            f"“{filename}” is named like {with_article(claimed.label)} file but its "
            f"contents are {detected.label}. Rename it or upload the right file.",
            code="mismatch",
        )
    if not usable:
        # Kept under a name of ours: a name is only shown, never trusted.
        filename = UNNAMED + next(iter(fmt.extensions), "")
    return CheckedUpload(file=upload, filename=filename, mime_type=fmt.mime_type)
