"""Wake idle worker threads as soon as work may have arrived.

PostgreSQL: LISTEN for the NOTIFY that enqueue sends on commit. SQLite: watch
``PRAGMA data_version``, which changes whenever another connection commits; reading
it takes no lock. ``poll_interval`` stays the fallback either way.
"""

from __future__ import annotations

import logging
import sqlite3
import threading

from django.db import connections

from jobqueue.faults import is_database_fault
from jobqueue.services import NOTIFY_CHANNEL

logger = logging.getLogger(__name__)

SQLITE_CHECK_SECONDS = 0.005


class Wakeup:
    """A generation counter that idle threads wait on and the watcher bumps."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._generation = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def generation(self) -> int:
        return self._generation

    def notify(self) -> None:
        with self._cond:
            self._generation += 1
            self._cond.notify_all()

    def wait(self, seen: int, timeout: float) -> None:
        """Sleep up to ``timeout`` unless something happened since ``seen``."""
        with self._cond:
            if self._generation == seen:
                self._cond.wait(timeout)

    def start(self) -> None:
        vendor = connections["default"].vendor
        target = {
            "postgresql": self._listen_postgres,
            "sqlite": self._watch_sqlite,
        }.get(vendor)
        if target is None:
            return
        self._thread = threading.Thread(
            target=self._guard(target), name="queue-wakeup", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.notify()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _guard(self, target):
        def run() -> None:
            while not self._stop.is_set():
                try:
                    target()
                except Exception as exc:
                    if is_database_fault(exc):
                        logger.warning(
                            "Queue wake-up watcher lost the database: %s", exc
                        )
                    else:
                        logger.exception(
                            "Queue wake-up watcher failed; retrying in 1 s"
                        )
                    self._stop.wait(1.0)

        return run

    def _listen_postgres(self) -> None:
        conn = connections.create_connection("default")
        try:
            conn.connect()
            raw = conn.connection
            raw.autocommit = True
            raw.execute(f"LISTEN {NOTIFY_CHANNEL}")
            while not self._stop.is_set():
                for _ in raw.notifies(timeout=0.5, stop_after=1):
                    self.notify()
        finally:
            conn.close()

    def _watch_sqlite(self) -> None:
        name = connections["default"].settings_dict["NAME"]
        db = sqlite3.connect(name, timeout=5, check_same_thread=False)
        try:
            last = db.execute("PRAGMA data_version").fetchone()[0]
            while not self._stop.wait(SQLITE_CHECK_SECONDS):
                version = db.execute("PRAGMA data_version").fetchone()[0]
                if version != last:
                    last = version
                    self.notify()
        finally:
            db.close()
