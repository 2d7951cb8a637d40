"""Who may do what, and how much: reprocess, priorities, active jobs, upload rates.

Web views and the API ask the same questions here, so a rule cannot hold on one
side and not the other.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework.settings import api_settings
from rest_framework.throttling import UserRateThrottle

from documents.models import Document
from jobqueue.models import Operation, QueueItem, is_operator

DEFAULT_PRIORITY = 0
DELETE_PERMISSION = "documents.delete_document"


class LimitReached(Exception):
    """A per-user limit was reached; the message is meant for the person."""


def can_reprocess(user, document: Document) -> bool:
    """The owner, or an operator: view-only staff may look, not act."""
    return document.owner_id == user.pk or is_operator(user)


def can_set_priority(user, priority: int) -> bool:
    """Everyone gets the default; only operators may jump (or drop) in the queue."""
    return priority == DEFAULT_PRIORITY or is_operator(user)


def check_active_jobs(user, adding: int = 1) -> None:
    """Refuse work that would take the user over ``USER_MAX_ACTIVE_JOBS``."""
    limit = settings.USER_MAX_ACTIVE_JOBS
    # Thumbnails follow finished work; they are the product's, not the person's.
    active = (
        QueueItem.objects.active()
        .filter(document__owner=user)
        .exclude(operation=Operation.THUMBNAIL)
        .count()
    )
    if active + adding > limit:
        raise LimitReached(
            f"You have {active} documents waiting or being processed; the limit is "
            f"{limit}. Wait for some to finish, then try again."
        )


class UserThrottle(UserRateThrottle):
    """Every API call, per user (``API_RATE``); per address for anonymous callers."""

    def get_rate(self) -> str | None:
        # DRF copies the rates into a class attribute at import; read them live so
        # settings changed at run time (tests, override_settings) take effect.
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)


class UploadRateThrottle(UserThrottle):
    """Uploads per user (``UPLOAD_RATE``); other requests are not counted.

    DRF's throttle needs only ``user``, ``method`` and ``META``, so the web upload
    view uses it too: one counter per user for both doors.
    """

    scope = "uploads"

    def allow_request(self, request, view) -> bool:
        if request.method != "POST":
            return True
        return super().allow_request(request, view)


def can_delete(user, document: Document) -> bool:
    """The owner, or staff who may delete anyone's (``may_delete_any``)."""
    return document.owner_id == user.pk or may_delete_any(user)


def may_delete_any(user) -> bool:
    """Staff with the permission the admin asks to delete documents: steering the
    queue (an operator's permission) is not the right to destroy people's files."""
    return user.is_active and user.is_staff and user.has_perm(DELETE_PERMISSION)
