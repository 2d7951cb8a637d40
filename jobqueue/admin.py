"""The operators' console: queue items in the Django admin, plus its extra pages.

Actions filter to the states the guide allows and call ``QueueManager``; the dashboard,
the pause switch and the clear page live in ``jobqueue.dashboard``; workers and metrics
in ``jobqueue.admin_monitoring``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.admin.utils import flatten_fieldsets
from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.urls import URLPattern, path
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import ngettext

from jobqueue import dashboard, operations
from jobqueue.admin_lists import BoundedDeleteMixin, EstimatedCountPaginator

# Importing it registers the workers' and the metrics' admin too.
from jobqueue.admin_monitoring import RecentValuesFilter
from jobqueue.dashboard import (
    can_clear,
    db_time,
    document_link,
    paused_banner,
    short_duration,
    status_badge,
    timestamp,
)
from jobqueue.models import (
    ACTIVE_STATUSES,
    FINISHED_STATUSES,
    MAX_PRIORITY,
    MIN_PRIORITY,
    PRIORITY_RANGE,
    WAITING_STATUSES,
    ErrorType,
    Operation,
    QueueItem,
    Status,
    WorkerHeartbeat,
    stale_after,
)
from jobqueue.retry import PERMANENT_ERROR_TYPES, is_retryable
from jobqueue.services import QueueManager, delete_finished_items
from jobqueue.sql import DbNow

PRIORITY_STEP = 10
# Items per statement pair when an action records its admin history.
LOG_BATCH = 2_000
# (singular, plural) message pairs; each has a %(count)d placeholder.
Plural = tuple[str, str]
# A task's arguments, return value and tracebacks hold whatever it was given or
# raised: each is shown up to this many characters.
TASK_VALUE_MAX = 20_000
# The newest failed attempts a task's page shows (an operator's retries add more).
TASK_ERRORS_SHOWN = 10


def counted(forms: Plural, count: int, **extra: Any) -> str:
    """``ngettext`` of a message pair, filled with the count."""
    return ngettext(*forms, count) % {"count": count, **extra}


STOPPED: Plural = (
    "Stopped %(count)d job: its worker ends it within seconds",
    "Stopped %(count)d jobs: their workers end them within seconds",
)
# A stop cancels the job at once, and only a live worker ends the work. A job whose
# worker is gone is cancelled all the same, and the rescue, which takes processing jobs
# only, no longer sends it back to the queue; a release would have.
STOPPED_ORPHANED: Plural = (
    "Stopped %(count)d job whose worker is not alive (stopped, or no heartbeat for "
    "%(seconds)s s): it is cancelled at once, and no rescue will send it back to the "
    "queue (“Release selected processing jobs to pending” would have)",
    "Stopped %(count)d jobs whose workers are not alive (stopped, or no heartbeat "
    "for %(seconds)s s): they are cancelled at once, and no rescue will send them "
    "back to the queue (“Release selected processing jobs to pending” would have)",
)
ORPHANED_STOP = (
    "its worker {worker} is not alive (stopped, or no heartbeat for {seconds:g} s), "
    "so the job is cancelled at once, and no rescue will send it back to the queue. "
    "To run such a job again instead, use “Release selected processing jobs to "
    "pending” in the queue's list."
)


# A release takes only jobs whose worker is not alive: their attempt was lost, and
# counts as the workers' own rescue counts it.
RELEASED: Plural = (
    "Released %(count)d job to pending (its worker is not alive: the lost attempt "
    "counts, as in a rescue)",
    "Released %(count)d jobs to pending (their workers are not alive: the lost "
    "attempts count, as in a rescue)",
)
RELEASED_NONE: Plural = (
    "Released %(count)d job to pending",
    "Released %(count)d jobs to pending",
)


def held_by_dead_workers(queryset: QuerySet) -> set[int]:
    """The running jobs among ``queryset`` whose worker is not alive (stopped, or no
    heartbeat within ``stale_after()``), as the rescue presumes them dead."""
    alive = WorkerHeartbeat.objects.in_state("alive").values("worker_id")
    running = queryset.filter(status=Status.PROCESSING).exclude(claimed_by__in=alive)
    return set(running.values_list("pk", flat=True))


def bounded_pre(text: str, limit: int = TASK_VALUE_MAX) -> SafeString:
    """``text`` in a <pre>, escaped. Past ``limit`` characters its middle is cut,
    where a note says so: a traceback's start says where it failed, its end what
    was raised."""
    if len(text) <= limit:
        return format_html('<pre class="task-value">{}</pre>', text)
    half = limit // 2
    return format_html(
        '<pre class="task-value">{}<span class="task-cut">\n[… cut: {} of {} '
        "characters shown, the first and the last {} …]\n</span>{}</pre>",
        text[:half],
        f"{limit:,}",
        f"{len(text):,}",
        f"{half:,}",
        text[-half:],
    )


def pretty_json(value: Any) -> SafeString:
    """A JSON value, indented, in a bounded <pre>."""
    return bounded_pre(json.dumps(value, indent=2, ensure_ascii=False))


def timestamp_column(field: str, description: str) -> Callable[[Any, Any], str]:
    """A read-only admin field showing a model's time ``field`` to the second."""

    @admin.display(description=description)
    def column(model_admin: Any, obj: Any) -> str:
        return timestamp(getattr(obj, field))

    column.__name__ = f"{field.removesuffix('_at')}_column"
    return column


