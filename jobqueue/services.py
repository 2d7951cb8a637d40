"""The queue API: every state change of a queue item goes through here.

``QueueManager`` is the guide's API; ``DocumentQueueService`` is the service text's
API over the same code. Every state change is mirrored in the item's kind's status
table (``operations.status_changed``, or the statement itself) in the same
transaction, so a document's visible status changes with its queue item.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Iterator
from datetime import timedelta
from typing import Any

from django.db import (
    DEFAULT_DB_ALIAS,
    DatabaseError,
    IntegrityError,
    connection,
    models,
    transaction,
)
from django.db.models import (
    Avg,
    Count,
    Exists,
    F,
    Max,
    Min,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
)
from django.db.models.base import ModelState
from django.db.models.functions import Greatest, Least

from jobqueue import operations, retry, sql
from jobqueue.models import (
    DEFAULT_QUEUE,
    FINISHED_STATUSES,
    MAX_PRIORITY,
    MIN_PRIORITY,
    WAITING_STATUSES,
    ErrorType,
    ExtractionMetric,
    FinishedCount,
    MetricsFold,
    MetricTotal,
    Operation,
    QueueItem,
    Status,
    WorkerHeartbeat,
    attempt_totals,
    stale_after,
    work,
)
from jobqueue.sql import DbNow, db_now, storable

logger = logging.getLogger(__name__)
# Jobs per transaction in the operators' bulk actions (``cancel_many``,
# ``retry_failed_many``): each batch is a few statements, its rows locked briefly.
BULK_BATCH = 2_000
STOPPED_MESSAGE = "Stopped by an operator while it ran."
# A metrics row is folded into the totals once it is this old (by the database's
# clock): a row whose transaction took an id earlier but committed later than the
# rows around it is still above the watermark when it lands.
FOLD_MARGIN_SECONDS = 300
# Metrics rows folded per transaction: a short write lock however long the history.
FOLD_BATCH = 100_000
# How often the housekeeping counts the finished items for /metrics (a read of all of
# them, by one worker for all, instead of one by every scrape).
COUNT_EVERY_SECONDS = 60
INTERRUPTED_MESSAGE = (
    "The worker stopped while attempt {attempt} ran ({worker}); the job goes back "
    "to the queue, and the attempt does not count."
)


def notify_workers() -> None:
    """Wake idle workers once the transaction commits (where the database can)."""
    with connection.cursor() as cursor:
        sql.dialect().notify(cursor)


class QueueManager:
    """The guide's ``QueueManager``: enqueue, claim and finish jobs."""

    def __init__(self, operation: str = Operation.EXTRACT) -> None:
        self.operation = operation

    # --- Adding work ---------------------------------------------------------

    def enqueue(
        self, attachment_id: int, priority: int = 0, deduplicate: bool = True
    ) -> int | None:
        """Queue a document; None when it already has an active job (deduplicated;
        that job's priority is raised to ``priority`` if lower). ValueError if there
        is no such document.

        With ``deduplicate=False`` the caller gets the id of the job that will do the
        work either way: the existing active one or a new one.
        """
        return self._enqueue(attachment_id, self.operation, priority, deduplicate)

    def enqueue_batch(
        self, attachment_ids: Iterable[int], priority: int = 0
    ) -> list[int]:
        """Queue many documents in one transaction; returns the ids of new jobs. A
        document already waiting or running is skipped, its job's priority raised
        to ``priority`` if lower, as ``enqueue`` does; ValueError, and nothing
        queued, if one does not exist."""
        ids = list(dict.fromkeys(attachment_ids))
        # The database's clock, as for one job: the oldest-first order, the age of
        # the oldest pending job and the clearing of old ones compare it.
        template = QueueItem(
            operation=self.operation,
            priority=priority,
            created_at=db_now(),
            max_retries=_default_max_retries(),
        )
        fields = {
            f.column: f.get_db_prep_save(f.pre_save(template, True), connection)
            for f in QueueItem._meta.concrete_fields
            if f.column not in ("id", "document_id")
        }
        dialect = sql.dialect()
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                # One statement for the whole batch; a document that already has an
                # active item is skipped by the database (its partial unique
                # constraint), so a concurrent enqueue cannot make a duplicate.
                new = dict(dialect.insert_for_subjects(cursor, fields, ids))
                dialect.mirror(
                    cursor,
                    [(self.operation, doc_id) for doc_id in new],
                    Status.PENDING,
                    {"error_type": "", "error_message": ""},
                )
                skipped = [doc_id for doc_id in ids if doc_id not in new]
                for start in range(0, len(skipped), BULK_BATCH):
                    QueueItem.objects.active().doing_work_of(self.operation).filter(
                        document_id__in=skipped[start : start + BULK_BATCH],
                        priority__lt=priority,
                    ).update(priority=priority)
                notify_workers()
        except IntegrityError:
            found = {
                pk
                for start in range(0, len(ids), BULK_BATCH)
                for pk in _subjects()
                .filter(pk__in=ids[start : start + BULK_BATCH])
                .values_list("pk", flat=True)
            }
            missing = [doc_id for doc_id in ids if doc_id not in found]
            if not missing:
                raise
            raise ValueError(
                f"There is no document {', '.join(map(str, missing[:10]))}"
                f"{' …' if len(missing) > 10 else ''}: nothing was queued."
            ) from None
        return [new[doc_id] for doc_id in ids if doc_id in new]

    def _enqueue(
        self, document_id: int, operation: str, priority: int, deduplicate: bool
    ) -> int | None:
        if operations.get(operation) is None:
            raise ValueError(f"No job kind {operation!r} is registered.")
        # The active item doing this work, if any: of this operation or of one that
        # does the same work (an extraction while the document's reprocess runs).
        existing = (
            QueueItem.objects.active()
            .doing_work_of(operation)
            .filter(document_id=document_id)
        )
        for attempt in range(2):
            now = db_now()
            try:
                with transaction.atomic():
                    item = QueueItem.objects.create(
                        document_id=document_id,
                        operation=operation,
                        priority=priority,
                        created_at=now,
                        max_retries=_default_max_retries(),
                    )
                    operations.status_changed(
                        [(operation, document_id)],
                        Status.PENDING,
                        error_type="",
                        error_message="",
                    )
                    notify_workers()
                    return item.pk
            except IntegrityError:
                # The partial unique constraint: the document already has an active
                # item of this work. With none there, the error was another (no such
                # document), or that item has just finished: a second try tells.
                if existing.exists():
                    break
                if not _subjects().filter(pk=document_id).exists():
                    raise ValueError(f"There is no document {document_id}.") from None
                if attempt:
                    raise
        # The work is done sooner if asked for sooner, whoever asked first.
        existing.filter(priority__lt=priority).update(priority=priority)
        if deduplicate:
            return None
        return existing.values_list("pk", flat=True).first()

    def enqueue_job(
        self,
        operation: str,
        *,
        payload: dict[str, Any],
        priority: int = 0,
        queue_name: str = DEFAULT_QUEUE,
        run_after: Any = None,
        max_retries: int | None = None,
    ) -> QueueItem:
        """Queue a job with no subject (a task); ``run_after``: not before then."""
        item = QueueItem(
            operation=operation,
            payload=payload,
            priority=priority,
            queue_name=queue_name,
            created_at=db_now(),
            max_retries=_default_max_retries() if max_retries is None else max_retries,
        )
        if run_after is not None:
            # Waits like a retry: promoted to pending by the claim once due.
            item.status, item.next_retry_at = Status.RETRY_PENDING, run_after
        with transaction.atomic():
            item.save(force_insert=True)
            notify_workers()
        return item

    # --- Claiming ------------------------------------------------------------

    def claim(
        self, worker_id: str, queues: Iterable[str] | None = None
    ) -> QueueItem | None:
        """Take the next due job (priority, then oldest) for ``worker_id``, or None;
        with ``queues``, only from those named queues."""
        dialect = sql.dialect()
        with dialect.steps() as cursor:
            row = dialect.claim(cursor, worker_id, list(queues or ()))
        return _claimed_item(row)

    def claim_batch(
        self, worker_ids: list[str], queues: Iterable[str] | None = None
    ) -> list[QueueItem]:
        """``claim`` for each of ``worker_ids`` at once, in one statement (PostgreSQL)
        or one transaction (SQLite): the next jobs in claim order, the first for the
        first worker; fewer when fewer are due. Each item's ``claimed_by`` says whose."""
        dialect = sql.dialect()
        with dialect.steps() as cursor:
            rows = dialect.claim_batch(cursor, worker_ids, list(queues or ()))
        return [_claimed_item(row) for row in rows]

    # --- Finishing -----------------------------------------------------------

    def complete(
        self,
        job_id: int,
        extraction_time_ms: int | None = None,
        confidence: float | None = None,
        *,
        worker_id: str | None = None,
        attempt: int | None = None,
        **figures: Any,
    ) -> bool:
        """Mark a processing job completed; False (and no change) from any other
        state, or when ``worker_id``/``attempt`` no longer hold the job (fencing).
        ``figures``: pages, characters, extractor, and ``result`` (JSON to store)."""
        params = _completion(
            job_id, worker_id, attempt, extraction_time_ms, confidence, **figures
        )
        dialect = sql.dialect()
        # The metrics row and the subject's status too, in the same transaction.
        with dialect.steps() as cursor:
            return dialect.complete(cursor, params)

    def complete_and_claim(
        self,
        job_id: int,
        extraction_time_ms: int | None,
        *,
        worker_id: str,
        attempt: int,
        subject_id: int | None,
        queues: Iterable[str] | None,
        **figures: Any,
    ) -> tuple[bool, QueueItem | None]:
        """``complete``, and in the same transaction (on PostgreSQL, the same
        statement) ``claim`` the next job for ``worker_id``, passing over one of the
        same subject: (completed, the next item or None). One commit per job."""
        params = _completion(job_id, worker_id, attempt, extraction_time_ms, **figures)
        dialect = sql.dialect()
        with dialect.steps() as cursor:
            done, row = dialect.complete_and_claim(
                cursor, {**params, "subject": subject_id}, sorted(queues or ())
            )
        return done, _claimed_item(row)

    def set_progress(self, item: QueueItem, done: int, total: int) -> None:
        """Record how far a running attempt has got (best effort: a database hiccup
        costs one report, never the job)."""
        try:
            QueueItem.objects.filter(
                pk=item.pk, status=Status.PROCESSING, attempts=item.attempts
            ).update(progress_done=done, progress_total=total, progress_at=DbNow())
        except DatabaseError:
            logger.warning("Could not record the progress of job %s", item.pk)

    def record_details(self, job_id: int, attempt: int, details: dict) -> None:
        """Attach the extractor's figures to a completed attempt's metrics row."""
        ExtractionMetric.objects.filter(
            job_id=job_id, attempt=attempt, outcome=ExtractionMetric.Outcome.COMPLETED
        ).update(details=details)

    def failed(
        self,
        job_id: int,
        error_message: str,
        error_type: str = "unknown",
        max_retries: int = 3,
        *,
        worker_id: str | None = None,
        attempt: int | None = None,
        extraction_time_ms: int | None = None,
        extractor: str = "",
    ) -> bool:
        """Record a failed attempt: retry later per the backoff table, or fail for good."""
        error_type = retry.normalise_error_type(error_type)
        # A message the database refused (U+0000, a lone surrogate from a file name)
        # left the attempt unrecorded: the job ran again, for ever, uncharged.
        error_message = storable(error_message)
        with transaction.atomic():
            item = self._locked_processing(job_id, worker_id, attempt)
            if item is None:
                return False
            fields: dict[str, Any] = {
                "max_retries": max_retries,
                "error_type": error_type,
                "error_message": error_message,
                "updated_at": DbNow(),
            }
            delay = retry.retry_delay(error_type, item.attempts, max_retries)
            if delay is not None:
                status, outcome = Status.RETRY_PENDING, ExtractionMetric.Outcome.RETRY
                fields["next_retry_at"] = DbNow(delay)
            else:
                status, outcome = Status.FAILED, ExtractionMetric.Outcome.FAILED
                fields["finished_at"] = DbNow()
            QueueItem.objects.filter(pk=job_id).update(status=status, **fields)
            operations.status_changed(
                [(item.operation, item.document_id)],
                status,
                error_type=error_type,
                error_message=error_message,
            )
            _record(
                item,
                outcome,
                error_type=error_type,
                error_message=error_message,
                extraction_time_ms=extraction_time_ms,
                extractor=extractor,
            )
        return True

    def release(
        self,
        job_id: int,
        *,
        worker_id: str | None = None,
        attempt: int | None = None,
        interrupted: bool = False,
    ) -> bool:
        """Give a processing job back to pending without counting the attempt (its
        worker's own stop). A dead worker's job goes through ``release_orphaned``,
        which counts it. ``interrupted``: its worker stopped while it ran, which the
        job's error and its kind's record of failures (a task's errors) then say."""
        with transaction.atomic():
            item = self._locked_processing(job_id, worker_id, attempt)
            if item is None:
                return False
            reason: dict[str, str] = {}
            if interrupted:
                reason["error_message"] = INTERRUPTED_MESSAGE.format(
                    attempt=item.attempts, worker=item.claimed_by
                )
            QueueItem.objects.filter(pk=item.pk).update(
                status=Status.PENDING,
                attempts=F("attempts") - 1,
                claimed_by="",
                started_at=None,
                updated_at=DbNow(),
                **reason,
            )
            operations.status_changed(
                [(item.operation, item.document_id)], Status.PENDING, **reason
            )
            _record(item, ExtractionMetric.Outcome.RELEASED, **reason)
            if interrupted:
                _tell_failure(item, reason["error_message"])
            notify_workers()
        return True

    def cancel(self, job_id: int) -> bool:
        """Cancel a job that has not started (pending or waiting for a retry)."""
        return bool(self.cancel_many([job_id]))

    def cancel_many(self, job_ids: Iterable[int], batch: int = BULK_BATCH) -> list[int]:
        """``cancel`` for many jobs: ``batch`` of them per transaction, in a few
        statements whatever their number; the ids of those cancelled (the others
        had started or ended)."""
        cancelled: list[int] = []
        for ids in _batches(job_ids, batch):
            with transaction.atomic():
                waiting = QueueItem.objects.filter(
                    pk__in=ids, status__in=WAITING_STATUSES
                )
                cancelled += self._cancel_batch(waiting)
        return cancelled

    def stop_many(self, job_ids: Iterable[int], batch: int = BULK_BATCH) -> list[int]:
        """Cancel running jobs whose work runs in a child process (extractions). The
        worker holding one sees it at its next look (within its poll interval, as the
        stop wakes it) and ends the child; what the job did is discarded. A job that
        runs in the worker's own thread (a task) cannot be stopped midway and is left
        running. The ids of those stopped."""
        stoppable = operations.stoppable()
        stopped: list[int] = []
        for ids in _batches(job_ids, batch):
            with transaction.atomic():
                running = QueueItem.objects.filter(
                    pk__in=ids, status=Status.PROCESSING, operation__in=stoppable
                )
                ended = self._cancel_batch(running, STOPPED_MESSAGE)
                if ended:
                    notify_workers()  # the heartbeat threads look now
                stopped += ended
        return stopped

    def _cancel_batch(self, items: QuerySet, message: str = "") -> list[int]:
        """Cancel ``items``, with ``message`` as the reason the job and its document
        show; inside the caller's transaction."""
        rows = list(
            items.select_for_update().values_list("pk", "operation", "document_id")
        )
        if not rows:
            return []
        ids = [pk for pk, _, _ in rows]
        reason = {"error_message": message} if message else {}
        QueueItem.objects.filter(pk__in=ids).update(
            status=Status.CANCELLED,
            finished_at=DbNow(),
            next_retry_at=None,
            updated_at=DbNow(),
            **reason,
        )
        operations.status_changed(
            [(operation, document_id) for _, operation, document_id in rows],
            Status.CANCELLED,
            **reason,
        )
        # Only kinds that keep their own record of failures (tasks) need the items.
        told = {kind.name: kind for kind in operations.kinds() if kind.on_failure}
        if told.keys() & {operation for _, operation, _ in rows}:
            # Grouped by kind and reason: a bulk cancel stays a few statements.
            groups: dict[tuple[str, str], list[QueueItem]] = {}
            for item in QueueItem.objects.filter(pk__in=ids, operation__in=told):
                why = message or _cancel_reason(item)
                groups.setdefault((item.operation, why), []).append(item)
            for (name, why), ended in groups.items():
                kind, outcome = told[name], _queue_outcome(why)
                if kind.on_failures:
                    kind.on_failures(ended, outcome)
                else:
                    for item in ended:
                        kind.on_failure(item, outcome)
        return ids

    def shift_priority(self, job_ids: Iterable[int], step: int) -> int:
        """Raise (or, with a negative step, lower) the priority of waiting jobs, within
        ``MIN_PRIORITY``..``MAX_PRIORITY``; a job already at that end stays."""
        waiting = QueueItem.objects.waiting().filter(pk__in=list(job_ids))
        if step > 0:
            waiting = waiting.filter(priority__lt=MAX_PRIORITY)
        else:
            waiting = waiting.filter(priority__gt=MIN_PRIORITY)
        shifted = Least(Greatest(F("priority") + step, MIN_PRIORITY), MAX_PRIORITY)
        return waiting.update(priority=shifted, updated_at=DbNow())

    def record_refused(
        self, item: QueueItem, worker_id: str, extraction_time_ms: int | None = None
    ) -> None:
        """Log a late result that fencing refused: counted as refused, not completed."""
        ExtractionMetric.objects.create(
            job_id=item.pk,
            document_id=item.document_id,
            attempt=item.attempts,
            outcome=ExtractionMetric.Outcome.REFUSED,
            worker_id=worker_id,
            extraction_time_ms=extraction_time_ms,
            created_at=DbNow(),
        )

    def holds(self, job_id: int, worker_id: str, attempt: int) -> str | None:
        """The job's state if this claim (worker and attempt) still holds it or was the
        one that finished it; None once it was taken from this claim."""
        return (
            QueueItem.objects.filter(pk=job_id, claimed_by=worker_id, attempts=attempt)
            .values_list("status", flat=True)
            .first()
        )

    def claims(self, job_ids: Iterable[int]) -> dict[int, tuple[str, str, int]]:
        """Each job's status, claimant and attempt, in one statement (a worker's
        check that the jobs it runs are still its own)."""
        rows = QueueItem.objects.filter(pk__in=list(job_ids)).values_list(
            "pk", "status", "claimed_by", "attempts"
        )
        return {pk: (status, worker, attempt) for pk, status, worker, attempt in rows}

    def _locked_processing(
        self, job_id: int, worker_id: str | None, attempt: int | None = None
    ) -> QueueItem | None:
        item = QueueItem.objects.select_for_update().filter(pk=job_id).first()
        if item is None or item.status != Status.PROCESSING:
            return None
        if worker_id is not None and item.claimed_by != worker_id:
            # The job was rescued from this worker and handed to another one.
            return None
        if attempt is not None and item.attempts != attempt:
            # Rescued and claimed again, perhaps by this very worker: a newer claim.
            return None
        return item

    # --- Reading -------------------------------------------------------------

    def get_job(self, job_id: int) -> QueueItem | None:
        return QueueItem.objects.filter(pk=job_id).first()

    def get_pending_count(self) -> int:
        """Jobs waiting to run: pending, and retry_pending whether due or not."""
        return QueueItem.objects.waiting().count()

    def seconds_until_due(self, queues: Iterable[str] | None = None) -> float | None:
        """Seconds until the next delayed job (a retry, or a task's run_after) is
        due, by the database's clock; None when none waits."""
        delayed = QueueItem.objects.filter(status=Status.RETRY_PENDING)
        if queues:
            delayed = delayed.filter(queue_name__in=list(queues))
        next_at = delayed.aggregate(at=Min("next_retry_at"))["at"]
        return None if next_at is None else (next_at - db_now()).total_seconds()

    def get_failed_jobs(self, limit: int = 100) -> list[QueueItem]:
        return list(
            QueueItem.objects.filter(status=Status.FAILED).order_by(
                "-finished_at", "-id"
            )[:limit]
        )

    def get_queue_stats(self) -> dict[str, Any]:
        """Counts per state and the last day's figures, as the guide prints them."""
        now = db_now()
        counts = dict.fromkeys(Status.values, 0)
        counts.update(_counts_by_state())
        day = ExtractionMetric.objects.filter(created_at__gte=now - timedelta(hours=24))
        # The last day's figures are of the work people asked for (documents'
        # extractions, tasks): not of an app's own side work that follows each one
        # (thumbnails), which would count every document twice and pull the
        # average extraction time towards a thumbnail's.
        day = day.exclude(job__operation__in=operations.side_work())
        last_day = day.aggregate(
            completed_24h=Count(
                "id", filter=Q(outcome=ExtractionMetric.Outcome.COMPLETED)
            ),
            failed_24h=Count("id", filter=Q(outcome=ExtractionMetric.Outcome.FAILED)),
            refused_24h=Count("id", filter=Q(outcome=ExtractionMetric.Outcome.REFUSED)),
            avg_ms=Avg(
                "extraction_time_ms",
                filter=Q(outcome=ExtractionMetric.Outcome.COMPLETED),
            ),
        )
        last_hour = day.filter(
            created_at__gte=now - timedelta(hours=1),
            outcome=ExtractionMetric.Outcome.COMPLETED,
        ).count()
        oldest = QueueItem.objects.waiting().aggregate(t=Min("created_at"))["t"]
        return {
            **counts,
            "in_progress": counts[Status.PROCESSING],
            "total": sum(counts.values()),
            "completed_24h": last_day["completed_24h"],
            "failed_24h": last_day["failed_24h"],
            "refused_24h": last_day["refused_24h"],
            "avg_extraction_time_ms": round(last_day["avg_ms"] or 0, 1),
            "throughput_per_hour": last_hour,
            "oldest_pending_seconds": (now - oldest).total_seconds()
            if oldest
            else None,
        }

    # --- Repair --------------------------------------------------------------

    def retry_failed(self, job_id: int | None = None) -> int:
        """Put failed jobs back to pending with fresh attempts; returns how many."""
        failed = QueueItem.objects.filter(status=Status.FAILED)
        if job_id is not None:
            failed = failed.filter(pk=job_id)
        with transaction.atomic():
            retried = self._retry_batch(failed)
            if retried:
                notify_workers()
        return len(retried)

    def retry_failed_many(
        self, job_ids: Iterable[int], batch: int = BULK_BATCH
    ) -> list[int]:
        """``retry_failed`` for each of many jobs: ``batch`` of them per transaction,
        in a few statements whatever their number; the ids of those retried (the
        others were not failed, or their document is queued again)."""
        # Newest first: of a document's failed jobs the latest comes back, as with
        # ``retry_failed()``, even when they fall in different batches.
        retried: list[int] = []
        for ids in _batches(sorted(set(job_ids), reverse=True), batch):
            with transaction.atomic():
                retried += self._retry_batch(
                    QueueItem.objects.filter(pk__in=ids, status=Status.FAILED)
                )
        if retried:
            notify_workers()
        return retried

    def _retry_batch(self, failed: Any) -> list[int]:
        """Put the ``failed`` items back to pending; inside the caller's transaction."""
        # A document re-queued since it failed already has its active item: of this
        # operation, or of one doing the same work (a reprocess after a failed extract).
        failed = failed.annotate(work=work()).exclude(
            Exists(
                QueueItem.objects.active()
                .alias(work=work())
                .filter(document_id=OuterRef("document_id"), work=OuterRef("work"))
            )
        )
        rows = failed.select_for_update().order_by("-pk")
        # A document that failed more than once gets only its latest job back: two
        # would break the one-active-item-per-document-and-operation constraint,
        # or do the same work twice.
        latest: dict[tuple[Any, str], tuple[int, str]] = {}
        for pk, document_id, operation, job_work in rows.values_list(
            "pk", "document_id", "operation", "work"
        ):
            # Jobs without a subject (tasks) are each their own.
            latest.setdefault((document_id or f"#{pk}", job_work), (pk, operation))
        if not latest:
            return []
        ids = [pk for pk, _ in latest.values()]
        QueueItem.objects.filter(pk__in=ids, status=Status.FAILED).update(
            status=Status.PENDING,
            attempts=0,
            error_type="",
            error_message="",
            next_retry_at=None,
            claimed_by="",
            started_at=None,
            finished_at=None,
            updated_at=DbNow(),
        )
        operations.status_changed(
            [(op, doc) for (doc, _), (_, op) in latest.items() if isinstance(doc, int)],
            Status.PENDING,
            error_type="",
            error_message="",
        )
        return ids

    def cleanup_stale_jobs(
        self,
        stale_threshold_minutes: float = 30,
        *,
        exclude: Iterable[int] = (),
        max_retries: int | None = None,
    ) -> int:
        """Rescue jobs that have been processing longer than the threshold, except
        ``exclude`` (the caller's own live jobs). ``max_retries``: the rescuing
        worker's (as its failures use it); None, each item's own."""
        cutoff = DbNow(-60 * stale_threshold_minutes)
        # A long extraction that reports progress is not stuck: age counts from
        # its last progress.
        # A job its worker runs in its own thread (a task) has no timeout: while
        # that worker is alive, the job is running, however long it takes.
        in_thread = [kind.name for kind in operations.kinds() if kind.run is not None]
        alive = WorkerHeartbeat.objects.in_state("alive", stale_after())
        stuck = (
            QueueItem.objects.filter(status=Status.PROCESSING, started_at__lt=cutoff)
            .filter(Q(progress_at__isnull=True) | Q(progress_at__lt=cutoff))
            .exclude(pk__in=list(exclude))
            .exclude(
                operation__in=in_thread,
                claimed_by__in=Subquery(alive.values("worker_id")),
            )
        )
        return len(
            self._rescue(
                stuck,
                f"it was processing for over {stale_threshold_minutes:g} minutes",
                max_retries,
            )
        )

    def processing_longer_than(
        self, seconds: float, *, exclude: Iterable[int] = ()
    ) -> bool:
        """Whether a job other than ``exclude`` has been processing over ``seconds``:
        the only kind either rescue may take."""
        return (
            QueueItem.objects.filter(
                status=Status.PROCESSING, started_at__lt=DbNow(-seconds)
            )
            .exclude(pk__in=list(exclude))
            .exists()
        )

    def rescue_stale_workers(
        self,
        stale_after_seconds: float | None = None,
        *,
        exclude: Iterable[int] = (),
        max_retries: int | None = None,
    ) -> int:
        """Rescue the jobs of workers that are not alive (no heartbeat within the
        threshold, default ``stale_after()``), except ``exclude`` (the caller's own
        live jobs). ``max_retries`` as for ``cleanup_stale_jobs``."""
        orphaned = _orphaned(stale_after_seconds or stale_after())
        return len(
            self._rescue(
                orphaned.exclude(pk__in=list(exclude)),
                "its worker stopped responding",
                max_retries,
            )
        )

    def release_orphaned(self, job_ids: Iterable[int]) -> dict[int, str]:
        """An operator's release of processing jobs whose worker is not alive (no
        heartbeat within ``stale_after()``, or stopped without giving them back):
        a rescue, so the lost attempt counts as the workers' own rescue counts it,
        and a document that kills its worker ends failed instead of looping. A live
        worker's jobs are left alone. Returns the status each job was given, by id
        (pending, or failed with no retries left)."""
        alive = WorkerHeartbeat.objects.in_state("alive", stale_after())
        lost = QueueItem.objects.filter(
            pk__in=list(job_ids), status=Status.PROCESSING
        ).exclude(claimed_by__in=Subquery(alive.values("worker_id")))
        return self._rescue(
            lost, "an operator released it, its worker not alive", max_retries=None
        )

    def silent_holders(
        self, stale_after_seconds: float | None = None
    ) -> dict[str, Any]:
        """The workers ``rescue_stale_workers`` would take jobs from whose heartbeat
        rows say they are running (not stopped, not gone): worker id → last beat.
        Silent, they may be dead, or have shared an outage that has just ended."""
        holders = _orphaned(stale_after_seconds or stale_after()).values("claimed_by")
        return dict(
            WorkerHeartbeat.objects.filter(worker_id__in=Subquery(holders))
            .exclude(status=WorkerHeartbeat.State.STOPPED)
            .values_list("worker_id", "last_heartbeat")
        )

    def wait_for_silent_workers(
        self,
        stale_after_seconds: float | None = None,
        at_most: float | None = None,
        poll: float = 0.2,
        *,
        silent: dict[str, Any] | None = None,
    ) -> list[str]:
        """Before a process that has just reached the database rescues by heartbeat
        (a cron run, the operators' command): give each silent worker holding jobs
        time to beat again. After an outage every worker shared, all heartbeats are
        stale and the live ones beat within an interval of the database's return,
        which is at most a third of the stale threshold (the workers refuse a
        longer one): the grace is that, plus a second, and ``at_most`` seconds if
        given. Returns the workers still silent (those a rescue may take jobs from).
        ``silent``: ``silent_holders``' answer, if the caller has asked it already."""
        stale_after_seconds = stale_after_seconds or stale_after()
        grace = stale_after_seconds / 3 + 1.0
        if at_most is not None:
            grace = min(grace, max(at_most, 0.0))
        if silent is None:
            silent = self.silent_holders(stale_after_seconds)
        deadline = time.monotonic() + grace
        while silent and time.monotonic() < deadline:
            time.sleep(min(poll, max(deadline - time.monotonic(), 0.0)))
            beats = dict(
                WorkerHeartbeat.objects.filter(worker_id__in=list(silent)).values_list(
                    "worker_id", "last_heartbeat"
                )
            )
            # One that beat (or said it stopped, releasing its jobs) is alive.
            silent = {
                worker: last
                for worker, last in silent.items()
                if beats.get(worker, last) == last
            }
        return sorted(silent)

    def _rescue(
        self, queryset: Any, why: str, max_retries: int | None
    ) -> dict[int, str]:
        """Send lost jobs back to pending, and return the status each was given (by
        id: pending, or failed with no retries left); the lost attempt counts, so a job that keeps killing its worker ends failed instead of
        looping. A job whose row another transaction holds is passed over until the
        next look: it is being changed (finished, released), or its holder stalled
        mid-transaction, and waiting for it would hold up every other rescue, and
        the heartbeats of the worker whose heartbeat thread runs this one."""
        rescued: dict[int, str] = {}
        with transaction.atomic():
            for item in queryset.select_for_update(skip_locked=True):
                message = (
                    f"Attempt {item.attempts} was lost: {why} ({item.claimed_by})."
                )
                allowed = operations.retries_allowed(
                    item.operation,
                    item.max_retries if max_retries is None else max_retries,
                )
                fields: dict[str, Any] = {
                    "error_message": message,
                    "max_retries": allowed,
                }
                if item.attempts > allowed:
                    status, outcome = Status.FAILED, ExtractionMetric.Outcome.FAILED
                    fields.update(
                        finished_at=DbNow(),
                        error_type=ErrorType.UNKNOWN,
                        error_message=message + " No retries left.",
                    )
                else:
                    status, outcome = Status.PENDING, ExtractionMetric.Outcome.RESCUED
                _record(
                    item,
                    outcome,
                    error_type=ErrorType.UNKNOWN,
                    error_message=message,
                )
                QueueItem.objects.filter(pk=item.pk).update(
                    status=status, claimed_by="", updated_at=DbNow(), **fields
                )
                operations.status_changed(
                    [(item.operation, item.document_id)],
                    status,
                    error_type=fields.get("error_type", item.error_type),
                    error_message=fields["error_message"],
                )
                _tell_failure(item, fields["error_message"])
                logger.warning("Rescued job %s: %s", item.pk, message)
                rescued[item.pk] = status
            if rescued:
                notify_workers()
        return rescued

    def clear_finished(
        self,
        older_than_days: float,
        statuses: Iterable[str] | None = None,
        batch: int = 10_000,
    ) -> int:
        """Delete finished items older than N days, ``batch`` at a time (bounded
        memory and transactions however many); what the command and admin page use."""
        matching = self.finished_older_than(older_than_days, statuses)
        ids_in_order = matching.order_by("pk").values_list("pk", flat=True)
        deleted, after = 0, 0
        # Each batch starts past the last one's ids: it never walks the rows (or, on
        # PostgreSQL, the dead index entries) that the earlier batches deleted.
        while ids := list(ids_in_order.filter(pk__gt=after)[:batch]):
            deleted += delete_finished_items(ids)
            after = ids[-1]
        return deleted

    def clear_expired(self, keep_days: float, batch: int = 10_000) -> int:
        """Housekeeping: delete up to ``batch`` of the oldest items finished more
        than ``keep_days`` ago (0: keep them); how many were deleted."""
        if keep_days <= 0:
            return 0
        cutoff = DbNow(-86400 * keep_days)
        # Read off idx_queue_status_created, oldest first: bounded however long the
        # history (an item finishes after it is created).
        expired = QueueItem.objects.filter(
            status__in=FINISHED_STATUSES, created_at__lt=cutoff, updated_at__lt=cutoff
        ).order_by("created_at")
        return delete_finished_items(list(expired.values_list("pk", flat=True)[:batch]))

    def fold_metrics(
        self, margin_seconds: float = FOLD_MARGIN_SECONDS, batch: int = FOLD_BATCH
    ) -> int:
        """Housekeeping: add the metrics rows older than ``margin_seconds`` to
        ``MetricTotal`` and move ``MetricsFold``'s watermark past them, ``batch``
        rows per transaction; how many rows were folded. ``/metrics`` reads the
        totals and the rows above the watermark, in one statement."""
        MetricsFold.objects.bulk_create([MetricsFold(pk=1)], ignore_conflicts=True)
        folded = 0
        while True:
            with transaction.atomic():
                # One folder at a time: another waits here, then finds them folded.
                through = (
                    MetricsFold.objects.select_for_update()
                    .values_list("folded_through", flat=True)
                    .get(pk=1)
                )
                old = ExtractionMetric.objects.filter(
                    pk__gt=through, created_at__lt=DbNow(-margin_seconds)
                )
                ids = old.order_by("pk").values_list("pk", flat=True)
                full = list(ids[batch - 1 : batch])
                upto = full[0] if full else old.aggregate(m=Max("pk"))["m"]
                if upto is None:
                    return folded
                folded += self._fold_rows(through, upto)
                MetricsFold.objects.filter(pk=1).update(
                    folded_through=upto, folded_at=DbNow()
                )
            if not full:
                return folded

    def _fold_rows(self, after: int, upto: int) -> int:
        """Add the metrics rows of ids ``after`` < id <= ``upto`` to the totals."""
        rows = attempt_totals(
            ExtractionMetric.objects.filter(pk__gt=after, pk__lte=upto)
        )
        totals = {
            (t.outcome, t.error_type, t.duration_bucket): t
            for t in MetricTotal.objects.all()
        }
        changed, new, folded = [], [], 0
        for outcome, error_type, bucket, n, ms in rows:
            folded += n
            total = totals.get((outcome, error_type, bucket))
            if total is None:
                new.append(
                    MetricTotal(
                        outcome=outcome,
                        error_type=error_type,
                        duration_bucket=bucket,
                        attempts=n,
                        extraction_ms=ms or 0,
                    )
                )
            else:
                total.attempts += n
                total.extraction_ms += ms or 0
                changed.append(total)
        MetricTotal.objects.bulk_update(changed, ["attempts", "extraction_ms"])
        MetricTotal.objects.bulk_create(new)
        return folded

    def count_finished(self, every_seconds: float = COUNT_EVERY_SECONDS) -> bool:
        """Housekeeping: count the finished items by state and operation for
        ``/metrics`` (``FinishedCount``, up to the newest item's id), unless counted
        within ``every_seconds``; True if this call did."""
        MetricsFold.objects.bulk_create([MetricsFold(pk=1)], ignore_conflicts=True)
        due = MetricsFold.objects.filter(
            Q(counted_at__isnull=True) | Q(counted_at__lt=DbNow(-every_seconds)),
            pk=1,
        )
        if not due.exists():
            return False
        # Read outside the write transaction: a long read, no lock held meanwhile.
        through = QueueItem.objects.aggregate(m=Max("pk"))["m"] or 0
        counts = list(
            QueueItem.objects.finished()
            .filter(pk__lte=through)
            .values_list("status", "operation")
            .annotate(n=Count("id"))
            .order_by()
        )
        with transaction.atomic():
            # Another worker may have counted meanwhile: its count stands.
            if not list(due.select_for_update().values_list("pk", flat=True)):
                return False
            FinishedCount.objects.all().delete()
            FinishedCount.objects.bulk_create(
                FinishedCount(status=status, operation=operation, items=n)
                for status, operation, n in counts
            )
            MetricsFold.objects.filter(pk=1).update(
                counted_through=through, counted_at=DbNow()
            )
        return True

    def expire_metrics(self, keep_days: float, batch: int = 10_000) -> int:
        """Housekeeping: delete up to ``batch`` of the oldest metrics rows older than
        ``keep_days`` (and than a day: the dashboard's charts read the last 24
        hours), once folded into the totals and their job deleted (an item's page
        lists its attempts); how many. 0 days keeps them."""
        if keep_days <= 0:
            return 0
        through = (
            MetricsFold.objects.filter(pk=1)
            .values_list("folded_through", flat=True)
            .first()
        )
        if not through:
            return 0
        expired = ExtractionMetric.objects.filter(
            pk__lte=through,
            created_at__lt=DbNow(-86400 * max(keep_days, 1)),
            job__isnull=True,
        )
        ids = list(expired.order_by("pk").values_list("pk", flat=True)[:batch])
        return ExtractionMetric.objects.filter(pk__in=ids).delete()[0] if ids else 0

    def tidy(self) -> bool:
        """Housekeeping: let the database reclaim what finished jobs left behind,
        when it is worth it (``Dialect.tidy``); True if it did."""
        with connection.cursor() as cursor:
            return sql.dialect().tidy(cursor)

    def gone_workers_older_than(self, older_than_days: float) -> Any:
        """Heartbeats of workers stopped, or silent (and for a day at least), more
        than N days ago: one that was killed (SIGKILL, out of memory, its host lost)
        had no time to say it stopped, and its rows would stay stale for ever."""
        # A live worker's beat is seconds old, but one paused for a while (SIGSTOP,
        # a suspended VM, a host cut off from the database) is stale and not dead:
        # its beats update its row, and without one it would look dead to every
        # worker for good. Silent rows go after a day at least, whatever the age.
        silent_for = max(stale_after(), 86400.0)
        gone = Q(status=WorkerHeartbeat.State.STOPPED) | Q(
            last_heartbeat__lt=DbNow(-silent_for)
        )
        return WorkerHeartbeat.objects.filter(
            gone, last_heartbeat__lt=DbNow(-86400 * older_than_days)
        )

    def finished_older_than(
        self, older_than_days: float, statuses: Iterable[str] | None = None
    ) -> Any:
        return QueueItem.objects.filter(finished_before(older_than_days, statuses))


