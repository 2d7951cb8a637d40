"""The durable queue: items, worker heartbeats, per-attempt metrics and the pause switch."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import connection, models, transaction
from django.db.models import Case, Count, F, Q, QuerySet, Sum, Value, When
from django.utils import timezone
from django_tasks.base import TASK_MAX_PRIORITY, TASK_MIN_PRIORITY

from jobqueue.sql import DbNow, dialect

logger = logging.getLogger(__name__)


class Status(models.TextChoices):
    """States of a queue item (the guide's diagram, plus cancelled)."""

    PENDING = "pending", "Pending"
    PROCESSING = "processing", "Processing"
    COMPLETED = "completed", "Completed"
    RETRY_PENDING = "retry_pending", "Retry pending"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


ACTIVE_STATUSES = (Status.PENDING, Status.PROCESSING, Status.RETRY_PENDING)
WAITING_STATUSES = (Status.PENDING, Status.RETRY_PENDING)
FINISHED_STATUSES = (Status.COMPLETED, Status.FAILED, Status.CANCELLED)


class ErrorType(models.TextChoices):
    """Why an attempt failed; decides whether and when it is retried."""

    TIMEOUT = "timeout", "Timeout"
    CORRUPTION = "corruption", "Corrupt file"
    EXTRACTOR_MISSING = "extractor_missing", "Extractor missing"
    UNSUPPORTED = "unsupported", "Unsupported type"
    UNKNOWN = "unknown", "Unknown"


class Operation(models.TextChoices):
    """What a queue item asks for."""

    EXTRACT = "extract", "Extract"
    REPROCESS = "reprocess", "Reprocess"
    # A job that does nothing but go through the queue: for benchmarks and checks.
    NOOP = "noop", "No-op (benchmark)"
    # A Django task (@task) run through jobqueue.tasks.QueueBackend.
    TASK = "task", "Task"
    # A document's first-page picture, made once its text is read.
    THUMBNAIL = "thumbnail", "Thumbnail"


# Operations that do another's work on their subject: a reprocess reads the document's
# text again, as its extraction does. One work is never active twice on a subject (the
# constraint below), so the two never run at once.
SAME_WORK_AS = {Operation.REPROCESS: Operation.EXTRACT}


def work() -> Case:
    """An item's work, in SQL: its operation, or the one whose work it does again."""
    return Case(
        *(When(operation=op, then=Value(w)) for op, w in SAME_WORK_AS.items()),
        default=F("operation"),
    )


DEFAULT_QUEUE = "default"


class QueueItemQuerySet(models.QuerySet["QueueItem"]):
    """Named filters of the queue; locking and claiming live in services."""

    def active(self) -> QueueItemQuerySet:
        return self.filter(status__in=ACTIVE_STATUSES)

    def waiting(self) -> QueueItemQuerySet:
        return self.filter(status__in=WAITING_STATUSES)

    def ready(self) -> QueueItemQuerySet:
        """Items a worker may claim now (by the database's clock), in claim order."""
        return self.filter(
            Q(status=Status.PENDING)
            | Q(status=Status.RETRY_PENDING, next_retry_at__lte=DbNow())
        ).order_by("-priority", "created_at", "id")

    def finished(self) -> QueueItemQuerySet:
        return self.filter(status__in=FINISHED_STATUSES)

    def doing_work_of(self, operation: str) -> QueueItemQuerySet:
        """Items of ``operation``, or of one doing the same work (``work()``)."""
        return self.alias(work=work()).filter(
            work=SAME_WORK_AS.get(operation, operation)
        )


class QueueItem(models.Model):
    """One unit of work (the guide's Job): on a document, or a task's call."""

    # The job's subject, if it has one (tasks have none).
    document = models.ForeignKey(
        "documents.Document",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="queue_items",
    )
    operation = models.CharField(
        max_length=16, choices=Operation.choices, default=Operation.EXTRACT
    )
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING
    )
    priority = models.IntegerField(default=0)
    queue_name = models.CharField(max_length=100, default=DEFAULT_QUEUE)
    # Per-kind details (a task's name, arguments and errors).
    payload = models.JSONField(default=dict, blank=True)
    # What the job returned, as JSON (a task's return value).
    result = models.JSONField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    max_retries = models.PositiveIntegerField(default=3)
    error_type = models.CharField(max_length=32, choices=ErrorType.choices, blank=True)
    error_message = models.TextField(blank=True)
    next_retry_at = models.DateTimeField(null=True, blank=True)
    claimed_by = models.CharField(max_length=128, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    extraction_time_ms = models.PositiveIntegerField(null=True, blank=True)
    confidence = models.FloatField(null=True, blank=True)
    # A long extraction's progress (e.g. pages OCRed of all); current while
    # progress_at is after started_at.
    progress_done = models.PositiveIntegerField(null=True, blank=True)
    progress_total = models.PositiveIntegerField(null=True, blank=True)
    progress_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=False)
    updated_at = models.DateTimeField(auto_now=True)

    objects = QueueItemQuerySet.as_manager()

    class Meta:
        db_table = "extraction_queue"
        verbose_name = "queue item"
        indexes = [
            models.Index(
                fields=["status", "created_at"], name="idx_queue_status_created"
            ),
            # The claims' two indexes hold only the rows a claim may take: a job's
            # other states never write them, and finished jobs never slow a claim.
            models.Index(
                fields=["status", "next_retry_at"],
                condition=Q(status=Status.RETRY_PENDING),
                name="idx_queue_status_retry",
            ),
            # Matches the claim query exactly, so taking the next job reads one entry.
            models.Index(
                "status",
                models.F("priority").desc(),
                "created_at",
                "id",
                condition=Q(status=Status.PENDING),
                name="idx_queue_claim_order",
            ),
            # The dashboard's latest failures, read newest first off the index
            # (backwards): only failed items enter it, so no other job pays for it.
            models.Index(
                fields=["finished_at", "id"],
                condition=Q(status=Status.FAILED),
                name="idx_queue_failed_recent",
            ),
        ]
        constraints = [
            # Deduplication belongs to the database, not to a read-then-write race:
            # one active item per subject and work (its operation, or the one whose
            # work it does again).
            models.UniqueConstraint(
                F("document"),
                work(),
                condition=Q(status__in=ACTIVE_STATUSES),
                name="uniq_active_item_per_document_work",
            ),
        ]

    def __str__(self) -> str:
        subject = f" of document {self.document_id}" if self.document_id else ""
        return f"#{self.pk} {self.operation}{subject} ({self.status})"

    @property
    def attachment_id(self) -> int:
        """The guide's name for the document this job works on."""
        return self.document_id

    @property
    def progress(self) -> tuple[int, int] | None:
        """(done, total) reported by the current attempt, if it reported any."""
        if (
            self.status != Status.PROCESSING
            or self.progress_at is None
            or self.started_at is None
            or self.progress_at < self.started_at
        ):
            return None
        return self.progress_done, self.progress_total