class RetryDueFilter(admin.SimpleListFilter):
    """Retry-pending items whose next attempt is due now, or later."""

    title = "retry"
    parameter_name = "retry"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("due", "Due now"), ("scheduled", "Scheduled later")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet | None:
        waiting = queryset.filter(status=Status.RETRY_PENDING)
        if self.value() == "due":
            return waiting.filter(next_retry_at__lte=DbNow())
        if self.value() == "scheduled":
            return waiting.filter(next_retry_at__gt=DbNow())
        return None


class TaskNameFilter(RecentValuesFilter):
    """Tasks by name (their function's dotted path)."""

    title = "task"
    parameter_name = "task"
    field = "payload__task"


class QueueNameFilter(RecentValuesFilter):
    title = "queue name"
    parameter_name = "queue"
    field = "queue_name"


class WorkerFilter(admin.SimpleListFilter):
    """Jobs a worker holds or last ran; offered for the workers not stopped."""

    title = "worker"
    parameter_name = "worker"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        workers = WorkerHeartbeat.objects.exclude(status=WorkerHeartbeat.State.STOPPED)
        names = workers.order_by("worker_id").values_list("worker_id", flat=True)
        return [(name, name) for name in names]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet | None:
        if self.value():
            return queryset.filter(claimed_by=self.value())
        return None


