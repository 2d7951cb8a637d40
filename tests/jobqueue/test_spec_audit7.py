"""An outside audit against the guide (seeds/000_…), line by line: its API reference
(names, parameters, defaults), the pool's own words on the command line, and what
``get_status()`` reports of a worker started again after ``stop()``."""

from __future__ import annotations

import inspect
import signal
import time

import pytest

from jobqueue.models import QueueItem, Status, WorkerHeartbeat
from jobqueue.services import QueueManager
from jobqueue.worker import ExtractionWorker
from tests.conftest import wait_for, worker_log

pytestmark = pytest.mark.django_db(transaction=True)

# The guide's "API Reference", parameter by parameter: (name, default or EMPTY).
EMPTY = inspect.Parameter.empty
WORKER_API = {
    "start": [],
    "stop": [("timeout", 60.0)],
    "pause": [],
    "resume": [],
    "is_running": [],
    "is_paused": [],
    "enqueue": [("attachment_id", EMPTY), ("priority", 0)],
    "enqueue_batch": [("attachment_ids", EMPTY), ("priority", 0)],
    "get_status": [],
    "get_recent_jobs": [("limit", 20)],
    "retry_failed_jobs": [("job_ids", None)],
    "on": [("event", EMPTY), ("callback", EMPTY)],
}
QUEUE_API = {
    "enqueue": [("attachment_id", EMPTY), ("priority", 0), ("deduplicate", True)],
    "claim": [("worker_id", EMPTY)],
    "complete": [
        ("job_id", EMPTY),
        ("extraction_time_ms", None),
        ("confidence", None),
    ],
    "failed": [
        ("job_id", EMPTY),
        ("error_message", EMPTY),
        ("error_type", "unknown"),
        ("max_retries", 3),
    ],
    "release": [("job_id", EMPTY)],
    "cancel": [("job_id", EMPTY)],
    "get_job": [("job_id", EMPTY)],
    "get_pending_count": [],
    "get_failed_jobs": [("limit", 100)],
    "retry_failed": [("job_id", None)],
    "cleanup_stale_jobs": [("stale_threshold_minutes", 30)],
    "get_queue_stats": [],
}


def positional(function) -> list[tuple[str, object]]:
    """The parameters a caller may pass by position (the guide's), self left out."""
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [
        (p.name, p.default)
        for p in inspect.signature(function).parameters.values()
        if p.kind in kinds and p.name != "self"
    ]


@pytest.mark.parametrize(
    ("cls", "name", "expected"),
    [(ExtractionWorker, n, e) for n, e in WORKER_API.items()]
    + [(QueueManager, n, e) for n, e in QUEUE_API.items()],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_the_api_reference_s_methods_take_its_parameters_and_defaults(
    cls, name, expected
):
    params = positional(getattr(cls, name))
    assert params[: len(expected)] == expected
    # Anything the product adds comes after, and a call as the guide writes it
    # need not pass it.
    assert all(default is not EMPTY for _, default in params[len(expected) :])


def test_the_worker_takes_the_guide_s_arguments_in_its_order_with_its_defaults():
    """``ExtractionWorker(db, num_workers=2, max_retries=3, ...)`` and the table of
    "Worker Pool Settings"; ``db`` (Django's database here) may be passed or not."""
    assert positional(ExtractionWorker.__init__) == [
        ("db", None),
        ("num_workers", 2),
        ("max_retries", 3),
        ("extraction_timeout", 300),
        ("heartbeat_interval", 10),
        ("poll_interval", 1.0),
    ]
    worker = ExtractionWorker("research.db", 4, 5, 600, 5, 0.5)
    assert (
        worker.num_workers,
        worker.max_retries,
        worker.extraction_timeout,
        worker.heartbeat_interval,
        worker.poll_interval,
    ) == (4, 5, 600, 5, 0.5)
    assert isinstance(worker.queue, QueueManager)
    assert worker.runner.max_retries == 5  # the retry budget its failures use
    assert worker.runner.extraction_timeout == 600


def test_the_pool_says_how_many_workers_it_runs_in_good_english(start_worker):
    """``process_queue --workers 1`` said "with 1 workers"."""
    proc = start_worker("--workers", "1", "--heartbeat-interval", "0.5")
    wait_for(lambda: "Ctrl+C to stop" in worker_log(proc), 60)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == 0, worker_log(proc)
    output = worker_log(proc)
    assert "Processing the queue with 1 worker. Ctrl+C to stop." in output, output
    assert "Stopped." in output


def test_a_worker_started_again_reports_the_throughput_of_this_run(
    run_worker, make_document
):
    """The guide's "Throughput: … jobs/sec" after ``stop()`` and ``start()``: the
    uptime counted from the new start, the jobs from the first, so a pool that has
    done nothing since its restart reported the last run's jobs over its first
    second (tens of jobs a second); its heartbeat rows, begun again, said so too."""
    worker = run_worker()
    job_id = worker.enqueue(make_document(b"before the restart\n").pk)
    wait_for(lambda: QueueItem.objects.get(pk=job_id).status == Status.COMPLETED, 30)
    wait_for(lambda: worker.get_status()["stats"]["jobs_completed"] == 1, 10)
    assert worker.stop(timeout=5)
    worker.start()
    stats = worker.get_status()["stats"]
    assert (stats["jobs_completed"], stats["throughput_per_second"]) == (0, 0.0)
    assert [w["jobs_completed"] for w in worker.get_status()["workers"]] == [0]
    assert list(WorkerHeartbeat.objects.values_list("jobs_completed", flat=True)) == [0]


def test_a_pool_of_no_workers_is_refused_before_anything_starts():
    """``ExtractionWorker(num_workers=0)``: ``start()`` raised IndexError half-way,
    leaving its heartbeat and wake-up threads running and ``is_running()`` True
    for a pool with no worker thread at all."""
    with pytest.raises(ValueError, match="num_workers"):
        worker = ExtractionWorker(num_workers=0)
        try:
            worker.start()
        finally:
            worker.stop(timeout=1)


@pytest.mark.parametrize("retries", [-1, 3_000_000_000])
def test_a_retry_budget_the_queue_cannot_keep_is_refused(retries):
    """Beyond PostgreSQL's integer column every failure's record failed, and the job
    was released and run again for ever."""
    with pytest.raises(ValueError, match="max_retries must be 0 to 1000"):
        ExtractionWorker(num_workers=1, max_retries=retries)


def test_a_stopped_workers_uptime_and_throughput_stand_still(run_worker, make_document):
    """The guide prints ``Uptime`` and ``Throughput`` from ``get_status()``: after
    ``stop()`` the uptime went on growing, and the throughput fell towards 0."""
    worker = run_worker()
    job_id = worker.enqueue(make_document(b"one job\n").pk)
    wait_for(lambda: QueueItem.objects.get(pk=job_id).status == Status.COMPLETED, 30)
    assert worker.stop(timeout=5)
    stats = worker.get_status()["stats"]
    time.sleep(0.3)
    assert worker.get_status()["stats"] == stats
    assert stats["jobs_completed"] == 1 and stats["throughput_per_second"] > 0
