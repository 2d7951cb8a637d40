"""Django's tasks API on this queue: any ``@task`` runs through the queue's workers,
heartbeats, rescue, fencing, pause, retries and admin, as a job of the ``task`` kind.

``django_tasks`` is Django 6's ``django.tasks`` for Django 5.2: moving over is a
change of the imports below.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import threading
from collections.abc import Iterable
from datetime import UTC
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.db import connections, transaction
from django.utils.dateparse import parse_datetime
from django.utils.module_loading import import_string
from django_tasks import TaskResultStatus
from django_tasks.backends.base import BaseTaskBackend
from django_tasks.base import Task, TaskContext, TaskError, TaskResult
from django_tasks.exceptions import InvalidTaskError, TaskResultDoesNotExist
from django_tasks.signals import task_enqueued, task_finished, task_started
from django_tasks.utils import get_exception_traceback, get_module_path, normalize_json

from jobqueue import operations
from jobqueue.child import JobFailed
from jobqueue.sql import AppendToList, db_now, storable

# The queue's models are imported where they are used, not here: Django builds
# the backend at the first ``@task``, which a package may run while the apps load
# (its ``__init__`` or ``apps.py`` imports its tasks), before models can be imported.
if TYPE_CHECKING:
    from jobqueue.models import QueueItem

# The ids ``enqueue`` gives (``str(pk)``) and no other spelling of them: int() also
# reads "007" and other scripts' digits ("١٢"), and refuses "²", which isdigit() passes.
RESULT_ID = re.compile(r"[1-9][0-9]{0,17}")

logger = logging.getLogger(__name__)


class QueueBackend(BaseTaskBackend):
    """The tasks backend of this queue (``TASKS["default"]["BACKEND"]``)."""

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def validate_task(self, task: Task) -> None:
        super().validate_task(task)
        # A time past the years 1..9999 once in UTC, as both databases store it:
        # SQLite's enqueue failed with an OverflowError, and PostgreSQL stored a
        # time no read of it could load ("timestamp too large"): every idle
        # worker's look for the next due job then failed, and so did the admin.
        if task.run_after is not None:
            try:
                task.run_after.astimezone(UTC)
            except OverflowError:
                raise InvalidTaskError(
                    "run_after must fall within the years 1 to 9999 in UTC "
                    f"({task.run_after.isoformat()} given)."
                ) from None
        # A DataError at enqueue on PostgreSQL, and kept by SQLite, until now.
        if storable(task.queue_name) != task.queue_name:
            raise InvalidTaskError(
                "Task queue names cannot hold U+0000 (NUL) or a lone surrogate."
            )
        # The same error on both databases (PostgreSQL would refuse the row at
        # enqueue, SQLite keep it whole), and at ``@task``/``using()``, not later;
        # at enqueue, which validates again, for a task made while the apps load.
        if not apps.models_ready:
            return
        from jobqueue.models import QueueItem

        longest = QueueItem._meta.get_field("queue_name").max_length
        if len(task.queue_name) > longest:
            raise InvalidTaskError(
                f"Task queue names are at most {longest} characters "
                f"({len(task.queue_name)} given)."
            )

    def enqueue(self, task: Task, args: Any, kwargs: Any) -> TaskResult:
        from jobqueue.models import Operation
        from jobqueue.services import QueueManager

        self.validate_task(task)
        _check_importable(task)
        run_after = task.run_after.isoformat() if task.run_after else None
        # A run_after already past is due now: queued as pending, its wait counted
        # from now. Kept waiting for a time before it was queued, the backlog
        # figure (docqueue_oldest_pending_seconds) counted from that time: a task
        # queued "for an hour ago" showed an hour's backlog before any worker looked.
        due_after = task.run_after
        if due_after is not None and due_after <= db_now():
            due_after = None
        item = QueueManager(Operation.TASK).enqueue_job(
            Operation.TASK,
            payload={
                "task": task.module_path,
                "backend": self.alias,
                "args": _argument(args),
                "kwargs": _argument(kwargs),
                "errors": [],
                # The task as enqueued (TaskResult.task), whatever the item's
                # next_retry_at says once retries move it.
                "run_after": run_after,
            },
            priority=task.priority,
            queue_name=task.queue_name,
            run_after=due_after,
        )
        result = task_result(item)
        task_enqueued.send(type(self), task_result=result)
        return result

    def get_result(self, result_id: str) -> TaskResult:
        from jobqueue.models import Operation, QueueItem

        item = None
        if RESULT_ID.fullmatch(str(result_id)):
            item = QueueItem.objects.filter(
                pk=int(result_id), operation=Operation.TASK
            ).first()
        if item is None:
            raise TaskResultDoesNotExist(result_id)
        return task_result(item)


def _check_importable(task: Task) -> None:
    """Workers find a task by its function's path (``module_path``). Refuse one that
    path does not lead back to (a task kept under another name, defined in a class
    body, or in ``__main__``: a script's or a shell's, which is not the worker's)
    before it is queued: it could only fail. (Not in ``validate_task``: ``@task``
    runs it while the module is still being imported.)"""
    try:
        found = import_string(task.module_path)
    except ImportError:
        found = None
    if (
        task.func.__module__ == "__main__"
        or not isinstance(found, Task)
        or found.module_path != task.module_path
    ):
        raise InvalidTaskError(
            f"Task {task.module_path!r} cannot be imported by that path, as workers "
            "find it: define it at module level under its function's name."
        )


def _sender(result: TaskResult) -> type[BaseTaskBackend]:
    """The signals' sender: the backend's own class, as django-tasks sends it (a
    project's subclass of ``QueueBackend`` included)."""
    return type(result.task.get_backend())


def _json(value: Any) -> Any:
    """``normalize_json``, refusing also the floats JSON has no text for (NaN,
    Infinity): neither database stores them, so a ValueError here (at enqueue, or
    failing the attempt that returned one) rather than the database's refusal.
    Read back as the database gives it (``{1: x}`` is ``{"1": x}``): the result in
    hand says what the task is called with, and returned, as ``get_result`` will."""
    return json.loads(json.dumps(normalize_json(value), allow_nan=False))


def _argument(value: Any) -> Any:
    """``_json``, refusing also what a database cannot store: U+0000 (PostgreSQL's
    JSON) and a lone surrogate (PostgreSQL refuses it; SQLite kept it): the same
    ValueError at enqueue on both databases, not a DataError on one of them."""
    value = _json(value)
    for text in _texts(value):
        if "\x00" in text:
            raise ValueError("Task arguments cannot hold the character U+0000 (NUL).")
        if storable(text) != text:
            raise ValueError(
                "Task arguments cannot hold a lone surrogate (U+D800 to U+DFFF), as "
                "a file name read with errors='surrogateescape' may."
            )
    return value


def _texts(value: Any) -> Iterable[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


@lru_cache(maxsize=1024)
def _task(
    path: str, priority: int, queue_name: str, backend: str, run_after: str | None
) -> Task:
    # Task.using() validates against the backend each time; a worker asks for the
    # same few tasks thousands of times.
    task = import_string(path).using(
        priority=priority, queue_name=queue_name, backend=backend
    )
    return task.using(run_after=parse_datetime(run_after)) if run_after else task


def _worker_ids(
    item: QueueItem, earlier_workers: dict[int, dict[int, str]] | None = None
) -> list[str]:
    """The worker of each attempt (``TaskResult.attempts`` counts them). The item
    names the current or last attempt's; the metrics rows name the earlier ones,
    and a lost one's (a rescue clears ``claimed_by``). Only a retried or rescued
    task costs the query, unless ``earlier_workers`` (``_earlier_workers``) has them."""
    last = _last_worker(item)
    earlier = item.attempts - len(last)
    if earlier <= 0:
        return last
    if earlier_workers is None:
        earlier_workers = _earlier_workers([item])
    by_attempt = earlier_workers.get(item.pk, {})
    return [by_attempt.get(n, "") for n in range(1, earlier + 1)] + last


def _last_worker(item: QueueItem) -> list[str]:
    return [item.claimed_by] if item.claimed_by and item.attempts else []


def _earlier_workers(items: Iterable[QueueItem]) -> dict[int, dict[int, str]]:
    """The workers of the items' attempts before the last, by item and attempt, in
    one query (none when no item had any)."""
    from jobqueue.models import ExtractionMetric

    counts = {item.pk: item.attempts - len(_last_worker(item)) for item in items}
    earlier = {pk: count for pk, count in counts.items() if count > 0}
    if not earlier:
        return {}
    # The attempts whose metrics row names the worker that made them.
    outcomes = ExtractionMetric.Outcome
    attempts = (outcomes.COMPLETED, outcomes.RETRY, outcomes.FAILED, outcomes.RESCUED)
    rows = ExtractionMetric.objects.filter(
        job_id__in=list(earlier), outcome__in=attempts
    ).order_by("id")
    # The latest row of each attempt: a job retried from failed counts again from 1.
    workers: dict[int, dict[int, str]] = {}
    for job_id, attempt, worker_id in rows.values_list(
        "job_id", "attempt", "worker_id"
    ):
        if attempt <= earlier[job_id]:
            workers.setdefault(job_id, {})[attempt] = worker_id
    return workers


@cache
def _result_statuses() -> dict[str, TaskResultStatus]:
    """The task's status for each of the queue item's."""
    from jobqueue.models import Status

    return {
        Status.PENDING: TaskResultStatus.READY,
        Status.RETRY_PENDING: TaskResultStatus.READY,
        Status.PROCESSING: TaskResultStatus.RUNNING,
        Status.COMPLETED: TaskResultStatus.SUCCESSFUL,
        Status.FAILED: TaskResultStatus.FAILED,
        Status.CANCELLED: TaskResultStatus.FAILED,
    }


def task_result(
    item: QueueItem, earlier_workers: dict[int, dict[int, str]] | None = None
) -> TaskResult:
    """The queue item as Django's ``TaskResult`` (``earlier_workers``: see
    ``_worker_ids``)."""
    payload = item.payload
    task = _task(
        payload["task"],
        # A whole float (``using(priority=5.0)``, which django-tasks accepts) is the
        # int the database stores: as 5.0 the cache (5 == 5.0) gave every later
        # result of priority 5 a task of priority 5.0.
        int(item.priority),
        item.queue_name,
        payload["backend"],
        payload.get("run_after"),
    )
    result = TaskResult(
        task=task,
        id=str(item.pk),
        status=_result_statuses()[item.status],
        enqueued_at=item.created_at,
        started_at=item.started_at,
        finished_at=item.finished_at,
        last_attempted_at=item.started_at,
        args=payload["args"],
        kwargs=payload["kwargs"],
        backend=payload["backend"],
        errors=[TaskError(**error) for error in payload.get("errors", [])],
        worker_ids=_worker_ids(item, earlier_workers),
    )
    object.__setattr__(result, "_return_value", item.result)
    return result


def _run(item: QueueItem) -> Any:
    """One attempt of a task, in the worker thread (tasks use Django)."""
    from jobqueue.models import ErrorType

    result = task_result(item)
    open_before = _open_transactions()
    try:
        task_started.send(_sender(result), task_result=result)
        args, kwargs = result.args, result.kwargs
        if result.task.takes_context:
            args = [TaskContext(task_result=result), *args]
        value = result.task.call(*args, **kwargs)
    finally:
        left_open = _end_transactions_left_open(open_before)
    if left_open:
        raise JobFailed(
            ErrorType.UNKNOWN,
            "The task left a transaction open (autocommit turned off, or an atomic "
            f"block not exited) on the database {', '.join(map(repr, left_open))}: "
            "what it wrote in it was rolled back.",
        )
    try:
        return _json(value)
    except (TypeError, ValueError) as exc:
        # The task ran to its end: run again, it would return the same and repeat
        # what it did. The attempt fails for good, with the error it raised.
        raise JobFailed(ErrorType.UNSUPPORTED, f"{type(exc).__name__}: {exc}") from exc


def _open_transactions() -> set[str]:
    """The aliases of this thread's connections inside a transaction."""
    return {
        conn.alias
        for conn in connections.all(initialized_only=True)
        if conn.connection is not None and (conn.in_atomic_block or not conn.autocommit)
    }


def _end_transactions_left_open(open_before: set[str]) -> list[str]:
    """Roll back and close the transactions a task left open (``open_before``:
    those open before it ran), as Django does with a request's connection left
    without autocommit (``close_if_unusable_or_obsolete``). Left to the worker
    thread, every later claim and result of that thread joined it: never
    committed, the jobs stayed RUNNING, and on SQLite the write lock it held
    stopped every other writer (the web's uploads and enqueues: "database is
    locked"). The aliases of those ended."""
    ended = sorted(_open_transactions() - open_before)
    for alias in ended:
        conn = connections[alias]
        # Closed without a commit, the database rolls the transaction back; the
        # next query connects afresh, with autocommit on. The wrapper forgets the
        # atomic blocks, as its connect() does: else the worker's next atomic
        # block took itself for a nested one, and committed nothing.
        with contextlib.suppress(Exception):
            conn.connection.close()
        conn.connection, conn.closed_in_transaction = None, False
        conn.in_atomic_block, conn.needs_rollback = False, False
        conn.atomic_blocks, conn.savepoint_ids, conn.run_on_commit = [], [], []
        logger.warning(
            "A task left a transaction open on the database %r; rolled back.", alias
        )
    return ended


def _failed(item: QueueItem, outcome: Any) -> None:
    """Store the attempt's error beside the earlier ones (TaskResult.errors)."""
    from jobqueue.models import QueueItem

    item.payload = _with_error(item.payload, _error(outcome))
    QueueItem.objects.filter(pk=item.pk).update(payload=item.payload)
    _finished_on_commit([item.pk], outcome.result)


def _failures(items: list[QueueItem], outcome: Any) -> None:
    """``_failed`` for many items the queue ended alike (a bulk cancel): the error
    appended to each one's in the database, in one statement that reads no
    payload (the items in hand keep theirs), and one read after the commit to
    announce them."""
    from jobqueue.models import QueueItem

    ids = [item.pk for item in items]
    QueueItem.objects.filter(pk__in=ids).update(
        payload=AppendToList("payload", "errors", _error(outcome))
    )
    _finished_on_commit(ids)


def _error(outcome: Any) -> dict[str, str]:
    """The failed attempt's entry in ``TaskResult.errors``."""
    exc = outcome.result
    if isinstance(exc, BaseException):
        return {
            "exception_class_path": get_module_path(type(exc)),
            "traceback": storable(get_exception_traceback(exc)),
        }
    # The queue failed the attempt itself (the database refused the result, a
    # cancel, a rescue): its class, so that TaskError.exception_class resolves,
    # and its message.
    return {
        "exception_class_path": get_module_path(JobFailed),
        "traceback": outcome.error_message,
    }


def _with_error(payload: dict[str, Any], error: dict[str, str]) -> dict[str, Any]:
    return {**payload, "errors": [*payload.get("errors", []), error]}


def _succeeded(item: QueueItem, value: Any) -> None:
    """Send ``task_finished`` once the completion commits; the result is built from
    the item in hand (the finish time from the database's clock), not read back."""
    from jobqueue.models import Status

    item.status, item.finished_at, item.result = Status.COMPLETED, db_now(), value
    result = task_result(item)
    transaction.on_commit(
        lambda: task_finished.send(_sender(result), task_result=result), robust=True
    )


def _finished_on_commit(item_ids: list[int], raised: Any = None) -> None:
    """After failed attempts: ``task_finished`` for each item whose attempt was the
    last one (or whose job was cancelled), read in one query. ``raised``: what the
    task raised, if it did."""
    from jobqueue.models import QueueItem, Status

    def send() -> None:
        items = list(
            QueueItem.objects.filter(
                pk__in=item_ids, status__in=(Status.FAILED, Status.CANCELLED)
            )
        )
        earlier_workers = _earlier_workers(items)
        for item in items:
            # A receiver's error, or a task path that no longer imports, is logged
            # and the others still hear of theirs; it never reaches the worker or
            # the operator, whose transaction has committed.
            try:
                result = task_result(item, earlier_workers)
                if item.status == Status.CANCELLED:
                    _send_cancelled(result)
                else:
                    _send_failed(result, raised)
            except Exception:
                logger.exception("Could not announce that task %s finished.", item.pk)

    transaction.on_commit(send, robust=True)


class _CancelIsNoError(logging.Filter):
    """django-tasks logs every failed task's end as an error, with a traceback
    (``logger.exception``), for error monitoring. A task an operator cancelled ends
    FAILED, as Django's statuses have no other word for it, but nothing went wrong:
    its end is logged at INFO, without the empty traceback (``NoneType: None``), so
    that cancelling a thousand tasks does not page anyone a thousand times."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(_announcing, "cancel", False) and record.levelno > logging.INFO:
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.exc_info, record.exc_text = None, None
        return True


# Set while the end of a cancelled task is announced (in this thread).
_announcing = threading.local()
_cancel_filter = _CancelIsNoError()


def _send_cancelled(result: TaskResult) -> None:
    _announcing.cancel = True
    try:
        task_finished.send(_sender(result), task_result=result)
    finally:
        _announcing.cancel = False


def _send_failed(result: TaskResult, raised: Any) -> None:
    """``task_finished`` for a failed task, sent as django-tasks sends it: while
    the exception the task raised is handled, so that the receiver it connects
    logs that traceback with ``logger.exception`` (error monitoring hears of the
    exception), not ``NoneType: None``."""
    if not isinstance(raised, BaseException):
        task_finished.send(_sender(result), task_result=result)
        return
    try:
        raise raised
    except BaseException:
        task_finished.send(_sender(result), task_result=result)


def register() -> None:
    from jobqueue.models import Operation

    task_logger = logging.getLogger("django_tasks")
    if _cancel_filter not in task_logger.filters:
        task_logger.addFilter(_cancel_filter)

    operations.register(
        operations.JobKind(
            name=Operation.TASK,
            run=_run,
            result=lambda value: value,
            on_success=_succeeded,
            on_failure=_failed,
            on_failures=_failures,
        )
    )
