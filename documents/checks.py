"""System checks (manage.py check) for the extraction settings and OCR's data."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, Warning, register

from documents.extraction import ocr_problem
from documents.extractors.ocr import LANGUAGES
from jobqueue.apps import WORKER_CHECKS

OCR_MODES = ("auto", "always", "never")


@register(WORKER_CHECKS)
def check_extraction_settings(app_configs: Any = None, **kwargs: Any) -> list:
    errors = []
    if settings.OCR_MODE not in OCR_MODES:
        errors.append(
            Error(
                f"OCR_MODE is {settings.OCR_MODE!r}.",
                hint=f"Use one of: {', '.join(OCR_MODES)}.",
                id="documents.E101",
            )
        )
    if not LANGUAGES.match(settings.OCR_LANGUAGES):
        errors.append(
            Error(
                f"OCR_LANGUAGES is {settings.OCR_LANGUAGES!r}.",
                hint='Tesseract language codes joined by "+", e.g. "eng" or "eng+deu".',
                id="documents.E102",
            )
        )
    if not 70 <= settings.OCR_DPI <= 1200:
        errors.append(
            Error(
                f"OCR_DPI is {settings.OCR_DPI}.",
                hint="Use a resolution between 70 and 1200 (300 suits most scans).",
                id="documents.E103",
            )
        )
    for name in ("EXTRACTED_TEXT_MAX_CHARS", "EXTRACTION_MAX_PAGES"):
        if getattr(settings, name) < 1:
            errors.append(Error(f"{name} must be at least 1.", id="documents.E104"))
    return errors


@register(WORKER_CHECKS)
def check_ocr_data(app_configs: Any = None, **kwargs: Any) -> list:
    if settings.OCR_MODE not in OCR_MODES or not LANGUAGES.match(
        settings.OCR_LANGUAGES
    ):
        return []  # reported above
    problem = ocr_problem()
    if problem is None:
        return []
    return [
        Warning(
            "Scans and photos will complete without text: " + problem,
            hint="Or set OCR_MODE=never to turn OCR off knowingly.",
            id="documents.W101",
        )
    ]
