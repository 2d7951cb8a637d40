"""Runs one claimed job as its kind says (in a child process, or in the worker
thread), then records the result.

Shared by the worker threads and by ``process_document_queue`` (cron).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from concurrent.futures import CancelledError
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import forkserver, resource_tracker, util
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from pebble import ProcessExpired, ProcessPool

from jobqueue import operations, retry
from jobqueue.child import (
    CHILD_FOLDER_PREFIX,
    JobFailed,
    dead_processes_folders,
    hold_alive_lock,
    init_child,
    read_progress,
    run_job,
)
from jobqueue.faults import is_database_away, is_database_fault
from jobqueue.models import ErrorType, QueueItem
from jobqueue.services import QueueManager

logger = logging.getLogger(__name__)


class JobReleased(Exception):  # noqa: N818 - a signal, not an error
    """The job was handed back to the queue (shutdown) instead of finishing."""


@dataclass
class Outcome:
    """What became of one job."""

    completed: bool
    result: Any = None
    error_type: str = ""
    error_message: str = ""
    recorded: bool = (
        True  # False when the job had been taken from this worker meanwhile
    )
    # ``record(claim_next=...)``: whether the next job was claimed with this
    # outcome's record, and which.
    claimed_next: bool = False
    next_item: QueueItem | None = None
    # A failed attempt: seconds until it is tried again, None if it failed for good.
    retry_in: float | None = None


STORE_REFUSED = (
    "The result was produced but the database refused to store it "
    "(too large, or characters it cannot hold)."
)
STORE_FAILED = "The result was produced but could not be stored: {error}."
STORAGE_HINT = " Is the storage full, or not writable?"
FAILURE_REFUSED = (
    "The job failed, and the database refused to record its failure as it was, so "
    "it is not tried again. The failure: {error}"
)
PROGRESS_POLL = 2.0  # seconds between looks at a long extraction's progress
# A worker's folder for its jobs' progress, named after its host and pid so that the
# next worker started can tell it from a live one's once a SIGKILL left it behind.
PROGRESS_PREFIX = "docqueue-progress-"
# In that folder: a link to multiprocessing's own folder (the fork server's socket),
# which a SIGKILL leaves behind as well.
MULTIPROCESSING_LINK = "multiprocessing"
# And a file its worker keeps locked: a folder is a live worker's while it is locked,
# though its pid is another's now, or another pid namespace's (a container).
ALIVE_LOCK = "alive"


def exception_message(exc: BaseException) -> str:
    """``Type: message`` of the exception a job raised. Its ``__str__`` is the job's
    code and may raise too: the attempt must still fail, not the worker thread."""
    try:
        return f"{type(exc).__name__}: {exc}"
    except Exception:
        return f"{type(exc).__name__}: <exception str() failed>"


def _start_fork_server_deaf_to_ctrl_c() -> None:
    """Start the fork server with SIGINT blocked, from whichever thread: it and every
    child it forks keep the mask (kept across fork and exec), so a child is deaf to
    it from its first instruction, and ``init_child`` then ignores it. A Ctrl+C in
    the terminal reaches the whole process group: a child not yet past
    ``init_child`` would die of it, its job released instead of finished. This
    process's other threads still take it. The resource tracker starts first: it
    unblocks SIGINT in the calling thread once it has started."""
    resource_tracker.ensure_running()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        forkserver.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _ended(exitcode: int) -> str:
    """How a child process ended: its exit code, or the signal that killed it
    (SIGSEGV, a library's crash; SIGKILL, the OOM killer's), by name."""
    if exitcode >= 0:
        return f"exit code {exitcode}"
    try:
        return f"killed by {signal.Signals(-exitcode).name}"
    except ValueError:
        return f"killed by signal {-exitcode}"


def _host() -> str:
    return socket.gethostname().replace("/", "_")


def _remove_dead_workers_folders(prefix: str) -> None:
    """Remove what killed workers of this host left in the temporary folder: their
    progress folders and multiprocessing's, which only a clean stop removes."""
    root = tempfile.gettempdir()
    with contextlib.suppress(OSError):
        for folder in dead_processes_folders(root, prefix, ALIVE_LOCK):
            with contextlib.suppress(OSError):
                theirs = os.readlink(os.path.join(folder, MULTIPROCESSING_LINK))
                if os.path.dirname(theirs) == root and os.path.basename(
                    theirs
                ).startswith("pymp-"):
                    shutil.rmtree(theirs, ignore_errors=True)
            shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Flight:
    """A claimed job whose extraction is under way (or, without a child, decided)."""

    item: QueueItem
    started: float
    future: Any = None
    outcome: Outcome | None = None
    progress_path: str = ""
    # The children's pool the job was sent to (one may be replaced: ``children``).
    pool: Any = None


