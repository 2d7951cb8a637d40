"""Words for queue records in the operators' templates."""

from __future__ import annotations

from django import template

from jobqueue.dashboard import error_label
from jobqueue.models import QueueItem

register = template.Library()


@register.filter
def queue_error_label(item: QueueItem) -> str:
    """The error type's name ("Encrypted" for a locked file), or "-"."""
    return error_label(item.error_type, item.error_message) or "-"
