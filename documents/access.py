"""Who may do what, and how much: reprocess, priorities, active jobs, upload rates,
ZIP downloads at once.

Web views and the API ask the same questions here, so a rule cannot hold on one
side and not the other.
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter
from collections.abc import Callable, Iterator

from django.conf import settings
from rest_framework.settings import api_settings
from rest_framework.throttling import UserRateThrottle

from documents.models import Document
from jobqueue.models import Operation, QueueItem, is_operator

DEFAULT_PRIORITY = 0
DELETE_PERMISSION = "documents.delete_document"


class LimitReached(Exception):
    """A per-user limit was reached; the message is meant for the person."""


class TooManyAtOnce(LimitReached):
    """All of the person's slots for some long response are taken; one frees when
    one of their responses ends (a guess at when: ``retry_after`` seconds)."""

    retry_after = 60


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


class RunningPerPerson:
    """At most ``settings.<setting>`` of a person's long responses (streams holding a
    web thread) running at once in this web process.

    Counted in the process's memory, as ``documents.pages`` counts slow pages: a
    process that dies takes its count with it, so no slot outlives the requests that
    held it. Each web process (``WEB_CONCURRENCY``) keeps its own count, which is
    what it protects: its own threads, that one person must not take all of."""

    def __init__(self, setting: str, refusal: str) -> None:
        self.setting = setting
        self.refusal = refusal  # str.format'ed with the limit
        self._lock = threading.Lock()
        self._running: Counter[int] = Counter()

    def running(self, user) -> int:
        """How many of the user's responses hold a slot in this process."""
        with self._lock:
            return self._running[user.pk]

    def hold(self, user, chunks: Iterator[bytes]) -> _Held:
        """``chunks`` for a streaming response, holding one of the user's slots until
        the response is closed; ``TooManyAtOnce`` when all are taken."""
        limit = getattr(settings, self.setting)
        with self._lock:
            if self._running[user.pk] >= limit:
                raise TooManyAtOnce(self.refusal.format(limit=limit))
            self._running[user.pk] += 1
        return _Held(chunks, lambda: self._give_back(user.pk))

    def _give_back(self, user_id: int) -> None:
        with self._lock:
            self._running[user_id] -= 1
            if self._running[user_id] <= 0:
                del self._running[user_id]  # no entry left behind per person


class _Held:
    """The chunks of a response holding a slot. Django closes a streaming response's
    content when the response is closed, which the server does however it ends (read
    to the end, the client gone, an error mid-stream): the slot is given back then,
    once. A generator's own ``finally`` would not do: it never runs for a generator
    that was never started. A response dropped unclosed (a middleware failing after
    the view) gives it back when it is collected."""

    def __init__(self, chunks: Iterator[bytes], give_back: Callable[[], None]) -> None:
        self._chunks = chunks
        self._give_back = weakref.finalize(self, give_back)  # runs once at most

    def __iter__(self) -> Iterator[bytes]:
        return self._chunks

    def close(self) -> None:
        try:
            if close := getattr(self._chunks, "close", None):
                close()
        finally:
            self._give_back()


# A ZIP of up to 1 GB holds a web thread and reads the disk for as long as it streams.
ZIP_DOWNLOADS = RunningPerPerson(
    "USER_MAX_ZIP_DOWNLOADS",
    "You already have the most ZIP downloads running at once ({limit}). Wait for "
    "one to finish, then try again.",
)
