"""Review: clearing old heartbeats never deletes a live worker's, also one that was
paused for a while (a SIGSTOP, a suspended laptop or VM, a host cut off from the
database): its beats update its row and would find none, and it would look dead to
every other worker for the rest of its life."""

from __future__ import annotations

import io
import os
import signal
import time
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import OperationalError, connection, transaction
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
    try:
        # Paused for ten minutes, as far as the database can tell.
        freeze_and_update(
            worker.pid, beats, last_heartbeat=timezone.now() - timedelta(minutes=10)
        )
        call_command("clear_queue", "--older-than", "0", stdout=io.StringIO())
    finally:
        os.killpg(worker.pid, signal.SIGCONT)
    wait_for(lambda: beats.in_state("alive").exists(), 30)
    assert worker.poll() is None, worker_log(worker)


def freeze_and_update(pgid: int, rows, **values) -> None:
    """SIGSTOP the worker's process group, then update ``rows``. A stop that lands
    inside one of the worker's transactions leaves its locks held for as long as it
    is frozen: then let it run on a moment and freeze it again."""
    for _ in range(100):
        os.killpg(pgid, signal.SIGSTOP)
        try:
            with short_lock_wait(), transaction.atomic():
                rows.update(**values)
            return
        except OperationalError:
            os.killpg(pgid, signal.SIGCONT)
            time.sleep(0.05)
    raise AssertionError("the worker never stopped outside a transaction")


@contextmanager
def short_lock_wait():
    """Give up on a lock after half a second instead of the connection's long wait."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET lock_timeout = '500ms'")
            reset = "RESET lock_timeout"
        else:
            cursor.execute("PRAGMA busy_timeout = 500")
            reset = f"PRAGMA busy_timeout = {int(settings.SQLITE_BUSY_TIMEOUT * 1000)}"
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(reset)


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
