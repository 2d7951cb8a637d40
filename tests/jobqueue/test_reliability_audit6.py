"""An outside reliability audit of the queue (sixth): a cron run right after an
outage it shared with a live pool, the cancel of tasks in the log, and the last
day's figures of ``get_queue_stats``; with real ``process_queue`` processes."""

from __future__ import annotations

import io
import logging
import os
import signal
import threading

import pytest
from django.core.management import call_command

from jobqueue.models import (
    ExtractionMetric,
    Operation,
    QueueItem,
    Status,
    WorkerHeartbeat,
)
from jobqueue.services import QueueManager
from jobqueue.sql import DbNow
from jobqueue.worker import ExtractionWorker
from tests.conftest import wait_for, worker_log
from tests.jobqueue.task_apps import reports
from tests.jobqueue.test_worker_processes import SLOW_EXTRACTOR, store

pytestmark = pytest.mark.django_db(transaction=True)

FAST = ["--workers", "1", "--poll-interval", "0.1", "--heartbeat-interval", "0.3"]
STALE = 2.0
ENV = {**SLOW_EXTRACTOR, "QUEUE_STALE_WORKER_SECONDS": str(STALE)}


def outcomes(job_id: int) -> list[str]:
    return sorted(
        ExtractionMetric.objects.filter(job_id=job_id).values_list("outcome", flat=True)
    )


def test_a_cron_run_right_after_a_shared_outage_leaves_the_live_pools_job(
    start_worker, user, queue, settings
):
    """A pool that could not beat through an outage (here: stalled past the stale
    threshold) has stale heartbeats when ``process_queue --once`` starts; the pool
    beats again a moment later. The run must not take the pool's job: the pool
    completes it, once, on its first attempt."""
    settings.QUEUE_STALE_WORKER_SECONDS = STALE
    settings.QUEUE_HEARTBEAT_INTERVAL = 0.3
    job = queue.enqueue(store(user, "long.txt", b"sleep:6 pool text").pk)
    pool = start_worker(*FAST, env=ENV)
    wait_for(lambda: QueueItem.objects.get(pk=job).status == Status.PROCESSING, 30)
    os.killpg(pool.pid, signal.SIGSTOP)  # the outage, as the pool lives it
    try:
        wait_for(
            lambda: not WorkerHeartbeat.objects.in_state("alive", STALE).exists(), 10
        )
        wait_for(
            lambda: QueueItem.objects.filter(
                pk=job, started_at__lt=DbNow(-STALE)
            ).exists(),
            10,
        )
        # The pool gets the database back a moment after the cron run does.
        timer = threading.Timer(0.5, os.killpg, (pool.pid, signal.SIGCONT))
        timer.start()
        out = io.StringIO()
        call_command("process_queue", "--once", *FAST[2:], stdout=out)
        timer.join()
    finally:
        os.killpg(pool.pid, signal.SIGCONT)
    wait_for(lambda: QueueItem.objects.get(pk=job).status == Status.COMPLETED, 30)
    item = QueueItem.objects.get(pk=job)
    assert item.attempts == 1, worker_log(pool)
    assert outcomes(job) == ["completed"]
    assert "refused" not in worker_log(pool)


def test_the_cron_runs_wait_costs_nothing_without_silent_workers(queue):
    """The wait is only for silent workers holding jobs: none, no wait."""
    assert queue.wait_for_silent_workers(STALE, at_most=30) == []


def test_a_dead_workers_jobs_are_still_rescued_after_the_grace(user, queue):
    """A silent worker that does not beat within the grace is dead: the wait says
    so, and the rescue takes its job."""
    job = queue.enqueue(store(user, "lost.txt", b"lost text").pk)
    WorkerHeartbeat.objects.create(
        worker_id="gone:1:w1",
        status=WorkerHeartbeat.State.BUSY,
        hostname="gone",
        pid=1,
        started_at=DbNow(-3600),
        last_heartbeat=DbNow(-3600),
    )
    QueueItem.objects.filter(pk=job).update(
        status=Status.PROCESSING,
        attempts=1,
        claimed_by="gone:1:w1",
        started_at=DbNow(-3600),
    )
    assert queue.wait_for_silent_workers(STALE, at_most=0.3) == ["gone:1:w1"]
    assert queue.rescue_stale_workers(STALE) == 1


