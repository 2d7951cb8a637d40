"""django-tasks-db's behavioural expectations (its tests/tests.py, version 0.13), run
against this queue's backend through the public tasks API on both databases.

Their ``db_worker --batch`` (run what is ready, then exit) is our worker's drain mode
(``ExtractionWorker.drain``, what ``process_queue --once`` runs). Ported: enqueue and
aenqueue, get_result/aget_result and refresh/arefresh, missing and malformed ids,
check(), the priority range, enqueue inside a transaction, running a task (times and
attempts), a batch of tasks, no tasks, named queues, failures (exception class,
traceback, complex exceptions, unstorable return values: a TypeError, whose message
is django-tasks' rather than the json module's), run_after, priority order,
a task path that is not a task or does not exist, a task that exits, locked rows
(PostgreSQL), a maximum number of tasks, and takes_context.

Not ported, as they test django-tasks-db's own parts rather than a backend's
behaviour: its ``DBTaskResult`` model and admin, its id functions, its
``db_worker``/``prune_db_task_results`` command-line options and log lines, the
number of queries its worker makes (ours are asserted in test_statements), its MySQL
and exclusive-transaction handling. Two differences by design: a failing task is
retried by the worker's policy (``--max-retries``, default ``QUEUE_MAX_RETRIES``;
0 here, so that one failure is final, as in django-tasks-db), and tasks of equal priority run in the
order they were enqueued, ``run_after`` only delaying them (django-tasks-db orders
them by ``run_after``).
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone
from django_tasks import TaskResultStatus, default_task_backend, task_backends
from django_tasks.exceptions import InvalidTaskError, TaskResultDoesNotExist
from django_tasks.signals import task_enqueued

from jobqueue.models import Operation, QueueItem, Status
from jobqueue.services import QueueManager
from jobqueue.tasks import QueueBackend
from jobqueue.worker import ExtractionWorker
from tests.conftest import run_async
from tests.jobqueue.task_apps import behaviour as tasks

pytestmark = pytest.mark.django_db(transaction=True)


def run_worker(**options) -> dict[str, int]:
    """django-tasks-db's ``db_worker --batch``: run what is ready, then stop."""
    limit = options.pop("limit", None)
    worker = ExtractionWorker(
        num_workers=1,
        max_retries=0,
        heartbeat_interval=0.5,
        poll_interval=0.1,
        **options,
    )
    return worker.drain(limit)


@pytest.fixture
def enqueued():
    received = []

    def record(sender, task_result, **kwargs):
        received.append((sender, task_result))

    task_enqueued.connect(record)
    yield received
    task_enqueued.disconnect(record)


def ready_count() -> int:
    return QueueItem.objects.filter(
        operation=Operation.TASK, status=Status.PENDING
    ).count()


def assert_fresh(result, task, args, kwargs) -> None:
    assert result.status == TaskResultStatus.READY
    assert not result.is_finished
    assert result.started_at is None
    assert result.last_attempted_at is None
    assert result.finished_at is None
    with pytest.raises(ValueError, match="Task has not finished yet"):
        result.return_value  # noqa: B018
    assert result.task == task
    assert (result.args, result.kwargs) == (args, kwargs)
    assert result.attempts == 0


def test_using_correct_backend():
    assert isinstance(task_backends["default"], QueueBackend)
    assert default_task_backend.alias == "default"


@pytest.mark.parametrize("task", [tasks.noop_task, tasks.noop_task_async])
def test_enqueue_task(task, enqueued):
    result = task.enqueue(1, two=3)
    assert_fresh(result, task, [1], {"two": 3})
    assert enqueued == [(QueueBackend, result)]


@pytest.mark.parametrize("task", [tasks.noop_task, tasks.noop_task_async])
def test_aenqueue_task(task, enqueued):
    result = run_async(task.aenqueue())
    assert_fresh(result, task, [], {})
    assert enqueued == [(QueueBackend, result)]


def test_get_result_and_aget_result():
    result = default_task_backend.enqueue(tasks.noop_task, [], {})
    assert default_task_backend.get_result(result.id) == result
    assert run_async(default_task_backend.aget_result(result.id)) == result


