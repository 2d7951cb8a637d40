"""Cron-driven processing: a time budget, the pause switch, a terminal, and a run
killed mid-job (a web request past its proxy's timeout, a ``--once`` process)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import pty
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from django.test import Client

from jobqueue.models import (
    ExtractionMetric,
    QueueControl,
    QueueItem,
    Status,
    WorkerHeartbeat,
)
from jobqueue.worker import process_document_queue
from tests.conftest import REPO_ROOT, free_port, wait_for
from tests.db_faults import PROXY_PORTS
from tests.jobqueue.test_worker_processes import SLOW_EXTRACTOR, store

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def slow_extractor(settings):
    settings.QUEUE_EXTRACT_FUNCTION = SLOW_EXTRACTOR["QUEUE_EXTRACT_FUNCTION"]


def test_a_job_that_outlasts_the_budget_is_charged_and_the_queue_moves_on(
    slow_extractor, user, queue
):
    # Released uncharged, the slow job came first in every run, spent every budget
    # and starved the jobs behind it.
    slow = queue.enqueue(store(user, "slow.txt", b"sleep:30 slow text").pk, 5)
    behind = queue.enqueue(store(user, "behind.txt", b"waiting text").pk)
    began = time.monotonic()
    counts = process_document_queue(time_budget=2)
    assert time.monotonic() - began < 15, "the run ends near its budget"
    assert counts == {"processed": 1, "completed": 0, "failed": 1}
    job = QueueItem.objects.get(pk=slow)
    assert (job.status, job.attempts, job.error_type) == (
        Status.RETRY_PENDING,
        1,
        "timeout",
    )
    assert "budget" in job.error_message and "process_queue" in job.error_message
    assert process_document_queue(time_budget=2)["completed"] == 1
    assert QueueItem.objects.get(pk=behind).status == Status.COMPLETED


def test_once_stopped_by_a_signal_releases_its_job_uncharged(
    user, queue, child_env, slow_extractor
):
    job = queue.enqueue(store(user, "slow.txt", b"sleep:30 slow text").pk)
    env = {**child_env, **SLOW_EXTRACTOR}
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "process_queue", "--once", "--stop-timeout", "1"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: QueueItem.objects.get(pk=job).status == Status.PROCESSING, 30)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err and "rescued" not in err
    item = QueueItem.objects.get(pk=job)
    # The worker's log says which path charged it, if one did.
    assert (item.status, item.attempts) == (Status.PENDING, 0), err
    assert not WorkerHeartbeat.objects.exclude(status="stopped").exists()
    assert not ExtractionMetric.objects.filter(outcome="refused").exists()


def test_once_hears_a_signal_that_another_of_its_threads_took(
    user, queue, child_env, slow_extractor
):
    """Python runs a signal's handler in the main thread only. A SIGTERM the kernel
    hands to another thread of the run (or one that lands while the main thread waits
    for the GIL on its way into its wait for the workers: the flake of the test
    above) did not wake that wait: the stop came at the end of the budget, and the
    job was charged as one that outgrew it."""
    job = queue.enqueue(store(user, "slow.txt", b"sleep:30 slow text").pk)
    budget = 20
    args = ["--once", "--stop-timeout", "1", "--budget", str(budget)]
    began = time.monotonic()
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
        # A real SIGTERM, to the run's first thread after its main one (the worker
        # thread, starting the job's child), as the kernel may choose.
        thread = min(
            int(t) for t in os.listdir(f"/proc/{proc.pid}/task") if int(t) != proc.pid
        )
        send_to_thread(proc.pid, thread, signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Received SIGTERM" in err and "Traceback" not in err
    item = QueueItem.objects.get(pk=job)
    assert (item.status, item.attempts) == (Status.PENDING, 0), err
    assert time.monotonic() - began < budget / 2, err
    assert not WorkerHeartbeat.objects.exclude(status="stopped").exists()


def send_to_thread(pid: int, thread_id: int, signum: int) -> None:
    """Send ``signum`` to one thread of process ``pid`` (tgkill; glibc 2.30+)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.tgkill(pid, thread_id, signum) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def test_cron_over_http_is_not_redirected_where_https_is_required(
    user, queue, settings
):
    """A 301 to https is success to `curl -f`: the cron job ran nothing, silently."""
    settings.CRON_TOKEN = "cron-token-for-this-test"
    settings.SECURE_SSL_REDIRECT = True
    queue.enqueue(store(user, "due.txt", b"due text").pk)
    assert Client().get("/documents/").status_code == 301  # the rest is redirected
    response = Client().post(
        "/queue/cron/", HTTP_AUTHORIZATION=f"Bearer {settings.CRON_TOKEN}"
    )
    assert response.status_code == 200 and response.json()["completed"] == 1


