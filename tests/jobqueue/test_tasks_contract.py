"""What django-tasks promises a ``@task`` author, checked from outside on this queue:
tasks written as its documentation writes them, run by real workers
(``process_queue --once``) on both databases."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.utils import timezone as dj_timezone
from django_tasks import TaskResultStatus, default_task_backend
from django_tasks.exceptions import InvalidTaskError, TaskResultDoesNotExist

from jobqueue.child import JobFailed
from jobqueue.models import ExtractionMetric, QueueItem, WorkerHeartbeat
from jobqueue.services import QueueManager
from tests.conftest import REPO_ROOT, run_async
from tests.jobqueue.task_apps import contract

pytestmark = pytest.mark.django_db(transaction=True)


def run_once(*flags: str) -> None:
    """``process_queue --once`` in this process (its own worker id each time); a
    failed attempt is final unless ``--max-retries`` says otherwise."""
    call_command(
        "process_queue", "--once", "--max-retries", "0", *flags, stdout=StringIO()
    )


def make_due(result) -> None:
    QueueItem.objects.filter(pk=int(result.id)).update(next_retry_at=dj_timezone.now())


# --- What already holds ------------------------------------------------------


@pytest.mark.parametrize("value", [0, False, "", [], {}, None, 2**70, {"a": [None]}])
def test_falsy_and_large_return_values_come_back_as_returned(value):
    result = contract.echo.enqueue(value)
    run_once()
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == value and type(result.return_value) is type(value)


def test_aenqueue_then_a_worker_then_arefresh_and_aget_result():
    result = run_async(contract.context_of.aenqueue())
    assert result.status == TaskResultStatus.READY
    run_once()
    run_async(result.arefresh())
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value["attempt"] == 1
    assert result.return_value["status"] == TaskResultStatus.RUNNING
    again = run_async(contract.context_of.aget_result(result.id))
    assert again.return_value == result.return_value


def test_an_async_task_with_context_runs():
    result = contract.async_context_of.enqueue(3)
    run_once()
    result.refresh()
    assert result.return_value == [1, 3]


def test_enqueue_in_a_rolled_back_transaction_leaves_no_job():
    with pytest.raises(RuntimeError), transaction.atomic():
        rolled_back = contract.echo.enqueue(1)
        raise RuntimeError
    with pytest.raises(TaskResultDoesNotExist):
        rolled_back.refresh()
    with transaction.atomic():
        committed = contract.echo.enqueue(2)
    run_once()
    committed.refresh()
    assert committed.return_value == 2


def test_a_deferred_task_waits_and_a_past_run_after_runs_at_once():
    plus_five = timezone(timedelta(hours=5))
    past = contract.echo.using(
        run_after=datetime.now(plus_five) - timedelta(minutes=1)
    ).enqueue("past")
    far = contract.echo.using(run_after=datetime(9999, 12, 31, tzinfo=UTC)).enqueue(
        "far"
    )
    run_once()
    past.refresh()
    far.refresh()
    assert past.return_value == "past"
    assert far.status == TaskResultStatus.READY


def test_a_backend_that_declares_its_queues_refuses_the_others(settings):
    settings.TASKS = {
        "default": {"BACKEND": "jobqueue.tasks.QueueBackend", "QUEUES": ["default"]}
    }
    with pytest.raises(InvalidTaskError, match="not valid"):
        contract.echo.using(queue_name="mail")
    assert contract.echo.enqueue(1).task.queue_name == "default"


# --- Defects found ------------------------------------------------------------


def test_an_exception_whose_message_cannot_be_read_fails_the_task_not_the_worker(
    child_env,
):
    result = contract.raise_unprintable.enqueue()
    after = contract.echo.enqueue("after")
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "process_queue", "--once", "--max-retries", "0"],
        cwd=REPO_ROOT,
        env=child_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert worker.wait(30) == 0
    finally:
        if worker.poll() is None:  # it hung: gone with its children
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(10)
    result.refresh()
    after.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[0].exception_class is contract.Unprintable
    assert after.return_value == "after"


@pytest.mark.parametrize("kind", ["nan", "inf"])
def test_a_return_value_json_cannot_hold_fails_with_a_value_error(kind):
    result = contract.make.enqueue(kind)
    run_once()
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[0].exception_class is ValueError
    assert "JSON" in result.errors[0].traceback


def test_a_return_value_json_cannot_hold_fails_once_whatever_the_retries():
    # The task had run to its end: each retry repeated what it did, for the same
    # value. django-tasks' own backends fail it once.
    result = contract.make.enqueue("nan")
    run_once("--max-retries", "3")
    result.refresh()
    assert (result.status, result.attempts) == (TaskResultStatus.FAILED, 1)
    assert result.errors[0].exception_class is ValueError


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="a statement timeout of PostgreSQL's"
)
def test_a_statement_of_the_tasks_own_stopped_by_the_server_is_its_failure():
    # Taken for the queue's database being away, the job was released uncharged
    # and run again, for ever.
    result = contract.outrun_the_statement_timeout.enqueue()
    run_once()
    result.refresh()
    assert (result.status, result.attempts) == (TaskResultStatus.FAILED, 1)
    assert "statement timeout" in result.errors[0].traceback


def test_a_task_running_past_the_stale_job_age_is_left_to_its_live_worker():
    # Every other worker's rescue took it from its live worker and ran it again
    # beside itself: the age rule is for jobs with a timeout, which tasks lack.
    result = contract.echo.enqueue()
    queue = QueueManager()
    assert queue.claim("host:1:w1").pk == int(result.id)
    QueueItem.objects.filter(pk=int(result.id)).update(
        started_at=dj_timezone.now() - timedelta(hours=2)
    )
    beat = WorkerHeartbeat.objects.create(
        worker_id="host:1:w1", status="busy", last_heartbeat=dj_timezone.now()
    )
    assert queue.cleanup_stale_jobs(stale_threshold_minutes=30) == 0
    WorkerHeartbeat.objects.filter(pk=beat.pk).update(
        last_heartbeat=dj_timezone.now() - timedelta(hours=1)
    )
    assert queue.cleanup_stale_jobs(stale_threshold_minutes=30) == 1


def test_a_cron_run_waits_for_a_task_past_its_budget():
    # A task cannot be stopped: released at the deadline (once the stop's 5 s of
    # grace were over), it was cut short as the run ended, and started again from
    # scratch by every run after.
    result = contract.nap.enqueue(5.5)
    run_once("--budget", "0.2")
    result.refresh()
    assert (result.status, result.attempts) == (TaskResultStatus.SUCCESSFUL, 1)
    assert result.return_value == "rested"


def test_arguments_json_cannot_hold_are_refused_at_enqueue_before_the_database():
    with pytest.raises(ValueError, match="JSON"):
        contract.echo.enqueue(float("nan"))
    with pytest.raises(ValueError, match="JSON"):
        contract.echo.enqueue(value={"x": [float("-inf")]})
    # PostgreSQL's JSON has no U+0000: refused alike on both databases (it was a
    # DataError there, stored here).
    with pytest.raises(ValueError, match="U\\+0000"):
        contract.echo.enqueue({"name": "a\x00b"})
    assert not QueueItem.objects.exists()


def test_a_return_value_the_database_refuses_fails_with_an_error_that_resolves():
    result = contract.make.enqueue("nul")
    run_once()
    result.refresh()
    if connection.vendor == "sqlite":  # SQLite's JSON holds U+0000
        assert result.return_value == "a\x00b"
        return
    assert result.status == TaskResultStatus.FAILED
    [error] = result.errors
    assert issubclass(error.exception_class, Exception)
    assert "refused to store" in error.traceback


def test_worker_ids_name_the_worker_of_each_attempt():
    result = contract.fail_first.enqueue()
    run_once("--max-retries", "1")
    make_due(result)
    run_once("--max-retries", "1")
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    workers = list(
        ExtractionMetric.objects.filter(job_id=int(result.id))
        .order_by("attempt")
        .values_list("worker_id", flat=True)
    )
    assert len(set(workers)) == 2  # two runs, two workers
    assert result.worker_ids == workers
    # What the second attempt's context said.
    assert result.return_value == workers


def test_a_lost_attempt_keeps_the_id_of_the_worker_that_lost_it():
    result = contract.echo.enqueue(1)
    QueueManager().claim("ghost-worker")
    QueueItem.objects.filter(pk=int(result.id)).update(
        started_at=dj_timezone.now() - timedelta(hours=1)
    )
    assert QueueManager().rescue_stale_workers(60) == 1
    result.refresh()
    assert (result.status, result.attempts) == (TaskResultStatus.READY, 1)
    assert result.worker_ids == ["ghost-worker"]


def test_a_lost_attempt_is_among_the_errors_and_the_last_one_finishes_the_task(
    finished,
):
    result = contract.echo.enqueue(1)
    item = QueueItem.objects.filter(pk=int(result.id))
    for attempt in (1, 2):
        QueueManager().claim(f"ghost-{attempt}")
        item.update(max_retries=1, started_at=dj_timezone.now() - timedelta(hours=1))
        assert QueueManager().rescue_stale_workers(60) == 1
        result.refresh()
        assert len(result.errors) == attempt
        assert "ghost-" in result.errors[-1].traceback
        assert result.errors[-1].exception_class is JobFailed
    # The second loss spent the last attempt: failed, and announced once.
    assert result.status == TaskResultStatus.FAILED
    assert [(r.id, r.status) for r in finished] == [
        (result.id, TaskResultStatus.FAILED)
    ]


def test_a_fault_of_another_database_a_task_uses_is_the_tasks_failure(tmp_path):
    result = contract.query_elsewhere.enqueue(str(tmp_path / "gone" / "analytics.db"))
    run_once()
    result.refresh()
    # Charged as the task's attempt, not taken for an outage of the queue's database
    # (which would release the job, charge nothing, and take it again forever).
    assert (result.status, result.attempts) == (TaskResultStatus.FAILED, 1)
    assert result.errors[0].exception_class.__name__ == "OperationalError"


def test_a_cancelled_task_failed_with_a_reason_and_is_announced_as_finished(finished):
    result = contract.echo.enqueue(1)
    assert QueueManager().cancel(int(result.id))
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert [error.traceback for error in result.errors] == ["Cancelled before it ran."]
    assert [(r.id, r.status) for r in finished] == [
        (result.id, TaskResultStatus.FAILED)
    ]


def test_a_result_id_in_other_digits_does_not_exist():
    result = contract.echo.enqueue(1)
    arabic_indic = "".join(chr(0x660 + int(digit)) for digit in result.id)
    for result_id in ("²", arabic_indic, f"0{result.id}"):
        with pytest.raises(TaskResultDoesNotExist):
            default_task_backend.get_result(result_id)


def test_a_queue_name_longer_than_the_queue_holds_is_an_invalid_task():
    longest = "q" * QueueItem._meta.get_field("queue_name").max_length
    result = contract.echo.using(queue_name=longest).enqueue(1)
    run_once("--queue", longest)
    result.refresh()
    assert result.return_value == 1
    with pytest.raises(InvalidTaskError, match="queue"):
        contract.echo.using(queue_name=longest + "q")


def test_the_result_names_the_task_as_enqueued_with_its_run_after():
    when = dj_timezone.now() - timedelta(seconds=1)
    result = contract.fail_first.using(run_after=when).enqueue()
    assert result.task.run_after == when
    run_once("--max-retries", "1")
    result.refresh()
    # Waiting for its retry, then done: still the task it was enqueued as.
    assert default_task_backend.get_result(result.id).task.run_after == when
    make_due(result)
    run_once("--max-retries", "1")
    again = default_task_backend.get_result(result.id)
    assert again.status == TaskResultStatus.SUCCESSFUL
    assert again.task == result.task
