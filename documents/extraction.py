"""What the workers hand the extractors, and how OCR is doing: from the settings."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import IntegerField, Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from documents.extractors.ocr import unavailable_reason
from jobqueue.models import ExtractionMetric, QueueItem, Status

RATE_MINUTES = 15  # the dashboard's OCR rate is over this many minutes


def extract_options() -> dict[str, Any]:
    """ExtractOptions' fields from the settings (QUEUE_EXTRACT_OPTIONS points here)."""
    return {
        "pdf_engine": settings.PDF_ENGINE,
        "ocr_mode": settings.OCR_MODE,
        "ocr_languages": settings.OCR_LANGUAGES,
        "ocr_dpi": settings.OCR_DPI,
        "max_chars": settings.EXTRACTED_TEXT_MAX_CHARS,
        "max_pages": settings.EXTRACTION_MAX_PAGES,
    }


def progress_note(document: Any) -> str:
    """ "12 of 300 pages read." while a long extraction reports progress, else ""."""
    if document.status != Status.PROCESSING:
        return ""
    item = (
        QueueItem.objects.filter(document=document, status=Status.PROCESSING)
        .only("status", "started_at", "progress_done", "progress_total", "progress_at")
        .first()
    )
    progress = item.progress if item else None
    return f"{progress[0]} of {progress[1]} pages read." if progress else ""


def ocr_problem() -> str | None:
    """Why OCR cannot run here (with the fix), or None; None too when it is off."""
    if settings.OCR_MODE == "never":
        return None
    return unavailable_reason(settings.OCR_LANGUAGES)


def dashboard_figures(now: datetime) -> list[dict[str, Any]]:
    """OCR's lines on the queue dashboard (QUEUE_DASHBOARD_FIGURES points here)."""
    problem = ocr_problem()
    if problem:
        return [{"label": "OCR", "value": "OCR unavailable", "warning": problem}]
    if settings.OCR_MODE == "never":
        return [{"label": "OCR", "value": "turned off (OCR_MODE=never)"}]
    pages = ExtractionMetric.objects.filter(
        created_at__gte=now - timedelta(minutes=RATE_MINUTES),
        outcome=ExtractionMetric.Outcome.COMPLETED,
        details__has_key="ocr_page_count",
    ).aggregate(
        pages=Sum(Cast(KeyTextTransform("ocr_page_count", "details"), IntegerField()))
    )["pages"]
    return [
        {
            "label": f"OCR pages per minute (last {RATE_MINUTES} min)",
            "value": f"{(pages or 0) / RATE_MINUTES:.1f}",
        }
    ]
