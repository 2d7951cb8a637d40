"""An outside audit (7) of the tasks backend against django-tasks 0.12 and its
reference database backend (django-tasks-db), with real workers: ``process_queue
--once`` in this process, or the in-process worker pool.

django-tasks-db's worker fails the task of whatever it raises (``except
BaseException``) and records its message; so must ours, whatever the exception and
whatever its message holds, and the worker must go on."""

from __future__ import annotations

import asyncio
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.utils import timezone
from django_tasks import TaskResultStatus, task
from django_tasks.exceptions import InvalidTaskError

from jobqueue.models import QueueItem, WorkerHeartbeat
from tests.conftest import wait_for
from tests.jobqueue.task_apps import contract

pytestmark = pytest.mark.django_db(transaction=True)


class Abort(BaseException):  # noqa: N818 - as a project may name its own
    """A BaseException of a project's own (not an Exception, nor SystemExit)."""


@task()
def raise_abort() -> None:
    raise Abort("stop here")


@task()
async def raise_cancelled() -> None:
    # What an async task's awaited work raises when it is cancelled.
    raise asyncio.CancelledError("cancelled inside")


@task()
def raise_keyboard_interrupt() -> None:
    raise KeyboardInterrupt


@task()
def raise_with_nul() -> None:
    raise ValueError("bad \x00 byte in the input")


@task()
def raise_with_surrogate() -> None:
    # A file name read with errors="surrogateescape" (os.listdir of str on Linux)
    # holds lone surrogates for the bytes that are not UTF-8.
    raise ValueError("cannot read caf\udce9.txt")


@task()
def return_surrogate() -> str:
    return "caf\udce9.txt"


def write_a_row() -> None:
    WorkerHeartbeat.objects.create(
        worker_id="written-by-a-task", status="idle", last_heartbeat=timezone.now()
    )


@task()
def leave_autocommit_off() -> str:
    transaction.set_autocommit(False)
    write_a_row()
    return "left open"


@task()
def leave_atomic_open() -> str:
    transaction.atomic().__enter__()
    write_a_row()
    return "left open"


def run_once(*flags: str) -> None:
    """``process_queue --once`` here; a budget, so that a job run again and again
    uncharged ends the run rather than the test suite."""
    call_command(
        "process_queue",
        "--once",
        "--max-retries",
        "0",
        "--budget",
        "10",
        *flags,
        stdout=StringIO(),
    )


def item_of(result) -> QueueItem:
    return QueueItem.objects.get(pk=int(result.id))


# --- Defects found ------------------------------------------------------------


def run_once_with_one_after(task_):
    """``task_`` and a task queued after it, run by one cron run; both read back."""
    result = task_.enqueue()
    after = contract.echo.enqueue("after")
    run_once()
    result.refresh()
    after.refresh()
    return result, after


@pytest.mark.parametrize(
    ("task_", "exception"),
    [
        (raise_abort, Abort),
        (raise_cancelled, asyncio.CancelledError),
        (raise_keyboard_interrupt, KeyboardInterrupt),
    ],
)
def test_a_task_raising_another_base_exception_fails_and_the_next_one_runs(
    task_, exception, finished
):
    # The runner caught Exception, SystemExit and KeyboardInterrupt only: anything
    # else ended the worker thread, and the task stayed RUNNING (a process worker)
    # or went back to the queue uncharged (a cron run), the jobs behind it not run.
    result, after = run_once_with_one_after(task_)
    assert (result.status, result.attempts) == (TaskResultStatus.FAILED, 1)
    [error] = result.errors
    assert error.exception_class is exception
    assert exception.__name__ in error.traceback
    assert after.return_value == "after"
    assert [r.status for r in finished if r.id == result.id] == [
        TaskResultStatus.FAILED
    ]


def test_a_worker_thread_outlives_a_task_that_raises_a_base_exception(run_worker):
    result = raise_abort.enqueue()
    after = contract.echo.enqueue("after")
    worker = run_worker(max_retries=0)
    wait_for(lambda: after.refresh() or after.is_finished, 30)
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[0].exception_class is Abort
    assert after.return_value == "after"
    assert worker.is_running()