@admin.register(QueueItem)
class QueueItemAdmin(BoundedDeleteMixin, admin.ModelAdmin):
    """Queue items: read-only records, changed only through the queue's actions."""

    list_display = (
        "id",
        "document_column",
        "operation",
        "status_column",
        "priority",
        "attempts_column",
        "error_type_column",
        "next_retry_column",
        "worker_column",
        "age_column",
    )
    list_filter = (
        "status",
        "operation",
        TaskNameFilter,
        QueueNameFilter,
        "error_type",
        RetryDueFilter,
        WorkerFilter,
        # Not a date hierarchy: its choices read every row on each page view.
        ("created_at", admin.DateFieldListFilter),
    )
    search_fields = (
        "document__original_filename",
        "payload__task",
        "error_message",
        "claimed_by",
    )
    search_help_text = (
        "Search by job id (#123), document name, task name, error message or worker."
    )
    list_select_related = ("document",)
    # Newest first, as created (ids count up): read off the primary key, where
    # ordering by created_at sorted the whole table for each page.
    ordering = ("-id",)
    list_per_page = 50
    # A filtered page counts its matches, not also the whole table; the whole
    # table's size is estimated (``EstimatedCountPaginator``).
    show_full_result_count = False
    paginator = EstimatedCountPaginator
    fieldsets = (
        (
            None,
            {
                "fields": (
                    ("document_column", "operation", "status_column"),
                    ("priority", "attempts_column", "worker_column"),
                )
            },
        ),
        (
            "Timing",
            {
                "fields": (
                    (
                        "created_column",
                        "started_column",
                        "finished_column",
                        "updated_column",
                    ),
                    ("next_retry_column", "extraction_time_ms", "confidence"),
                    ("progress_column",),
                )
            },
        ),
        ("Error", {"fields": ("error_type", "error_column")}),
        ("Attempts", {"fields": ("attempt_history",)}),
    )
    # A task's call and outcome (``get_fieldsets``): only task items have them.
    task_fields = (
        "task_column",
        "task_args_column",
        "task_kwargs_column",
        "task_run_after_column",
        "task_result_column",
        "task_errors_column",
    )
    readonly_fields = (*flatten_fieldsets(fieldsets), *task_fields)
    actions = (
        "retry_jobs",
        "retry_anyway",
        "cancel_jobs",
        "stop_jobs",
        "release_jobs",
        "raise_priority",
        "lower_priority",
        "delete_selected",
    )

    # --- Permissions: the record is history; only actions change it ----------

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # The change form is view-only for everyone; actions check obj=None.
        return obj is None and super().has_change_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Deleting an active item would strand its document's status.
        if obj is not None and obj.status not in FINISHED_STATUSES:
            return False
        return super().has_delete_permission(request, obj)

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None or obj.operation != Operation.TASK:
            return self.fieldsets
        fields = [
            name
            for name in self.task_fields
            if name != "task_run_after_column" or obj.payload.get("run_after")
        ]
        summary, *rest = self.fieldsets
        return (summary, ("Task", {"fields": fields, "classes": ("task",)}), *rest)

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # The joined document's text can be megabytes per row; no page here shows it.
        queryset = super().get_queryset(request).select_related("document")
        # The database's time beside each row: the "Next retry" and "Age" columns
        # count by it, as the "due now" filter and the workers do, not by this
        # host's clock (hosts' clocks differ).
        queryset = queryset.annotate(db_now=DbNow())
        return queryset.defer("document__text", "document__search_grams")

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        results, duplicates = super().get_search_results(request, queryset, search_term)
        # A job's number, as the list shows it; past 18 digits it is no id (and
        # would overflow the database's integer).
        term = search_term.strip().removeprefix("#")
        if term.isascii() and term.isdigit() and len(term) <= 18:
            results |= queryset.filter(pk=int(term))
        return results, duplicates

    # --- Columns ---------------------------------------------------------------

    @admin.display(description="Document", ordering="document__original_filename")
    def document_column(self, obj: QueueItem) -> SafeString | str:
        if obj.document is None:
            # A task: its name stands where a document would.
            return obj.payload.get("task", "-")
        return document_link(obj.document_id, obj.document.original_filename)

    @admin.display(description="Status", ordering="status")
    def status_column(self, obj: QueueItem) -> SafeString:
        return status_badge(obj.status)

    @admin.display(description="Attempts", ordering="attempts")
    def attempts_column(self, obj: QueueItem) -> str:
        # A limit only means something while the job may still run: "1/4" on a job
        # that failed for good promised three attempts that never come.
        if obj.status not in ACTIVE_STATUSES:
            return str(obj.attempts)
        # max_retries counts retries, so a job may run max_retries + 1 times.
        return f"{obj.attempts}/{obj.max_retries + 1}"

    @admin.display(description="Error type", ordering="error_type")
    def error_type_column(self, obj: QueueItem) -> str:
        return dashboard.error_label(obj.error_type, obj.error_message) or "-"

    @admin.display(description="Next retry", ordering="next_retry_at")
    def next_retry_column(self, obj: QueueItem) -> str:
        if obj.status != Status.RETRY_PENDING or obj.next_retry_at is None:
            return "-"
        wait = (obj.next_retry_at - db_time(obj)).total_seconds()
        return "due" if wait <= 0 else f"in {short_duration(math.ceil(wait))}"

    @admin.display(description="Worker", ordering="claimed_by")
    def worker_column(self, obj: QueueItem) -> str:
        return obj.claimed_by or "-"

    @admin.display(description="Age", ordering="-created_at")
    def age_column(self, obj: QueueItem) -> str:
        return short_duration((db_time(obj) - obj.created_at).total_seconds())

    # The item page's times, to the second: started and finished in the same
    # minute read the same in Django's format. Each claim writes started_at (the
    # rescue by age measures the running attempt from it): not the first start.
    created_column = timestamp_column("created_at", "Created at")
    started_column = timestamp_column("started_at", "Latest attempt started at")
    finished_column = timestamp_column("finished_at", "Finished at")
    updated_column = timestamp_column("updated_at", "Updated at")

    @admin.display(description="Error message")
    def error_column(self, obj: QueueItem) -> SafeString | str:
        if not obj.error_message:
            return "-"
        return format_html(
            '<pre style="white-space:pre-wrap">{}</pre>', obj.error_message
        )

    @admin.display(description="Progress")
    def progress_column(self, obj: QueueItem) -> str:
        """Pages done of all, while a long extraction reports them."""
        progress = obj.progress
        if progress is None:
            return "-"
        at = timezone.localtime(obj.progress_at)
        return f"{progress[0]} of {progress[1]} pages (at {at:%H:%M:%S})"

    # --- A task's call and outcome (the item's payload and result) -------------

    @admin.display(description="Task")
    def task_column(self, obj: QueueItem) -> str:
        return str(obj.payload.get("task", "-"))

    @admin.display(description="Arguments")
    def task_args_column(self, obj: QueueItem) -> SafeString:
        return pretty_json(obj.payload.get("args", []))

    @admin.display(description="Keyword arguments")
    def task_kwargs_column(self, obj: QueueItem) -> SafeString:
        return pretty_json(obj.payload.get("kwargs", {}))

    @admin.display(description="Run after")
    def task_run_after_column(self, obj: QueueItem) -> str:
        """When the task was enqueued to run, whatever retries did since."""
        value = str(obj.payload.get("run_after") or "")
        try:
            when = parse_datetime(value)
        except ValueError:
            when = None
        return timestamp(when) if when else value or "-"

    @admin.display(description="Return value")
    def task_result_column(self, obj: QueueItem) -> SafeString | str:
        if obj.status != Status.COMPLETED:
            return "None yet"
        return pretty_json(obj.result)

    @admin.display(description="Failed attempts")
    def task_errors_column(self, obj: QueueItem) -> SafeString | str:
        """Each failure's exception and traceback, newest first."""
        errors = obj.payload.get("errors") or []
        if not errors:
            return "None"
        total = len(errors)
        newest = list(enumerate(errors, start=1))[::-1][:TASK_ERRORS_SHOWN]
        shown = format_html_join(
            "",
            '<div class="task-error"><p><strong>{} of {}</strong>: <code>{}</code>'
            "</p>{}</div>",
            (
                (
                    number,
                    total,
                    str(error.get("exception_class_path", "?"))[:1000],
                    bounded_pre(str(error.get("traceback", ""))),
                )
                for number, error in newest
            ),
        )
        if total <= TASK_ERRORS_SHOWN:
            return shown
        hidden = (
            "The %(count)d earlier failure is not shown.",
            "The %(count)d earlier failures are not shown.",
        )
        return format_html(
            '{}<p class="help">{}</p>',
            shown,
            counted(hidden, total - TASK_ERRORS_SHOWN),
        )

    def attempt_history(self, obj: QueueItem) -> SafeString | str:
        # Numbered by position: an operator's retry restarts the job's own count, so
        # the rows' ``attempt`` repeats.
        metrics = list(obj.metrics.order_by("created_at", "id"))
        if not metrics:
            return "No attempt has ended yet."
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
            "<td>{}</td><td><pre style='white-space:pre-wrap'>{}</pre></td></tr>",
            (
                (
                    number,
                    timestamp(m.created_at),
                    dashboard.outcome_badge(m),
                    m.worker_id or "-",
                    "-"
                    if m.extraction_time_ms is None
                    else f"{m.extraction_time_ms} ms",
                    m.extractor or "-",
                    dashboard.error_label(m.error_type, m.error_message) or "-",
                    m.error_message,
                )
                for number, m in enumerate(metrics, start=1)
            ),
        )
        return format_html(
            '<table id="attempt-history"><thead><tr><th>#</th><th>Ended</th>'
            "<th>Outcome</th><th>Worker</th><th>Time</th><th>Extractor</th>"
            "<th>Error type</th><th>Error</th></tr></thead><tbody>{}</tbody></table>",
            rows,
        )

    # --- Actions ---------------------------------------------------------------

    def _apply(
        self,
        request: HttpRequest,
        queryset: QuerySet,
        change: Callable[[list[int]], list[int]],
        done_forms: Plural,
        skip_forms: Plural,
    ) -> None:
        """Run a QueueManager transition on the items (``change`` takes their ids and
        returns those it changed) and report done and skipped."""
        ids = list(queryset.values_list("pk", flat=True))
        done = change(ids)
        self._log(request, done, counted(done_forms, 1))
        self._report(
            request,
            len(done),
            counted(done_forms, len(done)),
            (skip_forms, len(ids) - len(done)),
        )

    def _log(self, request: HttpRequest, ids: list[int], message: str) -> None:
        """Record who did what in each item's admin history."""
        # A batch at a time, loading only what an entry's text (str(item)) reads.
        for start in range(0, len(ids), LOG_BATCH):
            LogEntry.objects.log_actions(
                request.user.pk,
                QueueItem.objects.filter(pk__in=ids[start : start + LOG_BATCH]).only(
                    "pk", "operation", "document_id", "status"
                ),
                CHANGE,
                f"{message} (admin action).",
            )

    def _report(
        self, request: HttpRequest, done: int, head: str, *skips: tuple[Plural, int]
    ) -> None:
        parts = [head] + [counted(forms, n) for forms, n in skips if n]
        level = messages.SUCCESS if done else messages.WARNING
        self.message_user(request, "; ".join(parts) + ".", level)

    @admin.action(description="Retry selected failed jobs", permissions=["change"])
    def retry_jobs(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._retry(request, queryset, anyway=False)

    @admin.action(
        description="Retry anyway (even jobs that would fail again)",
        permissions=["change"],
    )
    def retry_anyway(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._retry(request, queryset, anyway=True)

    def _retry(self, request: HttpRequest, queryset: QuerySet, *, anyway: bool) -> None:
        failed = queryset.filter(status=Status.FAILED)
        not_failed = queryset.count() - failed.count()
        permanent: QuerySet = failed.none()
        if not anyway:
            # Corrupt or unsupported bytes fail the same way every time; a retry
            # would report success and change nothing.
            permanent = failed.filter(error_type__in=PERMANENT_ERROR_TYPES)
            failed = failed.exclude(error_type__in=PERMANENT_ERROR_TYPES)
        ids = list(failed.values_list("pk", flat=True))
        retried = QueueManager().retry_failed_many(ids)
        self._log(request, retried, "Retried")
        done = len(retried)
        labels = sorted(
            {ErrorType(t).label for t in permanent.values_list("error_type", flat=True)}
        )
        self._report(
            request,
            done,
            counted(("Retried %(count)d job", "Retried %(count)d jobs"), done),
            (
                (
                    "skipped %(count)d that was not failed",
                    "skipped %(count)d that were not failed",
                ),
                not_failed,
            ),
            (
                (
                    "skipped %(count)d whose document is already queued again",
                    "skipped %(count)d whose documents are already queued again",
                ),
                len(ids) - done,
            ),
            (
                (
                    f"skipped %(count)d that would fail again ({', '.join(labels)}: "
                    "the same bytes fail the same way); choose “Retry anyway” to run "
                    "it regardless",
                    f"skipped %(count)d that would fail again ({', '.join(labels)}: "
                    "the same bytes fail the same way); choose “Retry anyway” to run "
                    "them regardless",
                ),
                permanent.count(),
            ),
        )

    @admin.action(description="Cancel selected waiting jobs", permissions=["change"])
    def cancel_jobs(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._apply(
            request,
            queryset,
            QueueManager().cancel_many,
            ("Cancelled %(count)d job", "Cancelled %(count)d jobs"),
            (
                "skipped %(count)d that was not pending or waiting for a retry",
                "skipped %(count)d that were not pending or waiting for a retry",
            ),
        )

    @admin.action(description="Stop selected running jobs", permissions=["change"])
    def stop_jobs(self, request: HttpRequest, queryset: QuerySet) -> None:
        ids = list(queryset.values_list("pk", flat=True))
        orphaned = held_by_dead_workers(queryset)
        done = QueueManager().stop_many(ids)
        self._log(request, done, "Stopped")
        lost = sum(pk in orphaned for pk in done)
        parts = []
        if not done:
            # "their workers end them within seconds" of no job at all promised
            # an end that nothing was sent.
            parts.append(
                counted(("Stopped %(count)d job", "Stopped %(count)d jobs"), 0)
            )
        elif len(done) > lost:
            parts.append(counted(STOPPED, len(done) - lost))
        if lost:
            text = counted(STOPPED_ORPHANED, lost, seconds=f"{stale_after():g}")
            parts.append(text[0].lower() + text[1:] if parts else text)
        self._report(
            request,
            len(done),
            "; ".join(parts),
            (
                (
                    "skipped %(count)d that was not running, or runs in its worker's "
                    "own thread (a task), which cannot be stopped midway",
                    "skipped %(count)d that were not running, or run in their "
                    "worker's own thread (tasks), which cannot be stopped midway",
                ),
                len(ids) - len(done),
            ),
        )

    @admin.action(
        description="Release selected processing jobs to pending",
        permissions=["change"],
    )
    def release_jobs(self, request: HttpRequest, queryset: QuerySet) -> None:
        # A live worker would go on with the job while another ran it again: its
        # result refused, the work done twice. Stopping it is the way to end it.
        alive = WorkerHeartbeat.objects.in_state("alive").values("worker_id")
        held = queryset.filter(status=Status.PROCESSING, claimed_by__in=alive)
        kept = held.count()
        if kept:
            skip = (
                "Skipped %(count)d job that a live worker is running: use “Stop "
                "selected running jobs” to end it.",
                "Skipped %(count)d jobs that live workers are running: use “Stop "
                "selected running jobs” to end them.",
            )
            self.message_user(request, counted(skip, kept), messages.WARNING)
        # The rest are dead workers' jobs: released as a rescue, the lost attempt
        # counted, so a document that kills its worker cannot loop through here.
        # Only the processing ones are read: the rest of a "select all" is skipped.
        done = QueueManager().release_orphaned(
            queryset.filter(status=Status.PROCESSING).values_list("pk", flat=True)
        )
        failed = [pk for pk, status in done.items() if status == Status.FAILED]
        pending = [pk for pk, status in done.items() if status != Status.FAILED]
        self._log(request, pending, "Released as a rescue: its worker was not alive")
        self._log(
            request,
            failed,
            "Failed as a rescue: its worker was not alive, no retries left",
        )
        self._report(
            request,
            len(done),
            counted(RELEASED if pending else RELEASED_NONE, len(pending)),
            (
                (
                    "failed %(count)d whose worker is not alive and that had no "
                    "retries left",
                    "failed %(count)d whose workers are not alive and that had no "
                    "retries left",
                ),
                len(failed),
            ),
            (
                (
                    "skipped %(count)d that was not processing (or was being "
                    "changed meanwhile)",
                    "skipped %(count)d that were not processing (or were being "
                    "changed meanwhile)",
                ),
                queryset.exclude(pk__in=held.values("pk")).count() - len(done),
            ),
        )

    def _shift_priority(
        self, request: HttpRequest, queryset: QuerySet, step: int
    ) -> None:
        total = queryset.count()
        # Priority only orders waiting jobs; a status is never written here. A job
        # already at the limit stays, and its history says nothing was done to it.
        movable = queryset.filter(status__in=WAITING_STATUSES)
        if step > 0:
            movable = movable.filter(priority__lt=MAX_PRIORITY)
        else:
            movable = movable.filter(priority__gt=MIN_PRIORITY)
        ids = list(movable.values_list("pk", flat=True))
        done = QueueManager().shift_priority(ids, step)
        self._log(request, ids, f"Priority {step:+d}")
        head = counted(
            (
                "%(verb)s the priority of %(count)d job by %(step)d",
                "%(verb)s the priority of %(count)d jobs by %(step)d",
            ),
            done,
            verb="Raised" if step > 0 else "Lowered",
            step=abs(step),
        )
        skip = (
            f"skipped %(count)d that was not waiting or was at the limit "
            f"({PRIORITY_RANGE})",
            f"skipped %(count)d that were not waiting or were at the limit "
            f"({PRIORITY_RANGE})",
        )
        self._report(request, done, head, (skip, total - done))

    @admin.action(
        description="Raise priority of selected waiting jobs", permissions=["change"]
    )
    def raise_priority(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._shift_priority(request, queryset, PRIORITY_STEP)

    @admin.action(
        description="Lower priority of selected waiting jobs", permissions=["change"]
    )
    def lower_priority(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._shift_priority(request, queryset, -PRIORITY_STEP)

    # The bulk delete (BoundedDeleteMixin) deletes finished items only, each batch
    # in the statements of the queue's own clear; its history needs no payloads.
    deletion_log_fields = ("pk", "operation", "document_id", "status")

    @admin.action(description="Delete selected finished jobs", permissions=["delete"])
    def delete_selected(
        self, request: HttpRequest, queryset: QuerySet
    ) -> HttpResponse | None:
        return super().delete_selected(request, queryset)

    def deletable(self, request: HttpRequest, selected: QuerySet) -> QuerySet | None:
        active = selected.exclude(status__in=FINISHED_STATUSES).count()
        if active:
            skip = (
                "Skipped %(count)d job that is still active; cancel it first.",
                "Skipped %(count)d jobs that are still active; cancel them first.",
            )
            self.message_user(request, counted(skip, active), messages.WARNING)
        return selected.filter(status__in=FINISHED_STATUSES)

    def bounded_delete_context(
        self, request: HttpRequest, selected: QuerySet, total: int
    ) -> dict[str, Any]:
        per_state = dict(
            selected.order_by().values_list("status").annotate(n=Count("pk"))
        )
        return {
            **super().bounded_delete_context(request, selected, total),
            "per_state": [
                (Status(s).label, per_state[s])
                for s in FINISHED_STATUSES
                if s in per_state
            ],
        }

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        delete_finished_items(list(queryset.values_list("pk", flat=True)))

    # --- Extra pages -------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view
        return [
            path("dashboard/", view(self.dashboard_view), name="jobqueue_dashboard"),
            path("dashboard/pause/", view(self.pause_view), name="jobqueue_pause"),
            path("clear-old/", view(self.clear_old_view), name="jobqueue_clear_old"),
            path(
                "<path:object_id>/retry/",
                view(self.retry_view),
                name="jobqueue_queueitem_retry",
            ),
            path(
                "<path:object_id>/cancel/",
                view(self.cancel_view),
                name="jobqueue_queueitem_cancel",
            ),
            *super().get_urls(),
        ]

    def dashboard_view(self, request: HttpRequest) -> HttpResponse:
        """Counts, charts, workers and the pause switch."""
        return dashboard.dashboard_view(self, request)

    def pause_view(self, request: HttpRequest) -> HttpResponse:
        """POST only: pause or resume all processing."""
        return dashboard.pause_view(self, request)

    def clear_old_view(self, request: HttpRequest) -> HttpResponse:
        """Delete finished items older than N days, after a confirmation step."""
        return dashboard.clear_old_view(self, request)

    def _item_action(
        self, request: HttpRequest, object_id: str
    ) -> tuple[QueueItem | None, HttpResponse | None]:
        """The item behind a button: POST only, for those who may change items."""
        if request.method != "POST":
            return None, HttpResponseNotAllowed(["POST"])
        if not self.has_change_permission(request):
            raise PermissionDenied
        item = self.get_object(request, object_id)
        if item is None:
            raise Http404("No such queue item.")
        return item, None

    def retry_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The item page's retry button; a failure that would repeat needs "anyway"."""
        item, refused = self._item_action(request, object_id)
        if refused:
            return refused
        if not request.POST.get("anyway") and not is_retryable(item.error_type):
            self.message_user(
                request,
                f"Not retried: job #{item.pk} would fail again "
                f"({ErrorType(item.error_type).label}). Use “Retry anyway” to run it "
                "regardless.",
                messages.WARNING,
            )
        elif QueueManager().retry_failed(job_id=item.pk):
            self._log(request, [item.pk], "Retried")
            self.message_user(request, f"Retried job #{item.pk}.", messages.SUCCESS)
        else:
            self.message_user(
                request,
                f"Job #{item.pk} was not retried: it is not failed, or its document "
                "is already queued again.",
                messages.WARNING,
            )
        return redirect("admin:jobqueue_queueitem_change", item.pk)

    def cancel_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The item page's cancel button: a job still waiting is cancelled, a running
        extraction stopped."""
        item, refused = self._item_action(request, object_id)
        if refused:
            return refused
        if item.status == Status.PROCESSING:
            orphaned = held_by_dead_workers(QueueItem.objects.filter(pk=item.pk))
            if QueueManager().stop_many([item.pk]):
                self._log(request, [item.pk], "Stopped")
                self.message_user(
                    request,
                    f"Stopped job #{item.pk}: "
                    + (
                        ORPHANED_STOP.format(
                            worker=item.claimed_by or "-", seconds=stale_after()
                        )
                        if orphaned
                        else "its worker ends it within seconds."
                    ),
                    messages.SUCCESS,
                )
                return redirect("admin:jobqueue_queueitem_change", item.pk)
        elif QueueManager().cancel(item.pk):
            self._log(request, [item.pk], "Cancelled")
            self.message_user(request, f"Cancelled job #{item.pk}.", messages.SUCCESS)
            return redirect("admin:jobqueue_queueitem_change", item.pk)
        self.message_user(
            request,
            f"Job #{item.pk} was not cancelled: it has ended, or it runs in its "
            "worker's own thread (a task), which cannot be stopped midway.",
            messages.WARNING,
        )
        return redirect("admin:jobqueue_queueitem_change", item.pk)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        item = self.get_object(request, object_id)
        extra: dict[str, Any] = {}
        if item is not None and item.status in WAITING_STATUSES:
            extra |= paused_banner(request)
        lost = (
            item is not None
            and item.status == Status.PROCESSING
            and bool(held_by_dead_workers(QueueItem.objects.filter(pk=item.pk)))
        )
        if lost:
            # Said before an operator acts: "Stop job" would cancel it for good.
            extra |= {
                "lost_worker": item.claimed_by or "-",
                "stale_after": stale_after(),
            }
        if item is not None and self.has_change_permission(request):
            extra |= {
                "can_release": lost,
                "can_retry": item.status == Status.FAILED,
                "can_cancel": item.status in WAITING_STATUSES,
                "can_stop": item.status == Status.PROCESSING
                and item.operation in operations.stoppable(),
                "fails_again": (
                    ErrorType(item.error_type).label
                    if item.status == Status.FAILED
                    and not is_retryable(item.error_type)
                    else ""
                ),
            }
        return super().change_view(
            request, object_id, form_url, {**extra, **(extra_context or {})}
        )

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        extra = {
            # The queue's eleven columns need the room the app sidebar takes.
            "is_nav_sidebar_enabled": False,
            **paused_banner(request),
            "can_clear": can_clear(self, request),
            **(extra_context or {}),
        }
        return super().changelist_view(request, extra_context=extra)