# Priorities run from -100 to 100 (higher first), as Django's tasks allow.
MIN_PRIORITY, MAX_PRIORITY = TASK_MIN_PRIORITY, TASK_MAX_PRIORITY
PRIORITY_RANGE = f"{MIN_PRIORITY} to {MAX_PRIORITY}"

# Staff with this permission are the queue's operators: they act on jobs, look at
# workers and metrics, clear old entries; staff with view permissions only look.
OPERATOR_PERMISSION = "jobqueue.change_queueitem"


def is_operator(user) -> bool:
    """Staff who may steer the queue (the change permission on queue items)."""
    return user.is_active and user.is_staff and user.has_perm(OPERATOR_PERMISSION)


LIVENESS = ("alive", "stale", "stopped")


def stale_after(heartbeat_interval: float | None = None) -> float:
    """Seconds without a heartbeat after which a worker is presumed dead (its jobs
    rescued): ``QUEUE_STALE_WORKER_SECONDS``, and never less than three heartbeats."""
    if heartbeat_interval is None:
        heartbeat_interval = settings.QUEUE_HEARTBEAT_INTERVAL
    return max(settings.QUEUE_STALE_WORKER_SECONDS, 3 * heartbeat_interval)


def stale_job_after(
    extraction_timeout: float | None = None, minutes: float | None = None
) -> float:
    """Minutes processing after which a job is presumed lost (rescued by age):
    ``minutes`` or ``QUEUE_STALE_JOB_MINUTES``, and never less than twice the
    extraction timeout: a job older than that cannot be running any more."""
    if extraction_timeout is None:
        extraction_timeout = settings.QUEUE_EXTRACTION_TIMEOUT
    return max(minutes or settings.QUEUE_STALE_JOB_MINUTES, 2 * extraction_timeout / 60)


