"""One entry point: pick the extractor by the file's format, and finish its text."""

from __future__ import annotations

import dataclasses
import importlib
import logging
import os
import re
import warnings
from collections.abc import Callable
from typing import Any

from .base import (
    EMPTY_NOTE,
    CorruptFileError,
    ExtractionError,
    ExtractionResult,
    ExtractOptions,
    ExtractorMissingError,
    Progress,
    UnsupportedFileError,
    damaged_xml,
    hide_paths,
    join_notes,
    truncated_note,
)
from .detect import detect_format, unsupported_reason
from .formats import Format, by_mime_type
from .hyphens import join_hyphenated
from .marks import symbol_bullets

Extractor = Callable[[str | os.PathLike[str], ExtractOptions], ExtractionResult]
# A soft hyphen, and the line break it may end: the word it is in goes on.
_SOFT_HYPHEN = re.compile(r"\u00ad(?:[ \t]*\n[ \t]*)?")


def quiet_parser_noise() -> None:
    """Parsers report the damage they work around ("Data-loss while decompressing
    corrupted data", "MediaBox missing") on stderr, where a worker's log drowns in
    it; what matters reaches the document as its error or note. Errors still print.
    Run on import, so the fork server sets it once for every extraction child."""
    for name in ("pdfminer", "pdfplumber", "openpyxl", "pptx", "docx"):
        logging.getLogger(name).setLevel(logging.ERROR)
    for module in ("pypdfium2", "pdfminer", "pdfplumber", "openpyxl"):
        warnings.filterwarnings("ignore", category=UserWarning, module=module)


quiet_parser_noise()


def get_extractor(fmt: Format) -> Extractor:
    """Return the extraction function of a readable format (modules load lazily, so a
    missing library fails only the documents that need it, as extractor_missing)."""
    if not fmt.readable:
        raise fmt.refuse()
    module_name, _, function_name = fmt.extractor.partition(":")
    try:
        module = importlib.import_module(f"{__package__}.{module_name}")
    except ImportError as exc:
        raise ExtractorMissingError(
            f"The extractor for {fmt.label} files is not installed "
            f"(needs {fmt.requires})."
        ) from exc
    return getattr(module, function_name)


def extract(
    path: str | os.PathLike[str],
    *,
    mime_type: str | None = None,
    progress: Progress | None = None,
    **options: Any,
) -> ExtractionResult:
    """Extract text from a file, detecting its format from its bytes unless given.

    `options` are the fields of ExtractOptions (pdf_engine, max_chars, ocr_mode...);
    `progress` is told (pages done, pages in all) by the extractors of long files.
    """
    settings = ExtractOptions(**options, progress=progress)
    if os.path.getsize(path) == 0:
        raise CorruptFileError("it is empty (0 bytes); the upload may have failed")
    fmt = by_mime_type(mime_type) if mime_type else detect_format(path)
    if fmt is None:
        raise UnsupportedFileError(unsupported_reason(path))
    try:
        result = get_extractor(fmt)(path, settings)
    except ImportError as exc:  # a library imported lazily inside the extractor
        raise ExtractorMissingError(
            f"A library needed to read this file is not installed ({exc.name})."
        ) from exc
    except ExtractionError as exc:
        shown = exc.without_paths(path)
        if shown is exc:
            raise
        raise shown from exc
    except Exception as exc:
        # Libraries parse XML lazily, so a damaged part may fail wherever it is
        # first read: it is damage all the same, not a fault worth retrying.
        damaged = damaged_xml(exc)
        if damaged is None:
            raise
        raise damaged from exc
    return _finish(result, settings)


def _finish(result: ExtractionResult, options: ExtractOptions) -> ExtractionResult:
    """Where text leaves the extractors: symbol fonts' private-use bullets as "•",
    soft hyphens out (shown only where a line breaks, and there the word goes on),
    line-end hyphenation undone, the limit holding whatever the extractor did, and
    a document with no text saying so, whichever extractor read it."""
    text = _SOFT_HYPHEN.sub("", symbol_bullets(result.text))
    text = join_hyphenated(text, options.ocr_languages)
    note = hide_paths(result.note)  # people read it: no folder of the server
    if not text.strip():
        text = ""
        note = note or EMPTY_NOTE  # an extractor's own note says why
    if len(text) > options.max_chars:
        text = text[: options.max_chars]
        note = join_notes(note, truncated_note(options.max_chars))
    if (text, note) == (result.text, result.note):
        return result
    return dataclasses.replace(result, text=text, note=note)