@pytest.mark.parametrize("refresh", ["refresh", "arefresh"])
def test_refresh_result(refresh):
    result = tasks.calculate_meaning_of_life.enqueue()
    run_worker()
    # The result in hand is what it was when enqueued, until refreshed.
    assert result.status == TaskResultStatus.READY
    assert result.attempts == 0
    if refresh == "refresh":
        result.refresh()
    else:
        run_async(result.arefresh())
    assert result.started_at is not None
    assert result.last_attempted_at is not None
    assert result.finished_at is not None
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.is_finished
    assert result.return_value == 42
    assert result.attempts == 1


@pytest.mark.parametrize("result_id", ["123456789", "123", "not-a-number", ""])
def test_missing_or_malformed_result_ids(result_id):
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(result_id)
    with pytest.raises(TaskResultDoesNotExist):
        run_async(default_task_backend.aget_result(result_id))


def test_check():
    assert list(default_task_backend.check()) == []


def test_priority_range():
    for priority in (-101, 101):
        with pytest.raises(InvalidTaskError):
            tasks.noop_task.using(priority=priority).enqueue()
    for priority in (-100, 0, 100):
        result = tasks.noop_task.using(priority=priority).enqueue()
        assert QueueItem.objects.get(pk=int(result.id)).priority == priority


def count_in_new_connection() -> int:
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM extraction_queue")
            return cursor.fetchone()[0]
    finally:
        other.close()


def test_enqueue_does_not_wait_for_the_transaction_to_commit():
    with transaction.atomic():
        result = tasks.noop_task.enqueue()
        assert result.enqueued_at is not None
        assert QueueItem.objects.count() == 1
        # SQLite locks the database during this transaction.
        if connection.vendor != "sqlite":
            assert count_in_new_connection() == 0
    if connection.vendor != "sqlite":
        assert count_in_new_connection() == 1


@pytest.mark.parametrize("task", [tasks.noop_task, tasks.noop_task_async])
def test_run_enqueued_task(task):
    result = task.enqueue()
    assert ready_count() == 1
    run_worker()
    assert (result.status, result.attempts) == (TaskResultStatus.READY, 0)
    result.refresh()
    assert result.started_at >= result.enqueued_at
    assert result.finished_at >= result.started_at
    assert result.last_attempted_at is not None
    assert (result.status, result.attempts) == (TaskResultStatus.SUCCESSFUL, 1)
    assert ready_count() == 0


def test_batch_processes_all_tasks():
    results = [tasks.noop_task.enqueue() for _ in range(3)]
    results.append(tasks.failing_task_value_error.enqueue())
    assert ready_count() == 4
    assert run_worker() == {"processed": 4, "completed": 3, "failed": 1}
    for result in results:
        result.refresh()
    assert Counter(r.status for r in results) == {
        TaskResultStatus.SUCCESSFUL: 3,
        TaskResultStatus.FAILED: 1,
    }


def test_no_tasks():
    assert run_worker() == {"processed": 0, "completed": 0, "failed": 0}


def test_doesnt_process_a_different_queue():
    result = tasks.noop_task.using(queue_name="queue-1").enqueue()
    run_worker(queues=["default"])
    assert ready_count() == 1
    run_worker(queues=[result.task.queue_name])
    assert ready_count() == 0
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL


def test_process_all_queues():
    tasks.noop_task.using(queue_name="queue-1").enqueue()
    tasks.noop_task.enqueue()
    assert run_worker()["completed"] == 2


def test_failing_task():
    result = tasks.failing_task_value_error.enqueue()
    run_worker()
    assert result.status == TaskResultStatus.READY
    result.refresh()
    assert result.started_at >= result.enqueued_at
    assert result.finished_at >= result.started_at
    assert result.status == TaskResultStatus.FAILED
    with pytest.raises(ValueError, match="Task failed"):
        result.return_value  # noqa: B018
    assert result.errors[0].exception_class is ValueError
    assert result.errors[0].traceback.endswith(
        "ValueError: This task failed due to ValueError\n"
    )
    assert ready_count() == 0


