"""The operators' console beyond the change lists: figures, SVG charts, pause and clear.

The admin (``jobqueue.admin``) mounts the views below through ``get_urls`` and
``admin_site.admin_view``; every state change goes through ``QueueManager`` or
``QueueControl``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import Avg, Count, F, Q, QuerySet
from django.db.models.functions import TruncHour, TruncMinute
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.module_loading import import_string
from django.utils.safestring import SafeString
from django.utils.translation import ngettext

from jobqueue.models import (
    FINISHED_STATUSES,
    ErrorType,
    ExtractionMetric,
    QueueControl,
    QueueItem,
    Status,
    WorkerHeartbeat,
)
from jobqueue.services import QueueManager
from jobqueue.sql import db_now

if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin

logger = logging.getLogger(__name__)

STATUS_COLOURS = {
    Status.PENDING: "#6c757d",
    Status.PROCESSING: "#0d6efd",
    Status.COMPLETED: "#198754",
    Status.RETRY_PENDING: "#fd7e14",
    Status.FAILED: "#dc3545",
    Status.CANCELLED: "#495057",
}
OUTCOME_COLOURS = {
    ExtractionMetric.Outcome.COMPLETED: "#198754",
    ExtractionMetric.Outcome.RETRY: "#fd7e14",
    ExtractionMetric.Outcome.FAILED: "#dc3545",
    ExtractionMetric.Outcome.RESCUED: "#6f42c1",
    ExtractionMetric.Outcome.RELEASED: "#6c757d",
}
WORKER_COLOURS = {"alive": "#198754", "stale": "#dc3545", "stopped": "#6c757d"}
# Every attempt that did not succeed counts as a failure on the charts.
FAILURE_OUTCOMES = (
    ExtractionMetric.Outcome.RETRY,
    ExtractionMetric.Outcome.FAILED,
    ExtractionMetric.Outcome.RESCUED,
)


# --- Formatting -------------------------------------------------------------


def short_duration(seconds: float) -> str:
    """A compact duration such as "25 s", "4 min", "3 h 5 min" or "2 d 4 h"."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 3600:
        return f"{minutes} min"
    if seconds < 86400:
        rest = minutes % 60
        return f"{hours} h {rest} min" if rest else f"{hours} h"
    rest = hours % 24
    return f"{days} d {rest} h" if rest else f"{days} d"


def badge(label: str, colour: str) -> SafeString:
    """A coloured pill; the label is escaped."""
    return format_html(
        '<span style="background:{};color:#fff;padding:1px 8px;border-radius:9px;'
        'white-space:nowrap;font-size:0.9em">{}</span>',
        colour,
        label,
    )


def status_badge(status: str) -> SafeString:
    """The badge of a queue state."""
    return badge(Status(status).label, STATUS_COLOURS.get(status, "#6c757d"))


def is_encrypted(error_type: str, error_message: str) -> bool:
    """A password-protected file. Its type stays ``corruption`` (it fails for good
    just the same), but it must be called locked, not damaged."""
    text = error_message.casefold()
    return error_type == ErrorType.CORRUPTION and (
        "encrypted" in text or "password" in text
    )


def error_label(error_type: str, error_message: str) -> str:
    """A short name for an error: "Encrypted" where the file is locked, not damaged."""
    if not error_type:
        return ""
    if is_encrypted(error_type, error_message):
        return "Encrypted"
    return ErrorType(error_type).label if error_type in ErrorType.values else error_type


def document_link(document_id: int, name: str) -> SafeString:
    """A link to the document's admin page, its (untrusted) name escaped."""
    url = reverse("admin:documents_document_change", args=[document_id])
    return format_html('<a href="{}">{}</a>', url, name)


def job_link(job_id: int | None) -> SafeString | str:
    """A link to a queue item's admin page."""
    if job_id is None:
        return "-"
    url = reverse("admin:jobqueue_queueitem_change", args=[job_id])
    return format_html('<a href="{}">#{}</a>', url, job_id)


# --- Workers ----------------------------------------------------------------


def stale_cutoff(now: datetime | None = None) -> datetime:
    """Heartbeats older than this belong to workers presumed dead."""
    now = now or db_now()
    return now - timedelta(seconds=settings.QUEUE_STALE_WORKER_SECONDS)


def worker_state(heartbeat: WorkerHeartbeat, now: datetime | None = None) -> str:
    """alive, stale (no beat within the threshold, not stopped) or stopped."""
    if heartbeat.status == WorkerHeartbeat.State.STOPPED:
        return "stopped"
    return "alive" if heartbeat.last_heartbeat >= stale_cutoff(now) else "stale"


