"""Checks every upload passes before anything is stored: size, type, name."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import PurePosixPath

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.template.defaultfilters import filesizeformat

from documents.extractors.detect import SUPPORTED_TYPES, detect_mime_type

MAX_FILENAME_LENGTH = 200
# What a name's extension promises; a file whose bytes say otherwise is refused.
EXTENSION_TYPES = {
    ".pdf": "application/pdf",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".txt": "text/plain",
    ".text": "text/plain",
}


@dataclass(frozen=True, slots=True)
class CheckedUpload:
    """An upload that passed the checks, with its safe display name and real type."""

    file: UploadedFile
    filename: str
    mime_type: str


def clean_filename(name: str) -> str:
    """The name to show: no path, no control characters, bounded length."""
    name = PurePosixPath(name.replace("\\", "/")).name
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C").strip(" .")
    if len(name) > MAX_FILENAME_LENGTH:
        suffix = PurePosixPath(name).suffix[:12]
        name = name[: MAX_FILENAME_LENGTH - len(suffix)] + suffix
    return name or "upload"


def accepted_types_label() -> str:
    """E.g. "PDF, Word (DOCX) or Plain text"."""
    *rest, last = SUPPORTED_TYPES.values()
    return f"{', '.join(rest)} or {last}" if rest else last


def check_upload(upload: UploadedFile) -> CheckedUpload:
    """Refuse empty, oversized, unrecognised or mislabelled files with a clear reason."""
    filename = clean_filename(upload.name or "")
    limit = settings.MAX_UPLOAD_MB * 1024 * 1024
    if not upload.size:
        raise ValidationError(f"“{filename}” is empty (0 bytes).", code="empty")
    if upload.size > limit:
        raise ValidationError(
            f"“{filename}” is {filesizeformat(upload.size)}; the limit is "
            f"{filesizeformat(limit)}.",
            code="too_large",
        )
    mime_type = detect_mime_type(upload.file)
    if mime_type not in SUPPORTED_TYPES:
        raise ValidationError(
            f"“{filename}” is not a file we can read: its contents are not "
            f"{accepted_types_label()}.",
            code="unsupported",
        )
    claimed = EXTENSION_TYPES.get(PurePosixPath(filename).suffix.lower())
    if claimed and claimed != mime_type:
        raise ValidationError(
            f"“{filename}” is named like a {SUPPORTED_TYPES[claimed]} file but its "
            f"contents are {SUPPORTED_TYPES[mime_type]}. Rename it or upload the right file.",
            code="mismatch",
        )
    return CheckedUpload(file=upload, filename=filename, mime_type=mime_type)
