"""Checks every upload passes before anything is stored: size, type, name."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import PurePosixPath

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.template.defaultfilters import filesizeformat

from documents.extractors.detect import detect_format, read_prefix, unsupported_reason
from documents.extractors.formats import by_extension, named_format, with_article

MAX_FILENAME_LENGTH = 200


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
    return CheckedUpload(file=upload, filename=filename, mime_type=fmt.mime_type)
