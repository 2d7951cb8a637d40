"""The wake-up: which waiting threads a commit wakes, and the SQLite watch that sees
the commits of other processes."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest
from django.db import connection

from jobqueue import sql
from jobqueue.wakeup import Wakeup
from tests.conftest import wait_for


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
    stop = threading.Event()
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