@dataclass
class JobRunner:
    """Owns the pool of extraction children and the rules for recording outcomes."""

    queue: QueueManager
    processes: int = 2
    max_retries: int = 3
    extraction_timeout: float = 300.0
    memory_mb: int = field(default_factory=lambda: settings.QUEUE_CHILD_MEMORY_MB)
    max_tasks: int = field(default_factory=lambda: settings.QUEUE_CHILD_MAX_TASKS)
    pool: ProcessPool | None = None
    progress_dir: str = ""
    _pool_lock: threading.Lock = field(default_factory=threading.Lock)
    _alive: Any = None
    _closing: bool = False

    def start(self) -> None:
        self._closing = False
        prefix = f"{PROGRESS_PREFIX}{_host()}-"
        _remove_dead_workers_folders(prefix)
        self.progress_dir = tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-")
        self._alive = hold_alive_lock(os.path.join(self.progress_dir, ALIVE_LOCK))

    def children(self) -> ProcessPool:
        """The pool of children, started with the first job that needs one: a
        worker that only runs jobs in its own threads (tasks) never pays for a fork
        server (a tenth of a second of CPU, some 35 MB)."""
        with self._pool_lock:
            if self.pool is not None and not self.pool.active:
                # A child died where pebble could not tell whose job it ran (killed
                # while idle, by the OOM killer say, or before the pool heard it
                # took its job): the pool is broken and refuses every job for good.
                # Its jobs fail (``wait``); a new pool takes the next ones.
                logger.warning("Extraction children's pool broke; starting a new one")
                broken, self.pool = self.pool, None
                broken.stop()
                # Joined aside (its children stopped): a broken pool's own threads
                # may be stuck on a dead child's pipe, and would hold every job here.
                threading.Thread(target=broken.join, daemon=True).start()
            if self.pool is None:
                # forkserver: children start from a clean, thread-free process that
                # has only the extractors imported, never a copy of our threads and
                # DB connections.
                context = multiprocessing.get_context("forkserver")
                preload = ["jobqueue.child"]
                for kind in operations.kinds():
                    preload.extend(m for m in kind.preload if m not in preload)
                context.set_forkserver_preload(preload)
                _start_fork_server_deaf_to_ctrl_c()
                with contextlib.suppress(OSError):  # already linked: started again
                    os.symlink(
                        util.get_temp_dir(),
                        os.path.join(self.progress_dir, MULTIPROCESSING_LINK),
                    )
                self.pool = ProcessPool(
                    max_workers=self.processes,
                    max_tasks=self.max_tasks,
                    initializer=init_child,
                    initargs=(self.memory_mb, os.getpid(), self.progress_dir),
                    context=context,
                )
            return self.pool

    def close(self, *, kill: bool = False) -> None:
        self._closing = True
        with self._pool_lock:
            pool, self.pool = self.pool, None
        if pool is not None:
            pool.stop() if kill else pool.close()
            pool.join()
        if self.progress_dir:
            shutil.rmtree(self.progress_dir, ignore_errors=True)
        if self._alive is not None:
            self._alive.close()
            self._alive = None

    def begin(self, item: QueueItem) -> Flight:
        """Start a claimed job in a child (returns at once), or run it here."""
        started = time.monotonic()
        kind = operations.get(item.operation)
        if kind is None:
            return Flight(
                item,
                started,
                outcome=Outcome(
                    False,
                    error_type=ErrorType.UNSUPPORTED,
                    error_message=f"No job kind {item.operation!r} is registered.",
                ),
            )
        if kind.run is not None:
            return Flight(item, started, outcome=self._run_here(kind, item))
        try:
            kwargs = kind.prepare(item) if kind.prepare else {}
        except JobFailed as exc:
            outcome = Outcome(False, error_type=exc.error_type, error_message=str(exc))
            return Flight(item, started, outcome=outcome)
        progress_path = ""
        if kind.progress:
            progress_path = os.path.join(
                self.progress_dir, f"{item.pk}-{item.attempts}"
            )
        # No timeout here: ``wait`` stops the child once it goes the kind's timeout
        # without progress.
        pool = self.children()
        future = pool.schedule(run_job, args=(kind.child, kwargs, progress_path))
        return Flight(
            item, started, future=future, progress_path=progress_path, pool=pool
        )

    def _run_here(self, kind: operations.JobKind, item: QueueItem) -> Outcome:
        # Set by Django when a query on the queue's connection fails: tells a fault
        # of the queue's database from one of another database the job uses.
        connection.errors_occurred = False
        try:
            return Outcome(True, kind.run(item))
        except JobFailed as exc:
            # ``result``: the error behind it, for the kind's record of the attempt.
            return Outcome(
                False,
                error_type=exc.error_type,
                error_message=str(exc),
                result=exc.__cause__,
            )
        # Whatever a job raises fails it (exit(), asyncio.CancelledError, a project's
        # own BaseException): it never ends the worker thread, its job left running.
        except BaseException as exc:
            # The queue's database away: the worker waits for it, charging nothing.
            # Another database away, or a statement of the job's own that the server
            # stopped (a statement timeout, a deadlock), is the job's failure,
            # retried as any other: else it would run again for ever, uncharged.
            if is_database_away(exc) and connection.errors_occurred:
                raise
            return Outcome(
                False,
                error_type=ErrorType.UNKNOWN,
                error_message=exception_message(exc),
                result=exc,
            )

    def _timeout(self, item: QueueItem) -> float:
        kind = operations.get(item.operation)
        if kind is None or kind.timeout is None:
            return self.extraction_timeout
        return kind.timeout

    def wait(self, flight: Flight) -> Outcome:
        """The extraction's outcome (not yet recorded); JobReleased if cancelled."""
        if flight.outcome is not None:
            return flight.outcome
        try:
            status, value, message = self._result(flight)
        except CancelledError:
            self._remove_killed_childrens_files()
            raise JobReleased from None
        except TimeoutError:
            self._remove_killed_childrens_files()
            done = read_progress(flight.progress_path)
            timeout = self._timeout(flight.item)
            return Outcome(
                False,
                error_type=ErrorType.TIMEOUT,
                error_message=(
                    f"Extraction made no progress for {timeout:g} s "
                    f"after {done[0]} of {done[1]} pages and was stopped."
                    if done
                    else f"The job took longer than {timeout:g} s and was stopped."
                ),
            )
        except ProcessExpired as exc:
            self._remove_killed_childrens_files()
            return Outcome(
                False,
                error_type=ErrorType.UNKNOWN,
                error_message=f"The job's process crashed ({_ended(exc.exitcode)}); "
                "its input may be too large or malformed.",
            )
        except BrokenProcessPool:
            self._remove_killed_childrens_files()
            return Outcome(
                False,
                error_type=ErrorType.UNKNOWN,
                error_message="An extraction process died unexpectedly (killed, or "
                "out of memory) before the job's result came back.",
            )
        finally:
            for leftover in (flight.progress_path, f"{flight.progress_path}.tmp"):
                if flight.progress_path and os.path.exists(leftover):
                    os.unlink(leftover)
        if status == "ok":
            return Outcome(True, value)
        return Outcome(False, error_type=value, error_message=message)

    def _remove_killed_childrens_files(self) -> None:
        # Only after a child was killed: a child that ends as it should removes
        # its own. One still dying now is removed with the next.
        with contextlib.suppress(OSError):
            for folder in dead_processes_folders(
                self.progress_dir, CHILD_FOLDER_PREFIX
            ):
                shutil.rmtree(folder, ignore_errors=True)

    def _result(self, flight: Flight) -> tuple[str, Any, str]:
        """The child's answer. The timeout counts from the last progress the child
        reported, so a long scan gets time page by page, while one page that hangs
        is stopped after ``extraction_timeout`` seconds."""
        timeout = self._timeout(flight.item)
        deadline = flight.started + timeout
        seen = None
        while True:
            wait = min(PROGRESS_POLL, deadline - time.monotonic())
            try:
                return flight.future.result(timeout=max(wait, 0.0))
            except TimeoutError:
                # A job sent to a pool that broke since is never answered.
                pool = flight.pool
                if pool is not None and not self._closing and not pool.active:
                    raise BrokenProcessPool("the children's pool broke") from None
            progress = (
                read_progress(flight.progress_path) if flight.progress_path else None
            )
            if progress is not None and progress != seen:
                seen = progress
                deadline = time.monotonic() + timeout
                self.queue.set_progress(flight.item, *progress)
            elif time.monotonic() >= deadline:
                flight.future.cancel()  # Pebble stops the child
                raise TimeoutError

    def record(
        self,
        flight: Flight,
        outcome: Outcome,
        worker_id: str,
        *,
        claim_next: list[str] | None = None,
    ) -> Outcome:
        """Store the result, or the failure, through the queue's rules. With
        ``claim_next`` (queue names; empty for all) a success of a kind with no
        ``on_success`` writes also claims the next job with its completion
        (``QueueManager.complete_and_claim``; ``Outcome.claimed_next``, ``next_item``)."""
        item = flight.item
        elapsed_ms = int((time.monotonic() - flight.started) * 1000)
        if outcome.completed:
            try:
                outcome.recorded = self._record_success(
                    item, worker_id, outcome, elapsed_ms, claim_next
                )
            except DatabaseError as exc:
                if is_database_fault(exc):
                    raise  # the database's fault: the caller keeps the result, retries
                # The database refused the data (e.g. PostgreSQL's search vector is
                # limited to 1 MB): extracting again would give the same text.
                logger.exception("Could not store the result of job %s", item.pk)
                outcome = Outcome(
                    False, error_type=ErrorType.UNSUPPORTED, error_message=STORE_REFUSED
                )
            except Exception as exc:
                # The kind's own writes met the storage failing (full, read-only, a
                # remote storage's error): the attempt fails, retried by its rules.
                # Raised, the job was released uncharged and run again at once, for
                # ever.
                logger.warning("Could not store the result of job %s: %s", item.pk, exc)
                if isinstance(exc, OSError):
                    message = STORE_FAILED.format(error=exc.strerror or exc)
                    message += STORAGE_HINT
                else:
                    message = STORE_FAILED.format(error=exception_message(exc))
                outcome = Outcome(
                    False, error_type=ErrorType.UNKNOWN, error_message=message
                )
        if not outcome.completed:
            try:
                self._record_failure(item, worker_id, outcome, elapsed_ms)
            except DatabaseError as exc:
                if is_database_fault(exc):
                    raise
                # The database refused the failure's own writes (a kind's
                # ``on_failure``, a value out of range): left processing, the job
                # would be released and run again for ever. Ended, plainly.
                logger.exception("Could not record the failure of job %s", item.pk)
                outcome = Outcome(
                    False,
                    error_type=ErrorType.UNKNOWN,
                    error_message=FAILURE_REFUSED.format(
                        error=outcome.error_message.strip()[:500]
                    ),
                )
                self._record_failure(
                    item, worker_id, outcome, elapsed_ms, max_retries=0
                )
        return outcome

    def _record_failure(
        self,
        item: QueueItem,
        worker_id: str,
        outcome: Outcome,
        elapsed_ms: int,
        *,
        max_retries: int | None = None,
    ) -> None:
        """Record a failed attempt through the retry rules, with the kind's
        ``on_failure`` writes in the same transaction; ``max_retries=0`` ends it
        for good, without them."""
        kind = operations.get(item.operation)
        allowed = operations.retries_allowed(item.operation, self.max_retries)
        if max_retries is not None:
            allowed, kind = max_retries, None
        with transaction.atomic():
            outcome.recorded = self.queue.failed(
                item.pk,
                outcome.error_message,
                outcome.error_type,
                max_retries=allowed,
                worker_id=worker_id,
                attempt=item.attempts,
                extraction_time_ms=elapsed_ms,
            )
            outcome.retry_in = retry.retry_delay(
                retry.normalise_error_type(outcome.error_type), item.attempts, allowed
            )
            if outcome.recorded and kind is not None and kind.on_failure:
                kind.on_failure(item, outcome)

    def claims_with_record(self, item: QueueItem, outcome: Outcome) -> bool:
        """Whether ``record`` with ``claim_next`` claims in the completion's own
        transaction: a success of a kind with no ``on_success`` writes."""
        return outcome.completed and not operations.get(item.operation).on_success

    def _record_success(
        self,
        item: QueueItem,
        worker_id: str,
        outcome: Outcome,
        elapsed_ms: int,
        claim_next: list[str] | None,
    ) -> bool:
        kind = operations.get(item.operation)
        value = outcome.result
        figures = kind.metrics(value) if kind.metrics else {}
        result = kind.result(value) if kind.result else None
        if claim_next is not None and self.claims_with_record(item, outcome):
            done, outcome.next_item = self.queue.complete_and_claim(
                item.pk,
                elapsed_ms,
                worker_id=worker_id,
                attempt=item.attempts,
                subject_id=item.document_id,
                queues=claim_next,
                result=result,
                **figures,
            )
            outcome.claimed_next = True
            return done
        # The kind's own writes commit with the completion, or not at all.
        with transaction.atomic() if kind.on_success else contextlib.nullcontext():
            done = self.queue.complete(
                item.pk,
                extraction_time_ms=elapsed_ms,
                worker_id=worker_id,
                attempt=item.attempts,
                result=result,
                **figures,
            )
            if done and kind.on_success:
                kind.on_success(item, value)
        return done