class DocumentQueueService:
    """The service text's API; the same code as ``QueueManager`` underneath."""

    def __init__(self, queue: QueueManager | None = None) -> None:
        self.queue = queue or QueueManager()

    def enqueue(
        self, document_id: int, operation: str, priority: int = 0
    ) -> int | None:
        """Queue ``operation`` for a document; None if one is already active."""
        return self.queue._enqueue(document_id, operation, priority, deduplicate=True)

    def get_pending_items(self, limit: int = 10) -> list[QueueItem]:
        """Items due now, in the order workers take them."""
        return list(QueueItem.objects.ready()[:limit])

    def mark_in_progress(self, item: QueueItem, worker_id: str = "") -> bool:
        """Claim this item; False if another worker got there first."""
        dialect = sql.dialect()
        with dialect.steps() as cursor:
            if dialect.claim_one(cursor, worker_id, item.pk) is None:
                return False
        item.refresh_from_db()
        return True

    def mark_completed(self, item: QueueItem) -> bool:
        return self.queue.complete(item.pk)

    def mark_failed(
        self, item: QueueItem, error_message: str, error_type: str = ErrorType.UNKNOWN
    ) -> bool:
        return self.queue.failed(
            item.pk, error_message, error_type, max_retries=item.max_retries
        )

    def get_queue_stats(self) -> dict[str, Any]:
        return self.queue.get_queue_stats()


