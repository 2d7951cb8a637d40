"""Words for queue records in the operators' templates."""

from __future__ import annotations

from django import template

from jobqueue.dashboard import error_label, paused_banner
from jobqueue.models import QueueItem

register = template.Library()


@register.filter
def queue_error_label(item: QueueItem) -> str:
    """The error type's name ("Encrypted" for a locked file), or "-"."""
    return error_label(item.error_type, item.error_message) or "-"


@register.simple_tag(takes_context=True)
def queue_pause_state(context) -> dict:
    """The pause switch's state for the admin's index page, where an operator lands
    first: whether processing is paused, by whom, for how long, who may resume it."""
    return paused_banner(context["request"])
