"""An outside reliability audit of the queue, with real ``process_queue`` processes:
the stop timeout expiring with a job in a child, a stalled transaction holding a
queue row while others rescue, two workers given the same id, a worker stalled
and then stopped, and the operators' rescue against live workers."""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection

from jobqueue.models import (
    ExtractionMetric,
    QueueItem,
    Status,
    WorkerHeartbeat,
)
from jobqueue.sql import DbNow
from tests import conftest
from tests.conftest import REPO_ROOT, wait_for, worker_log
from tests.db_faults import terminate_backends
from tests.jobqueue.test_worker_processes import SLOW_EXTRACTOR, store

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FAST = ["--workers", "1", "--poll-interval", "0.1", "--heartbeat-interval", "0.3"]
ENV = {**SLOW_EXTRACTOR, "QUEUE_STALE_WORKER_SECONDS": "2"}

postgres_only = pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="a PostgreSQL row lock"
)


def outcomes(job_id: int) -> list[str]:
    return sorted(
        ExtractionMetric.objects.filter(job_id=job_id).values_list("outcome", flat=True)
    )


def test_the_stop_timeout_releases_a_job_still_in_its_child(start_worker, user, queue):
    """SIGTERM with a job that outlasts ``--stop-timeout``: the child is stopped, the
    job goes back to pending uncharged (a release, as the guide's shutdown says),
    the heartbeat says stopped and the process exits cleanly."""
    job = queue.enqueue(store(user, "long.txt", b"sleep:60 long").pk)
    proc = start_worker(*FAST, "--stop-timeout", "1", env=ENV)
    wait_for(lambda: QueueItem.objects.get(pk=job).status == Status.PROCESSING, 30)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0, worker_log(proc)
    item = QueueItem.objects.get(pk=job)
    assert (item.status, item.attempts, item.claimed_by) == (Status.PENDING, 0, "")
    assert outcomes(job) == ["released"]
    assert set(WorkerHeartbeat.objects.values_list("status", flat=True)) == {"stopped"}


def test_rescue_stale_jobs_takes_nothing_from_live_workers(
    start_worker, user, queue, settings
):
    """The operators' command, with its shortest thresholds, while a worker runs a
    long job: the job stays the worker's and completes once."""
    settings.QUEUE_HEARTBEAT_INTERVAL = 0.3
    settings.QUEUE_EXTRACTION_TIMEOUT = 60
    job = queue.enqueue(store(user, "busy.txt", b"sleep:4 busy").pk)
    proc = start_worker(*FAST, env=ENV)
    wait_for(lambda: QueueItem.objects.get(pk=job).status == Status.PROCESSING, 30)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        call_command(
            "rescue_stale_jobs",
            "--heartbeat-seconds",
            "1",
            "--minutes",
            "1",
            stdout=io.StringIO(),
        )
        time.sleep(0.2)
    wait_for(lambda: QueueItem.objects.get(pk=job).status == Status.COMPLETED, 30)
    assert outcomes(job) == ["completed"], worker_log(proc)


@postgres_only
def test_a_stalled_transaction_on_one_lost_job_holds_up_no_rescue_and_no_heartbeat(
    start_worker, user, queue
):
    """A worker stalled (SIGSTOP, a paused VM) inside a transaction on one of its
    jobs keeps that row locked. Another worker's rescue must pass over it, not
    wait on it: waiting, it rescues nothing else, and its heartbeat thread, which
    runs the rescue, stops beating, so it looks dead itself."""
    dead, stalled = (
        queue.enqueue(store(user, f"{name}.txt", b"lost text").pk)
        for name in ("dead", "stalled")
    )
    for job, worker_id in ((dead, "gone:1:w1"), (stalled, "stalled:1:w1")):
        QueueItem.objects.filter(pk=job).update(
            status=Status.PROCESSING,
            attempts=1,
            claimed_by=worker_id,
            started_at=DbNow(-3600),
        )
    with psycopg.connect(conftest.test_database_url()) as stalled_worker:
        stalled_worker.execute(
            "SELECT id FROM extraction_queue WHERE id = %s FOR UPDATE", [stalled]
        )
        proc = start_worker(*FAST, env=ENV)
        rescued = ExtractionMetric.objects.filter(
            job_id=dead, outcome=ExtractionMetric.Outcome.RESCUED
        )
        wait_for(rescued.exists, 15)
        time.sleep(3)  # past the stale threshold: the rescuer still beats
        alive = WorkerHeartbeat.objects.in_state("alive", 2)
        assert alive.filter(pid=proc.pid).exists(), worker_log(proc)
        assert QueueItem.objects.get(pk=stalled).status == Status.PROCESSING
    # The stall over, its job is rescued at the next look.
    wait_for(
        lambda: ExtractionMetric.objects.filter(
            job_id=stalled, outcome=ExtractionMetric.Outcome.RESCUED
        ).exists(),
        15,
    )
    assert proc.poll() is None