def _counts_by_state() -> dict[str, int]:
    """The items by state, for ``get_queue_stats``: each counted, or, in a queue that
    has finished ``ESTIMATE_ABOVE`` items and more (a GROUP BY of every row there, the
    dashboard's slowest statement), as ``/metrics`` counts them (``QueueCollector.
    depth``): the active ones off their index, the finished ones as the housekeeping
    counted them within ``COUNT_STALE_SECONDS`` plus those of ids above its count."""
    from jobqueue.admin_lists import ESTIMATE_ABOVE
    from jobqueue.metrics import QueueCollector, fresh_count

    counted = FinishedCount.objects.filter(Exists(fresh_count())).aggregate(
        n=Sum("items")
    )
    if (counted["n"] or 0) < ESTIMATE_ABOVE:
        return dict(
            QueueItem.objects.values_list("status").annotate(n=Count("id")).order_by()
        )
    counts: dict[str, int] = {}
    for sample in QueueCollector().depth().samples:
        status = sample.labels["status"]
        counts[status] = counts.get(status, 0) + int(sample.value)
    return counts


def _orphaned(stale_after_seconds: float) -> QuerySet:
    """Processing items whose worker is not alive (no heartbeat within the
    threshold); not one claimed within it, whose worker's first beat may be pending."""
    alive = WorkerHeartbeat.objects.in_state("alive", stale_after_seconds)
    return QueueItem.objects.filter(
        status=Status.PROCESSING, started_at__lt=DbNow(-stale_after_seconds)
    ).exclude(claimed_by__in=Subquery(alive.values("worker_id")))


