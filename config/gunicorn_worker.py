"""gunicorn's threaded worker, with a stop that cannot deadlock or be lost
(config/gunicorn.conf.py)."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterable

from gunicorn.workers.base import Worker
from gunicorn.workers.gthread import ThreadWorker

STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGQUIT}


def hold_stop_signals() -> None:
    """From gunicorn's ``pre_fork`` hook (config/gunicorn.conf.py): block the stop
    signals in the master's thread that forks, so that the new worker starts with
    them blocked. Until its ``init_signals`` it runs the master's handlers, inherited with
    the fork, which put a signal in the master's queue, and in the worker's copy of
    that queue nobody reads it: a Ctrl+C or SIGTERM landing there was lost, and the
    master waited its whole graceful timeout before killing the worker. Blocked, the
    signal waits (pending) until the worker's own handlers are in place."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)


def release_stop_signals() -> None:
    """Deliver what was held: in the master once the fork is done, in the worker
    once its handlers are installed."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


# The master imports this module (its worker class) before it forks any worker.
os.register_at_fork(after_in_parent=release_stop_signals)


# Answered before the app read the body it refused (documents/middleware.py).
BODY_REFUSED = ("411", "413")


def close_after_body_refused(app: Callable) -> Callable:
    """The app, with its connection closed after a refusal of the request's body.
    Kept alive, gunicorn first read the unread body to throw it away (its drain gives
    up after 64 KiB or 5 s), holding a thread for a body the app had just refused,
    and the answer said "keep-alive" to a client still sending it. An app may not say
    "Connection: close" (a hop-by-hop header: gunicorn drops it); gunicorn's response,
    whose method ``start_response`` is, can."""

    def application(environ: dict, start_response: Callable) -> Iterable[bytes]:
        def start(status: str, headers: list, exc_info: object = None) -> Callable:
            if status.startswith(BODY_REFUSED):
                start_response.__self__.force_close()
            return start_response(status, headers, exc_info)

        return app(environ, start)

    return application


class SafeQuitThreadWorker(ThreadWorker):
    """gthread's quit handler shuts its thread pool down inside the signal handler;
    when SIGQUIT (or a terminal's Ctrl+C, which reaches every process of the group)
    lands while the main thread is handing a request to that pool, which holds the
    same lock, the worker deadlocks and hangs until the graceful timeout kills it
    ("was sent SIGKILL! Perhaps out of memory?"). Here the pool is shut down as
    ``shutdown(wait=False)`` does it, without that lock; the exit lets its threads
    finish the requests they hold."""

    def load_wsgi(self) -> None:
        super().load_wsgi()
        self.wsgi = close_after_body_refused(self.wsgi)

    def init_signals(self) -> None:
        super().init_signals()
        release_stop_signals()  # a signal held since the fork reaches our handlers

    def handle_quit(self, sig, frame) -> None:
        # The pool must still be told: a thread it was starting when the signal landed
        # is not yet on its books, so the exit would not wake it, and it would wait
        # for work, holding the exit, until the master's graceful timeout killed it.
        # The flag and the queue's wake-up reach every thread (each passes it on).
        self.tpool._shutdown = True
        self.tpool._work_queue.put(None)  # a SimpleQueue: safe in a signal handler
        Worker.handle_quit(self, sig, frame)