def test_once_and_cron_honour_the_pause_switch(user, queue, child_env, settings):
    settings.CRON_TOKEN = "cron-token-for-this-test"
    job = queue.enqueue(store(user, "paused.txt", b"paused text").pk)
    QueueControl.set_paused(True, by="operator")
    out = subprocess.run(
        [sys.executable, "manage.py", "process_queue", "--once"],
        cwd=REPO_ROOT,
        env=child_env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "paused" in out
    assert process_document_queue() == {"processed": 0, "completed": 0, "failed": 0}
    response = Client().post(
        "/queue/cron/", HTTP_AUTHORIZATION=f"Bearer {settings.CRON_TOKEN}"
    )
    assert response.json() == {
        "processed": 0,
        "completed": 0,
        "failed": 0,
        "paused": True,
    }
    assert QueueItem.objects.get(pk=job).status == Status.PENDING


def test_once_from_a_terminal_shows_progress_and_finishes(user, queue, child_env):
    job = queue.enqueue(store(user, "tty.txt", b"terminal text").pk)
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "process_queue", "--once"],
        cwd=REPO_ROOT,
        env=child_env,
        stdin=follower,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    output = b""
    with contextlib.suppress(OSError):  # EIO once the process closed the terminal
        while chunk := os.read(leader, 4096):
            output += chunk
    os.close(leader)
    assert proc.wait(60) == 0, output.decode(errors="replace")
    assert b"Processed 1 job: 1 completed" in output
    assert QueueItem.objects.get(pk=job).status == Status.COMPLETED


@pytest.mark.slow
@pytest.mark.parametrize("how", ["web request", "process_queue --once"])
def test_a_cron_run_killed_mid_job_leaves_no_orphan_and_its_job_is_rescued(
    user, queue, settings, child_env, tmp_path, slow_extractor, how
):
    document = store(user, "slow.txt", b"sleep:60 cron text")
    job = queue.enqueue(document.pk)
    env = {
        **child_env,
        **SLOW_EXTRACTOR,
        "CRON_TOKEN": "cron-token",
        "QUEUE_HEARTBEAT_INTERVAL": "0.3",
    }
    log = open(tmp_path / "cron.log", "w+b")  # noqa: SIM115
    if how == "web request":
        port = free_port(PROXY_PORTS)
        args = ["runserver", f"127.0.0.1:{port}", "--noreload"]
    else:
        args = ["process_queue", "--once"]
    run = subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=REPO_ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        if how == "web request":
            wait_for(lambda: port_open(port), 30)
            threading.Thread(target=post_cron, args=(port,), daemon=True).start()
        wait_for(lambda: QueueItem.objects.get(pk=job).status == Status.PROCESSING, 30)
        # The extraction child runs under the fork server, a child of the run.
        wait_for(lambda: grandchildren(run.pid), 30)
        children = descendants(run.pid)
        run.kill()  # the process only, as a proxy's timeout or an OOM kill would
        run.wait(10)
        # Long before its 60 s extraction would have ended by itself.
        wait_for(lambda: not any(alive(pid) for pid in children), 5)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, 9)
        log.close()
    assert QueueItem.objects.get(pk=job).status == Status.PROCESSING

    # The next run rescues it once the killed run's heartbeat is stale, and does it
    # (quickly, this time).
    Path(document.file.path).write_bytes(b"cron text")
    settings.QUEUE_STALE_WORKER_SECONDS = 1
    settings.QUEUE_HEARTBEAT_INTERVAL = 0.3  # the deployment's, as the killed run's
    wait_for(lambda: process_document_queue(time_budget=20)["completed"], 30, 0.5)
    job = QueueItem.objects.get(pk=job)
    assert (job.status, job.attempts) == (Status.COMPLETED, 2)
    assert ExtractionMetric.objects.filter(
        job=job, outcome=ExtractionMetric.Outcome.RESCUED
    ).exists()


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def post_cron(port: int) -> None:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/queue/cron/",
        method="POST",
        headers={"Authorization": "Bearer cron-token"},
    )
    with contextlib.suppress(OSError):
        urllib.request.urlopen(request, timeout=60)  # noqa: S310 - loopback


def descendants(pid: int, depth: int = 10) -> list[int]:
    """Live processes below ``pid``, ``depth`` generations down (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if fields[0] != "Z":
                    parents[int(entry.name)] = int(fields[1])
    found, generation = [], [pid]
    for _ in range(depth):
        generation = [child for child, ppid in parents.items() if ppid in generation]
        found += generation
    return found


def grandchildren(pid: int) -> list[int]:
    children = set(descendants(pid, depth=1))
    return [p for p in descendants(pid) if p not in children]


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie no longer runs)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