def _subjects() -> Any:
    """The items' subjects (the documents), known to the queue only by its key."""
    return QueueItem._meta.get_field("document").related_model.objects


def _tell_failure(item: QueueItem, message: str) -> None:
    """Tell the item's kind that the queue ended an attempt, or the job, itself (a
    rescue, a cancel), as the worker tells it of a failed attempt: a task records
    it among its errors and, once the job is over, announces that it finished."""
    kind = operations.get(item.operation)
    if kind is not None and kind.on_failure:
        kind.on_failure(item, _queue_outcome(message))


def _cancel_reason(item: QueueItem) -> str:
    """Why a waiting job was cancelled, for its kind's record of failures."""
    # An attempt its worker's stop interrupted does not count, but left its error.
    if item.attempts or item.error_message:
        return "Cancelled after it ran, while it waited to be retried."
    return "Cancelled before it ran."


def _queue_outcome(message: str) -> Any:
    """The ``Outcome`` of an attempt, or a job, the queue ended itself."""
    from jobqueue.runner import Outcome

    return Outcome(False, error_type=ErrorType.UNKNOWN, error_message=message)


def _batches(ids: Iterable[int], size: int) -> Iterator[list[int]]:
    """``ids`` in lists of at most ``size``, in their order."""
    chunk: list[int] = []
    for pk in ids:
        chunk.append(pk)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def finished_before(older_than_days: float, statuses: Iterable[str] | None = None) -> Q:
    """The items clearing deletes: finished (completed, failed and cancelled, or
    those of ``statuses``) more than N days ago."""
    statuses = list(statuses or FINISHED_STATUSES)
    if not set(statuses) <= set(FINISHED_STATUSES):
        raise ValueError("Only completed, failed and cancelled items can be cleared.")
    return Q(status__in=statuses, updated_at__lt=DbNow(-86400 * older_than_days))


