"""The worker pool of the guide: threads that claim jobs, children that extract."""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import select
import signal
import socket
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import F
from django.utils.translation import ngettext

from jobqueue import operations, retry, sql
from jobqueue.faults import (
    Backoff,
    drop_connection,
    is_database_fault,
    is_timed_out,
)
from jobqueue.models import (
    ErrorType,
    QueueControl,
    QueueItem,
    Status,
    WorkerHeartbeat,
    stale_after,
    stale_job_after,
)
from jobqueue.runner import Flight, JobReleased, JobRunner, Outcome
from jobqueue.services import QueueManager
from jobqueue.sql import DbNow
from jobqueue.wakeup import Flag, Wakeup, empty_pipe, signals_wake

logger = logging.getLogger(__name__)

EVENTS = ("job_started", "job_completed", "job_failed", "job_refused")
ERROR_PAUSE_SECONDS = 1.0
# Stores of one result the database's timeouts stop before its attempt fails
# instead.
STORE_TIMEOUTS = 5
STORE_TIMED_OUT = (
    "The result was produced, but the database stopped its store each time it was "
    "tried: the write takes longer than the timeouts of the workers' database user "
    "allow (statement_timeout, idle_in_transaction_session_timeout). Raise them, or "
    "make results smaller."
)
# How often a worker does the queue's housekeeping (expired items, vacuum).
HOUSEKEEPING_SECONDS = 60.0
# While the database's wake-up signal is watched, an idle thread looks for work at
# least this often (and when a delayed job falls due), not every poll interval:
# work that arrives by the queue's API wakes it at once.
IDLE_LOOK_SECONDS = 5.0
# While a drain runs, its caller's thread (the main thread of ``process_queue
# --once``) looks up this often, so that Python runs a signal's handler (a SIGTERM's
# stop) within this time: see ``_join_heeding_signals``.
SIGNAL_LOOK_SECONDS = 0.2


@dataclass
class _ThreadState:
    """What one worker thread is doing, as its heartbeat reports it."""

    worker_id: str
    status: str = WorkerHeartbeat.State.IDLE
    current_job: int | None = None
    jobs_completed: int = 0
    jobs_failed: int = 0
    jobs_refused: int = 0
    # Given back to the queue uncharged (a stop, the end of a drain's budget).
    jobs_released: int = 0
    # The jobs this thread holds (running, or prefetched), by id: its books.
    held: dict[int, Flight] = field(default_factory=dict)
    # Set after a database error: a claim may have landed that the thread never saw.
    reconcile: bool = False
    # While idle, another thread may claim for this one (``reserved`` while it does)
    # and hand it the job it found; ``woken`` wakes it for that, or for a commit.
    reserved: bool = False
    handed: QueueItem | None = None
    woken: threading.Event = field(default_factory=threading.Event)
    # The wake-up generation before this thread's last claim: a later one may be work
    # that claim could not see.
    looked_at: int = 0
    # Starting a job: a kind that runs in the thread (a task) runs in this step.
    beginning: bool = False
    # Running a task in this thread (``current_job``), which no stop can end.
    running_task: bool = False


