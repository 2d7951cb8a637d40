"""gunicorn's threaded worker, with a stop that cannot deadlock (config/gunicorn.conf.py)."""

from __future__ import annotations

from gunicorn.workers.base import Worker
from gunicorn.workers.gthread import ThreadWorker


class SafeQuitThreadWorker(ThreadWorker):
    """gthread's quit handler shuts its thread pool down inside the signal handler;
    when SIGQUIT (or a terminal's Ctrl+C, which reaches every process of the group)
    lands while the main thread is handing a request to that pool, which holds the
    same lock, the worker deadlocks and hangs until the graceful timeout kills it
    ("was sent SIGKILL! Perhaps out of memory?"). Quitting as a plain worker does
    needs no lock: the exit lets the pool's threads finish the requests they hold."""

    def handle_quit(self, sig, frame) -> None:
        Worker.handle_quit(self, sig, frame)
