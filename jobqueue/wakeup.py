"""Wake idle worker threads as soon as work may have arrived.

Each database's module watches in its own way (``Dialect.watch``): PostgreSQL
LISTENs for the notification an enqueue sends on commit; SQLite watches
``PRAGMA data_version``. ``poll_interval`` stays the fallback either way.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
import weakref
from collections.abc import Iterator

from jobqueue import sql
from jobqueue.faults import is_database_fault

logger = logging.getLogger(__name__)

# A watch that fails sooner than this after its start never got going: the fault it
# meets is the one already reported.
WATCH_STEADY_SECONDS = 5.0


class Flag:
    """A ``threading.Event`` that ``select()`` can wait for too: its file descriptor
    is readable while it is set. A thread that sleeps in the kernel on something
    else (the database's signal, the signals' wake-up fd) waits for a stop beside
    it, instead of looking up every half second to see whether to stop."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._read, self._write = os.pipe()
        # Not at exit: a daemon thread may still set it while the interpreter ends.
        weakref.finalize(self, _close, self._read, self._write).atexit = False

    def fileno(self) -> int:
        return self._read

    def is_set(self) -> bool:
        return self._event.is_set()

    def set(self) -> None:
        with self._lock:
            if not self._event.is_set():
                self._event.set()
                os.write(self._write, b"!")

    def clear(self) -> None:
        with self._lock:
            if self._event.is_set():
                os.read(self._read, 1)
                self._event.clear()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)


def _close(*fds: int) -> None:
    for fd in fds:
        os.close(fd)


@contextlib.contextmanager
def signals_wake() -> Iterator[int | None]:
    """In the main thread, a pipe that every signal writes to, whichever thread the
    kernel hands it to (``signal.set_wakeup_fd``): ``select()`` on it wakes the main
    thread, the only one that runs Python's handlers, as a timeout would. None in
    other threads, or where another wake-up fd is in use (an event loop's)."""
    if threading.current_thread() is not threading.main_thread():
        yield None
        return
    read, write = os.pipe()
    try:
        os.set_blocking(read, False)
        os.set_blocking(write, False)
        previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        if previous != -1:
            signal.set_wakeup_fd(previous)
            yield None
            return
        try:
            yield read
        finally:
            signal.set_wakeup_fd(-1)
    finally:
        _close(read, write)


def empty_pipe(fd: int) -> None:
    """Read what a non-blocking pipe holds, so that it is no longer readable."""
    with contextlib.suppress(BlockingIOError):
        while os.read(fd, 512):
            pass


class Wakeup:
    """A generation counter that the watcher bumps, and the threads waiting on it.

    A commit wakes every watcher (the heartbeat thread) but only one idle worker
    thread: it claims for all the idle ones (``ExtractionWorker._claim_for_idle``),
    so waking the others too would only have them wait for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._generation = 0
        self._watchers: list[threading.Event] = []
        self._idle: list[threading.Event] = []
        self._stop = Flag()
        self._thread: threading.Thread | None = None
        # The database's signal is being watched: idle threads need not poll.
        self.watching = False

    @property
    def generation(self) -> int:
        return self._generation

    def notify(self) -> None:
        """Something every waiting thread must see: a stop, a resume, the watch lost."""
        self._bump(everyone=True)

    def _changed(self) -> None:
        """The watcher's signal: something was committed."""
        self._bump(everyone=False)

    def _bump(self, everyone: bool) -> None:
        with self._lock:
            self._generation += 1
            for event in self._watchers:
                event.set()
            asleep = [event for event in self._idle if not event.is_set()]
            for event in asleep if everyone else asleep[:1]:
                event.set()

    def wait(
        self, seen: int, timeout: float, woken: threading.Event | None = None
    ) -> None:
        """Sleep up to ``timeout`` unless something happened since ``seen``. An idle
        worker thread passes its own ``woken``, which is also set when work is handed
        to it; it is one of the threads of which a commit wakes only one."""
        event = woken or threading.Event()
        waiters = self._watchers if woken is None else self._idle
        with self._lock:
            if self._generation != seen:
                return
            waiters.append(event)
        try:
            event.wait(timeout)
        finally:
            with self._lock:
                waiters.remove(event)

    def start(self) -> None:
        # Each start watches until the next stop: a worker started again after
        # stop() is woken as the first time, not left to its poll interval.
        self._stop = Flag()
        watch = sql.dialect().watch
        self._thread = threading.Thread(
            target=self._guard(watch, self._stop), name="queue-wakeup", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.watching = False
        self.notify()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _guard(self, watch, stop: Flag):
        def run() -> None:
            # Said once per outage: a watch that fails again within seconds of its
            # start is the same outage (the database still away), logged at DEBUG;
            # one every second, with its traceback, buried the worker's own lines.
            reported = False
            while not stop.is_set():
                started = time.monotonic()
                try:
                    self.watching = True
                    watch(self._changed, stop)
                except Exception as exc:
                    self.watching = False
                    self.notify()  # waiting threads go back to polling
                    if time.monotonic() - started >= WATCH_STEADY_SECONDS:
                        reported = False  # it had been watching: a new fault
                    if reported:
                        logger.debug("Queue wake-up watcher still failing: %s", exc)
                    elif is_database_fault(exc):
                        logger.warning(
                            "Queue wake-up watcher lost the database: %s; idle "
                            "workers poll until it is back (trying every 1 s)",
                            exc,
                        )
                    else:
                        logger.exception(
                            "Queue wake-up watcher failed; retrying every 1 s"
                        )
                    reported = True
                    stop.wait(1.0)

        return run