@dataclass
class _Drain:
    """The bounds of a drain (``ExtractionWorker.drain``): at most ``limit`` jobs, and
    none started unless the time left exceeds the drain's average job."""

    limit: int | None
    deadline: float | None
    started: float = field(default_factory=time.monotonic)
    taken: int = 0
    cut: bool = False  # stopped at the deadline, jobs still running
    # Guards ``taken``: threads reserve each claim in it, so together they never
    # exceed the limit.
    lock: threading.Lock = field(default_factory=threading.Lock)

    def may_take(self, finished: int) -> bool:
        if self.limit is not None and self.taken >= self.limit:
            return False
        if self.deadline is None:
            return True
        now = time.monotonic()
        return self.deadline - now >= (now - self.started) / max(finished, 1)

    def expired(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def outgrown(self, job_started: float) -> bool:
        """A job cut at the deadline after half the budget or more: it does not fit
        the budget (one begun late was merely unlucky)."""
        if not self.cut or self.deadline is None:
            return False
        return job_started - self.started <= (self.deadline - self.started) / 2


def job_fields(event: str, item: QueueItem, worker_id: str) -> dict[str, Any]:
    """A job event's fields, for structured logs (LOG_FORMAT=json)."""
    return {
        "event": event,
        "job_id": item.pk,
        "document_id": item.document_id,
        "operation": item.operation,
        "attempt": item.attempts,
        "worker_id": worker_id,
    }


def log_started(item: QueueItem, worker_id: str) -> None:
    """One log record per job start (pool and --once alike)."""
    if logger.isEnabledFor(logging.INFO):  # its fields are not free, per job
        fields = job_fields("job_started", item, worker_id)
        logger.info(
            "[%s] started job %s (%s)", worker_id, item.pk, item.operation, extra=fields
        )


def log_outcome(item: QueueItem, worker_id: str, outcome: Outcome) -> None:
    """One log record per job end: completed, or failed with its error type."""
    if outcome.completed:
        if logger.isEnabledFor(logging.INFO):
            fields = job_fields("job_completed", item, worker_id)
            logger.info("[%s] completed job %s", worker_id, item.pk, extra=fields)
        return
    fields = {
        **job_fields("job_failed", item, worker_id),
        "error_type": outcome.error_type,
        "retry_in_seconds": outcome.retry_in,
    }
    # A retried attempt and the end of the job read apart: a document that fails
    # every time is one line "for good", not four alike.
    if outcome.retry_in is None:
        attempts = ngettext("%d attempt", "%d attempts", item.attempts) % item.attempts
        what = f"failed for good ({outcome.error_type}) after {attempts}"
    else:
        what = (
            f"failed ({outcome.error_type}) at attempt {item.attempts}; trying again "
            f"in {outcome.retry_in:g} s"
        )
    logger.warning(
        "[%s] job %s %s: %s",
        worker_id,
        item.pk,
        what,
        outcome.error_message,
        extra=fields,
    )


class ExtractionWorker:
    """A pool of ``num_workers`` threads claiming jobs from the database queue: run
    until stopped (``start``/``stop``), or drain what is due now (``drain``: cron).

    A database error never loses a job: a thread keeps the results it holds and
    records them once the database is back (pausing with a growing backoff, never
    exiting, never spinning), then releases any claim it did not see land. Rescue of
    other workers' lost jobs runs in every worker, only after this worker has itself
    reached the database steadily for the stale threshold, so that an outage all
    workers shared is not taken for their deaths.
    """

    def __init__(
        self,
        db: Any = None,
        num_workers: int = 2,
        max_retries: int = 3,
        extraction_timeout: float = 300,
        heartbeat_interval: float = 10,
        poll_interval: float = 1.0,
        *,
        stale_worker_seconds: float | None = None,
        stale_job_minutes: float | None = None,
        queues: list[str] | None = None,
        name: str = "",
    ) -> None:
        # ``db`` is the guide's database handle; here it is Django's configured database.
        if num_workers < 1:
            # A pool of none would start its heartbeat and wake-up threads, then fail.
            raise ValueError(f"num_workers must be 1 or more, not {num_workers}.")
        if not 0 <= max_retries <= retry.MAX_RETRIES:
            raise ValueError(
                f"max_retries must be 0 to {retry.MAX_RETRIES}, not {max_retries}."
            )
        self.num_workers = num_workers
        # Named queues this worker takes jobs from (None: all).
        self.queues = queues
        self.max_retries = max_retries
        self.extraction_timeout = extraction_timeout
        self.heartbeat_interval = heartbeat_interval
        self.poll_interval = poll_interval
        self.stale_worker_seconds = stale_worker_seconds or stale_after(
            heartbeat_interval
        )
        self.stale_job_minutes = stale_job_after(extraction_timeout, stale_job_minutes)
        self.queue = QueueManager()
        self.runner = JobRunner(
            self.queue,
            processes=num_workers,
            max_retries=max_retries,
            extraction_timeout=extraction_timeout,
        )
        # ``name``: what the heartbeats' ids start with, e.g. cron.
        self._name = name
        self._states = [_ThreadState(worker_id) for worker_id in self._worker_ids()]
        self._registered = False  # the heartbeats' rows are this worker's
        self._joined = False  # this start reached the database (``_join``)
        self._callbacks: dict[str, list[Callable]] = defaultdict(list)
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        # The heartbeat thread's own stop: set once the work threads have ended, so
        # that jobs finishing under a graceful stop stay covered (else, near the
        # stale threshold, another worker would rescue them and run them again).
        self._stop_beating = threading.Event()
        self._abort = threading.Event()  # the stop timeout passed: give up on the DB
        self._paused = threading.Event()
        self._db_paused = False
        self._wakeup = Wakeup()
        self._started_at: float | None = None
        self._stopped_at: float | None = None
        self._last_beat = 0.0
        self._healthy_since = 0.0
        self._last_housekeeping = 0.0
        self._last_look = 0.0  # the pause switch's last reading
        self._outage_since: float | None = None  # heartbeats failing since then
        self._stopped = Flag()
        self._finish_lock = threading.Lock()
        self._drain: _Drain | None = None
        # The signal that stopped this worker (``register_signal_handlers``), so
        # that ``process_queue --once`` tells an interrupted drain from a finished one.
        self.stopped_by: signal.Signals | None = None
        # The threads waiting for work: one claim serves them all (``_claim``).
        self._idle: list[_ThreadState] = []
        self._idle_lock = threading.Lock()
        # Signalled when a claim for other threads is over (``reserved`` cleared).
        self._claimed_for = threading.Condition(self._idle_lock)
        # ((wake-up generation, jobs finished), monotonic time the next delayed job
        # is due or None): ``_idle_wait``'s last look.
        self._next_due: tuple[tuple[int, int], float | None] | None = None

    # --- Lifecycle -------------------------------------------------------------

    def start(self) -> None:
        """Start the children, the worker threads and the heartbeat."""
        if self.is_running():
            return
        self._stop.clear()
        self._stop_beating.clear()
        self._abort.clear()
        self._stopped.clear()
        for state in self._states:  # started again after stop(): no longer stopped
            state.status = WorkerHeartbeat.State.IDLE
            # Counted from this start, as the uptime and the heartbeat rows'
            # started_at are: else a restart's throughput is the last run's jobs
            # over its first seconds.
            state.jobs_completed = state.jobs_failed = state.jobs_refused = 0
            state.jobs_released = 0
        self._started_at, self._stopped_at = time.monotonic(), None
        self.runner.start()
        self._joined = self._join()
        if not self._joined:
            logger.info("Stopped before the database answered")
            return
        if self._drain is None:
            self._wakeup.start()
            atexit.register(self._run_on_at_exit)
        # A drain's threads end when nothing is due, so no wake-up is watched (its
        # stop would hold up the end of the run); what a killed run (or a dead
        # worker) left is rescued first: with no pool running, nobody else would.
        else:
            if not self.is_paused():
                self._wait_for_silent_workers()
                self._rescue()
            # A cron run may end before its first beat: the housekeeping, which a
            # pool does from its beats, would never run where cron drives the queue.
            self._housekeeping()
        self._threads = [
            threading.Thread(
                target=self._work, args=(state,), name=state.worker_id, daemon=True
            )
            for state in self._states
        ]
        self._threads.append(
            threading.Thread(target=self._heartbeat_loop, name="heartbeat", daemon=True)
        )
        for thread in self._threads:
            thread.start()
        logger.info(
            "Started %d worker%s (%s)",
            self.num_workers,
            "" if self.num_workers == 1 else "s",
            self._states[0].worker_id[:-3],
        )

    def stop(self, timeout: float = 60.0) -> bool:
        """Let current jobs finish for up to ``timeout`` s, release the rest, mark
        heartbeats stopped. True if every job finished in time.

        Called from one of the pool's own threads (an event callback), it cannot
        wait for that thread's job: the stop goes on in a thread of its own, as it
        would from here, and this returns False at once (nothing is stopped yet);
        ``wait_stopped`` waits for its end."""
        self._stop.set()
        self._wakeup.notify()
        if threading.current_thread() in self._threads:
            # Joining itself would raise, half-way: heartbeats left busy, children
            # running, and a script's end (``_run_on_at_exit``) waiting for ever.
            threading.Thread(
                target=self.stop, args=(timeout,), name="stop", daemon=True
            ).start()
            return False
        deadline = time.monotonic() + timeout
        working = [t for t in self._threads if t.name != "heartbeat"]
        for thread in working:
            thread.join(max(0.0, deadline - time.monotonic()))
        clean = not any(t.is_alive() for t in working)
        # A thread running a task in itself: no stop ends it, so it is not waited
        # for again (its job is released below, and the process's exit cuts it short).
        running_tasks = {s.worker_id for s in self._states if s.running_task}
        endless = {thread for thread in working if thread.name in running_tasks}
        if not clean:
            # Cancelling a future kills its child; the thread then releases its job.
            self._abort.set()
            for state in self._states:
                for flight in list(state.held.values()):
                    if flight.future is not None:
                        flight.future.cancel()
            for thread in working:
                if thread not in endless:
                    thread.join(5)
        self._stop_beating.set()
        self._wakeup.notify()
        for thread in self._threads:
            if thread not in endless:
                thread.join(5)
        with self._finish_lock:
            if not self._stopped.is_set():
                self._finish(clean)
        return clean

    def _finish(self, clean: bool) -> None:
        atexit.unregister(self._run_on_at_exit)
        self._stopped_at = time.monotonic()  # the uptime (get_status) ends here
        # Stopped while waiting for the database at start: no job was taken, and
        # there is no heartbeat to mark.
        joined = self._joined
        try:
            if joined:
                self._release_leftovers()
        except DatabaseError:
            # Left processing under heartbeats that stop now: rescue will come.
            logger.exception("Could not release jobs at stop; they will be rescued")
        self._wakeup.stop()
        self.runner.close(kill=not clean)
        for state in self._states:
            state.status, state.current_job = WorkerHeartbeat.State.STOPPED, None
        try:
            if joined:
                self._beat(force=True)
        except DatabaseError:
            logger.exception("Could not mark the heartbeats stopped")
        drop_connection()
        # Said before the flag: a script's main thread waiting for it (the signal
        # handlers' stop runs in a thread of its own) exits the moment it is set.
        logger.info("Workers stopped (%s)", "clean" if clean else "jobs released")
        self._stopped.set()

    def drain(
        self,
        limit: int | None = None,
        *,
        time_budget: float | None = None,
        on_progress: Callable[[int], object] | None = None,
    ) -> dict[str, int]:
        """Process what is due now, then stop; returns the counts (the loop's cron
        mode: ``process_queue --once`` and the cron endpoint).

        At most ``limit`` jobs. With ``time_budget`` (seconds) a job is started only
        while the time left exceeds the average job of this run, and one still
        running at the deadline is stopped, so a request ends before a proxy's
        timeout: charged as a timeout when it had half the budget or more
        (``_give_back``), released uncharged otherwise. A run killed anyway leaves its jobs
        under heartbeats that stop: the next run, or any worker, rescues them; its
        children die with it (``init_child``).
        """
        if QueueControl.is_paused():
            return {"processed": 0, "completed": 0, "failed": 0}
        deadline = time.monotonic() + time_budget if time_budget else None
        self._drain = _Drain(limit, deadline)
        if on_progress is not None:
            for event in ("job_completed", "job_failed"):
                self.on(event, lambda *_: on_progress(1))
        clean = False
        try:
            self.start()
            # The threads end by themselves once nothing more may be taken.
            for thread in self._threads:
                if thread.name != "heartbeat":
                    _join_heeding_signals(thread, deadline)
            clean = not any(
                t.is_alive() for t in self._threads if t.name != "heartbeat"
            )
        finally:
            if not clean:
                self._wait_for_jobs_in_threads()
                self._drain.cut = True
            # Past the deadline: what is still running is stopped and released.
            self.stop(timeout=5.0 if clean else 0.0)
        completed = sum(s.jobs_completed for s in self._states)
        failed = sum(s.jobs_failed for s in self._states)
        return {
            "processed": completed + failed,
            "completed": completed,
            "failed": failed,
        }

    def _wait_for_jobs_in_threads(self) -> None:
        """Join the threads running a job in themselves (a task): it cannot be
        stopped, and released while it runs it would be run again beside itself (or,
        the run's process ending, cut short on every run). Such a run overruns its
        budget; a thread in the database is left to ``stop``."""
        running = {
            state.worker_id
            for state in self._states
            if state.beginning
            or any(flight.future is None for flight in list(state.held.values()))
        }
        for thread in self._threads:
            if thread.name in running:
                thread.join()

    def _run_on_at_exit(self) -> None:
        """The script that started the pool has ended without stopping it: the pool
        goes on until stopped (``register_signal_handlers``, as in the guide), or until
        Ctrl+C, which stops it gracefully. Its threads are daemons only so that a
        thread stuck in the database cannot keep a stopped worker's process alive."""
        logger.info("The workers go on until stopped (SIGTERM, or Ctrl+C)")
        try:
            self.wait_stopped()
        except KeyboardInterrupt:
            self.stop()

    def wait_stopped(self, timeout: float | None = None) -> bool:
        """Block until a stop (perhaps begun by a signal handler) has completed;
        False if ``timeout`` seconds pass first. Python runs signal handlers in the
        main thread only, and a signal the kernel hands to another thread does not
        wake it: there it sleeps in ``select()`` on the signals' wake-up fd too
        (else in half-second slices), so that an idle pool wakes for nothing."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with signals_wake() as signalled:
            while not self._stopped.is_set():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                if signalled is None:
                    self._stopped.wait(0.5 if left is None else min(left, 0.5))
                else:
                    select.select([self._stopped, signalled], [], [], left)
                    empty_pipe(signalled)
        return True

    def pause(self) -> None:
        """Finish current jobs, claim no new ones until ``resume``."""
        self._paused.set()

    def resume(self) -> None:
        """Take jobs again after ``pause``. An operator's pause of all processing
        (the queue dashboard, ``pause_queue``) is not this worker's to lift: it
        holds, and the log says where to lift it."""
        self._paused.clear()
        try:
            held = QueueControl.is_paused()
        except DatabaseError:  # the heartbeat reads the switch again
            held = False
        if held:
            logger.warning(
                "Processing stays paused: an operator paused it for every worker. "
                "Resume it on the queue dashboard or with manage.py resume_queue."
            )
        self._wakeup.notify()

    def is_running(self) -> bool:
        return any(t.is_alive() for t in self._threads) and not self._stop.is_set()

    def is_paused(self) -> bool:
        return self._paused.is_set() or self._db_paused

    def jobs_released(self) -> int:
        """Jobs given back to the queue uncharged since the last start."""
        return sum(s.jobs_released for s in self._states)

    # --- Work --------------------------------------------------------------------

    def enqueue(self, attachment_id: int, priority: int = 0) -> int | None:
        return self.queue.enqueue(attachment_id, priority)

    def enqueue_batch(self, attachment_ids: list[int], priority: int = 0) -> list[int]:
        return self.queue.enqueue_batch(attachment_ids, priority)

    def on(self, event: str, callback: Callable) -> None:
        """Call ``callback`` on ``job_started``, ``job_completed``, ``job_failed`` or
        ``job_refused`` (a late result refused: the job was rescued or deleted
        meanwhile)."""
        if event not in EVENTS:
            raise ValueError(
                f"Unknown event {event!r}; choose from {', '.join(EVENTS)}."
            )
        self._callbacks[event].append(callback)

    def _emit(self, event: str, item: QueueItem, *args: Any) -> None:
        kind = operations.get(item.operation)
        if kind is not None and not kind.callbacks:
            return
        for callback in self._callbacks[event]:
            try:
                callback(item, *args)
            except Exception:
                logger.exception("A %s callback failed; carrying on", event)

    def _work(self, state: _ThreadState) -> None:
        backoff = Backoff()
        # An outage is said once per thread, not at each try (every 2 s): the
        # heartbeat says when the database is back.
        reported = False
        try:
            while not self._stop.is_set():
                try:
                    if state.reconcile:
                        self._reconcile(state)
                    if not self._work_once(state) and self._drain is not None:
                        return  # nothing more to take: this thread's drain is done
                    backoff.reset()
                    reported = False
                except Exception as exc:
                    # The worker outlives any failure; what it held is released by
                    # the reconcile pass once the database answers again.
                    self._forget(state)
                    if is_database_fault(exc):
                        pause = backoff.next()
                        (logger.debug if reported else logger.warning)(
                            "[%s] database unavailable (%s); trying again every "
                            "%.1f s at most",
                            state.worker_id,
                            _describe(exc),
                            backoff.cap,
                        )
                        reported = True
                    else:
                        pause = ERROR_PAUSE_SECONDS
                        logger.exception(
                            "Worker %s hit an error; pausing briefly", state.worker_id
                        )
                    drop_connection()
                    self._stop.wait(pause)
        finally:
            drop_connection()

    def _work_once(self, state: _ThreadState) -> bool:
        """Claim and run jobs; False (after waiting) when there was none."""
        state.woken.clear()
        state.looked_at = self._wakeup.generation
        # A job claimed for this thread by another is taken even if paused since.
        paused = self.is_paused() and state.handed is None
        flight = None if paused else self._claim(state)
        if flight is None:
            # Said before the wait, which may last seconds.
            state.current_job = None
            state.status = (
                WorkerHeartbeat.State.PAUSED
                if self.is_paused()
                else WorkerHeartbeat.State.IDLE
            )
            if self._drain is None:
                with self._idle_lock:
                    if not state.reserved and state not in self._idle:
                        self._idle.append(state)
                # Asking the database how long to sleep is wasted if already woken.
                if self._wakeup.generation == state.looked_at and state.handed is None:
                    self._wakeup.wait(state.looked_at, self._idle_wait(), state.woken)
            return False
        while flight is not None:
            try:
                outcome = self.runner.wait(flight)
            except JobReleased:
                self._give_back(state, flight)
                return True
            if flight.future is None:
                flight = self._conclude_and_claim(state, flight, outcome)
                continue
            # Take the next job before storing this one's text, so the child
            # extracts while this thread writes: storing and indexing are not free.
            upcoming = self._prefetch(state, flight)
            self._conclude(state, flight, outcome)
            flight = upcoming
        return True

    def _idle_wait(self) -> float:
        """How long an idle thread sleeps unless woken: the poll interval, or with
        the wake-up signal watched, until the next delayed job is due (at most
        ``IDLE_LOOK_SECONDS``)."""
        if not self._wakeup.watching:
            return self.poll_interval
        # The next due time changes only with a commit (a new generation) or with
        # a job this worker finished (a retry it scheduled): one look serves all
        # the threads that go idle in between.
        key = (self._wakeup.generation, self._finished())
        looked = self._next_due
        if looked is None or looked[0] != key:
            due = self.queue.seconds_until_due(self.queues)
            looked = (key, None if due is None else time.monotonic() + due)
            self._next_due = looked
        if looked[1] is None:
            return IDLE_LOOK_SECONDS
        due = looked[1] - time.monotonic()
        # Due already, yet not claimed (another claimer has it): look again soon.
        return self.poll_interval if due <= 0 else min(due, IDLE_LOOK_SECONDS)

    def _claim(self, state: _ThreadState) -> Flight | None:
        if self._drain is None:
            return self._claim_for_idle(state)
        if not self._reserve_in_drain():
            return None
        try:
            flight = self._start_next(state)
        except BaseException:
            self._unreserve_in_drain()
            raise
        if flight is None:
            self._unreserve_in_drain()
        return flight

    def _claim_for_idle(self, state: _ThreadState) -> Flight | None:
        """Claim for this thread and, in the same statement, for the threads that
        wait idle: a burst of work wakes one of them, and its one claim serves all
        (bounded by the idle threads, so no job waits on a busy one). A thread being
        claimed for waits for that claim and takes what it found."""
        with self._idle_lock:
            claimed_for = state.reserved
            self._claimed_for.wait_for(lambda: not state.reserved)
            item, state.handed = state.handed, None
            handed = claimed_for or item is not None
            if not handed:
                if state in self._idle:
                    self._idle.remove(state)
                # Not for a thread yet to reconcile: that would release the claim.
                others = [other for other in self._idle if not other.reconcile]
                self._idle = [other for other in self._idle if other.reconcile]
                for other in others:
                    other.reserved = True
        if handed:
            # Begun outside the lock: a job run in this thread (a task) would hold
            # it while it ran, and every other thread's claim would wait for it.
            return None if item is None else self._begin(state, item)
        state.looked_at = self._wakeup.generation
        if not others:
            return self._start_next(state)
        items: dict[str, QueueItem] = {}
        failed = True
        try:
            claimed = self.queue.claim_batch(
                [state.worker_id] + [other.worker_id for other in others], self.queues
            )
            items, failed = {item.claimed_by: item for item in claimed}, False
        except BaseException:
            for held_by in (state, *others):
                held_by.reconcile = True  # the claims may have landed unseen
            raise
        finally:
            with self._idle_lock:
                for other in others:
                    other.reserved, other.looked_at = False, state.looked_at
                    other.handed = items.get(other.worker_id)
                    if other.handed is not None or failed:
                        other.woken.set()  # to run it, or to reconcile
                    else:
                        # Found nothing: still idle, asleep, claimed for next time.
                        self._idle.append(other)
                self._claimed_for.notify_all()
        item = items.get(state.worker_id)
        return None if item is None else self._begin(state, item)

    def _reserve_in_drain(self, in_hand: int = 0) -> bool:
        """Count a claim about to be made in the drain's ``taken``; False, and not
        counted, if the drain may take no more. ``in_hand``: jobs that will be
        finished when it is made (a claim made with a result). True outside a drain."""
        drain = self._drain
        if drain is None:
            return True
        with drain.lock:
            if not drain.may_take(self._finished() + in_hand):
                return False
            drain.taken += 1
            return True

    def _unreserve_in_drain(self) -> None:
        """A reserved claim took nothing, or failed."""
        drain = self._drain
        if drain is not None:
            with drain.lock:
                drain.taken -= 1

    def _finished(self) -> int:
        return sum(s.jobs_completed + s.jobs_failed for s in self._states)

    def _start_next(self, state: _ThreadState) -> Flight | None:
        try:
            item = self.queue.claim(state.worker_id, self.queues)
        except BaseException:
            state.reconcile = True  # the claim may have landed unseen
            raise
        return None if item is None else self._begin(state, item)

    def _begin(self, state: _ThreadState, item: QueueItem) -> Flight:
        """Start (or, for a kind that runs in the thread, run) a claimed job."""
        state.status, state.current_job = WorkerHeartbeat.State.BUSY, item.pk
        kind = operations.get(item.operation)
        # A kind that runs in the thread (a task) has run by the time ``begin``
        # returns: its start is said first. A child's, once the child has it.
        in_thread = kind is not None and kind.run is not None
        state.beginning, state.running_task = True, in_thread
        try:
            if in_thread:
                self._started(state, item)
            flight = self.runner.begin(item)
        except BaseException:
            state.reconcile = True  # the job did not start: the reconcile releases it
            raise
        finally:
            state.beginning = state.running_task = False
        state.held[item.pk] = flight
        if self._abort.is_set() and flight.future is not None:
            # Begun after a stop cancelled what was held (a slow first start of
            # the children): this one too, so that it is released, not cut.
            flight.future.cancel()
        if not in_thread:
            self._started(state, item)
        return flight

    def _started(self, state: _ThreadState, item: QueueItem) -> None:
        log_started(item, state.worker_id)
        self._emit("job_started", item, state.worker_id)

    def _prefetch(self, state: _ThreadState, flight: Flight) -> Flight | None:
        """The next job, started now; only behind a real extraction and while running."""
        if flight.future is None or self._stop.is_set() or self.is_paused():
            return None
        try:
            return self._claim(state)
        except Exception as exc:
            # Finish the job in hand first; the failed claim is reconciled after.
            logger.warning(
                "[%s] could not take the next job (%s)", state.worker_id, _describe(exc)
            )
            drop_connection()
            return None

    def _conclude_and_claim(
        self, state: _ThreadState, flight: Flight, outcome: Outcome
    ) -> Flight | None:
        """Record a job that ran in this thread and claim the next with it: one
        commit per job, where a short job's cost is mostly commits (on PostgreSQL
        one statement, on SQLite one transaction). A stopping or paused worker, and
        a drain that may take no more, take the separate path."""
        if (
            self._stop.is_set()
            or self.is_paused()
            or not self._reserve_in_drain(in_hand=1)
        ):
            self._conclude(state, flight, outcome)
            return None
        joint = self.runner.claims_with_record(flight.item, outcome)
        try:
            # One transaction: the completion's own where it claims too, else one
            # around the record (the kind's own writes) and the claim.
            with contextlib.nullcontext() if joint else sql.dialect().atomic():
                recorded = self.runner.record(
                    flight, outcome, state.worker_id, claim_next=self.queues or []
                )
                item = (
                    recorded.next_item
                    if recorded.claimed_next
                    else self.queue.claim(state.worker_id, self.queues)
                )
        except Exception as exc:
            # Rolled back, or after a database fault perhaps committed unseen: the
            # separate path records it either way, the reconcile pass releases a
            # claim that landed.
            self._unreserve_in_drain()
            fault = exc if is_database_fault(exc) else None
            if fault is not None:
                state.reconcile = True
                drop_connection()
            self._conclude(state, flight, outcome, fault=fault)
            return None
        if item is None:
            self._unreserve_in_drain()
        self._report(state, flight, recorded)
        return None if item is None else self._begin(state, item)

    def _conclude(
        self,
        state: _ThreadState,
        flight: Flight,
        outcome: Outcome,
        *,
        fault: Exception | None = None,
    ) -> None:
        """Record the outcome, waiting out database faults: the result is kept and
        stored once the database is back, no attempt charged for its absence.
        ``fault``: the database fault an earlier try met (it may have landed unseen)."""
        item = flight.item
        backoff, faults = Backoff(), int(fault is not None)
        # A store the server stops each time (a statement_timeout shorter than the
        # write of a large result) is not stored by trying again for ever:
        # after a few the attempt fails, retried by the job's rules.
        timeouts = int(fault is not None and is_timed_out(fault))
        if fault is not None:
            _warn_unrecorded(state.worker_id, item.pk, fault)
        while True:
            try:
                recorded = self.runner.record(flight, outcome, state.worker_id)
                if not recorded.recorded and faults:
                    # A write that landed before the connection broke counts.
                    status = self.queue.holds(item.pk, state.worker_id, item.attempts)
                    recorded.recorded = status not in (None, Status.PROCESSING)
                break
            except Exception as exc:
                if not is_database_fault(exc) or self._abort.is_set():
                    raise
                faults += 1
                timeouts += is_timed_out(exc)
                if outcome.completed and timeouts >= STORE_TIMEOUTS:
                    logger.error(
                        "[%s] job %s: the database stopped the store of its result "
                        "%d times (its timeouts); failing the attempt",
                        state.worker_id,
                        item.pk,
                        timeouts,
                    )
                    outcome = Outcome(
                        False,
                        error_type=ErrorType.TIMEOUT,
                        error_message=STORE_TIMED_OUT,
                    )
                pause = backoff.next()
                if faults == 1:
                    _warn_unrecorded(state.worker_id, item.pk, exc)
                drop_connection()
                self._abort.wait(pause)
        self._report(state, flight, recorded)

    def _report(self, state: _ThreadState, flight: Flight, recorded: Outcome) -> None:
        """Count, log and announce an outcome once it is stored (or refused)."""
        item = flight.item
        state.held.pop(item.pk, None)
        if not recorded.recorded:
            self._refused(state, flight)
            return
        log_outcome(item, state.worker_id, recorded)
        if recorded.completed:
            state.jobs_completed += 1
            self._emit("job_completed", item, recorded.result)
        else:
            state.jobs_failed += 1
            self._emit("job_failed", item, recorded.error_message)

    def _give_back(self, state: _ThreadState, flight: Flight) -> None:
        """A cancelled extraction: release the job, if it is still this worker's. One
        that had most of a drain's budget and still did not finish is charged as a
        timeout instead: released uncharged it would come first again in every run,
        spend every budget and starve the jobs behind it."""
        item = flight.item
        state.held.pop(item.pk, None)
        drain = self._drain
        try:
            if drain is not None and drain.outgrown(flight.started):
                budget = drain.deadline - drain.started
                message = (
                    f"Stopped at the end of a cron run's {budget:g} s budget "
                    "(CRON_BUDGET_SECONDS, --budget): a job this long needs a "
                    "worker (manage.py process_queue) or a larger budget."
                )
                kept = self.queue.failed(
                    item.pk,
                    message,
                    ErrorType.TIMEOUT,
                    self.max_retries,
                    worker_id=state.worker_id,
                    attempt=item.attempts,
                    extraction_time_ms=int((time.monotonic() - flight.started) * 1000),
                )
                if kept:
                    state.jobs_failed += 1
                    failure = Outcome(False, None, ErrorType.TIMEOUT, message)
                    failure.retry_in = retry.retry_delay(
                        ErrorType.TIMEOUT, item.attempts, self.max_retries
                    )
                    log_outcome(item, state.worker_id, failure)
                    self._emit("job_failed", item, message)
            else:
                kept = self.queue.release(
                    item.pk, worker_id=state.worker_id, attempt=item.attempts
                )
                if kept:
                    state.jobs_released += 1
                    logger.info("[%s] released job %s", state.worker_id, item.pk)
        except DatabaseError:
            state.reconcile = True
            raise
        if not kept:
            self._refused(state, flight)

    def _refused(self, state: _ThreadState, flight: Flight) -> None:
        """The job was taken from this worker (rescued while it stalled, or deleted
        with its document): its result is not recorded, and counted as refused. One
        an operator stopped is over."""
        item = flight.item
        deleted = False
        try:
            claim = self.queue.claims([item.pk]).get(item.pk)
            deleted = claim is None
            if claim == (Status.CANCELLED, state.worker_id, item.attempts):
                logger.info(
                    "[%s] job %s stopped by an operator", state.worker_id, item.pk
                )
                return
            # A deleted job leaves no row to log the refusal against.
            if not deleted:
                self.queue.record_refused(item, state.worker_id)
        except DatabaseError:
            logger.warning("Could not log the refused result of job %s", item.pk)
        state.jobs_refused += 1
        logger.warning(
            "[%s] job %s was %s meanwhile; its result is refused",
            state.worker_id,
            item.pk,
            "deleted" if deleted else "rescued from this worker",
        )
        self._emit("job_refused", item, state.worker_id)

    def _forget(self, state: _ThreadState) -> None:
        """Drop every job in hand after an error: children stopped, the jobs
        released by the reconcile pass (no attempt charged)."""
        for flight in state.held.values():
            if flight.future is not None:
                flight.future.cancel()
        if state.held:
            state.held.clear()
            state.reconcile = True
        state.current_job = None

    def _reconcile(self, state: _ThreadState) -> None:
        """Release the claims of this thread that it does not hold (the database's
        truth wins over the thread's books after an error)."""
        lost = QueueItem.objects.filter(
            status=Status.PROCESSING, claimed_by=state.worker_id
        ).values_list("pk", "attempts")
        for job_id, attempts in lost:
            if job_id not in state.held and self.queue.release(
                job_id, worker_id=state.worker_id, attempt=attempts
            ):
                logger.info(
                    "[%s] released job %s, held as the thread met an error",
                    state.worker_id,
                    job_id,
                )
        state.reconcile = False

    # --- Heartbeats and rescue ---------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        try:
            seen = self._wakeup.generation
            while not self._next_look(seen):
                # Before the switch is read: a change after this wakes the next look.
                seen = self._wakeup.generation
                try:
                    previous = self._last_beat
                    beaten = self._beat()
                    self._stop_lost_jobs()
                    if not beaten or self._stop.is_set():
                        continue  # stopping: only beats, for the jobs finishing
                    # From one landed beat to the next: a blocked write counts too.
                    silent = self._last_beat - previous
                    if silent > self.stale_worker_seconds / 2:
                        # An outage: other workers look dead only because they could
                        # not beat either. Rescue after a steady stale threshold.
                        self._healthy_since = self._last_beat
                    if (
                        self._last_beat - self._healthy_since
                        >= self.stale_worker_seconds
                    ):
                        self._rescue()
                    if (
                        self._last_beat - self._last_housekeeping
                        >= HOUSEKEEPING_SECONDS
                    ):
                        self._housekeeping()
                    if self._outage_since is not None:
                        logger.warning(
                            "Database reachable again after %.1f s",
                            time.monotonic() - self._outage_since,
                        )
                        self._outage_since = None
                except Exception as exc:
                    if not is_database_fault(exc):
                        logger.exception("Heartbeat failed; will try again")
                    elif self._outage_since is None:
                        self._outage_since = time.monotonic()
                        logger.warning(
                            "Heartbeat failed (%s); trying every %.1f s",
                            _describe(exc),
                            min(self.heartbeat_interval, self.poll_interval),
                        )
                    drop_connection()
        finally:
            drop_connection()

    def _next_look(self, seen: int) -> bool:
        """Wait for the next heartbeat, or for a commit that may have flipped the
        operators' pause switch (the wake-up signal; read at most once per poll
        interval, and at each beat); without the signal, one poll interval or
        until the beat is due. True once the work threads have stopped."""
        beat_at = self._last_beat + self.heartbeat_interval
        if beat_at <= self._last_look:
            # The last look was due to beat, and the beat did not land: try again
            # as often as a look, not in a loop.
            beat_at = self._last_look + min(self.heartbeat_interval, self.poll_interval)
        # A beat never waits for the next look: with a poll interval longer than
        # the heartbeat's it would come late, and at the stale threshold other
        # workers would take this one for dead.
        look_at = min(self._last_look + self.poll_interval, beat_at)
        if self._wakeup.watching:
            self._wakeup.wait(seen, max(beat_at - time.monotonic(), 0.0))
        return self._stop_beating.wait(max(look_at - time.monotonic(), 0.0))

    def _wait_for_silent_workers(self) -> None:
        """Before a drain's first rescue: right after a database outage it shared
        with a running pool, the pool's heartbeats are stale only because it could
        not beat. Silent workers holding jobs get the time a live one takes to beat
        again (at most half the drain's budget, taken from it), so that the rescue
        takes only the jobs of dead ones. Nothing to wait for, nothing waited."""
        deadline = self._drain.deadline
        started = time.monotonic()
        silent = self.queue.wait_for_silent_workers(
            self.stale_worker_seconds,
            at_most=None if deadline is None else (deadline - started) / 2,
        )
        waited = time.monotonic() - started
        if waited >= 0.5:
            logger.info(
                "Waited %.1f s for silent workers holding jobs; %s",
                waited,
                f"rescuing the jobs of {', '.join(silent)}"
                if silent
                else "all beat again",
            )

    def _held_jobs(self) -> list[Flight]:
        return [flight for s in self._states for flight in list(s.held.values())]

    def _rescue(self) -> None:
        """Both rules, sparing this worker's own live jobs; only when some job has
        been processing long enough for either (a read without their locks, most
        beats of an idle or a quick queue)."""
        mine = [flight.item.pk for flight in self._held_jobs()]
        oldest = min(self.stale_worker_seconds, 60 * self.stale_job_minutes)
        if not self.queue.processing_longer_than(oldest, exclude=mine):
            return
        budget = {"exclude": mine, "max_retries": self.max_retries}
        self.queue.rescue_stale_workers(self.stale_worker_seconds, **budget)
        self.queue.cleanup_stale_jobs(self.stale_job_minutes, **budget)

    def _housekeeping(self) -> None:
        """Delete what outlived ``QUEUE_KEEP_FINISHED_DAYS`` (finished items, the
        heartbeats of stopped or dead workers, folded metrics rows), fold the
        metrics into their totals, then let the database reclaim what finished
        jobs left, so claims and scrapes stay as fast as on day one."""
        self._last_housekeeping = time.monotonic()
        keep_days = settings.QUEUE_KEEP_FINISHED_DAYS
        cleared = self.queue.clear_expired(keep_days)
        if cleared:
            logger.info("Housekeeping: deleted %d expired queue items", cleared)
        # Each cron tick and restart leaves a stopped worker's rows behind, and each
        # killed worker rows that nothing marked stopped.
        if keep_days > 0:
            gone = self.queue.gone_workers_older_than(keep_days).delete()[0]
            if gone:
                logger.info(
                    "Housekeeping: deleted %d stopped workers' heartbeats", gone
                )
        # What /metrics reads besides the last minutes' rows: the attempts' totals
        # up to a watermark and the finished items' count (one worker's a minute);
        # folded metrics rows may go once nothing else shows them.
        self.queue.fold_metrics()
        self.queue.count_finished()
        expired = self.queue.expire_metrics(keep_days)
        if expired:
            logger.info("Housekeeping: deleted %d expired metrics rows", expired)
        if self.queue.tidy():
            logger.info("Housekeeping: vacuumed the queue table")

    def _stop_lost_jobs(self) -> None:
        """End the children of jobs that are no longer this worker's: stopped by an
        operator, rescued while this worker stalled, or deleted (with their
        document). Read at each look, only while children run."""
        running = {
            flight.item.pk: (state.worker_id, flight)
            for state in self._states
            for flight in list(state.held.values())
            if flight.future is not None and not flight.future.done()
        }
        if not running:
            return
        claims = self.queue.claims(running)
        for pk, (worker_id, flight) in running.items():
            status, claimed_by, attempt = claims.get(pk, (None, None, None))
            ours = (claimed_by, attempt) == (worker_id, flight.item.attempts)
            if ours and status == Status.PROCESSING:
                continue
            if ours and status == Status.CANCELLED:
                logger.info(
                    "[%s] job %s was stopped by an operator; ending its child",
                    worker_id,
                    pk,
                )
            else:
                logger.warning(
                    "[%s] job %s was %s; stopping its extraction",
                    worker_id,
                    pk,
                    "deleted"
                    if pk not in claims
                    else "rescued while this worker stalled",
                )
            flight.future.cancel()

    def _beat(self, *, force: bool = False) -> bool:
        """Refresh the operators' pause switch; write heartbeats when due."""
        self._last_look = time.monotonic()
        was_paused, self._db_paused = self._db_paused, QueueControl.is_paused()
        if was_paused != self._db_paused:
            # The log says why a pool stopped taking jobs, or took them up again.
            logger.info(
                "Processing %s by an operator",
                "paused" if self._db_paused else "resumed",
            )
        if was_paused and not self._db_paused:
            self._wakeup.notify()
        if not force and time.monotonic() - self._last_beat < self.heartbeat_interval:
            return False
        beats = [
            {
                "worker": state.worker_id,
                "status": state.status,
                "job": state.current_job,
                "completed": state.jobs_completed,
                "failed": state.jobs_failed,
                "refused": state.jobs_refused,
            }
            for state in self._states
        ]
        with transaction.atomic(), connection.cursor() as cursor:
            written = sql.dialect().send_beats(cursor, beats)
        if written < len(beats):
            # Our rows were deleted (the Workers list, a clearing) while we were
            # silent: without them every worker takes us for dead, and our jobs for
            # lost, for good.
            logger.warning("This worker's heartbeats were deleted; writing them again")
            self._register()
        # When the write landed, not when it was sent: a stall is measured.
        self._last_beat = time.monotonic()
        return True

    def _join(self) -> bool:
        """Register the heartbeats, waiting for the database if it is away: a worker
        (re)started during an outage must not exit. False if stopped meanwhile."""
        backoff = Backoff()
        while True:
            if self._stop.is_set():
                return False
            try:
                self._register()
                self._beat(force=True)
                return True
            except DatabaseError as exc:
                if not is_database_fault(exc):
                    raise
                if self._drain is not None and self._drain.expired():
                    raise
                pause = backoff.next()
                logger.warning(
                    "Database unavailable at start (%s); trying again in %.1f s",
                    _describe(exc),
                    pause,
                )
                drop_connection()
                self._stop.wait(pause)

    def _worker_ids(self) -> list[str]:
        """The threads' ids: host name, pid, a random part, the thread's number."""
        prefix = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:4]}"
        prefix = f"{self._name}:{prefix}" if self._name else prefix
        return [f"{prefix}:w{n + 1}" for n in range(self.num_workers)]

    def _register(self) -> None:
        """Insert the threads' heartbeats (a worker started again after stop()
        reuses its rows). Never another worker's: two on the same host name and
        pid (as containers run) may draw the same random part, and sharing ids
        they would release and reconcile each other's jobs, and pass each other's
        fencing. The second draws again."""
        while True:
            try:
                with transaction.atomic():
                    for state in self._states:
                        fields = {
                            "status": state.status,
                            "hostname": socket.gethostname(),
                            "pid": os.getpid(),
                            "started_at": DbNow(),
                            "last_heartbeat": DbNow(),
                        }
                        if self._registered:
                            WorkerHeartbeat.objects.update_or_create(
                                worker_id=state.worker_id, defaults=fields
                            )
                        else:
                            WorkerHeartbeat.objects.create(
                                worker_id=state.worker_id, **fields
                            )
                break
            except IntegrityError:
                if self._registered:
                    raise
                for state, worker_id in zip(
                    self._states, self._worker_ids(), strict=True
                ):
                    state.worker_id = worker_id
        self._registered = True
        self._last_beat = self._healthy_since = time.monotonic()

    def _release_leftovers(self) -> None:
        ids = [s.worker_id for s in self._states]
        leftovers = QueueItem.objects.filter(
            status=Status.PROCESSING, claimed_by__in=ids
        ).values_list("pk", "claimed_by", "attempts")
        try:
            held = list(leftovers)
        except DatabaseError as exc:
            # This thread's connection may have died while it sat idle (a server
            # restart, a killer of idle connections): one more try on a fresh one.
            if not is_database_fault(exc):
                raise
            drop_connection()
            held = list(leftovers)
        # A task still running in its thread, which no stop can end: its attempt is
        # cut short, and the job says so (a claim that never started says nothing).
        running = {(s.worker_id, s.current_job) for s in self._states if s.running_task}
        states = {s.worker_id: s for s in self._states}
        for job_id, worker_id, attempt in held:
            # Fenced: a job rescued and claimed again since the read is its new
            # owner's, and stays so.
            if self.queue.release(
                job_id,
                worker_id=worker_id,
                attempt=attempt,
                interrupted=(worker_id, job_id) in running,
            ):
                states[worker_id].jobs_released += 1

    # --- Monitoring ----------------------------------------------------------------------

    def get_status(self) -> dict[str, Any]:
        """Running state, queue depth and per-worker figures, as the guide prints them."""
        queue_stats = self.queue.get_queue_stats()
        completed = sum(s.jobs_completed for s in self._states)
        failed = sum(s.jobs_failed for s in self._states)
        refused = sum(s.jobs_refused for s in self._states)
        uptime = (
            (self._stopped_at or time.monotonic()) - self._started_at
            if self._started_at
            else 0.0
        )
        return {
            "running": self.is_running(),
            "paused": self.is_paused(),
            "num_workers": self.num_workers,
            "active_workers": sum(
                t.is_alive() for t in self._threads if t.name != "heartbeat"
            ),
            "queue_depth": queue_stats["pending"] + queue_stats["retry_pending"],
            "processing": queue_stats["processing"],
            "workers": [
                {
                    "worker_id": s.worker_id,
                    # A plain string, as the guide prints it (not the enum member).
                    "status": str(s.status),
                    "current_job": s.current_job,
                    "jobs_completed": s.jobs_completed,
                    "jobs_failed": s.jobs_failed,
                    "jobs_refused": s.jobs_refused,
                }
                for s in self._states
            ],
            "stats": {
                "jobs_completed": completed,
                "jobs_failed": failed,
                "jobs_refused": refused,
                "uptime_seconds": round(uptime, 1),
                "throughput_per_second": completed / uptime if uptime else 0.0,
                "avg_extraction_time_ms": queue_stats["avg_extraction_time_ms"],
            },
            "queue": queue_stats,
        }

    def get_recent_jobs(self, limit: int = 20) -> list[dict[str, Any]]:
        """The latest jobs by last change, as plain dicts."""
        return list(
            QueueItem.objects.order_by("-updated_at", "-id")
            .annotate(filename=F("document__original_filename"))
            .values(
                "id",
                "document_id",
                "filename",
                "operation",
                "status",
                "priority",
                "attempts",
                "max_retries",
                "error_type",
                "error_message",
                "claimed_by",
                "created_at",
                "started_at",
                "finished_at",
                "extraction_time_ms",
            )[:limit]
        )

    def retry_failed_jobs(self, job_ids: list[int] | None = None) -> int:
        if job_ids is None:
            return self.queue.retry_failed()
        return len(self.queue.retry_failed_many(job_ids))


