"""How a task's end reads when it did not end by itself: cancelled before it ran
or after, and cut short by its worker's stop (real worker processes, real signals)."""

from __future__ import annotations

import signal
from io import StringIO

import pytest
from django.core.management import call_command
from django_tasks import TaskResultStatus, default_task_backend

from jobqueue.models import ExtractionMetric, QueueItem, Status
from jobqueue.services import QueueManager
from tests.conftest import wait_for, worker_log
from tests.jobqueue.task_apps import behaviour, contract

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = "Cancelled before it ran."
AFTER = "Cancelled after it ran, while it waited to be retried."
FAST = ("--workers", "1", "--poll-interval", "0.1", "--heartbeat-interval", "0.5")


def errors(result_id: str) -> list[str]:
    result = default_task_backend.get_result(result_id)
    return [error.traceback for error in result.errors]


def test_cancelling_a_task_waiting_for_a_retry_says_it_ran():
    retried = behaviour.failing_task_value_error.enqueue()
    call_command("process_queue", "--once", "--max-retries", "3", stdout=StringIO())
    assert QueueItem.objects.get(pk=int(retried.id)).status == Status.RETRY_PENDING
    failures = errors(retried.id)
    assert failures and all("ValueError" in text for text in failures)

    never_ran = contract.echo.enqueue(2)
    # Cancelled together: each is told its own reason.
    cancelled = QueueManager().cancel_many([int(retried.id), int(never_ran.id)])
    assert sorted(cancelled) == sorted([int(retried.id), int(never_ran.id)])

    assert default_task_backend.get_result(retried.id).status == (
        TaskResultStatus.FAILED
    )
    assert errors(retried.id) == [*failures, AFTER]
    assert default_task_backend.get_result(never_ran.id).status == (
        TaskResultStatus.FAILED
    )
    assert errors(never_ran.id) == [BEFORE]


@pytest.mark.parametrize("signals", [1, 2], ids=["stop-timeout", "second-signal"])
def test_a_task_cut_short_by_its_workers_stop_says_so_and_runs_again(
    start_worker, signals
):
    """SIGTERM (then, or not, a second one) while a task runs past the stop
    timeout: as a document job in the same case, the job goes back to pending with
    the attempt uncounted; its error and the task's errors say the worker stopped."""
    result = contract.nap.enqueue(60)
    job = int(result.id)
    proc = start_worker(*FAST, "--stop-timeout", "0.5" if signals == 1 else "60")
    wait_for(lambda: QueueItem.objects.get(pk=job).status == Status.PROCESSING, 30)
    worker_id = QueueItem.objects.get(pk=job).claimed_by
    proc.send_signal(signal.SIGTERM)
    if signals == 2:
        wait_for(lambda: "finishing current jobs" in worker_log(proc), 10)
        proc.send_signal(signal.SIGTERM)
    # Not waited for past the stop: a thread running a task cannot end (twice 5 s
    # more were spent joining it).
    assert proc.wait(8) == 0, worker_log(proc)

    item = QueueItem.objects.get(pk=job)
    assert (item.status, item.attempts, item.claimed_by) == (Status.PENDING, 0, "")
    stopped = (
        f"The worker stopped while attempt 1 ran ({worker_id}); the job goes back "
        "to the queue, and the attempt does not count."
    )
    assert item.error_message == stopped
    released = ExtractionMetric.objects.get(job_id=job)
    assert (released.outcome, released.error_message) == ("released", stopped)

    result.refresh()
    assert result.status == TaskResultStatus.READY
    assert [error.traceback for error in result.errors] == [stopped]
    assert result.errors[0].exception_class.__name__ == "JobFailed"

    # Cancelled now, it is one that ran.
    QueueManager().cancel(job)
    assert errors(result.id) == [stopped, AFTER]
