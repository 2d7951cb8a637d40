"""One entry point: pick the extractor by the file's detected MIME type."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from functools import partial

from .base import (
    CorruptFileError,
    ExtractionResult,
    ExtractorMissingError,
    UnsupportedFileError,
)
from .detect import DOCX, PDF, TEXT, detect_mime_type, unsupported_reason

Extractor = Callable[[str | os.PathLike[str]], ExtractionResult]

# mime type -> (module, function, libraries it needs). Modules load lazily so a
# missing library fails only the documents that need it, as "extractor_missing".
_EXTRACTORS: dict[str, tuple[str, str, str]] = {
    PDF: ("pdf", "extract_pdf", "pypdfium2 and pdfplumber"),
    DOCX: ("docx", "extract_docx", "python-docx"),
    TEXT: ("text", "extract_text", "charset-normalizer"),
}


def get_extractor(mime_type: str | None, *, pdf_engine: str = "auto") -> Extractor:
    """Return the extraction function for a MIME type, or raise UnsupportedFileError."""
    key = (mime_type or "").split(";")[0].strip().lower()
    if key.startswith("text/"):  # csv, markdown, ... are all plain text to us
        key = TEXT
    if key not in _EXTRACTORS:
        raise UnsupportedFileError()
    module_name, function_name, requirement = _EXTRACTORS[key]
    try:
        module = importlib.import_module(f"{__package__}.{module_name}")
    except ImportError as exc:
        raise ExtractorMissingError(
            f"The extractor for this file type is not installed (needs {requirement})."
        ) from exc
    function = getattr(module, function_name)
    return partial(function, engine=pdf_engine) if key == PDF else function


def extract(
    path: str | os.PathLike[str],
    *,
    mime_type: str | None = None,
    pdf_engine: str = "auto",
) -> ExtractionResult:
    """Extract text from a file, detecting its type from its bytes unless given."""
    if os.path.getsize(path) == 0:
        raise CorruptFileError("it is empty (0 bytes); the upload may have failed")
    if mime_type is None:
        mime_type = detect_mime_type(path)
        if mime_type is None:
            raise UnsupportedFileError(unsupported_reason(path))
    try:
        return get_extractor(mime_type, pdf_engine=pdf_engine)(path)
    except ImportError as exc:  # a library imported lazily inside the extractor
        raise ExtractorMissingError(
            f"A library needed to read this file is not installed ({exc.name})."
        ) from exc
