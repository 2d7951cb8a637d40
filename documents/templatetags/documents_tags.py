"""How a document's state is put into words and badges for people."""

from __future__ import annotations

from django import template
from django.utils.html import format_html

from documents.models import Document
from jobqueue.models import ACTIVE_STATUSES, ErrorType, Status

register = template.Library()

STATUS_HELP: dict[str, str] = {
    Status.PENDING: "Waiting for a worker to read it.",
    Status.PROCESSING: "Reading the text now.",
    Status.RETRY_PENDING: "The last attempt failed; it will be tried again automatically.",
    Status.COMPLETED: "The text has been extracted.",
    Status.FAILED: "The text could not be extracted.",
    Status.CANCELLED: "Processing was cancelled. Reprocess it to try again.",
}

ERROR_HELP: dict[str, str] = {
    ErrorType.TIMEOUT: (
        "Reading the file took too long, so it was stopped. Very large or complex "
        "files can do this: reprocess it later, or split it into smaller files."
    ),
    ErrorType.CORRUPTION: (
        "The file is damaged or password-protected; upload an intact, unprotected copy."
    ),
    ErrorType.EXTRACTOR_MISSING: (
        "The tool that reads this kind of file is not available on the server right "
        "now. It is retried automatically; if it keeps failing, tell an administrator."
    ),
    ErrorType.UNSUPPORTED: (
        "Text cannot be read from this kind of file. Upload a PDF, a Word (DOCX) "
        "document or a plain-text file."
    ),
    ErrorType.UNKNOWN: (
        "Something unexpected went wrong while reading the file. Reprocess it; if it "
        "fails again, tell an administrator and quote the details below."
    ),
}


@register.filter
def status_help(status: str) -> str:
    """One sentence saying what a status means for the person."""
    return STATUS_HELP.get(status, "")


@register.filter
def error_help(error_type: str) -> str:
    """What went wrong, in plain words, and what to do about it."""
    if not error_type:
        return ""
    return ERROR_HELP.get(error_type, ERROR_HELP[ErrorType.UNKNOWN])


@register.filter
def is_active(status: str) -> bool:
    """True while the document is still waiting for or in processing."""
    return status in ACTIVE_STATUSES


@register.inclusion_tag("documents/_badge.html")
def status_badge(document: Document) -> dict:
    """The coloured status badge; scripts find it by ``data-badge`` and update it."""
    return {"status": document.status, "label": document.get_status_display()}


@register.simple_tag(takes_context=True)
def sort_header(context, key: str, label: str, first: str = "asc") -> str:
    """A column header that sorts by ``key``; a second click reverses the order."""
    current = context["sort"]
    query = context["request"].GET.copy()
    query.pop("page", None)
    if current == key:
        query["sort"], aria, arrow = f"-{key}", "ascending", "▲"
    elif current == f"-{key}":
        query["sort"], aria, arrow = key, "descending", "▼"
    else:
        query["sort"], aria, arrow = (key if first == "asc" else f"-{key}"), "", ""
    return format_html(
        '<th scope="col"{}><a href="?{}">{}<span aria-hidden="true">{}</span></a></th>',
        format_html(' aria-sort="{}"', aria) if aria else "",
        query.urlencode(),
        label,
        f" {arrow}" if arrow else "",
    )
