"""The operators' console beyond the change lists: the dashboard's layout and SVG
charts (its figures are read by ``monitoring``), the pause switch and clear-old.

The admin (``jobqueue.admin``) mounts the views below through ``get_urls`` and
``admin_site.admin_view``; every state change goes through ``QueueManager`` or
``QueueControl``.
"""

from __future__ import annotations

import logging
import math
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseNotAllowed,
)
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import ngettext

from jobqueue import monitoring
from jobqueue.management.arguments import MAX_DAYS
from jobqueue.models import (
    FINISHED_STATUSES,
    ErrorType,
    ExtractionMetric,
    QueueControl,
    QueueItem,
    Status,
    is_operator,
    stale_after,
)
from jobqueue.monitoring import Bucket
from jobqueue.services import QueueManager, finished_before
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
    ExtractionMetric.Outcome.REFUSED: "#6c757d",
}
WORKER_COLOURS = {"alive": "#198754", "stale": "#dc3545", "stopped": "#6c757d"}


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


def db_time(row: Any) -> datetime:
    """The database's time read with a console row (annotated ``db_now``), which
    its "… ago" and "in …" count from; this host's clock for a row read without."""
    return getattr(row, "db_now", None) or timezone.now()


def timestamp(value: datetime | None) -> str:
    """A time to the second in the current time zone, or "-" (Django's own format
    stops at the minute: a job's start and end would read the same)."""
    if value is None:
        return "-"
    return timezone.localtime(value).strftime("%Y-%m-%d %H:%M:%S")


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


def outcome_badge(metric: ExtractionMetric) -> SafeString:
    """The badge of an attempt's outcome."""
    return badge(
        metric.get_outcome_display(), OUTCOME_COLOURS.get(metric.outcome, "#6c757d")
    )


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


# --- Charts -----------------------------------------------------------------


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


def dashboard_context(now: datetime) -> dict[str, Any]:
    """Everything the dashboard shows: ``monitoring.overview``, laid out."""
    figures = monitoring.overview(now)
    stats = figures["stats"]
    # Of the jobs due now: a task scheduled for later is not waiting yet.
    oldest = figures["oldest_due_seconds"]
    paused = monitoring.paused_for(figures["control"], now)
    last_hour_ms = figures["last_hour_ms"]
    return {
        **figures,
        "states": [
            {
                "value": s.value,
                "label": s.label,
                "count": stats[s.value],
                "badge": status_badge(s.value),
            }
            for s in Status
        ],
        "oldest_pending": short_duration(oldest) if oldest is not None else None,
        "hour_chart": bar_chart(
            figures["last_hour"], label_format="%H:%M", title="Last hour"
        ),
        # Hours start at :30 or :45 in some zones (India, Nepal): not "%H:00".
        "day_chart": bar_chart(
            figures["last_day"], label_format="%H:%M", title="Last 24 hours"
        ),
        "avg_hour_ms": round(last_hour_ms, 1) if last_hour_ms is not None else None,
        "live_workers": [
            (w, short_duration((now - w.last_heartbeat).total_seconds()))
            for w in figures["live_workers"]
        ],
        "paused": paused is not None,
        "paused_for": short_duration(paused) if paused is not None else None,
        "stale_seconds": stale_after(),
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
        "can_clear": can_clear(model_admin, request),
    }
    request.current_app = model_admin.admin_site.name
    return TemplateResponse(request, "admin/jobqueue/dashboard.html", context)


