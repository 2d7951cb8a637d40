"""The queue's figures, read from the database: what the dashboard (``dashboard``)
lays out and what other readers (probes, metrics) may share. Queries only; no HTML.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Avg, Count, Exists, Min, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce, TruncHour, TruncMinute
from django.utils.module_loading import import_string

from jobqueue import operations
from jobqueue.models import (
    ErrorType,
    ExtractionMetric,
    QueueControl,
    QueueItem,
    Status,
    WorkerHeartbeat,
)
from jobqueue.services import QueueManager

# Every attempt that did not succeed counts as a failure on the charts.
FAILURE_OUTCOMES = (
    ExtractionMetric.Outcome.RETRY,
    ExtractionMetric.Outcome.FAILED,
    ExtractionMetric.Outcome.RESCUED,
)


@dataclass(frozen=True, slots=True)
class Bucket:
    """Attempts that ended within one minute or hour."""

    start: datetime
    completed: int
    failed: int


def throughput(now: datetime, *, buckets: int, step: str) -> list[Bucket]:
    """Completed and failed attempts per minute or hour, oldest first, gaps as zero."""
    size = timedelta(minutes=1) if step == "minute" else timedelta(hours=1)
    trunc = TruncMinute if step == "minute" else TruncHour
    now = now.astimezone(UTC)
    current = now.replace(second=0, microsecond=0)
    if step != "minute":
        current = current.replace(minute=0)
    first = current - size * (buckets - 1)
    # Bucketing in UTC on both databases keeps the Python side and the SQL side aligned.
    rows = (
        ExtractionMetric.objects.filter(created_at__gte=first)
        .annotate(bucket=trunc("created_at", tzinfo=UTC))
        .values("bucket")
        .annotate(
            completed=Count("id", filter=Q(outcome=ExtractionMetric.Outcome.COMPLETED)),
            failed=Count("id", filter=Q(outcome__in=FAILURE_OUTCOMES)),
        )
        .order_by("bucket")
    )
    found = {row["bucket"].astimezone(UTC): row for row in rows}
    result = []
    for i in range(buckets):
        start = first + size * i
        row = found.get(start, {})
        result.append(Bucket(start, row.get("completed", 0), row.get("failed", 0)))
    return result


def failures_by_type(since: datetime) -> list[dict[str, Any]]:
    """Failed attempts since ``since`` and jobs failed now, per error type."""
    attempts = dict(
        ExtractionMetric.objects.filter(
            created_at__gte=since, outcome__in=FAILURE_OUTCOMES
        )
        .values_list("error_type")
        .annotate(n=Count("id"))
        .order_by()
    )
    failed_now = dict(
        QueueItem.objects.filter(status=Status.FAILED)
        .values_list("error_type")
        .annotate(n=Count("id"))
        .order_by()
    )
    peak = max([*attempts.values(), *failed_now.values(), 1])
    rows = []
    for value, label in [*ErrorType.choices, ("", "(none)")]:
        n, now_failed = attempts.get(value, 0), failed_now.get(value, 0)
        if n or now_failed:
            rows.append(
                {
                    "value": value,
                    "label": label,
                    "attempts": n,
                    "failed_now": now_failed,
                    "bar": round(200 * n / peak),
                }
            )
    return rows


def oldest_due_seconds(now: datetime) -> float | None:
    """How long the job that has waited longest since it was due has waited: a
    pending job since it was queued, a retry or a task's ``run_after`` since its time
    came; None when no job is due. What a backlog alert needs: a task scheduled for
    tomorrow is not late (``get_queue_stats``' figure counts it from its creation),
    and a retry that is due waits as ``retry_pending`` until a worker claims it (the
    pending jobs alone miss a backlog of them). Two reads, each off an index
    (``idx_queue_status_created``, ``idx_queue_status_retry``)."""
    queued = QueueItem.objects.filter(status=Status.PENDING).aggregate(
        t=Min("created_at")
    )["t"]
    due = QueueItem.objects.filter(
        status=Status.RETRY_PENDING, next_retry_at__lte=now
    ).aggregate(t=Min("next_retry_at"))["t"]
    since = min((t for t in (queued, due) if t is not None), default=None)
    return None if since is None else max((now - since).total_seconds(), 0.0)


def paused_for(control: QueueControl | None, now: datetime) -> float | None:
    """Seconds since an operator paused processing; None while it runs."""
    if control is None or not control.paused:
        return None
    return max((now - control.changed_at).total_seconds(), 0.0)


def recent_failures(limit: int) -> list[QueueItem]:
    """The latest failed jobs, newest first (those without a finish time last),
    read backwards off ``idx_queue_failed_recent``: ``limit`` entries however many
    have failed. (An index cannot hold SQLite's NULLS LAST: the undated, which
    only bulk writes leave, are a second read when the dated are too few.)"""
    failed = (
        QueueItem.objects.filter(status=Status.FAILED)
        .select_related("document")
        .defer("document__text", "document__search_grams")
    )
    found = list(
        failed.filter(finished_at__isnull=False).order_by("-finished_at", "-id")[:limit]
    )
    if len(found) < limit:
        found += failed.filter(finished_at__isnull=True).order_by("-id")[
            : limit - len(found)
        ]
    return found


def with_held_jobs(workers: QuerySet) -> QuerySet:
    """Worker rows with what the queue says each holds: ``held_jobs`` (its
    processing jobs), ``held_job`` (the oldest of them) and ``holds`` (whether the
    job it last reported is still its own). A worker reports a claim at its next
    beat: one killed before that beat reads idle, with no job, while its jobs wait
    for a rescue; the queue items are the truth."""
    held = QueueItem.objects.filter(
        status=Status.PROCESSING, claimed_by=OuterRef("worker_id")
    ).order_by()
    count = held.values("claimed_by").annotate(n=Count("pk")).values("n")[:1]
    return workers.annotate(
        held_jobs=Coalesce(Subquery(count), 0),
        held_job=Subquery(held.order_by("pk").values("pk")[:1]),
        holds=Exists(held.filter(pk=OuterRef("current_job"))),
    )


def shown_status(worker: WorkerHeartbeat) -> str:
    """A worker's status as pages show it: busy while it holds a job, whatever its
    last beat said (``with_held_jobs``)."""
    if worker.held_jobs and worker.status != WorkerHeartbeat.State.STOPPED:
        return WorkerHeartbeat.State.BUSY.label
    return worker.get_status_display()


def shown_job(worker: WorkerHeartbeat) -> int | None:
    """The job a worker row shows: the one it reported while it still holds it,
    else one it holds (its report lags), else the one it reported last."""
    if worker.held_jobs and not worker.holds:
        return worker.held_job
    return worker.current_job_id


def shown(worker: WorkerHeartbeat) -> WorkerHeartbeat:
    """The worker with ``shown_status`` and ``shown_job`` set, for templates."""
    worker.shown_status, worker.shown_job = shown_status(worker), shown_job(worker)
    return worker


def overview(now: datetime) -> dict[str, Any]:
    """Everything the dashboard shows, read in a handful of aggregate queries."""
    return {
        "stats": QueueManager().get_queue_stats(),
        "oldest_due_seconds": oldest_due_seconds(now),
        "last_hour": throughput(now, buckets=60, step="minute"),
        "last_day": throughput(now, buckets=24, step="hour"),
        "last_hour_ms": ExtractionMetric.objects.filter(
            created_at__gte=now - timedelta(hours=1),
            outcome=ExtractionMetric.Outcome.COMPLETED,
        )
        .exclude(job__operation__in=operations.side_work())
        .aggregate(ms=Avg("extraction_time_ms"))["ms"],
        "failure_types": failures_by_type(now - timedelta(hours=24)),
        "live_workers": [
            shown(w)
            for w in with_held_jobs(WorkerHeartbeat.objects.in_state("alive")).order_by(
                "worker_id"
            )
        ],
        "stale_workers": WorkerHeartbeat.objects.in_state("stale").count(),
        "recent_failures": recent_failures(10),
        "control": QueueControl.current(),
        # Figures other apps add (label, value, optional warning), e.g. OCR's.
        "extra_figures": [
            figure
            for path in settings.QUEUE_DASHBOARD_FIGURES
            for figure in import_string(path)(now)
        ],
    }