def register_signal_handlers(
    worker: ExtractionWorker, stop_timeout: float = 60.0
) -> None:
    """First SIGTERM/SIGINT: stop gracefully. Second: stop now, still releasing jobs."""
    received = []

    def handle(signum: int, _frame: Any) -> None:
        received.append(signum)
        if len(received) == 1:
            worker.stopped_by = signal.Signals(signum)
            logger.warning(
                "Received %s: finishing current jobs (again to stop now)",
                signal.Signals(signum).name,
            )
            threading.Thread(
                target=worker.stop, args=(stop_timeout,), daemon=True
            ).start()
        else:
            logger.warning("Second signal: stopping now and releasing jobs")
            worker.stop(timeout=0)

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)


def process_document_queue(
    limit: int | None = None,
    *,
    time_budget: float | None = None,
    on_progress: Callable[[int], object] | None = None,
) -> dict[str, int]:
    """Process what is due now with one worker thread (cron); returns the counts.
    ``ExtractionWorker.drain`` says how ``limit`` and ``time_budget`` bound it."""
    worker = ExtractionWorker(
        num_workers=1,
        max_retries=settings.QUEUE_MAX_RETRIES,
        extraction_timeout=settings.QUEUE_EXTRACTION_TIMEOUT,
        heartbeat_interval=settings.QUEUE_HEARTBEAT_INTERVAL,
        poll_interval=settings.QUEUE_POLL_INTERVAL,
        name="cron",
    )
    return worker.drain(limit, time_budget=time_budget, on_progress=on_progress)


def _join_heeding_signals(thread: threading.Thread, deadline: float | None) -> None:
    """``thread.join()`` until ``deadline`` (``time.monotonic()``; None: no limit), in
    slices of ``SIGNAL_LOOK_SECONDS``. Python runs a signal's handler in the main
    thread only, between two of its steps: a signal that the kernel hands to another
    thread, or that lands while the main thread waits for the GIL on its way into a
    join, does not wake the join, and the handler waited for its end. A SIGTERM to
    ``process_queue --once`` was then heard only at the end of the budget, and the job
    it should have released uncharged was charged as one that outgrew the budget."""
    while thread.is_alive():
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return
        thread.join(
            SIGNAL_LOOK_SECONDS if left is None else min(left, SIGNAL_LOOK_SECONDS)
        )


def _describe(exc: BaseException) -> str:
    """One line for the log: the error's class and first line, no traceback."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _warn_unrecorded(worker_id: str, job_id: int, exc: BaseException) -> None:
    logger.warning(
        "[%s] could not record job %s (%s); keeping the result and trying again",
        worker_id,
        job_id,
        _describe(exc),
    )