# ``process_queue`` as a container runs it: alone in its PID namespace (the same pid
# as its twin's), on the same host name, and the first random draw of its id
# forced to its twin's (the one chance in 65,536 made certain).
TWIN = """
import random, sys, uuid
draws = [uuid.UUID(int=0xBEEF << 112)]
uuid.uuid4 = lambda: draws.pop() if draws else uuid.UUID(int=random.getrandbits(128))
sys.argv = ["manage.py", "process_queue", *sys.argv[1:]]
from django.core.management import execute_from_command_line
execute_from_command_line(sys.argv)
"""


def in_pid_namespace(proc: subprocess.Popen) -> int:
    """The pid, seen from here, of the program ``unshare --fork`` started."""
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    return int(wait_for(lambda: children.read_text().split(), 10)[0])


@pytest.mark.skipif(not shutil.which("unshare"), reason="needs unshare(1)")
def test_twin_workers_with_the_same_host_pid_and_draw_keep_their_own_jobs(
    child_env, tmp_path, user, queue
):
    """Two workers whose ids would be the same (same host name and pid, as
    containers have, and the same random part): the second must not share the
    first's heartbeats, nor release its running job when it stops."""
    job = queue.enqueue(store(user, "long.txt", b"sleep:30 long").pk)
    procs = []
    try:
        for n in range(2):
            log = open(tmp_path / f"twin-{n}.log", "w+b")  # noqa: SIM115
            proc = subprocess.Popen(
                ["unshare", "--pid", "--kill-child", sys.executable, "-c", TWIN] + FAST,
                cwd=REPO_ROOT,
                env={**child_env, **ENV},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            proc.log = log  # type: ignore[attr-defined]
            procs.append(proc)
            if n == 0:
                running = QueueItem.objects.filter(pk=job, status=Status.PROCESSING)
                wait_for(running.exists, 30)
        first, second = procs
        wait_for(lambda: "Started 1 worker " in worker_log(second), 30)
        os.kill(in_pid_namespace(second), signal.SIGTERM)
        assert second.wait(30) == 0, worker_log(second)
        item = QueueItem.objects.get(pk=job)
        assert item.status == Status.PROCESSING, worker_log(second)
        assert outcomes(job) == []
        beats = dict(WorkerHeartbeat.objects.values_list("worker_id", "status"))
        assert len(beats) == 2, worker_log(first) + worker_log(second)
        assert beats[item.claimed_by] == "busy"
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def test_a_cron_run_beside_a_busy_worker_takes_only_what_is_free(
    start_worker, user, queue
):
    """``process_queue --once`` while a long-running worker holds a long job: the
    run takes the other jobs, rescues nothing, and leaves the held job alone."""
    held = queue.enqueue(store(user, "held.txt", b"sleep:4 held").pk, priority=5)
    pool = start_worker(*FAST, env=ENV)
    wait_for(lambda: QueueItem.objects.get(pk=held).status == Status.PROCESSING, 30)
    free = [queue.enqueue(store(user, f"f{n}.txt", b"free %d" % n).pk) for n in (1, 2)]
    cron = start_worker("--once", "--poll-interval", "0.1", env=ENV)
    assert cron.wait(60) == 0, worker_log(cron)
    done = QueueItem.objects.filter(pk__in=free).values_list("status", "claimed_by")
    assert {(status, by.split(":")[0]) for status, by in done} == {
        (Status.COMPLETED, "cron")
    }
    wait_for(lambda: QueueItem.objects.get(pk=held).status == Status.COMPLETED, 30)
    assert outcomes(held) == ["completed"], worker_log(pool) + worker_log(cron)
    assert not ExtractionMetric.objects.exclude(outcome="completed").exists()


@postgres_only
def test_connections_killed_while_idle_are_a_warning_and_work_goes_on(
    start_worker, user, queue
):
    """The database restarted under an idle worker (every connection killed, its
    wake-up listener's too): it says so in a warning, not an error with a
    traceback, listens again, and the next job is picked up."""
    proc = start_worker(*FAST, env=ENV)
    wait_for(lambda: "Started 1 worker " in worker_log(proc), 30)
    time.sleep(1)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        spare = [cursor.fetchone()[0]]
    assert terminate_backends(conftest.test_database_url(), spare) >= 2
    wait_for(lambda: "wake-up watcher" in worker_log(proc), 10)
    assert "wake-up watcher lost the database" in worker_log(proc), worker_log(proc)
    job = queue.enqueue(store(user, "after.txt", b"after the restart").pk)
    wait_for(lambda: QueueItem.objects.get(pk=job).status == Status.COMPLETED, 30)
    assert "Traceback" not in worker_log(proc), worker_log(proc)
