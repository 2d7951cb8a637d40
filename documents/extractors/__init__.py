"""Text extractors, one module per format (no Django imports: runs in child processes)."""

from __future__ import annotations

from .base import (
    BLANK_NOTE,
    NO_TEXT_NOTE,
    CorruptFileError,
    EncryptedFileError,
    ExtractionError,
    ExtractionResult,
    ExtractOptions,
    ExtractorMissingError,
    TextBuilder,
    UnsupportedFileError,
    classify,
)
from .detect import detect_format, detect_mime_type, unsupported_reason
from .formats import FORMATS, Format, by_mime_type, label_for
from .registry import extract, get_extractor

__all__ = [
    "BLANK_NOTE",
    "FORMATS",
    "NO_TEXT_NOTE",
    "CorruptFileError",
    "EncryptedFileError",
    "ExtractOptions",
    "ExtractionError",
    "ExtractionResult",
    "ExtractorMissingError",
    "Format",
    "TextBuilder",
    "UnsupportedFileError",
    "by_mime_type",
    "classify",
    "detect_format",
    "detect_mime_type",
    "extract",
    "get_extractor",
    "label_for",
    "unsupported_reason",
]
