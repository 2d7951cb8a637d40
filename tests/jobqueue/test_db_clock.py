"""The queue runs on the database's clock: workers whose Python clock is ten minutes
off (real processes, tests/skewed_clock.py) rescue nothing live, retry nothing early,
and are rescued on time when they die."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from jobqueue.models import ExtractionMetric, QueueItem, Status
from jobqueue.sql import DbNow
from tests.conftest import REPO_ROOT, wait_for, worker_log
from tests.jobqueue.test_worker_processes import SLOW_EXTRACTOR, all_finished, store

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

SKEW = 600
# Rescue after 2 s of silence: a ten-minute skew would show at once.
FAST = ["--workers", "1", "--poll-interval", "0.1", "--heartbeat-interval", "0.3"]
ENV = {**SLOW_EXTRACTOR, "QUEUE_STALE_WORKER_SECONDS": "2"}


@pytest.mark.parametrize("skew", [SKEW, -SKEW])
def test_a_skewed_worker_rescues_nothing_live_and_retries_nothing_early(
    start_worker, user, queue, skew
):
    jobs = [
        queue.enqueue(store(user, f"slow{n}.txt", b"sleep:1.5 slow text").pk)
        for n in range(4)
    ]
    later = queue.enqueue(store(user, "later.txt", b"retry later").pk)
    # A retry due in two minutes by the database's clock: within the skew.
    QueueItem.objects.filter(pk=later).update(
        status=Status.RETRY_PENDING, attempts=1, next_retry_at=DbNow(120)
    )
    skewed = start_worker(*FAST, env=ENV, clock_skew=skew)
    honest = start_worker(*FAST, env=ENV)
    wait_for(lambda: all_finished(jobs), 60)

    logs = worker_log(skewed) + worker_log(honest)
    assert not ExtractionMetric.objects.filter(
        outcome=ExtractionMetric.Outcome.RESCUED
    ).exists(), logs
    assert set(
        QueueItem.objects.filter(pk__in=jobs).values_list("status", "attempts")
    ) == {(Status.COMPLETED, 1)}, logs
    assert QueueItem.objects.get(pk=later).status == Status.RETRY_PENDING
    claimed_by = set(QueueItem.objects.values_list("claimed_by", flat=True))
    assert len({c.rsplit(":", 2)[0] for c in claimed_by if c}) == 2, "both worked"


def test_a_dead_worker_whose_clock_runs_ahead_is_rescued_on_time(
    start_worker, user, queue
):
    job = queue.enqueue(store(user, "hang.txt", b"sleep:60 never finishes").pk)
    skewed = start_worker(*FAST, env=ENV, clock_skew=SKEW)
    wait_for(lambda: QueueItem.objects.get(pk=job).status == Status.PROCESSING, 30)
    os.killpg(skewed.pid, signal.SIGKILL)
    skewed.wait(10)
    honest = start_worker(*FAST, env=ENV)
    # Stale after 2 s: rescued within seconds, not ten minutes.
    wait_for(
        lambda: ExtractionMetric.objects.filter(
            job_id=job, outcome=ExtractionMetric.Outcome.RESCUED
        ).exists(),
        20,
    )
    assert QueueItem.objects.get(pk=job).attempts >= 1, worker_log(honest)


def test_a_batch_enqueued_by_a_host_whose_clock_is_behind_is_dated_by_the_database(
    user, child_env
):
    """Oldest first, the oldest pending job's age and the clearing of old items all
    compare ``created_at``: a batch must not pass for an hour old."""
    docs = [store(user, f"b{n}.txt", b"batch").pk for n in range(3)]
    enqueue = (
        "from jobqueue.services import QueueManager; "
        f"print(QueueManager().enqueue_batch({docs}))"
    )
    subprocess.run(
        [sys.executable, "-m", "tests.skewed_clock", "shell", "-c", enqueue],
        cwd=REPO_ROOT,
        env={**child_env, "CLOCK_SKEW_SECONDS": "-3600"},
        check=True,
        capture_output=True,
        timeout=60,
    )
    items = QueueItem.objects.filter(document_id__in=docs)
    assert items.count() == 3
    assert not items.filter(created_at__lt=DbNow(-60)).exists()