def test_complex_exception():
    result = tasks.complex_exception.enqueue()
    run_worker()
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[0].exception_class is ValueError
    assert 'ValueError(ValueError("This task failed"))' in result.errors[0].traceback


def test_complex_return_value():
    result = tasks.complex_return_value.enqueue()
    run_worker()
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.finished_at >= result.started_at >= result.enqueued_at
    assert result._return_value is None
    assert result.errors[0].exception_class is TypeError
    assert "Unsupported type: <class 'function'>" in result.errors[0].traceback


def test_run_after():
    result = tasks.noop_task.using(
        run_after=timezone.now() + timedelta(hours=10)
    ).enqueue()
    assert ready_count() == 0
    assert run_worker()["processed"] == 0
    result.refresh()
    assert result.status == TaskResultStatus.READY
    # Its time comes.
    QueueItem.objects.filter(pk=int(result.id)).update(next_retry_at=timezone.now())
    assert run_worker()["completed"] == 1
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL


def test_run_after_and_priority_order():
    now = timezone.now()
    using = tasks.noop_task.using
    old = using(priority=20, run_after=now - timedelta(hours=2)).enqueue()
    very_old = using(priority=20, run_after=now - timedelta(hours=10)).enqueue()
    using(run_after=now + timedelta(hours=10)).enqueue()
    using(priority=10, run_after=now + timedelta(hours=10)).enqueue()
    using(run_after=now + timedelta(hours=2)).enqueue()
    high = using(priority=10).enqueue()
    low = using(priority=2).enqueue()
    lower = using(priority=-2).enqueue()
    order = []
    while run_worker(limit=1)["processed"]:
        order.append(
            QueueItem.objects.filter(status=Status.COMPLETED)
            .order_by("-finished_at", "-id")
            .values_list("pk", flat=True)
            .first()
        )
    # Due tasks by priority; equal priorities in the order they were enqueued.
    assert order == [int(r.id) for r in (old, very_old, high, low, lower)]


@pytest.mark.parametrize("path", ["subprocess.check_output", "missing.func"])
def test_a_task_path_that_is_not_a_task_fails_the_job(path):
    job = QueueManager().enqueue_job(
        Operation.TASK,
        payload={
            "task": path,
            "backend": "default",
            "args": [["exit", "1"]],
            "kwargs": {},
            "errors": [],
        },
    )
    after = tasks.noop_task.enqueue()
    assert run_worker() == {"processed": 2, "completed": 1, "failed": 1}
    assert QueueItem.objects.get(pk=job.pk).status == Status.FAILED
    after.refresh()
    assert after.status == TaskResultStatus.SUCCESSFUL


def test_the_worker_does_not_exit_when_a_task_does():
    result = tasks.exit_task.enqueue()
    after = tasks.noop_task.enqueue()
    assert run_worker()["processed"] == 2
    result.refresh()
    after.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[0].exception_class is SystemExit
    assert after.status == TaskResultStatus.SUCCESSFUL


def test_worker_with_locked_rows():
    if connection.vendor == "sqlite":
        pytest.skip("SQLite locks the whole database")
    first = tasks.noop_task.enqueue()
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute(
                "SELECT id FROM extraction_queue WHERE id = %s FOR UPDATE",
                [int(first.id)],
            )
            second = tasks.noop_task.enqueue()
            run_worker()
    finally:
        other.close()
    first.refresh()
    second.refresh()
    assert first.status == TaskResultStatus.READY
    assert second.status == TaskResultStatus.SUCCESSFUL


def test_max_tasks():
    results = [tasks.noop_task.enqueue() for _ in range(5)]
    assert run_worker(limit=2)["processed"] == 2
    for result in results:
        result.refresh()
    assert Counter(r.status for r in results) == {
        TaskResultStatus.SUCCESSFUL: 2,
        TaskResultStatus.READY: 3,
    }


def test_takes_context():
    result = tasks.get_task_id.enqueue()
    run_worker()
    result.refresh()
    assert result.return_value == result.id


def test_context():
    result = tasks.check_context.enqueue(1)
    run_worker()
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
