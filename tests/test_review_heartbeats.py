"""Review: clearing old heartbeats never deletes a live worker's, also one that was
paused for a while (a SIGSTOP, a suspended laptop or VM, a host cut off from the
database): its beats update its row and would find none, and it would look dead to
every other worker for the rest of its life."""

from __future__ import annotations

import io
import os
import signal
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from jobqueue.models import WorkerHeartbeat
from tests.conftest import wait_for, worker_log

FAST = ["--workers", "1", "--poll-interval", "0.1", "--heartbeat-interval", "0.5"]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_paused_past_the_stale_threshold_keeps_its_heartbeat(start_worker):
    worker = start_worker(*FAST)
    beats = WorkerHeartbeat.objects.exclude(status=WorkerHeartbeat.State.STOPPED)
    wait_for(beats.exists, 60)
    os.killpg(worker.pid, signal.SIGSTOP)
    try:
        # Paused for ten minutes, as far as the database can tell.
        beats.update(last_heartbeat=timezone.now() - timedelta(minutes=10))
        call_command("clear_queue", "--older-than", "0", stdout=io.StringIO())
    finally:
        os.killpg(worker.pid, signal.SIGCONT)
    wait_for(lambda: beats.in_state("alive").exists(), 30)
    assert worker.poll() is None, worker_log(worker)


@pytest.mark.django_db
def test_a_worker_silent_for_days_is_cleared_with_any_age_given():
    old = timezone.now() - timedelta(days=2)
    WorkerHeartbeat.objects.create(
        worker_id="killed", status="busy", last_heartbeat=old
    )
    call_command("clear_queue", "--older-than", "0", stdout=io.StringIO())
    assert not WorkerHeartbeat.objects.exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_whose_heartbeats_were_deleted_writes_them_again(start_worker):
    # An operator deletes its rows in the Workers list, taking it for dead: its
    # beats found nothing to update, and every worker took it for dead for good.
    worker = start_worker(*FAST)
    beats = WorkerHeartbeat.objects.exclude(status=WorkerHeartbeat.State.STOPPED)
    wait_for(beats.exists, 60)
    WorkerHeartbeat.objects.all().delete()
    wait_for(lambda: beats.in_state("alive").exists(), 30)
    assert "heartbeats were deleted; writing them again" in worker_log(worker)
    assert worker.poll() is None, worker_log(worker)
