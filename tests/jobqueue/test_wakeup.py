"""The wake-up: which waiting threads a commit wakes, the SQLite watch that sees
the commits of other processes, and an idle worker whose threads sleep until
something happens."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest
from django.db import connection

from jobqueue import sql
from jobqueue.wakeup import Flag, Wakeup
from tests.conftest import REPO_ROOT, wait_for


def test_a_commit_wakes_one_idle_thread_and_a_stop_wakes_them_all():
    """The thread a commit wakes claims for the other idle ones, so waking those too
    would only have them queue behind it; the heartbeat thread hears every commit."""
    wakeup = Wakeup()
    idle = [threading.Event() for _ in range(3)]
    returned: list[str] = []

    def wait(name: str, woken: threading.Event | None) -> None:
        wakeup.wait(wakeup.generation, 30, woken)
        returned.append(name)

    waiters = [
        threading.Thread(target=wait, args=(name, woken))
        for name, woken in [("heartbeat", None)]
        + [(f"idle {n}", event) for n, event in enumerate(idle)]
    ]
    for thread in waiters:
        thread.start()
    wait_for(lambda: len(wakeup._idle) == 3 and len(wakeup._watchers) == 1, 10)
    wakeup._changed()
    wait_for(lambda: len(returned) == 2, 10)
    time.sleep(0.2)  # room for a wrongly woken thread to show
    assert sorted(returned)[0] == "heartbeat"
    assert sum(event.is_set() for event in idle) == 1 and len(returned) == 2
    wakeup.notify()
    for thread in waiters:
        thread.join(10)
    assert len(returned) == 4


# Commits one write transaction per line on stdin, answering each once committed.
COMMITTER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
for n, _ in enumerate(sys.stdin, 1):
    db.execute(f"PRAGMA user_version = {n}")
    print(n, flush=True)
db.execute("PRAGMA user_version = 0")
"""


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the SQLite watch")
@pytest.mark.django_db(transaction=True)
def test_the_sqlite_watch_sees_each_commit_of_another_process():
    """A commit writes the WAL file (the file event) a moment before it is visible
    (``data_version``): the watch must look again, not wait for the next write."""
    signals = threading.Semaphore(0)
    stop = Flag()
    watcher = threading.Thread(
        target=sql.dialect().watch, args=(signals.release, stop), daemon=True
    )
    watcher.start()
    committer = subprocess.Popen(
        [sys.executable, "-c", COMMITTER, connection.settings_dict["NAME"]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(0.5)  # the watch is set up
        seen = 0
        for n in range(1, 101):
            committer.stdin.write("commit\n")
            committer.stdin.flush()
            assert committer.stdout.readline() == f"{n}\n"
            # One at a time, with no other write after it: a commit the watch
            # passed over would only be seen at the next one.
            seen += signals.acquire(timeout=10)
            time.sleep(0.02)
            while signals.acquire(blocking=False):
                pass
        assert seen == 100
    finally:
        committer.stdin.close()
        committer.wait(10)
        stop.set()
        watcher.join(5)


def wakeups(native_id: int, pid: int | str = "self") -> int:
    """How many times a thread has been put on a CPU (/proc's schedstat)."""
    with open(f"/proc/{pid}/task/{native_id}/schedstat") as stats:
        return int(stats.read().split()[2])


@pytest.mark.skipif(connection.vendor != "postgresql", reason="LISTEN/NOTIFY")
@pytest.mark.django_db(transaction=True)
def test_the_listening_watch_sleeps_until_a_notification_or_its_stop():
    """No timer: an idle worker's watch wakes for a notification, and its stop."""
    wakeup = Wakeup()
    wakeup.start()
    try:
        wait_for(lambda: wakeup.watching, 10)
        time.sleep(0.5)  # LISTEN sent
        thread = wakeup._thread.native_id
        before = wakeups(thread)
        time.sleep(2.5)
        assert wakeups(thread) == before  # two and a half seconds asleep
        seen = wakeup.generation
        with connection.cursor() as cursor:
            sql.dialect().notify(cursor)
        wait_for(lambda: wakeup.generation != seen, 10)
    finally:
        wakeup.stop()
    assert not wakeup._thread.is_alive()


# An idle worker pool in its own process; a SIGTERM is sent to one of its threads
# that is not the main one, where Python does not run signal handlers.
IDLE_POOL = """
import signal, sys, threading
import django
django.setup()
from jobqueue.worker import ExtractionWorker, register_signal_handlers
worker = ExtractionWorker(num_workers=1)
worker.start()
register_signal_handlers(worker, stop_timeout=5)


def signal_another_thread():
    sys.stdin.readline()
    heartbeat = next(t for t in threading.enumerate() if t.name == "heartbeat")
    signal.pthread_kill(heartbeat.ident, signal.SIGTERM)


threading.Thread(target=signal_another_thread, daemon=True).start()
print("started", flush=True)
worker.wait_stopped()
print("stopped", flush=True)
"""


@pytest.mark.django_db(transaction=True)
def test_an_idle_pools_main_thread_sleeps_yet_hears_a_signal_any_thread_gets(
    child_env,
):
    """The main thread waits for the stop without a timer (it used to look up
    twice a second), and a signal handed to another thread still wakes it to run
    the handler, which stops the pool."""
    pool = subprocess.Popen(
        [sys.executable, "-c", IDLE_POOL],
        cwd=REPO_ROOT,
        env=child_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert pool.stdout.readline() == "started\n"
        time.sleep(1.0)  # in wait_stopped
        before = wakeups(pool.pid, pool.pid)
        time.sleep(2.0)
        assert wakeups(pool.pid, pool.pid) == before
        pool.stdin.write("go\n")
        pool.stdin.flush()
        assert pool.stdout.readline() == "stopped\n"
        assert pool.wait(30) == 0
    finally:
        if pool.poll() is None:
            pool.kill()
            pool.wait(10)
