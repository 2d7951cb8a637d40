"""An outside audit of the worker's behaviour against the guide: a pool runs its
jobs side by side, ``job_started`` is heard when a job starts, heartbeats keep their
interval, and a worker started again after ``stop()`` works as the first time."""

from __future__ import annotations

import time

import pytest
from django.db import transaction

from jobqueue import operations
from jobqueue.models import QueueItem, Status, WorkerHeartbeat
from jobqueue.services import QueueManager
from tests.conftest import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def in_thread_kind(monkeypatch):
    """A kind run in the worker thread (as a task is), taking ``seconds``; what it
    did goes to ``ran`` as (event, job id, monotonic time)."""
    ran: list[tuple[str, int, float]] = []
    seconds = {"value": 0.5}

    def run(item) -> int:
        ran.append(("began", item.pk, time.monotonic()))
        time.sleep(seconds["value"])
        ran.append(("ended", item.pk, time.monotonic()))
        return item.pk

    kind = operations.JobKind(name="audit5_sleep", run=run)
    monkeypatch.setitem(operations._kinds, kind.name, kind)
    return ran


def enqueue_together(n: int) -> list[int]:
    """``n`` jobs of the in-thread kind in one commit: one wake-up for them all."""
    with transaction.atomic():
        return [
            QueueManager().enqueue_job("audit5_sleep", payload={}).pk for _ in range(n)
        ]


def test_jobs_handed_to_idle_threads_run_side_by_side(run_worker, in_thread_kind):
    """The guide's pool processes in parallel. One thread claims for the idle ones
    and hands them their jobs; a handed job that runs in its thread held the lock
    of that hand-over for as long as it ran, so the next thread's job waited."""
    worker = run_worker(num_workers=3, poll_interval=600)
    wait_for(lambda: len(worker._idle) == 3, 30)
    jobs = enqueue_together(3)
    wait_for(
        lambda: (
            QueueItem.objects.filter(pk__in=jobs, status=Status.COMPLETED).count() == 3
        ),
        30,
    )
    began = [at for event, _, at in in_thread_kind if event == "began"]
    assert len(began) == 3
    assert max(began) - min(began) < 0.4, "a thread waited for another's job"


def test_job_started_is_heard_before_a_job_run_in_the_thread_has_run(
    run_worker, in_thread_kind
):
    worker = run_worker()
    heard: list[tuple[str, int, float]] = []
    worker.on(
        "job_started",
        lambda job, worker_id: heard.append(("started", job.pk, time.monotonic())),
    )
    worker.on(
        "job_completed",
        lambda job, result: heard.append(("completed", job.pk, time.monotonic())),
    )
    (job_id,) = enqueue_together(1)
    wait_for(lambda: len(heard) == 2, 30)
    order = [
        event for event, _, _ in sorted(heard + in_thread_kind, key=lambda e: e[2])
    ]
    assert order == ["started", "began", "ended", "completed"]
    assert {pk for _, pk, _ in heard} == {job_id}


def test_heartbeats_keep_their_interval_when_the_poll_interval_is_longer(run_worker):
    """A beat waited for the next look at the pause switch (once per poll
    interval): with ``poll_interval`` 3 s and ``heartbeat_interval`` 0.3 s, one beat
    every 3 s; with a poll interval past the stale threshold, other workers would
    take this live one for dead and rescue its jobs."""
    worker = run_worker(heartbeat_interval=0.3, poll_interval=3.0)
    (worker_id,) = [state.worker_id for state in worker._states]
    beats = set()
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        beats.add(
            WorkerHeartbeat.objects.values_list("last_heartbeat", flat=True).get(
                worker_id=worker_id
            )
        )
        time.sleep(0.05)
    assert len(beats) >= 4, sorted(beats)


def test_a_worker_started_again_after_stop_is_alive_and_wakes_for_work(
    run_worker, make_document
):
    worker = run_worker(poll_interval=600)
    assert worker.stop(timeout=5)
    assert set(WorkerHeartbeat.objects.values_list("status", flat=True)) == {"stopped"}
    worker.start()
    statuses = set(WorkerHeartbeat.objects.values_list("status", flat=True))
    assert "stopped" not in statuses
    time.sleep(0.5)  # its threads found nothing and wait for work
    job_id = worker.enqueue(make_document(b"after a restart").pk)
    # Woken by the database's signal, not by its ten-minute poll.
    wait_for(lambda: QueueItem.objects.get(pk=job_id).status == Status.COMPLETED, 30)
