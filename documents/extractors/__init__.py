"""Text extractors for PDF, DOCX and plain text (no Django imports: runs in child processes)."""

from __future__ import annotations

from .base import (
    BLANK_NOTE,
    NO_TEXT_NOTE,
    CorruptFileError,
    EncryptedFileError,
    ExtractionError,
    ExtractionResult,
    ExtractionTimeoutError,
    ExtractorMissingError,
    UnsupportedFileError,
    classify,
)
from .detect import (
    DOCX,
    PDF,
    SUPPORTED_TYPES,
    TEXT,
    detect_mime_type,
    unsupported_reason,
)
from .registry import extract, get_extractor

__all__ = [
    "BLANK_NOTE",
    "DOCX",
    "NO_TEXT_NOTE",
    "PDF",
    "SUPPORTED_TYPES",
    "TEXT",
    "CorruptFileError",
    "EncryptedFileError",
    "ExtractionError",
    "ExtractionResult",
    "ExtractionTimeoutError",
    "ExtractorMissingError",
    "UnsupportedFileError",
    "classify",
    "detect_mime_type",
    "extract",
    "get_extractor",
    "unsupported_reason",
]
