"""django-tasks' contract checked from outside as a task author would use it, where
the earlier test_tasks*.py files had not looked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone as dj_timezone
from django_tasks import TaskResultStatus, task
from django_tasks.exceptions import InvalidTaskError

from jobqueue.models import QueueItem
from jobqueue.monitoring import oldest_due_seconds
from jobqueue.sql import db_now

pytestmark = pytest.mark.django_db(transaction=True)


@task()
def echo(*args, **kwargs):
    return [list(args), kwargs]


def run_once(*flags: str) -> None:
    call_command("process_queue", "--once", *flags, stdout=StringIO())


def test_a_whole_float_priority_does_not_leak_into_other_results():
    """django-tasks accepts ``priority=5.0`` (a whole number); the database keeps 5.
    Every result of priority 5 then read in the process showed a task of priority
    5.0: the task cache took 5 and 5.0 for the same key."""
    as_float = echo.using(priority=5.0).enqueue()
    as_int = echo.using(priority=5).enqueue()
    for result in (as_float, as_int):
        for task_ in (result.task, echo.get_result(result.id).task):
            assert task_.priority == 5 and type(task_.priority) is int


@pytest.mark.parametrize(
    "run_after",
    [
        datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5))),
        datetime(1, 1, 1, 1, tzinfo=timezone(timedelta(hours=5))),
    ],
)
def test_a_run_after_outside_the_years_a_database_holds_is_an_invalid_task(run_after):
    """A valid aware datetime whose UTC time falls outside the years 1..9999: SQLite's
    enqueue raised an OverflowError; PostgreSQL stored a time it could not give back,
    and every worker's look for the next due job failed on it."""
    with pytest.raises(InvalidTaskError, match="years 1 to 9999"):
        echo.using(run_after=run_after).enqueue()
    assert not QueueItem.objects.exists()
    # The edges themselves are fine, and the worker goes on.
    latest = echo.using(run_after=datetime(9999, 12, 31, 23, tzinfo=UTC)).enqueue()
    run_once()
    latest.refresh()
    assert latest.status == TaskResultStatus.READY


def test_a_task_queued_with_a_past_run_after_waits_only_since_it_was_queued():
    """``using(run_after=...)`` with a time already past: due at once, so it waits
    from when it was queued. It waited as a retry due since that earlier time, and
    the backlog figure (docqueue_oldest_pending_seconds) counted a day's wait for a
    task queued a moment ago."""
    result = echo.using(run_after=dj_timezone.now() - timedelta(days=1)).enqueue(1)
    now = db_now()
    assert oldest_due_seconds(now) <= (now - result.enqueued_at).total_seconds()
    # The task still says when it was asked to run, and runs at once.
    assert echo.get_result(result.id).task.run_after == result.task.run_after
    assert result.task.run_after < result.enqueued_at
    run_once()
    result.refresh()
    assert result.return_value == [[1], {}]
