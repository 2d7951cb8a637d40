"""The job kinds the queue runs. Each is registered by the app that owns it (in its
``AppConfig.ready``); the queue itself knows nothing of what a job works on.

A kind says how an attempt runs (``child``: a function run in an extraction child,
which has no Django; or ``run``: a function run in the worker thread), what is written
in the worker's transaction when it succeeds (``on_success``), which table's rows
mirror its items' state (``status_table``: the row whose id is the item's
``document_id``), and its timeout and retries.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from django.db import connection

from jobqueue import sql


@dataclass(frozen=True)
class JobKind:
    name: str
    # Dotted path of the function a child runs with the keyword arguments ``prepare``
    # gives; it raises ``jobqueue.child.JobFailed`` to fail with an error type.
    child: str = ""
    prepare: Callable[[Any], dict[str, Any]] | None = None
    # Modules the children import once at start (forkserver preload).
    preload: tuple[str, ...] = ()
    # The child function takes ``progress(done, total)``; the timeout then counts
    # from the last progress reported.
    progress: bool = False
    # Or, for jobs that need Django: run in the worker thread, returns the result.
    run: Callable[[Any], Any] | None = None
    # In the worker's transaction, once the item is marked completed.
    on_success: Callable[[Any, Any], None] | None = None
    # In the transaction that marks the item failed or retry_pending (a failed or
    # lost attempt), or cancelled.
    on_failure: Callable[[Any, Any], None] | None = None
    # Optional: ``on_failure`` for many items the queue ended alike, in one
    # transaction (a bulk cancel), in a few statements whatever their number. Where
    # absent, ``on_failure`` is called for each item.
    on_failures: Callable[[list[Any], Any], None] | None = None
    # A table whose row ``id = document_id`` follows the item's state: its columns
    # status and updated_at (and error_type, error_message) are written by the queue's
    # own statements, in the transaction that changes the item; the hot ones (claim,
    # completion) in the same statement on PostgreSQL.
    status_table: str = ""
    # The attempt's figures for extraction_metrics: pages, characters, confidence,
    # extractor (the guide's columns).
    metrics: Callable[[Any], dict[str, Any]] | None = None
    # The JSON stored as the item's result (None: nothing stored).
    result: Callable[[Any], Any] | None = None
    # None: the worker's own (QUEUE_EXTRACTION_TIMEOUT, QUEUE_MAX_RETRIES).
    timeout: float | None = None
    max_retries: int | None = None
    # Whether ``ExtractionWorker.on`` callbacks hear of its jobs: not for an app's own
    # side work (thumbnails), whose results are not what callbacks written after the
    # guide expect (``result.text``).
    callbacks: bool = True


_kinds: dict[str, JobKind] = {}


def register(kind: JobKind) -> JobKind:
    """Register (or replace, e.g. in tests) the kind of this name."""
    _kinds[kind.name] = kind
    mirrors.cache_clear()
    return kind


def get(name: str) -> JobKind | None:
    return _kinds.get(name)


def stoppable() -> list[str]:
    """The kinds whose attempts run in a child process, which a worker can end midway
    (an operator's stop); a function run in the worker thread cannot be."""
    return [kind.name for kind in _kinds.values() if kind.child]


def retries_allowed(operation: str, default: int) -> int:
    """The retries a job of ``operation`` gets: its kind's own, else ``default`` (the
    worker's, or the item's where no worker decides)."""
    kind = _kinds.get(operation)
    return default if kind is None or kind.max_retries is None else kind.max_retries


def kinds() -> list[JobKind]:
    return list(_kinds.values())


@cache  # read at every claim and completion; cleared by ``register``
def mirrors() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each status table with the kinds it mirrors, for the queue's statements."""
    tables: dict[str, list[str]] = defaultdict(list)
    for kind in _kinds.values():
        if kind.status_table:
            tables[kind.status_table].append(kind.name)
    return tuple(
        (table, tuple(sorted(names))) for table, names in sorted(tables.items())
    )


def side_work() -> list[str]:
    """The kinds of an app's own side work (``callbacks=False``: thumbnails), left
    out of the figures of the work people asked for."""
    return [kind.name for kind in kinds() if not kind.callbacks]


def status_changed(
    rows: Iterable[tuple[str, int | None]], status: str, **fields: str
) -> None:
    """Mirror the new ``status`` (and ``fields``: error_type, error_message) of items
    (``(operation, subject_id)``) in their kinds' status tables; call inside the
    transaction that moved them."""
    with connection.cursor() as cursor:
        sql.dialect().mirror(cursor, rows, status, fields)
