"""The worker pool of the guide: threads that claim jobs, children that extract."""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from jobqueue import sql
from jobqueue.models import QueueControl, QueueItem, Status, WorkerHeartbeat
from jobqueue.runner import Flight, JobReleased, JobRunner, Outcome
from jobqueue.services import DocumentQueueService, QueueManager
from jobqueue.sql import DbNow
from jobqueue.wakeup import Wakeup

logger = logging.getLogger(__name__)

EVENTS = ("job_started", "job_completed", "job_failed")
ERROR_PAUSE_SECONDS = 1.0


@dataclass
class _ThreadState:
    """What one worker thread is doing, as its heartbeat reports it."""

    worker_id: str
    status: str = WorkerHeartbeat.State.IDLE
    current_job: int | None = None
    future: Any = None
    jobs_completed: int = 0
    jobs_failed: int = 0


class ExtractionWorker:
    """A pool of ``num_workers`` threads claiming jobs from the database queue."""

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
    ) -> None:
        # ``db`` is the guide's database handle; here it is Django's configured database.
        self.num_workers = num_workers
        self.max_retries = max_retries
        self.extraction_timeout = extraction_timeout
        self.heartbeat_interval = heartbeat_interval
        self.poll_interval = poll_interval
        self.stale_worker_seconds = stale_worker_seconds or max(
            settings.QUEUE_STALE_WORKER_SECONDS, 3 * heartbeat_interval
        )
        self.queue = QueueManager()
        self.runner = JobRunner(
            self.queue,
            processes=num_workers,
            max_retries=max_retries,
            extraction_timeout=extraction_timeout,
        )
        prefix = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:4]}"
        self._states = [_ThreadState(f"{prefix}:w{n + 1}") for n in range(num_workers)]
        self._callbacks: dict[str, list[Callable]] = defaultdict(list)
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._db_paused = False
        self._wakeup = Wakeup()
        self._started_at: float | None = None
        self._last_beat = 0.0
        self._stopped = threading.Event()
        self._finish_lock = threading.Lock()

    # --- Lifecycle -------------------------------------------------------------

    def start(self) -> None:
        """Start the children, the worker threads and the heartbeat."""
        if self.is_running():
            return
        self._stop.clear()
        self._stopped.clear()
        self._started_at = time.monotonic()
        self.runner.start()
        self._register()
        self._beat(force=True)
        self._wakeup.start()
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
            "Started %d workers (%s)", self.num_workers, self._states[0].worker_id[:-3]
        )

    def stop(self, timeout: float = 60.0) -> bool:
        """Let current jobs finish for up to ``timeout`` s, release the rest, mark
        heartbeats stopped. True if every job finished in time."""
        self._stop.set()
        self._wakeup.notify()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        clean = not any(t.is_alive() for t in self._threads)
        if not clean:
            # Cancelling a future kills its child; the thread then releases its job.
            for state in self._states:
                if state.future is not None:
                    state.future.cancel()
            for thread in self._threads:
                thread.join(5)
        with self._finish_lock:
            if not self._stopped.is_set():
                self._finish(clean)
        return clean

    def _finish(self, clean: bool) -> None:
        self._release_leftovers()
        self._wakeup.stop()
        self.runner.close(kill=not clean)
        for state in self._states:
            state.status, state.current_job = WorkerHeartbeat.State.STOPPED, None
        self._beat(force=True)
        connection.close()
        self._stopped.set()
        logger.info("Workers stopped (%s)", "clean" if clean else "jobs released")

    def wait_stopped(self, timeout: float | None = None) -> bool:
        """Block until a stop (perhaps begun by a signal handler) has completed."""
        return self._stopped.wait(timeout)

    def pause(self) -> None:
        """Finish current jobs, claim no new ones until ``resume``."""
        self._paused.set()

    def resume(self) -> None:
        self._paused.clear()
        self._wakeup.notify()

    def is_running(self) -> bool:
        return any(t.is_alive() for t in self._threads) and not self._stop.is_set()

    def is_paused(self) -> bool:
        return self._paused.is_set() or self._db_paused

    # --- Work --------------------------------------------------------------------

    def enqueue(self, attachment_id: int, priority: int = 0) -> int | None:
        return self.queue.enqueue(attachment_id, priority)

    def enqueue_batch(self, attachment_ids: list[int], priority: int = 0) -> list[int]:
        return self.queue.enqueue_batch(attachment_ids, priority)

    def on(self, event: str, callback: Callable) -> None:
        """Call ``callback`` on ``job_started``, ``job_completed`` or ``job_failed``."""
        if event not in EVENTS:
            raise ValueError(
                f"Unknown event {event!r}; choose from {', '.join(EVENTS)}."
            )
        self._callbacks[event].append(callback)

    def _emit(self, event: str, *args: Any) -> None:
        for callback in self._callbacks[event]:
            try:
                callback(*args)
            except Exception:
                logger.exception("A %s callback failed; carrying on", event)

    def _work(self, state: _ThreadState) -> None:
        try:
            while not self._stop.is_set():
                try:
                    if not self._work_once(state):
                        state.status = (
                            WorkerHeartbeat.State.PAUSED
                            if self.is_paused()
                            else WorkerHeartbeat.State.IDLE
                        )
                except Exception:
                    # The worker must outlive any single failure (database hiccup included).
                    logger.exception(
                        "Worker %s hit an error; pausing briefly", state.worker_id
                    )
                    connection.close()
                    self._stop.wait(ERROR_PAUSE_SECONDS)
        finally:
            connection.close()

    def _work_once(self, state: _ThreadState) -> bool:
        """Claim and run jobs; False (after waiting) when there was none."""
        seen = self._wakeup.generation
        item = None if self.is_paused() else self.queue.claim(state.worker_id)
        if item is None:
            self._wakeup.wait(seen, self.poll_interval)
            return False
        flight: Flight | None = self._begin(state, item)
        try:
            while flight is not None:
                try:
                    outcome = self.runner.wait(flight)
                except JobReleased:
                    self.queue.release(flight.item.pk, worker_id=state.worker_id)
                    logger.info("[%s] released job %s", state.worker_id, flight.item.pk)
                    return True
                # Take the next job before storing this one's text, so the child
                # extracts while this thread writes: storing and indexing are not free.
                upcoming = self._prefetch(state, flight)
                try:
                    self._conclude(state, flight, outcome)
                except BaseException:
                    if upcoming is not None:
                        self._abandon(state, upcoming)
                    raise
                flight = upcoming
        finally:
            state.future, state.current_job = None, None
        return True

    def _begin(self, state: _ThreadState, item: QueueItem) -> Flight:
        state.status, state.current_job = WorkerHeartbeat.State.BUSY, item.pk
        logger.info(
            "[%s] started job %s (%s)", state.worker_id, item.pk, item.operation
        )
        self._emit("job_started", item, state.worker_id)
        return self.runner.begin(item, on_future=lambda f: setattr(state, "future", f))

    def _prefetch(self, state: _ThreadState, flight: Flight) -> Flight | None:
        """The next job, started now; only behind a real extraction and while running."""
        if flight.future is None or self._stop.is_set() or self.is_paused():
            return None
        item = self.queue.claim(state.worker_id)
        return self._begin(state, item) if item is not None else None

    def _abandon(self, state: _ThreadState, flight: Flight) -> None:
        if flight.future is not None:
            flight.future.cancel()
        self.queue.release(flight.item.pk, worker_id=state.worker_id)

    def _conclude(self, state: _ThreadState, flight: Flight, outcome: Outcome) -> None:
        item = flight.item
        outcome = self.runner.record(flight, outcome, state.worker_id)
        if outcome.completed:
            state.jobs_completed += 1
            logger.info("[%s] completed job %s", state.worker_id, item.pk)
            self._emit("job_completed", item, outcome.result)
        else:
            state.jobs_failed += 1
            logger.warning(
                "[%s] job %s failed (%s): %s",
                state.worker_id,
                item.pk,
                outcome.error_type,
                outcome.error_message,
            )
            self._emit("job_failed", item, outcome.error_message)

    # --- Heartbeats and rescue ---------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        try:
            # The pause switch is read at least once per poll interval.
            while not self._stop.wait(min(self.heartbeat_interval, self.poll_interval)):
                try:
                    if self._beat():
                        self.queue.rescue_dead_workers(self.stale_worker_seconds)
                except Exception:
                    logger.exception("Heartbeat failed; will try again")
                    connection.close()
        finally:
            connection.close()

    def _beat(self, *, force: bool = False) -> bool:
        """Refresh the operators' pause switch; write heartbeats when due."""
        was_paused, self._db_paused = self._db_paused, QueueControl.is_paused()
        if was_paused and not self._db_paused:
            self._wakeup.notify()
        if not force and time.monotonic() - self._last_beat < self.heartbeat_interval:
            return False
        beat = sql.statements().beat
        with transaction.atomic(), connection.cursor() as cursor:
            for state in self._states:
                cursor.execute(
                    beat,
                    {
                        "worker": state.worker_id,
                        "status": state.status,
                        "job": state.current_job,
                        "completed": state.jobs_completed,
                        "failed": state.jobs_failed,
                    },
                )
        self._last_beat = time.monotonic()
        return True

    def _register(self) -> None:
        # update_or_create: a worker started again after stop() reuses its rows.
        for state in self._states:
            WorkerHeartbeat.objects.update_or_create(
                worker_id=state.worker_id,
                defaults={
                    "status": state.status,
                    "hostname": socket.gethostname(),
                    "pid": os.getpid(),
                    "started_at": DbNow(),
                    "last_heartbeat": DbNow(),
                },
            )
        self._last_beat = time.monotonic()

    def _release_leftovers(self) -> None:
        ids = [s.worker_id for s in self._states]
        for job_id in QueueItem.objects.filter(
            status=Status.PROCESSING, claimed_by__in=ids
        ).values_list("pk", flat=True):
            self.queue.release(job_id)

    # --- Monitoring ----------------------------------------------------------------------

    def get_status(self) -> dict[str, Any]:
        """Running state, queue depth and per-worker figures, as the guide prints them."""
        queue_stats = self.queue.get_queue_stats()
        completed = sum(s.jobs_completed for s in self._states)
        failed = sum(s.jobs_failed for s in self._states)
        uptime = time.monotonic() - self._started_at if self._started_at else 0.0
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
                    "status": s.status,
                    "current_job": s.current_job,
                    "jobs_completed": s.jobs_completed,
                    "jobs_failed": s.jobs_failed,
                }
                for s in self._states
            ],
            "stats": {
                "jobs_completed": completed,
                "jobs_failed": failed,
                "uptime_seconds": round(uptime, 1),
                "throughput_per_second": completed / uptime if uptime else 0.0,
                "avg_extraction_time_ms": queue_stats["avg_extraction_time_ms"],
            },
            "queue": queue_stats,
        }

    def get_recent_jobs(self, limit: int = 20) -> list[dict[str, Any]]:
        """The latest jobs by last change, as plain dicts."""
        return list(
            QueueItem.objects.order_by("-updated_at", "-id").values(
                "id",
                "document_id",
                "document__original_filename",
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
        return sum(self.queue.retry_failed(job_id) for job_id in job_ids)


def register_signal_handlers(
    worker: ExtractionWorker, stop_timeout: float = 60.0
) -> None:
    """First SIGTERM/SIGINT: stop gracefully. Second: stop now, still releasing jobs."""
    received = []

    def handle(signum: int, _frame: Any) -> None:
        received.append(signum)
        if len(received) == 1:
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
    """Process what is due now, one job at a time (cron); returns the counts."""
    counts = {"processed": 0, "completed": 0, "failed": 0}
    if QueueControl.is_paused():
        return counts
    service = DocumentQueueService()
    runner = JobRunner(
        service.queue,
        processes=1,
        max_retries=settings.QUEUE_MAX_RETRIES,
        extraction_timeout=settings.QUEUE_EXTRACTION_TIMEOUT,
    )
    worker_id = f"cron:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:4]}"
    deadline = time.monotonic() + time_budget if time_budget else None
    beat = WorkerHeartbeat.objects.create(
        worker_id=worker_id,
        status=WorkerHeartbeat.State.BUSY,
        hostname=socket.gethostname(),
        pid=os.getpid(),
        started_at=DbNow(),
        last_heartbeat=DbNow(),
    )
    runner.start()
    try:
        while limit is None or counts["processed"] < limit:
            if deadline and time.monotonic() > deadline:
                break
            items = service.get_pending_items(limit=1)
            if not items:
                break
            if not service.mark_in_progress(items[0], worker_id):
                continue  # another worker took it first
            WorkerHeartbeat.objects.filter(pk=beat.pk).update(
                last_heartbeat=DbNow(), current_job=items[0]
            )
            outcome = runner.run(items[0], worker_id)
            counts["processed"] += 1
            counts["completed" if outcome.completed else "failed"] += 1
            if on_progress:
                on_progress(1)
    finally:
        runner.close()
        WorkerHeartbeat.objects.filter(pk=beat.pk).update(
            status=WorkerHeartbeat.State.STOPPED,
            current_job=None,
            jobs_completed=counts["completed"],
            jobs_failed=counts["failed"],
            last_heartbeat=DbNow(),
        )
    return counts
