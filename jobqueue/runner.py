"""Runs one claimed job: extraction in a child process, then the result recorded.

Shared by the worker threads and by ``process_document_queue`` (cron).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import time
from concurrent.futures import CancelledError
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction
from pebble import ProcessExpired, ProcessPool

from documents.extractors.base import ExtractionResult
from documents.models import Document
from documents.services import document_store_result
from jobqueue.child import init_child, run_extraction
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


@dataclass
class Flight:
    """A claimed job whose extraction is under way (or, without a child, decided)."""

    item: QueueItem
    started: float
    future: Any = None
    outcome: Outcome | None = None


@dataclass
class JobRunner:
    """Owns the pool of extraction children and the rules for recording outcomes."""

    queue: QueueManager
    processes: int = 2
    max_retries: int = 3
    extraction_timeout: float = 300.0
    memory_mb: int = field(default_factory=lambda: settings.QUEUE_CHILD_MEMORY_MB)
    max_tasks: int = field(default_factory=lambda: settings.QUEUE_CHILD_MAX_TASKS)
    # Keyword options of the extract function (children read no Django settings).
    extract_options: dict[str, Any] = field(
        default_factory=lambda: {
            "pdf_engine": settings.PDF_ENGINE,
            "max_chars": settings.EXTRACTED_TEXT_MAX_CHARS,
        }
    )
    extract_function: str = field(
        default_factory=lambda: settings.QUEUE_EXTRACT_FUNCTION
    )
    pool: ProcessPool | None = None

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

    def close(self, *, kill: bool = False) -> None:
        if self.pool is not None:
            self.pool.stop() if kill else self.pool.close()
            self.pool.join()
            self.pool = None

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
        future = self.pool.schedule(
            run_extraction,
            args=(
                self.extract_function,
                path,
                document.mime_type,
                self.extract_options,
            ),
            timeout=self.extraction_timeout,
        )
        return Flight(item, started, future=future)

    def wait(self, flight: Flight) -> Outcome:
        """The extraction's outcome (not yet recorded); JobReleased if cancelled."""
        if flight.outcome is not None:
            return flight.outcome
        try:
            status, value, message = flight.future.result()
        except CancelledError:
            raise JobReleased from None
        except TimeoutError:
            return Outcome(
                False,
                error_type=ErrorType.TIMEOUT,
                error_message=f"Extraction took longer than {self.extraction_timeout:g} s and was stopped.",
            )
        except ProcessExpired as exc:
            return Outcome(
                False,
                error_type=ErrorType.UNKNOWN,
                error_message=f"The extractor crashed (exit code {exc.exitcode}); "
                "the file may be too large or malformed for it.",
            )
        if status == "ok":
            return Outcome(True, value)
        return Outcome(False, error_type=value, error_message=message)

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
            if done and item.operation != Operation.NOOP:
                document_store_result(document_id=item.document_id, result=result)
        return done
