"""Wake idle worker threads as soon as work may have arrived.

Each database's module watches in its own way (``Dialect.watch``): PostgreSQL
LISTENs for the notification an enqueue sends on commit; SQLite watches
``PRAGMA data_version``. ``poll_interval`` stays the fallback either way.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from jobqueue import sql
from jobqueue.faults import is_database_fault

logger = logging.getLogger(__name__)


class Wakeup:
    """A generation counter that idle threads wait on and the watcher bumps."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._generation = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # The database's signal is being watched: idle threads need not poll.
        self.watching = False

    @property
    def generation(self) -> int:
        return self._generation

    def notify(self) -> None:
        with self._cond:
            self._generation += 1
            self._cond.notify_all()

    def poke(self) -> None:
        """Wake the waiters whose own condition (``wait``'s ``until``) may now hold,
        and only those."""
        with self._cond:
            self._cond.notify_all()

    def wait(
        self, seen: int, timeout: float, until: Callable[[], bool] | None = None
    ) -> None:
        """Sleep up to ``timeout`` unless something happened since ``seen``, or
        until ``until()`` holds (checked when poked)."""
        with self._cond:
            self._cond.wait_for(
                lambda: self._generation != seen or (until is not None and until()),
                timeout,
            )

    def start(self) -> None:
        watch = sql.dialect().watch
        self._thread = threading.Thread(
            target=self._guard(watch), name="queue-wakeup", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.watching = False
        self.notify()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _guard(self, watch):
        def run() -> None:
            while not self._stop.is_set():
                try:
                    self.watching = True
                    watch(self.notify, self._stop)
                except Exception as exc:
                    self.watching = False
                    self.notify()  # waiting threads go back to polling
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