class WorkerHeartbeatQuerySet(models.QuerySet["WorkerHeartbeat"]):
    """The one definition of a worker's state, by the database's clock: stopped
    (it said so), alive (a beat within ``stale_after``), or stale (neither)."""

    def with_liveness(self, stale_seconds: float | None = None) -> Any:
        """Each row annotated with ``liveness``: alive, stale or stopped."""
        fresh = Q(last_heartbeat__gte=DbNow(-(stale_seconds or stale_after())))
        return self.annotate(
            liveness=Case(
                When(status=WorkerHeartbeat.State.STOPPED, then=Value("stopped")),
                When(fresh, then=Value("alive")),
                default=Value("stale"),
            )
        )

    def in_state(self, liveness: str, stale_seconds: float | None = None) -> Any:
        if liveness not in LIVENESS:
            raise ValueError(f"Unknown worker state {liveness!r}.")
        return self.with_liveness(stale_seconds).filter(liveness=liveness)


class WorkerHeartbeat(models.Model):
    """A worker thread's last sign of life (the guide's worker_heartbeat table)."""

    class State(models.TextChoices):
        IDLE = "idle", "Idle"
        BUSY = "busy", "Busy"
        PAUSED = "paused", "Paused"
        STOPPED = "stopped", "Stopped"

    worker_id = models.CharField(max_length=128, unique=True)
    status = models.CharField(max_length=16, choices=State.choices, default=State.IDLE)
    current_job = models.ForeignKey(
        QueueItem, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    jobs_completed = models.PositiveIntegerField(default=0)
    jobs_failed = models.PositiveIntegerField(default=0)
    # Late results refused because the job had been taken from this worker meanwhile.
    jobs_refused = models.PositiveIntegerField(default=0)
    hostname = models.CharField(max_length=255, blank=True)
    pid = models.PositiveIntegerField(null=True, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    last_heartbeat = models.DateTimeField(default=timezone.now, db_index=True)

    objects = WorkerHeartbeatQuerySet.as_manager()

    class Meta:
        db_table = "worker_heartbeat"

    def __str__(self) -> str:
        return self.worker_id


class ExtractionMetric(models.Model):
    """One row per attempt: its outcome and figures."""

    class Outcome(models.TextChoices):
        COMPLETED = "completed", "Completed"
        RETRY = "retry", "Failed, will retry"
        FAILED = "failed", "Failed"
        RESCUED = "rescued", "Worker lost, rescued"
        RELEASED = "released", "Released"
        REFUSED = "refused", "Late result refused"

    job = models.ForeignKey(
        QueueItem, null=True, on_delete=models.SET_NULL, related_name="metrics"
    )
    document = models.ForeignKey(
        "documents.Document", null=True, on_delete=models.SET_NULL, related_name="+"
    )
    attempt = models.PositiveIntegerField(default=1)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    error_type = models.CharField(max_length=32, choices=ErrorType.choices, blank=True)
    error_message = models.TextField(blank=True)
    extraction_time_ms = models.PositiveIntegerField(null=True, blank=True)
    pages = models.PositiveIntegerField(null=True, blank=True)
    characters = models.PositiveIntegerField(null=True, blank=True)
    confidence = models.FloatField(null=True, blank=True)
    extractor = models.CharField(max_length=64, blank=True)
    worker_id = models.CharField(max_length=128, blank=True)
    # The extractor's own figures (e.g. {"ocr_pages": "2-5", "ocr_ms": 8120}).
    details = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        db_table = "extraction_metrics"
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"job {self.job_id} attempt {self.attempt}: {self.outcome}"


# Upper bounds (seconds) of the extraction-time histogram: a text file to a long scan.
DURATION_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
UNTIMED, OVERFLOW = "", "+Inf"


def attempt_totals(metrics: QuerySet) -> QuerySet:
    """``metrics`` rows summed as ``MetricTotal`` holds them: (outcome, error type,
    duration bucket, attempts, extraction ms), the bucket being the first bound
    (seconds, as text) the row's extraction time is within, ``OVERFLOW`` beyond the
    last, ``UNTIMED`` without one. What the housekeeping folds, and what a scrape
    adds to the folded totals."""
    bucket = Case(
        When(extraction_time_ms__isnull=True, then=Value(UNTIMED)),
        *(
            When(extraction_time_ms__lte=bound * 1000, then=Value(str(bound)))
            for bound in DURATION_BUCKETS
        ),
        default=Value(OVERFLOW),
        output_field=models.CharField(),
    )
    return (
        metrics.annotate(bucket=bucket)
        .values_list("outcome", "error_type", "bucket")
        .annotate(n=Count("id"), ms=Sum("extraction_time_ms"))
        .order_by()
    )


class MetricTotal(models.Model):
    """Attempts folded from ``extraction_metrics`` rows up to ``MetricsFold``'s
    watermark, by outcome, error type and duration bucket: the counters and the
    histogram of ``/metrics`` are these plus the rows above the watermark, so a
    scrape reads a few rows whatever the history, and old rows may be deleted
    without lowering a counter."""

    outcome = models.CharField(max_length=16)
    error_type = models.CharField(max_length=32, blank=True)
    # The histogram bucket's upper bound as Prometheus writes it ("0.1", "+Inf"),
    # empty for attempts without an extraction time.
    duration_bucket = models.CharField(max_length=16, blank=True)
    attempts = models.PositiveBigIntegerField(default=0)
    extraction_ms = models.PositiveBigIntegerField(default=0)

    class Meta:
        db_table = "extraction_metric_totals"
        constraints = [
            models.UniqueConstraint(
                fields=["outcome", "error_type", "duration_bucket"],
                name="uniq_metric_total",
            )
        ]

    def __str__(self) -> str:
        return (
            f"{self.outcome} {self.error_type} {self.duration_bucket}: {self.attempts}"
        )


class FinishedCount(models.Model):
    """Finished queue items of ids up to ``MetricsFold.counted_through``, by state
    and operation, as the housekeeping last counted them: ``/metrics``' depth adds
    the waiting and running items and the finished ones queued since, read live."""

    status = models.CharField(max_length=16)
    operation = models.CharField(max_length=16)
    items = models.PositiveBigIntegerField(default=0)

    class Meta:
        db_table = "extraction_queue_finished_counts"

    def __str__(self) -> str:
        return f"{self.operation} {self.status}: {self.items}"


class MetricsFold(models.Model):
    """The single row saying how far the housekeeping's folds go: up to which
    ``extraction_metrics`` id the totals, up to which queue item the finished
    counts (and when, by the database's clock, they were counted)."""

    folded_through = models.BigIntegerField(default=0)
    folded_at = models.DateTimeField(null=True, blank=True)
    counted_through = models.BigIntegerField(default=0)
    counted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "extraction_metrics_fold"

    def __str__(self) -> str:
        return f"folded through {self.folded_through}"


class QueueControl(models.Model):
    """The single row holding the operators' pause switch for all processing."""

    paused = models.BooleanField(default=False)
    changed_at = models.DateTimeField(default=timezone.now)
    changed_by = models.CharField(max_length=150, blank=True)

    class Meta:
        db_table = "queue_control"

    def __str__(self) -> str:
        return "paused" if self.paused else "running"

    def unchanged(self, changed_at: str) -> str:
        """What a pause or resume that changed nothing says: the switch as it is,
        and who paused it and since when (``changed_at``, as the caller shows
        times), for whoever must ask them."""
        if not self.paused:
            return f"Processing was already {self}"
        by = f"by {self.changed_by}, " if self.changed_by else ""
        return f"Processing was already {self} ({by}since {changed_at})"

    @classmethod
    def is_paused(cls) -> bool:
        return cls.objects.filter(pk=1, paused=True).exists()

    @classmethod
    def current(cls) -> QueueControl | None:
        """The switch's row (who changed it, and when), None before its first use."""
        return cls.objects.filter(pk=1).first()

    @classmethod
    def set_paused(cls, paused: bool, *, by: str = "") -> bool:
        """Pause or resume all processing, logged with who did it; False when it
        already was so, which changes nothing (not who paused it, nor when)."""
        with transaction.atomic():
            control, _ = cls.objects.select_for_update().get_or_create(pk=1)
            if control.paused == paused:
                return False
            # The database's time: how long a pause has lasted is read against it.
            cls.objects.filter(pk=1).update(
                paused=paused, changed_at=DbNow(), changed_by=by
            )
            # Idle workers read the switch when woken, not every second.
            with connection.cursor() as cursor:
                dialect().notify(cursor)
        logger.info("Queue %s by %s", "paused" if paused else "resumed", by or "?")
        return True