@pytest.mark.parametrize(
    ("task_", "written"),
    [(raise_with_nul, "bad \\x00 byte"), (raise_with_surrogate, "caf\\udce9.txt")],
)
def test_an_error_message_the_database_cannot_store_fails_the_attempt(task_, written):
    # The failure could not be written (U+0000 on PostgreSQL; a lone surrogate on
    # both databases): the job was released uncharged and run again, for ever,
    # and the task after it never ran on a one-thread worker.
    result, after = run_once_with_one_after(task_)
    assert (result.status, result.attempts) == (TaskResultStatus.FAILED, 1)
    [error] = result.errors
    assert error.exception_class is ValueError
    assert written in error.traceback
    assert written in item_of(result).error_message
    assert after.return_value == "after"


def test_an_error_message_the_database_cannot_store_is_retried_as_any_other():
    result = raise_with_surrogate.enqueue()
    run_once("--max-retries", "1")
    result.refresh()
    assert (result.status, result.attempts) == (TaskResultStatus.READY, 1)
    assert item_of(result).status == "retry_pending"
    assert len(result.errors) == 1


@pytest.mark.parametrize("value", ["caf\udce9", {"caf\udce9": 1}, ["\ud800"]])
def test_arguments_with_a_lone_surrogate_are_refused_at_enqueue(value):
    # PostgreSQL refused the row with a DataError; SQLite kept it: refused alike,
    # with a ValueError, as U+0000 is.
    with pytest.raises(ValueError, match="surrogate"):
        contract.echo.enqueue(value)
    assert not QueueItem.objects.exists()
    # An emoji is a pair in JSON's escapes, not a lone surrogate.
    assert contract.echo.enqueue("🙂").args == ["🙂"]


@pytest.mark.parametrize("name", ["mail\x00", "caf\udce9"])
def test_a_queue_name_the_database_cannot_store_is_an_invalid_task(name):
    # A DataError at enqueue on PostgreSQL, kept by SQLite.
    with pytest.raises(InvalidTaskError, match="queue names"):
        contract.echo.using(queue_name=name)


@pytest.mark.parametrize("task_", [leave_autocommit_off, leave_atomic_open])
def test_a_transaction_a_task_leaves_open_is_rolled_back_and_the_worker_goes_on(
    task_, run_worker
):
    # The worker thread's later claims and results joined the task's transaction,
    # never committed: the task stayed RUNNING to everyone else, the tasks after
    # it were not run, and on SQLite every other writer got "database is locked".
    result = task_.enqueue()
    run_worker(max_retries=0)
    wait_for(lambda: result.refresh() or result.is_finished, 30)
    assert result.status == TaskResultStatus.FAILED
    assert "left a transaction open" in result.errors[0].traceback
    assert not WorkerHeartbeat.objects.filter(worker_id="written-by-a-task").exists()
    after = contract.echo.enqueue("after")  # a writer of its own: not locked out
    wait_for(lambda: after.refresh() or after.is_finished, 30)
    assert after.return_value == "after"


# --- What holds ---------------------------------------------------------------


def test_a_return_value_with_a_lone_surrogate_is_tried_once():
    result = return_surrogate.enqueue()
    run_once("--max-retries", "3")
    result.refresh()
    assert result.attempts == 1
    if connection.vendor == "sqlite":  # its JSON keeps the escape
        assert result.return_value == "caf\udce9.txt"
    else:
        assert result.status == TaskResultStatus.FAILED
        assert "refused to store" in result.errors[0].traceback


def test_an_argument_spelling_a_nul_escape_is_not_a_nul():
    # Text that reads "\u0000" (six characters) is no U+0000.
    result = contract.echo.enqueue("\\u0000")
    run_once()
    result.refresh()
    assert result.return_value == "\\u0000"
