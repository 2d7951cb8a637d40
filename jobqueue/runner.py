"""Runs one claimed job: extraction in a child process, then the result recorded.

Shared by the worker threads and by ``process_document_queue`` (cron).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import tempfile
import time
from concurrent.futures import CancelledError
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils.module_loading import import_string
from pebble import ProcessExpired, ProcessPool

from documents.extractors.base import ExtractionResult
from documents.models import Document
from documents.services import document_store_result
from jobqueue.child import init_child, read_progress, run_extraction
from jobqueue.faults import is_database_fault
from jobqueue.models import ErrorType, Operation, QueueItem
from jobqueue.services import QueueManager

logger = logging.getLogger(__name__)


class JobReleased(Exception):  # noqa: N818 - a signal, not an error
    """The job was handed back to the queue (shutdown) instead of finishing."""


@dataclass
class Outcome:
    """What became of one job."""

    completed: bool
    result: ExtractionResult | None = None
    error_type: str = ""
    error_message: str = ""
    recorded: bool = (
        True  # False when the job had been taken from this worker meanwhile
    )


NOOP_RESULT = ExtractionResult("", 0, 1.0, "noop")
STORE_REFUSED = (
    "The text was extracted but the database refused to store it "
    "(too large, or characters it cannot hold)."
)
PROGRESS_POLL = 2.0  # seconds between looks at a long extraction's progress


@dataclass
class Flight:
    """A claimed job whose extraction is under way (or, without a child, decided)."""

    item: QueueItem
    started: float
    future: Any = None
    outcome: Outcome | None = None
    progress_path: str = ""


@dataclass
class JobRunner:
    """Owns the pool of extraction children and the rules for recording outcomes."""

    queue: QueueManager
    processes: int = 2
    max_retries: int = 3
    extraction_timeout: float = 300.0
    memory_mb: int = field(default_factory=lambda: settings.QUEUE_CHILD_MEMORY_MB)
    max_tasks: int = field(default_factory=lambda: settings.QUEUE_CHILD_MAX_TASKS)
    # Keyword arguments for the extract function (the documents app's settings).
    extract_options: dict[str, Any] = field(
        default_factory=lambda: import_string(settings.QUEUE_EXTRACT_OPTIONS)()
    )
    extract_function: str = field(
        default_factory=lambda: settings.QUEUE_EXTRACT_FUNCTION
    )
    pool: ProcessPool | None = None
    progress_dir: str = ""

    def start(self) -> None:
        # forkserver: children start from a clean, thread-free process that has only
        # the extractors imported, never a copy of our threads and DB connections.
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(
            ["jobqueue.child", "documents.extractors.registry"]
        )
        self.pool = ProcessPool(
            max_workers=self.processes,
            max_tasks=self.max_tasks,
            initializer=init_child,
            initargs=(self.memory_mb, os.getpid()),
            context=context,
        )
        self.progress_dir = tempfile.mkdtemp(prefix="docqueue-progress-")

    def close(self, *, kill: bool = False) -> None:
        if self.pool is not None:
            self.pool.stop() if kill else self.pool.close()
            self.pool.join()
            self.pool = None
        if self.progress_dir:
            shutil.rmtree(self.progress_dir, ignore_errors=True)

    def begin(self, item: QueueItem) -> Flight:
        """Start a claimed job's extraction in a child; returns at once."""
        started = time.monotonic()
        if item.operation == Operation.NOOP:
            # Trivial benchmark job: exercises the queue, not a parser.
            return Flight(item, started, outcome=Outcome(True, NOOP_RESULT))
        document = Document.objects.only("file", "mime_type").get(pk=item.document_id)
        try:
            path = document.file.path
        except NotImplementedError:
            return Flight(
                item,
                started,
                outcome=Outcome(
                    False,
                    error_type=ErrorType.EXTRACTOR_MISSING,
                    error_message="The file storage has no local paths; mount it or use a shared filesystem.",
                ),
            )
        progress_path = os.path.join(self.progress_dir, f"{item.pk}-{item.attempts}")
        # No timeout here: ``wait`` stops the child once it goes
        # ``extraction_timeout`` seconds without progress.
        future = self.pool.schedule(
            run_extraction,
            args=(
                self.extract_function,
                path,
                document.mime_type,
                self.extract_options,
                progress_path,
            ),
        )
        return Flight(item, started, future=future, progress_path=progress_path)

    def wait(self, flight: Flight) -> Outcome:
        """The extraction's outcome (not yet recorded); JobReleased if cancelled."""
        if flight.outcome is not None:
            return flight.outcome
        try:
            status, value, message = self._result(flight)
        except CancelledError:
            raise JobReleased from None
        except TimeoutError:
            done = read_progress(flight.progress_path)
            return Outcome(
                False,
                error_type=ErrorType.TIMEOUT,
                error_message=(
                    f"Extraction made no progress for {self.extraction_timeout:g} s "
                    f"after {done[0]} of {done[1]} pages and was stopped."
                    if done
                    else f"Extraction took longer than {self.extraction_timeout:g} s "
                    "and was stopped."
                ),
            )
        except ProcessExpired as exc:
            return Outcome(
                False,
                error_type=ErrorType.UNKNOWN,
                error_message=f"The extractor crashed (exit code {exc.exitcode}); "
                "the file may be too large or malformed for it.",
            )
        finally:
            for leftover in (flight.progress_path, f"{flight.progress_path}.tmp"):
                if os.path.exists(leftover):
                    os.unlink(leftover)
        if status == "ok":
            return Outcome(True, value)
        return Outcome(False, error_type=value, error_message=message)

    def _result(self, flight: Flight) -> tuple[str, Any, str]:
        """The child's answer. The timeout counts from the last progress the child
        reported, so a long scan gets time page by page, while one page that hangs
        is stopped after ``extraction_timeout`` seconds."""
        deadline = flight.started + self.extraction_timeout
        seen = None
        while True:
            wait = min(PROGRESS_POLL, deadline - time.monotonic())
            try:
                return flight.future.result(timeout=max(wait, 0.0))
            except TimeoutError:
                pass
            progress = read_progress(flight.progress_path)
            if progress is not None and progress != seen:
                seen = progress
                deadline = time.monotonic() + self.extraction_timeout
                self.queue.set_progress(flight.item, *progress)
            elif time.monotonic() >= deadline:
                flight.future.cancel()  # Pebble stops the child
                raise TimeoutError

    def record(self, flight: Flight, outcome: Outcome, worker_id: str) -> Outcome:
        """Store the result, or the failure, through the queue's rules."""
        item = flight.item
        elapsed_ms = int((time.monotonic() - flight.started) * 1000)
        if outcome.completed:
            try:
                outcome.recorded = self._record_success(
                    item, worker_id, outcome.result, elapsed_ms
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
        if not outcome.completed:
            outcome.recorded = self.queue.failed(
                item.pk,
                outcome.error_message,
                outcome.error_type,
                max_retries=self.max_retries,
                worker_id=worker_id,
                attempt=item.attempts,
                extraction_time_ms=elapsed_ms,
            )
        return outcome

    def _record_success(
        self, item: QueueItem, worker_id: str, result: ExtractionResult, elapsed_ms: int
    ) -> bool:
        with transaction.atomic():
            done = self.queue.complete(
                item.pk,
                extraction_time_ms=elapsed_ms,
                confidence=result.confidence,
                worker_id=worker_id,
                attempt=item.attempts,
                pages=result.page_count,
                characters=len(result.text),
                extractor=result.extractor,
            )
            if done and result.details:
                self.queue.record_details(item.pk, item.attempts, result.details)
            if done and item.operation != Operation.NOOP:
                document_store_result(document_id=item.document_id, result=result)
        return done