def workers_in_state(
    queryset: QuerySet[WorkerHeartbeat], state: str, now: datetime | None = None
) -> QuerySet[WorkerHeartbeat]:
    """The same rule as ``worker_state``, as a database filter."""
    stopped = Q(status=WorkerHeartbeat.State.STOPPED)
    fresh = Q(last_heartbeat__gte=stale_cutoff(now))
    if state == "stopped":
        return queryset.filter(stopped)
    if state == "alive":
        return queryset.filter(fresh).exclude(stopped)
    if state == "stale":
        return queryset.exclude(fresh).exclude(stopped)
    return queryset


# --- Charts -----------------------------------------------------------------


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


def bar_chart(buckets: list[Bucket], *, label_format: str, title: str) -> dict:
    """Geometry of a stacked bar chart (failed under completed) for an inline SVG.

    The template ``admin/jobqueue/bar_chart.html`` draws it, so every label is escaped.
    """
    width, top, plot = 720, 14, 116
    peak = max((b.completed + b.failed for b in buckets), default=0) or 1
    slot = width / max(len(buckets), 1)
    bars = []
    for i, b in enumerate(buckets):
        failed_h, done_h = plot * b.failed / peak, plot * b.completed / peak
        bars.append(
            {
                "x": f"{i * slot + 1:.1f}",
                "width": f"{slot - 2:.1f}",
                "failed_y": f"{top + plot - failed_h:.1f}",
                "failed_h": f"{failed_h:.1f}",
                "done_y": f"{top + plot - failed_h - done_h:.1f}",
                "done_h": f"{done_h:.1f}",
                "tip": f"{timezone.localtime(b.start).strftime(label_format)}: "
                f"{b.completed} completed, {b.failed} failed",
            }
        )
    ticks = [
        (f"{min(max(i * slot, 1), width - 1):.1f}", anchor, buckets[i].start)
        for i, anchor in ((0, "start"), (len(buckets) // 2, "middle"))
    ] + [(str(width - 1), "end", buckets[-1].start)]
    return {
        "title": title,
        "width": width,
        "height": top + plot + 20,
        "top": top,
        "base": top + plot,
        "plot": plot,
        "peak": peak,
        "bars": bars,
        "ticks": [
            (x, anchor, timezone.localtime(t).strftime(label_format))
            for x, anchor, t in ticks
        ],
        "completed": sum(b.completed for b in buckets),
        "failed": sum(b.failed for b in buckets),
    }


# --- Dashboard ----------------------------------------------------------------


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


def dashboard_context(now: datetime) -> dict[str, Any]:
    """Everything the dashboard shows, read in a handful of aggregate queries."""
    stats = QueueManager().get_queue_stats()
    hour = throughput(now, buckets=60, step="minute")
    day = throughput(now, buckets=24, step="hour")
    last_hour_avg = ExtractionMetric.objects.filter(
        created_at__gte=now - timedelta(hours=1),
        outcome=ExtractionMetric.Outcome.COMPLETED,
    ).aggregate(ms=Avg("extraction_time_ms"))["ms"]
    heartbeats = WorkerHeartbeat.objects.select_related("current_job")
    oldest = stats["oldest_pending_seconds"]
    control = QueueControl.objects.filter(pk=1).first()
    return {
        "states": [
            {
                "value": s.value,
                "label": s.label,
                "count": stats[s.value],
                "badge": status_badge(s.value),
            }
            for s in Status
        ],
        "stats": stats,
        "oldest_pending": short_duration(oldest) if oldest is not None else None,
        "hour_chart": bar_chart(hour, label_format="%H:%M", title="Last hour"),
        "day_chart": bar_chart(day, label_format="%H:00", title="Last 24 hours"),
        "avg_hour_ms": round(last_hour_avg, 1) if last_hour_avg is not None else None,
        "failure_types": failures_by_type(now - timedelta(hours=24)),
        "live_workers": [
            (w, short_duration((now - w.last_heartbeat).total_seconds()))
            for w in workers_in_state(heartbeats, "alive", now).order_by("worker_id")
        ],
        "stale_workers": workers_in_state(heartbeats, "stale", now).count(),
        "recent_failures": list(
            QueueItem.objects.filter(status=Status.FAILED)
            .select_related("document")
            .defer("document__text")
            .order_by(F("finished_at").desc(nulls_last=True), "-id")[:10]
        ),
        "control": control,
        "paused": bool(control and control.paused),
        "stale_seconds": settings.QUEUE_STALE_WORKER_SECONDS,
        # Figures other apps add (label, value, optional warning), e.g. OCR's.
        "extra_figures": [
            figure
            for path in settings.QUEUE_DASHBOARD_FIGURES
            for figure in import_string(path)(now)
        ],
    }


def dashboard_view(model_admin: ModelAdmin, request: HttpRequest) -> HttpResponse:
    """The queue at a glance; refreshes itself every 10 seconds."""
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    context = {
        **model_admin.admin_site.each_context(request),
        **dashboard_context(db_now()),
        "title": "Queue dashboard",
        "opts": model_admin.opts,
        "can_change": model_admin.has_change_permission(request),
        "can_delete": model_admin.has_delete_permission(request),
    }
    request.current_app = model_admin.admin_site.name
    return TemplateResponse(request, "admin/jobqueue/dashboard.html", context)


def pause_view(model_admin: ModelAdmin, request: HttpRequest) -> HttpResponse:
    """Pause or resume all processing (POST ``paused=1`` or ``paused=0``)."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if not model_admin.has_change_permission(request):
        raise PermissionDenied
    paused = request.POST.get("paused") == "1"
    QueueControl.set_paused(paused, by=request.user.get_username())
    logger.info(
        "Queue %s by %s", "paused" if paused else "resumed", request.user.get_username()
    )
    model_admin.message_user(
        request,
        "Processing paused: workers finish their current jobs and take no new ones."
        if paused
        else "Processing resumed.",
        messages.WARNING if paused else messages.SUCCESS,
    )
    return redirect("admin:jobqueue_dashboard")


# --- Clearing old entries -----------------------------------------------------


class ClearOldForm(forms.Form):
    """Which finished items to delete: older than N days, in the chosen states."""

    # Bounded above: a cutoff before year 1 cannot be computed (OverflowError).
    days = forms.IntegerField(
        min_value=0,
        max_value=36500,
        initial=30,
        label="Finished more than this many days ago",
    )
    statuses = forms.TypedMultipleChoiceField(
        choices=[(s.value, s.label) for s in FINISHED_STATUSES],
        initial=[s.value for s in FINISHED_STATUSES],
        widget=forms.CheckboxSelectMultiple,
        label="States",
    )


def clear_old_view(model_admin: ModelAdmin, request: HttpRequest) -> HttpResponse:
    """Step 1 shows what would go; step 2 (``confirm``) deletes and shows the counts."""
    if not model_admin.has_delete_permission(request):
        raise PermissionDenied
    form = ClearOldForm(request.POST if request.method == "POST" else None)
    context: dict[str, Any] = {"step": "form"}
    if form.is_valid():
        days, statuses = form.cleaned_data["days"], form.cleaned_data["statuses"]
        queue = QueueManager()
        matching = queue.finished_older_than(days, statuses)
        if "confirm" not in request.POST:
            per_state = dict(
                matching.values_list("status").annotate(n=Count("id")).order_by()
            )
            context.update(
                step="confirm",
                count=sum(per_state.values()),
                per_state=[(Status(s).label, n) for s, n in sorted(per_state.items())],
            )
        else:
            before = QueueItem.objects.count()
            deleted = queue.clear_finished(days, statuses)
            after = QueueItem.objects.count()
            logger.info(
                "%s cleared %d finished queue items older than %d days (%s)",
                request.user.get_username(),
                deleted,
                days,
                ",".join(statuses),
            )
            model_admin.message_user(
                request,
                ngettext(
                    "Deleted %(count)d queue item older than %(age)s.",
                    "Deleted %(count)d queue items older than %(age)s.",
                    deleted,
                )
                % {"count": deleted, "age": ngettext("%d day", "%d days", days) % days},
                messages.SUCCESS,
            )
            context.update(step="done", deleted=deleted, before=before, after=after)
        context.update(
            days=days,
            statuses=statuses,
            status_labels=[Status(s).label for s in statuses],
        )
    context.update(
        model_admin.admin_site.each_context(request),
        title="Clear old queue entries",
        form=form,
        opts=model_admin.opts,
        total=QueueItem.objects.count(),
    )
    request.current_app = model_admin.admin_site.name
    return TemplateResponse(request, "admin/jobqueue/clear_old.html", context)
