"""Queue edges: a ``--once`` run stopped by a signal says so in its exit status, an
operator's release of a dead worker's job counts the lost attempt, and the item
page says whose start ``started_at`` is."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.messages import get_messages
from django.urls import reverse

from jobqueue.models import ExtractionMetric, QueueItem, Status, WorkerHeartbeat
from tests.conftest import REPO_ROOT, wait_for
from tests.jobqueue.test_worker_processes import FAST, SLOW_EXTRACTOR, store

pytestmark = pytest.mark.django_db(transaction=True)

CHANGELIST = reverse("admin:jobqueue_queueitem_changelist")


# --- process_queue --once stopped by a signal ----------------------------------------


@pytest.mark.parametrize(
    ("signum", "status"),
    [(signal.SIGTERM, 143), (signal.SIGINT, 130)],
    ids=["SIGTERM", "SIGINT"],
)
@pytest.mark.parametrize("as_json", [False, True], ids=["sentence", "json"])
def test_once_stopped_by_a_signal_says_so_and_exits_128_plus_the_signal(
    user, queue, child_env, signum, status, as_json
):
    """It exited 0 with the usual "Processed N jobs" sentence: a cron wrapper or
    systemd could not tell an interrupted drain from one that finished."""
    job = queue.enqueue(store(user, "slow.txt", b"sleep:30 slow text").pk)
    args = ["--once", "--stop-timeout", "1", *(["--json"] if as_json else [])]
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "process_queue", *args],
        cwd=REPO_ROOT,
        env={**child_env, **SLOW_EXTRACTOR},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: QueueItem.objects.get(pk=job).status == Status.PROCESSING, 30)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == status, err
    assert (
        f"Stopped by {signum.name} before the queue was drained; 1 job was released "
        "back to the queue, uncharged." in err
    )
    assert "Traceback" not in err
    if as_json:
        # The endpoint's keys as before, and two more.
        assert json.loads(out) == {
            "processed": 0,
            "completed": 0,
            "failed": 0,
            "paused": False,
            "stopped_by": signum.name,
            "released": 1,
        }
    item = QueueItem.objects.get(pk=job)
    assert (item.status, item.attempts) == (Status.PENDING, 0), err


# --- An operator's release of a dead worker's job ---------------------------------------


def test_releasing_the_jobs_of_a_killed_worker_counts_the_lost_attempt(
    start_worker, user, queue, admin_client, settings
):
    """The admin's release gave a dead worker's job back uncharged, where every
    rescue counts it: a document that kills its worker could be released for ever.
    Released now, it is charged as a rescue, and one with no retries left fails."""
    # As the killed worker's settings: the admin judges liveness by them.
    settings.QUEUE_HEARTBEAT_INTERVAL = 0.5
    settings.QUEUE_STALE_WORKER_SECONDS = 1
    retried = queue.enqueue(store(user, "again.txt", b"sleep:60 again").pk)
    last = queue.enqueue(store(user, "last.txt", b"sleep:60 last").pk)
    QueueItem.objects.filter(pk=last).update(max_retries=0)
    # Nobody else to rescue them: the worker is the only one, and it is killed.
    env = {**SLOW_EXTRACTOR, "QUEUE_STALE_WORKER_SECONDS": "1"}
    worker = start_worker("--workers", "2", *FAST, env=env)
    wait_for(
        lambda: QueueItem.objects.filter(status=Status.PROCESSING).count() == 2, 60
    )
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(10)
    holders = list(QueueItem.objects.values_list("claimed_by", flat=True))
    alive = WorkerHeartbeat.objects.in_state("alive").filter(worker_id__in=holders)
    wait_for(lambda: not alive.exists(), 30)

    data = {"action": "release_jobs", "_selected_action": [retried, last]}
    response = admin_client.post(CHANGELIST, data)
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "Released 1 job to pending (its worker is not alive: the lost attempt "
        "counts, as in a rescue); failed 1 whose worker is not alive and that had "
        "no retries left."
    ]
    again = QueueItem.objects.get(pk=retried)
    assert (again.status, again.attempts, again.claimed_by) == (Status.PENDING, 1, "")
    assert again.error_message.startswith("Attempt 1 was lost: an operator released")
    failed = QueueItem.objects.get(pk=last)
    assert (failed.status, failed.attempts) == (Status.FAILED, 1)
    assert "No retries left" in failed.error_message
    outcomes = ExtractionMetric.objects.filter(job_id__in=[retried, last])
    assert sorted(outcomes.values_list("job_id", "attempt", "outcome")) == [
        (retried, 1, "rescued"),
        (last, 1, "failed"),
    ]
    # Each job's history says what was done to it.
    history = {
        int(entry.object_id): entry.change_message
        for entry in LogEntry.objects.filter(object_id__in=[str(retried), str(last)])
    }
    assert history == {
        retried: "Released as a rescue: its worker was not alive (admin action).",
        last: "Failed as a rescue: its worker was not alive, no retries left "
        "(admin action).",
    }


# --- started_at: the latest attempt's start ----------------------------------------------


def test_the_item_page_says_started_at_is_the_latest_attempts(
    admin_client, user, queue
):
    """``started_at`` is written at each claim (the rescue by age measures the
    running attempt from it): after a retry the page showed the latest attempt's
    start as "Started at", which reads as the job's first."""
    job = queue.enqueue(store(user, "twice.txt", b"twice").pk)
    queue.claim("w1")
    page = admin_client.get(
        reverse("admin:jobqueue_queueitem_change", args=[job])
    ).content.decode()
    assert "Latest attempt started at:</label>" in page
    assert "Started at:</label>" not in page