def delete_finished_items(ids: list[int]) -> int:
    """Delete those of these queue items that are still finished, in one
    transaction of a few statements; how many. (Read before it, an item may have
    been retried since: it is active again, and stays.)

    Django's ``delete()`` would load every row (payloads and results too) to
    honour the ``SET_NULL`` of the rows that point at them (heartbeats' current
    job, metrics' job), then delete 100 at a time: here those pointers are nulled
    in one statement per table, as it would, and the rows deleted in one more.
    """
    if not ids:
        return 0
    with transaction.atomic():
        ids = list(
            QueueItem.objects.select_for_update()
            .filter(pk__in=ids, status__in=FINISHED_STATUSES)
            .values_list("pk", flat=True)
        )
        for relation in QueueItem._meta.get_fields(include_hidden=True):
            if relation.concrete or not relation.auto_created:
                continue  # the item's own fields: only what points at it counts
            if relation.on_delete is not models.SET_NULL:
                raise TypeError(f"{relation} is not SET_NULL: delete() is needed.")
            name = relation.field.name
            relation.related_model._base_manager.filter(**{f"{name}__in": ids}).update(
                **{name: None}
            )
        # The collector's own fast path (a plain DELETE), once nothing points here.
        return QueueItem.objects.filter(pk__in=ids)._raw_delete(connection.alias)