def test_cancelling_tasks_is_no_error_in_the_log(caplog, finished):
    """Cancelling N tasks announced N ``task_finished`` (FAILED, as Django has no
    cancelled status), which django-tasks logs with ``logger.exception``: N ERROR
    records with an empty traceback, for an operator's ordinary action."""
    ids = [int(reports.total.enqueue([n]).id) for n in range(3)]
    with caplog.at_level(logging.INFO, logger="django_tasks"):
        assert sorted(QueueManager().cancel_many(ids)) == sorted(ids)
    assert len(finished) == 3  # still announced as finished
    ended = [r for r in caplog.records if r.name == "django_tasks"]
    assert len(ended) == 3
    assert all(r.levelno == logging.INFO and r.exc_info is None for r in ended)
    assert "NoneType: None" not in caplog.text


def test_a_failed_task_is_still_logged_as_an_error(caplog):
    """Only the cancel is spared: a task that failed for good stays an ERROR."""
    from jobqueue.tasks import _finished_on_commit

    result = reports.total.enqueue([1])
    QueueItem.objects.filter(pk=int(result.id)).update(status=Status.FAILED)
    with caplog.at_level(logging.INFO, logger="django_tasks"):
        _finished_on_commit([int(result.id)], ValueError("boom"))
    errors = [r for r in caplog.records if r.name == "django_tasks"]
    assert [r.levelno for r in errors] == [logging.ERROR]


def test_queue_stats_count_documents_work_not_their_thumbnails(make_document, queue):
    """Each document's extraction is followed by a thumbnail (the app's own side
    work): the guide's "Completed (24h)" and average extraction time are of the
    extractions, not twice the documents at half their time."""
    document = make_document(b"text")
    for operation, ms in ((Operation.EXTRACT, 1000), (Operation.THUMBNAIL, 10)):
        item = QueueItem.objects.create(
            document=document, operation=operation, status=Status.PROCESSING
        )
        item.attempts = 1
        item.save(update_fields=["attempts"])
        assert queue.complete(item.pk, extraction_time_ms=ms)
    stats = queue.get_queue_stats()
    assert stats["completed_24h"] == 1
    assert stats["avg_extraction_time_ms"] == 1000.0
    assert stats["throughput_per_hour"] == 1
    # The state counts are the table's, as the admin's filtered lists show it.
    assert stats["completed"] == 2


def test_a_worker_stopping_gracefully_beats_until_its_job_is_done(
    start_worker, user, queue, settings
):
    """SIGTERM lets the running job finish; its heartbeats must go on meanwhile, or
    past the stale threshold another worker rescues the job and it runs twice."""
    settings.QUEUE_STALE_WORKER_SECONDS = STALE
    job = queue.enqueue(store(user, "long.txt", b"sleep:4 finishing text").pk)
    pool = start_worker(*FAST, "--stop-timeout", "30", env=ENV)
    wait_for(lambda: QueueItem.objects.get(pk=job).status == Status.PROCESSING, 30)
    pool.send_signal(signal.SIGTERM)
    # Longer than the threshold: a worker that stopped beating would look dead.
    threading.Event().wait(STALE + 1.0)
    assert WorkerHeartbeat.objects.in_state("alive", STALE).exists(), worker_log(pool)
    assert queue.rescue_stale_workers(STALE) == 0  # another worker's look
    assert pool.wait(30) == 0, worker_log(pool)
    item = QueueItem.objects.get(pk=job)
    assert (item.status, item.attempts) == (Status.COMPLETED, 1), worker_log(pool)
    assert outcomes(job) == ["completed"]
    # Once its threads are done, the worker says it stopped.
    assert set(WorkerHeartbeat.objects.values_list("status", flat=True)) == {"stopped"}


def test_the_stop_releases_no_job_rescued_and_claimed_meanwhile(
    make_document, queue, monkeypatch
):
    """Between reading its leftover jobs and releasing them, a stopping worker may
    lose one to a rescuer that claims it again: the release must leave it to the
    new owner (fenced by worker and attempt)."""
    worker = ExtractionWorker(num_workers=1)
    worker._register()
    mine = worker._states[0].worker_id
    job = queue.enqueue(make_document().pk)
    QueueItem.objects.filter(pk=job).update(
        status=Status.PROCESSING, attempts=1, claimed_by=mine
    )
    release = worker.queue.release

    def rescued_first(job_id, **fence):
        QueueItem.objects.filter(pk=job_id).update(claimed_by="other:1:w1", attempts=2)
        return release(job_id, **fence)

    monkeypatch.setattr(worker.queue, "release", rescued_first)
    worker._release_leftovers()
    item = QueueItem.objects.get(pk=job)
    assert (item.status, item.claimed_by, item.attempts) == (
        Status.PROCESSING,
        "other:1:w1",
        2,
    )