def pause_view(model_admin: ModelAdmin, request: HttpRequest) -> HttpResponse:
    """Pause or resume all processing (POST ``paused=1`` or ``paused=0``)."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if not model_admin.has_change_permission(request):
        raise PermissionDenied
    if request.POST.get("paused") not in ("0", "1"):
        return HttpResponseBadRequest("Send paused=1 to pause or paused=0 to resume.")
    paused = request.POST["paused"] == "1"
    if not QueueControl.set_paused(paused, by=request.user.get_username()):
        # A second click, or two operators at once: the switch, and who paused it
        # and when, are as they were; "Processing paused" said this click did it.
        control = QueueControl.objects.get(pk=1)
        message = (
            f"{control.unchanged(timestamp(control.changed_at))}; nothing changed."
        )
        model_admin.message_user(request, message, messages.INFO)
        return redirect("admin:jobqueue_dashboard")
    model_admin.message_user(
        request,
        "Processing paused: workers finish their current jobs and take no new ones."
        if paused
        else "Processing resumed.",
        messages.WARNING if paused else messages.SUCCESS,
    )
    return redirect("admin:jobqueue_dashboard")


# --- Clearing old entries -----------------------------------------------------


# The clear page's days when housekeeping keeps finished items (the setting at 0):
# the setting's own default.
KEEP_DAYS_FALLBACK = 30


def default_clear_days() -> tuple[int, str]:
    """The clear page's days to start from, and a sentence saying where they come
    from: ``QUEUE_KEEP_FINISHED_DAYS`` in whole days (rounded up, so the default
    never clears what housekeeping keeps), or 30 where housekeeping keeps all."""
    keep = settings.QUEUE_KEEP_FINISHED_DAYS
    if keep <= 0:
        return KEEP_DAYS_FALLBACK, (
            f"Default {KEEP_DAYS_FALLBACK}: the workers' housekeeping keeps finished "
            "items (QUEUE_KEEP_FINISHED_DAYS is 0)."
        )
    days = min(math.ceil(keep), MAX_DAYS)
    rounded = "" if days == keep else f", {keep:g} rounded up"
    return days, (
        f"Default {days} (QUEUE_KEEP_FINISHED_DAYS{rounded}): the age at which the "
        "workers' housekeeping deletes them anyway."
    )


class ClearOldForm(forms.Form):
    """Which finished items to delete: older than N days, in the chosen states."""

    # Bounded above: a cutoff before year 1 cannot be computed (OverflowError).
    days = forms.IntegerField(
        min_value=0,
        max_value=MAX_DAYS,
        label="Finished more than this many days ago",
    )
    statuses = forms.TypedMultipleChoiceField(
        choices=[(s.value, s.label) for s in FINISHED_STATUSES],
        initial=[s.value for s in FINISHED_STATUSES],
        widget=forms.CheckboxSelectMultiple,
        label="States",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Read per form, not at import: the setting is the housekeeping's in force.
        days = self.fields["days"]
        days.initial, days.help_text = default_clear_days()


def paused_banner(request: HttpRequest) -> dict[str, Any]:
    """What the paused banner (admin/jobqueue/paused_banner.html) needs: whether
    processing is paused, by whom and for how long (a pause forgotten after a
    deploy reads "for 9 h"), and whether this person may resume it."""
    control = QueueControl.current()
    paused = control is not None and control.paused
    return {
        "queue_paused": paused,
        "paused_by": control.changed_by if paused else "",
        "paused_for": short_duration(monitoring.paused_for(control, db_now()))
        if paused
        else "",
        "can_resume": is_operator(request.user),
    }


def can_clear(model_admin: ModelAdmin, request: HttpRequest) -> bool:
    """Clearing old entries is an operator's task, or deleting items' own right."""
    return is_operator(request.user) or model_admin.has_delete_permission(request)


def clear_counts(days: int, statuses: list[str]) -> tuple[int, dict[str, int]]:
    """The queue's size, and per state the items ``clear_finished(days, statuses)``
    would delete: one grouped read of the table, where a count of it and a count of
    the matches were two."""
    old = finished_before(days, statuses)
    rows = (
        QueueItem.objects.order_by()
        .values_list("status")
        .annotate(n=Count("pk"), old=Count("pk", filter=old))
    )
    total, per_state = 0, {}
    for status, n, matching in rows:
        total += n
        if matching:
            per_state[status] = matching
    return total, per_state


def stopped_heartbeats(days: float, statuses: list[str] | None) -> QuerySet | None:
    """The heartbeats of workers stopped or silent (killed) more than ``days`` ago,
    which a clearing of every finished state (``statuses`` None, or all three) deletes
    too, as the workers' housekeeping does; None when the states are narrowed, which
    keeps them. The clear page and ``clear_queue`` both ask here."""
    if statuses and set(statuses) != set(FINISHED_STATUSES):
        return None
    return QueueManager().gone_workers_older_than(days)


def clear_old_view(model_admin: ModelAdmin, request: HttpRequest) -> HttpResponse:
    """Step 1 shows what would go; step 2 (``confirm``) deletes and shows the counts.
    Each step reads the table's size once (the form's count, the confirmation's
    grouped count, the count after the delete)."""
    if not can_clear(model_admin, request):
        raise PermissionDenied
    form = ClearOldForm(request.POST if request.method == "POST" else None)
    context: dict[str, Any] = {"step": "form"}
    total = None
    if form.is_valid():
        days, statuses = form.cleaned_data["days"], form.cleaned_data["statuses"]
        queue = QueueManager()
        stopped = stopped_heartbeats(days, statuses)
        if "confirm" not in request.POST:
            total, per_state = clear_counts(days, statuses)
            context.update(
                step="confirm",
                count=sum(per_state.values()),
                per_state=[(Status(s).label, n) for s, n in sorted(per_state.items())],
                heartbeats=stopped.count() if stopped is not None else None,
            )
        else:
            deleted = queue.clear_finished(days, statuses)
            gone = stopped.delete()[0] if stopped is not None else 0
            # One count: what was there before is what is left plus what went.
            total = QueueItem.objects.count()
            logger.info(
                "%s cleared %d finished queue items older than %d days (%s) and %d "
                "stopped workers' heartbeats",
                request.user.get_username(),
                deleted,
                days,
                ",".join(statuses),
                gone,
            )
            age = ngettext("%d day", "%d days", days) % days
            message = ngettext(
                "Deleted %(count)d queue item older than %(age)s",
                "Deleted %(count)d queue items older than %(age)s",
                deleted,
            ) % {"count": deleted, "age": age}
            if gone:
                message += ngettext(
                    " and %(count)d stopped worker's heartbeat",
                    " and %(count)d stopped workers' heartbeats",
                    gone,
                ) % {"count": gone}
            model_admin.message_user(
                request,
                message + ".",
                # Nothing deleted (a second submit of the page, say) is no success,
                # as with the list's actions.
                messages.SUCCESS if deleted or gone else messages.WARNING,
            )
            context.update(
                step="done",
                deleted=deleted,
                heartbeats=gone,
                before=total + deleted,
                after=total,
            )
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
        total=QueueItem.objects.count() if total is None else total,
    )
    request.current_app = model_admin.admin_site.name
    return TemplateResponse(request, "admin/jobqueue/clear_old.html", context)