def _default_max_retries() -> int:
    from django.conf import settings

    return settings.QUEUE_MAX_RETRIES


def _record(item: QueueItem, outcome: str, **fields: Any) -> None:
    ExtractionMetric.objects.create(
        job=item,
        document_id=item.document_id,
        attempt=item.attempts,
        outcome=outcome,
        worker_id=item.claimed_by,
        created_at=DbNow(),
        **{k: v for k, v in fields.items() if v is not None},
    )


def _claimed_item(row: tuple | None) -> QueueItem | None:
    """The item a claim statement returned (its ``CLAIMED_FIELDS``), as a query
    loading those fields gives it, the others deferred. Made as Django unpickles a
    model: ``Model.__init__``'s pass over every field was a twentieth of a short
    job's CPU, and a claimed item has no field to default."""
    if row is None:
        return None
    values = dict(zip(sql.CLAIMED_FIELDS, row, strict=True))
    for name in ("payload", "result"):  # SQLite gives JSON as text
        if isinstance(values[name], str):
            values[name] = json.loads(values[name])
    for name in sql.CLAIMED_TIMES:
        values[name] = sql.as_datetime(values[name])
    item = QueueItem.__new__(QueueItem)
    item.__dict__.update(values)
    item._state = ModelState()
    item._state.adding, item._state.db = False, DEFAULT_DB_ALIAS
    return item


def _completion(
    job_id: int,
    worker_id: str | None,
    attempt: int | None,
    extraction_time_ms: int | None,
    confidence: float | None = None,
    *,
    pages: int | None = None,
    characters: int | None = None,
    extractor: str = "",
    result: Any = None,
) -> dict[str, Any]:
    """The completion statement's parameters."""
    return {
        "job": job_id,
        "worker": worker_id,
        "attempt": attempt,
        "ms": extraction_time_ms,
        "confidence": confidence,
        "pages": pages,
        "characters": characters,
        "extractor": extractor,
        "result": None if result is None else json.dumps(result),
    }
