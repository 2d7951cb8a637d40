"""Workers and per-attempt metrics in the admin (registered by ``jobqueue.admin``)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import ngettext

from jobqueue import dashboard, monitoring
from jobqueue.admin_lists import BoundedDeleteMixin, EstimatedCountPaginator
from jobqueue.dashboard import (
    badge,
    db_time,
    document_link,
    job_link,
    short_duration,
    timestamp,
)
from jobqueue.models import (
    LIVENESS,
    ExtractionMetric,
    QueueItem,
    Status,
    WorkerHeartbeat,
    is_operator,
)
from jobqueue.services import QueueManager
from jobqueue.sql import DbNow


class OperatorsMayView:
    """ModelAdmin mixin: operators see these pages, view permission or not (the
    operator's console is more than the queue items)."""

    def may_look(self, user: Any) -> bool:
        return is_operator(user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) or self.may_look(request.user)

    def has_module_permission(self, request: HttpRequest) -> bool:
        # Listed on the admin's index too, not only reachable by address.
        return super().has_module_permission(request) or self.may_look(request.user)


def watches_queue(user: Any) -> bool:
    """Staff who may look at the queue's items: operators, and view-only staff
    ("Can view queue item", as the README makes them)."""
    return (
        user.is_active
        and user.is_staff
        and (is_operator(user) or user.has_perm("jobqueue.view_queueitem"))
    )


class QueueWatchersMayView(OperatorsMayView):
    """The workers' and the metrics' pages: part of the console that view-only staff
    may look at (DESIGN: "view-only staff may look, not act"), as the dashboard they
    see links to them; what they may do there is still each page's permissions'."""

    def may_look(self, user: Any) -> bool:
        return watches_queue(user)


class WorkerStateFilter(admin.SimpleListFilter):
    """Alive, stale (no heartbeat within the threshold, not stopped) or stopped."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(state, state.capitalize()) for state in LIVENESS]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet | None:
        if self.value() in LIVENESS:
            return queryset.in_state(self.value())
        return None


class WorkerStatusFilter(admin.SimpleListFilter):
    """By the status the rows show (``monitoring.shown_status``): busy while the
    queue says a worker holds a job, whatever its last beat reported."""

    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return list(WorkerHeartbeat.State.choices)

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet | None:
        State = WorkerHeartbeat.State  # noqa: N806
        holding = Q(held_jobs__gt=0) & ~Q(status=State.STOPPED)
        if self.value() == State.BUSY:
            return queryset.filter(Q(status=State.BUSY) | holding)
        if self.value() in (State.IDLE, State.PAUSED):
            return queryset.filter(status=self.value()).exclude(holding)
        if self.value() == State.STOPPED:
            return queryset.filter(status=State.STOPPED)
        return None


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(BoundedDeleteMixin, QueueWatchersMayView, admin.ModelAdmin):
    """Worker threads and their last sign of life."""

    list_display = (
        "worker_id",
        "state_column",
        "status_column",
        "current_job_column",
        "jobs_completed",
        "jobs_failed",
        "hostname",
        "pid",
        "uptime_column",
        "last_seen_column",
    )
    list_filter = (WorkerStateFilter, WorkerStatusFilter, "hostname")
    search_fields = ("worker_id", "hostname")
    ordering = ("-last_heartbeat",)
    fields = readonly_fields = (
        "worker_id",
        "state_column",
        "status_column",
        "current_job_column",
        "jobs_completed",
        "jobs_failed",
        "hostname",
        "pid",
        "started_column",
        "last_heartbeat_column",
        "uptime_column",
    )
    actions = ("rescue_stale_jobs", "delete_selected")

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # What each worker holds, by the queue: its last beat may predate a claim,
        # and a dead worker's reported job was rescued, maybe running elsewhere now.
        workers = super().get_queryset(request).with_liveness()
        # "Last heartbeat … ago" by the database's clock, as the state beside it.
        return monitoring.with_held_jobs(workers).annotate(db_now=DbNow())

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        extra = {**dashboard.paused_banner(request), **(extra_context or {})}
        return super().changelist_view(request, extra_context=extra)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Heartbeats are written by workers only.
        return obj is None and super().has_change_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # A live worker without its row looks dead: its jobs would be rescued and
        # run twice. Stopped and stale ones may go.
        if obj is not None and getattr(obj, "liveness", None) == "alive":
            return False
        return super().has_delete_permission(request, obj)

    def deletable(self, request: HttpRequest, selected: QuerySet) -> QuerySet | None:
        """Stopped and stale workers' rows; live ones are skipped, and said so
        (Django's page refused the whole selection, as if permission lacked)."""
        alive = selected.filter(liveness="alive").count()
        if alive:
            skip = ngettext(
                "Skipped %(count)d live worker's heartbeat: without it the worker "
                "would look dead, and its jobs would run twice.",
                "Skipped %(count)d live workers' heartbeats: without them the workers "
                "would look dead, and their jobs would run twice.",
                alive,
            )
            self.message_user(request, skip % {"count": alive}, messages.WARNING)
        return selected.exclude(liveness="alive")

    def has_rescue_permission(self, request: HttpRequest) -> bool:
        """Rescuing changes queue items: an operator's action."""
        return is_operator(request.user)

    @admin.display(description="State")
    def state_column(self, obj: WorkerHeartbeat) -> SafeString:
        return badge(obj.liveness.capitalize(), dashboard.WORKER_COLOURS[obj.liveness])

    @admin.display(description="Status", ordering="status")
    def status_column(self, obj: WorkerHeartbeat) -> str:
        return monitoring.shown_status(obj)

    @admin.display(description="Current job", ordering="current_job")
    def current_job_column(self, obj: WorkerHeartbeat) -> SafeString | str:
        job = monitoring.shown_job(obj)
        # A live worker's report may lag its last job by a heartbeat; that is no news.
        if job is None or obj.liveness == "alive":
            return job_link(job)
        if obj.held_jobs:
            return format_html(
                "{} (held by this lost worker: awaits rescue)", job_link(job)
            )
        return format_html("{} (no longer held: rescued or ended)", job_link(job))

    @admin.display(description="Uptime")
    def uptime_column(self, obj: WorkerHeartbeat) -> str:
        return short_duration((obj.last_heartbeat - obj.started_at).total_seconds())

    # As the console's other pages write times (to the second), not Django's
    # "Nov. 28, 2026, 1:36 p.m.", which hides a heartbeat's seconds.
    @admin.display(description="Started at")
    def started_column(self, obj: WorkerHeartbeat) -> str:
        return timestamp(obj.started_at)

    @admin.display(description="Last heartbeat")
    def last_heartbeat_column(self, obj: WorkerHeartbeat) -> str:
        return timestamp(obj.last_heartbeat)

    @admin.display(description="Last heartbeat", ordering="last_heartbeat")
    def last_seen_column(self, obj: WorkerHeartbeat) -> str:
        ago = (db_time(obj) - obj.last_heartbeat).total_seconds()
        return f"{short_duration(ago)} ago"

    @admin.action(
        description="Rescue the jobs of selected stale workers", permissions=["rescue"]
    )
    def rescue_stale_jobs(self, request: HttpRequest, queryset: QuerySet) -> None:
        # Stale, or stopped with jobs left processing (a stop that timed out).
        lost = queryset.exclude(liveness="alive")
        if not lost.exists():
            self.message_user(
                request,
                "None of the selected workers is stale; nothing was rescued.",
                messages.WARNING,
            )
            return
        # The selected workers' jobs, as an action on a selection does: the service
        # rescues every orphaned job unless told to spare the others'.
        others = QueueItem.objects.filter(status=Status.PROCESSING).exclude(
            claimed_by__in=lost.values("worker_id")
        )
        rescued = QueueManager().rescue_stale_workers(
            exclude=others.values_list("pk", flat=True)
        )
        self.message_user(
            request,
            ngettext(
                "Rescued %(count)d job of stale workers.",
                "Rescued %(count)d jobs of stale workers.",
                rescued,
            )
            % {"count": rescued},
            messages.SUCCESS if rescued else messages.WARNING,
        )


# The newest rows a list filter takes its choices from: reading every row on each
# page view would grow with the history (a million queue items: a quarter of a
# second a filter on PostgreSQL).
RECENT_ROWS = 10_000


class RecentValuesFilter(admin.SimpleListFilter):
    """Rows with a value of ``field``, offered as the newest rows hold them (read off
    the primary key); one chosen before stays offered."""

    field = ""

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        newest = model_admin.model.objects.order_by("-id")
        values = set(newest.values_list(self.field, flat=True)[:RECENT_ROWS])
        return [(v, v) for v in sorted((values | {self.value()}) - {None, ""})]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet | None:
        if self.value():
            return queryset.filter(**{self.field: self.value()})
        return None


class ExtractorFilter(RecentValuesFilter):
    title = "extractor"
    parameter_name = "extractor"
    field = "extractor"


@admin.register(ExtractionMetric)
class ExtractionMetricAdmin(QueueWatchersMayView, admin.ModelAdmin):
    """One row per attempt; history, so read-only."""

    list_display = (
        "ended_column",
        "job_column",
        "document_column",
        "attempt",
        "outcome_column",
        "error_type",
        "extraction_time_ms",
        "pages",
        "characters",
        "extractor",
        "worker_id",
    )
    # No date hierarchy: its choices read every row on each page view.
    list_filter = ("outcome", "error_type", ExtractorFilter, "created_at")
    ordering = ("-id",)  # newest first, off the primary key
    show_full_result_count = False
    # One row per attempt, kept when the queue is cleared: the whole table's size
    # is estimated, not counted on each view.
    paginator = EstimatedCountPaginator
    search_fields = ("document__original_filename", "error_message", "worker_id")
    list_select_related = ("document",)
    list_per_page = 100

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # The joined document's text can be megabytes per row; no page here shows it.
        queryset = super().get_queryset(request).select_related("document")
        return queryset.defer("document__text", "document__search_grams")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="Ended", ordering="created_at")
    def ended_column(self, obj: ExtractionMetric) -> str:
        return timestamp(obj.created_at)

    @admin.display(description="Job", ordering="job")
    def job_column(self, obj: ExtractionMetric) -> SafeString | str:
        return job_link(obj.job_id)

    @admin.display(description="Document", ordering="document__original_filename")
    def document_column(self, obj: ExtractionMetric) -> SafeString | str:
        if obj.document is None:
            return "-"
        return document_link(obj.document_id, obj.document.original_filename)

    @admin.display(description="Outcome", ordering="outcome")
    def outcome_column(self, obj: ExtractionMetric) -> SafeString:
        return dashboard.outcome_badge(obj)
