"""How a document's state is put into words and badges for people."""

from __future__ import annotations

from datetime import timedelta

from django import template
from django.forms import BoundField
from django.utils.html import format_html
from django.utils.translation import ngettext

from documents.extractors.formats import accepted_labels, label_for
from documents.models import Document
from jobqueue import dashboard
from jobqueue.models import ACTIVE_STATUSES, ErrorType, QueueControl, Status
from jobqueue.retry import is_retryable

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
    # Completed by error_help with the formats that are read.
    ErrorType.UNSUPPORTED: "Text cannot be read from this file. Files of these kinds are read: ",
    ErrorType.UNKNOWN: (
        "Something unexpected went wrong while reading the file. Reprocess it; if it "
        "fails again, tell an administrator and quote the details below."
    ),
}
ENCRYPTED_HELP = (
    "The file is protected by a password, so its text cannot be read. Remove the "
    "password (save or print an unprotected copy) and upload that copy."
)


@register.filter
def status_help(status: str) -> str:
    """One sentence saying what a status means for the person."""
    return STATUS_HELP.get(status, "")


@register.filter
def error_help(document: Document) -> str:
    """What went wrong, in plain words, and what to do about it."""
    if not document.error_type:
        return ""
    if dashboard.is_encrypted(document.error_type, document.error_message):
        return ENCRYPTED_HELP
    if document.error_type == ErrorType.UNSUPPORTED:
        return f"{ERROR_HELP[ErrorType.UNSUPPORTED]}{accepted_labels()}."
    return ERROR_HELP.get(document.error_type, ERROR_HELP[ErrorType.UNKNOWN])


@register.filter
def error_label(document: Document) -> str:
    """A short name for the problem: "Encrypted" rather than "Corrupt file"."""
    return dashboard.error_label(document.error_type, document.error_message)


@register.filter
def failure_label(document: Document) -> str:
    """The short reason the list shows beside a document's badge: its problem's,
    unless it has none or completed all the same."""
    if not document.error_type or document.status == Status.COMPLETED:
        return ""
    return error_label(document)


@register.filter
def may_succeed_again(document: Document) -> bool:
    """Whether reprocessing could change the outcome (not for a damaged, locked or
    unsupported file: the same bytes fail the same way)."""
    return not document.error_type or is_retryable(document.error_type)


@register.filter
def format_label(mime_type: str) -> str:
    """A format's name for people ("Word (DOCX)"), never a raw MIME string."""
    return label_for(mime_type)


@register.inclusion_tag("documents/_paused.html")
def paused_banner() -> dict:
    """Say so while an operator has paused processing: nothing will move until then."""
    return {"paused": QueueControl.is_paused()}


@register.filter
def is_active(status: str) -> bool:
    """True while the document is still waiting for or in processing."""
    return status in ACTIVE_STATUSES


@register.inclusion_tag("documents/_badge.html")
def status_badge(document: Document) -> dict:
    """The coloured status badge; scripts find it by ``data-badge`` and update it."""
    return {"status": document.status, "label": document.get_status_display()}


@register.inclusion_tag("documents/_thumbnail.html")
def thumbnail(document: Document, size: str = "small") -> dict:
    """The first page's picture, or a card with the type's name until there is one;
    scripts find it by ``data-thumbnail`` and put the picture in when it is drawn."""
    return {"document": document, "size": size, "label": label_for(document.mime_type)}


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


@register.filter
def focus_if_first_error(field: BoundField) -> str:
    """The field's widget; on a form sent back with errors, focused only if it is
    the first field in error (a widget's own autofocus, as Django's old password
    has, yields): a keyboard or screen reader lands on what needs fixing."""
    if not field.form.errors:
        return field.as_widget()
    first = next((f for f in field.form if f.errors), None)
    return field.as_widget(
        attrs={"autofocus": first is not None and first.name == field.name}
    )


@register.filter
def minutes_in_words(duration: timedelta) -> str:
    """A lock-out's length for people: "15 minutes", "1 minute"."""
    minutes = max(1, round(duration.total_seconds() / 60))
    return ngettext("%d minute", "%d minutes", minutes) % minutes
