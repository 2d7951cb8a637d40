"""The operators' console: queue, workers, metrics, documents, dashboard, clear page."""

from __future__ import annotations

import re
from datetime import timedelta
from itertools import count

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from documents.models import Document
from jobqueue.models import (
    ErrorType,
    ExtractionMetric,
    Operation,
    QueueControl,
    QueueItem,
    Status,
    WorkerHeartbeat,
)

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:jobqueue_queueitem_changelist")
DASHBOARD = reverse("admin:jobqueue_dashboard")
PAUSE = reverse("admin:jobqueue_pause")
CLEAR = reverse("admin:jobqueue_clear_old")
WORKERS = reverse("admin:jobqueue_workerheartbeat_changelist")
METRICS = reverse("admin:jobqueue_extractionmetric_changelist")
DOCUMENTS = reverse("admin:documents_document_changelist")
HOSTILE_NAME = "<script>alert(1)</script>.pdf"
HOSTILE_ERROR = "<img src=x onerror=alert(2)> & broken"
_names = count()


@pytest.fixture
def make_item(make_document):
    """A queue item in any state, each on its own document."""

    def make(status: str = Status.PENDING, name: str | None = None, **fields):
        doc = make_document(name=name or f"file-{next(_names)}.txt")
        return QueueItem.objects.create(document=doc, status=status, **fields)

    return make


@pytest.fixture
def staff_with(django_user_model):
    """A staff user holding exactly the given permissions ("app.codename")."""

    def make(*perms: str):
        user = django_user_model.objects.create_user(
            f"staff-{next(_names)}", password="x-password-1", is_staff=True
        )
        for perm in perms:
            app_label, codename = perm.split(".")
            user.user_permissions.add(
                Permission.objects.get(
                    content_type__app_label=app_label, codename=codename
                )
            )
        return user

    return make


@pytest.fixture
def viewer_client(client, staff_with):
    client.force_login(
        staff_with(
            "jobqueue.view_queueitem",
            "jobqueue.view_workerheartbeat",
            "jobqueue.view_extractionmetric",
            "documents.view_document",
        )
    )
    return client


def run_action(client, action: str, items, url: str = CHANGELIST, **extra):
    """POST an admin action on the items; returns (response, messages)."""
    data = {"action": action, "_selected_action": [i.pk for i in items], **extra}
    response = client.post(url, data, follow=True)
    return response, [str(m) for m in get_messages(response.wsgi_request)]


def statuses(*items) -> list[str]:
    return [QueueItem.objects.get(pk=i.pk).status for i in items]


# --- Access ------------------------------------------------------------------


@pytest.mark.parametrize(
    "url", [CHANGELIST, DASHBOARD, CLEAR, WORKERS, METRICS, DOCUMENTS]
)
def test_non_staff_is_sent_to_the_admin_login(user_client, url):
    response = user_client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def test_non_staff_cannot_pause(user_client):
    response = user_client.post(PAUSE, {"paused": "1"})
    assert response.status_code == 302
    assert not QueueControl.is_paused()


def test_view_only_staff_sees_everything_and_is_offered_no_action(
    viewer_client, make_item
):
    failed = make_item(Status.FAILED)
    for url in (CHANGELIST, DASHBOARD, WORKERS, METRICS, DOCUMENTS):
        assert viewer_client.get(url).status_code == 200, url
    page = viewer_client.get(CHANGELIST).content.decode()
    assert "retry_jobs" not in page and "delete_selected" not in page
    assert "Pause processing" not in viewer_client.get(DASHBOARD).content.decode()
    detail = viewer_client.get(
        reverse("admin:jobqueue_queueitem_change", args=[failed.pk])
    )
    assert detail.status_code == 200

    run_action(viewer_client, "retry_jobs", [failed])
    run_action(viewer_client, "delete_selected", [failed], post="yes")
    assert statuses(failed) == [Status.FAILED]


def test_view_only_staff_gets_403_for_pause_and_clear(viewer_client, make_item):
    assert viewer_client.post(PAUSE, {"paused": "1"}).status_code == 403
    assert viewer_client.get(CLEAR).status_code == 403
    assert viewer_client.post(CLEAR, {"days": 0, "confirm": "yes"}).status_code == 403
    assert not QueueControl.is_paused()


def test_change_permission_allows_actions_but_not_deletion(
    client, staff_with, make_item
):
    client.force_login(staff_with("jobqueue.change_queueitem"))
    old = make_item(Status.COMPLETED)
    page = client.get(CHANGELIST).content.decode()
    assert "retry_jobs" in page and "delete_selected" not in page
    run_action(client, "delete_selected", [old], post="yes")
    assert QueueItem.objects.filter(pk=old.pk).exists()


def test_an_operator_reaches_the_whole_console(
    client, staff_with, make_item, make_document
):
    """Staff with the change permission on queue items, as DESIGN defines an
    operator: workers, metrics, the documents behind the jobs, clearing old entries."""
    client.force_login(staff_with("jobqueue.change_queueitem"))
    WorkerHeartbeat.objects.create(worker_id="w-1")
    for url in (CHANGELIST, DASHBOARD, WORKERS, METRICS, DOCUMENTS, CLEAR):
        assert client.get(url).status_code == 200, url
    assert "rescue_stale_jobs" in client.get(WORKERS).content.decode()
    assert "Clear old entries" in client.get(DASHBOARD).content.decode()
    assert "Clear old entries" in client.get(CHANGELIST).content.decode()
    # Linked from the admin's index too, not only reachable by address.
    index = client.get("/admin/").content.decode()
    assert all(url in index for url in (CHANGELIST, WORKERS, METRICS, DOCUMENTS))
    age(make_item(Status.FAILED), 5)
    response = client.post(CLEAR, {"days": 1, "statuses": ["failed"], "confirm": "1"})
    assert response.context["deleted"] == 1
    document = make_document()
    _, msgs = run_action(client, "reprocess", [document], DOCUMENTS)
    assert msgs == ["Queued 1 document for reprocessing."]


def test_reprocess_in_the_documents_admin_is_an_operators_action(
    client, staff_with, make_document
):
    """Not the documents' change permission: the site and the API ask for an
    operator (or the owner) too."""
    client.force_login(
        staff_with("documents.view_document", "documents.change_document")
    )
    document = make_document()
    assert "reprocess" not in client.get(DOCUMENTS).content.decode()
    run_action(client, "reprocess", [document], DOCUMENTS)
    assert not QueueItem.objects.exists()


def test_items_cannot_be_added_or_edited(admin_client, make_item):
    item = make_item(Status.PENDING, priority=3)
    assert admin_client.get(reverse("admin:jobqueue_queueitem_add")).status_code == 403
    url = reverse("admin:jobqueue_queueitem_change", args=[item.pk])
    page = admin_client.get(url).content.decode()
    assert 'name="_save"' not in page and 'name="priority"' not in page
    assert admin_client.post(url, {"priority": 99}).status_code == 403
    item.refresh_from_db()
    assert item.priority == 3


# --- The list and the item page -----------------------------------------------


def test_changelist_shows_the_operator_columns(admin_client, make_item):
    now = timezone.now()
    make_item(
        Status.RETRY_PENDING,
        attempts=1,
        next_retry_at=now + timedelta(seconds=25),
        error_type=ErrorType.TIMEOUT,
    )
    make_item(Status.RETRY_PENDING, attempts=2, next_retry_at=now - timedelta(1))
    make_item(Status.PROCESSING, attempts=1, claimed_by="host:1:worker-0")
    response = admin_client.get(CHANGELIST)
    page = response.content.decode()
    assert response.status_code == 200
    assert re.search(r">in 2\d s<", page)  # 25 s, less the time the test took
    assert ">due<" in page
    assert "1/4" in page and "host:1:worker-0" in page
    assert "Retry pending</span>" in page and "Processing</span>" in page
    assert reverse("admin:jobqueue_dashboard") in page


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status__exact=failed", {"failed-one"}),
        ("operation__exact=reprocess", {"reprocess-one"}),
        ("error_type__exact=corruption", {"failed-one"}),
        ("retry=due", {"due-one"}),
        ("q=reprocess-one", {"reprocess-one"}),
        ("q=bad+header", {"failed-one"}),
    ],
)
def test_filters_and_search(admin_client, make_item, query, expected):
    make_item(
        Status.FAILED,
        name="failed-one",
        error_type=ErrorType.CORRUPTION,
        error_message="bad header",
    )
    make_item(Status.PENDING, name="reprocess-one", operation=Operation.REPROCESS)
    make_item(
        Status.RETRY_PENDING,
        name="due-one",
        next_retry_at=timezone.now() - timedelta(seconds=1),
    )
    response = admin_client.get(f"{CHANGELIST}?{query}")
    shown = {
        item.document.original_filename for item in response.context["cl"].result_list
    }
    assert shown == expected


def test_the_date_filter_filters_by_creation_date(admin_client, make_item):
    now = timezone.now()
    make_item(Status.PENDING, created_at=now)
    make_item(Status.PENDING, created_at=now - timedelta(days=400))
    response = admin_client.get(CHANGELIST)
    past_week = next(
        choice["query_string"]
        for spec in response.context["cl"].filter_specs
        if spec.title == "created at"
        for choice in spec.choices(response.context["cl"])
        if choice["display"] == "Past 7 days"
    )
    response = admin_client.get(CHANGELIST + past_week)
    assert response.context["cl"].result_count == 1


def test_the_filters_offer_what_recent_jobs_hold_and_read_no_whole_table(
    admin_client, make_item
):
    make_item(Status.PENDING, queue_name="reports")
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(CHANGELIST)
    offered = {
        choice["display"]
        for spec in response.context["cl"].filter_specs
        if spec.title == "queue name"
        for choice in spec.choices(response.context["cl"])
    }
    assert "reports" in offered
    # No read of the queue table takes the DISTINCT or the MIN of every row (as a
    # field's filter and the date hierarchy did), or sorts it by anything but its
    # primary key (the list ordered by created_at).
    with CaptureQueriesContext(connection) as metrics_queries:
        assert admin_client.get(METRICS).status_code == 200
    for query in queries.captured_queries + metrics_queries.captured_queries:
        sql = query["sql"]
        if 'FROM "extraction_queue"' in sql or 'FROM "extraction_metrics"' in sql:
            assert "DISTINCT" not in sql and "MIN(" not in sql, sql
            assert "created_at" not in sql.partition("ORDER BY")[2], sql


def test_item_page_shows_full_error_and_every_attempt(admin_client, make_item, queue):
    long_error = "Traceback:\n" + "line\n" * 200 + "the end"
    item = make_item(Status.PENDING)
    queue.claim("w1")
    queue.failed(item.pk, "first try broke", ErrorType.TIMEOUT)
    QueueItem.objects.filter(pk=item.pk).update(next_retry_at=timezone.now())
    queue.claim("w2")
    queue.failed(item.pk, long_error, ErrorType.CORRUPTION)
    page = admin_client.get(
        reverse("admin:jobqueue_queueitem_change", args=[item.pk])
    ).content.decode()
    assert "the end</pre>" in page
    assert page.count("<tr><td>") == 2
    assert "Failed, will retry" in page and "first try broke" in page
    assert "w1" in page and "w2" in page


def test_hostile_names_and_messages_are_escaped_everywhere(
    admin_client, make_item, make_document
):
    item = make_item(
        Status.FAILED,
        name=HOSTILE_NAME,
        error_message=HOSTILE_ERROR,
        error_type=ErrorType.UNKNOWN,
        finished_at=timezone.now(),
    )
    ExtractionMetric.objects.create(
        job=item,
        document=item.document,
        outcome=ExtractionMetric.Outcome.FAILED,
        error_message=HOSTILE_ERROR,
        worker_id="<b>w</b>",
    )
    WorkerHeartbeat.objects.create(worker_id="<i>worker</i>", hostname="<u>host</u>")
    doc = item.document
    doc.text = "<script>alert(3)</script>"
    doc.error_message = HOSTILE_ERROR
    doc.save()
    urls = [
        CHANGELIST,
        f"{CHANGELIST}?q=script",
        reverse("admin:jobqueue_queueitem_change", args=[item.pk]),
        DASHBOARD,
        WORKERS,
        METRICS,
        DOCUMENTS,
        reverse("admin:documents_document_change", args=[doc.pk]),
    ]
    for url in urls:
        page = admin_client.get(url).content.decode()
        for raw in ("<script>alert", "<img src=x", "<i>worker", "<u>host", "<b>w</b>"):
            assert raw not in page, (url, raw)
    assert (
        "&lt;script&gt;alert(1)&lt;/script&gt;.pdf"
        in admin_client.get(CHANGELIST).content.decode()
    )
    response, _ = run_action(admin_client, "delete_selected", [item])
    assert "<script>alert" not in response.content.decode()


# --- Actions -------------------------------------------------------------------


def test_retry_resets_failed_jobs_and_reports_the_skipped(admin_client, make_item):
    failed = [make_item(Status.FAILED, attempts=4, error_message="x") for _ in range(2)]
    pending = make_item(Status.PENDING)
    _, msgs = run_action(admin_client, "retry_jobs", [*failed, pending])
    assert msgs == ["Retried 2 jobs; skipped 1 that was not failed."]
    assert statuses(*failed, pending) == [Status.PENDING] * 3
    assert QueueItem.objects.get(pk=failed[0].pk).attempts == 0
    history = LogEntry.objects.filter(object_id=str(failed[0].pk))
    assert [e.change_message for e in history] == ["Retried (admin action)."]


def test_retry_skips_a_job_whose_document_is_queued_again(admin_client, make_item):
    failed = make_item(Status.FAILED)
    QueueItem.objects.create(document=failed.document, status=Status.PENDING)
    _, msgs = run_action(admin_client, "retry_jobs", [failed])
    assert msgs == ["Retried 0 jobs; skipped 1 whose document is already queued again."]
    assert statuses(failed) == [Status.FAILED]


def test_cancel_only_touches_waiting_jobs(admin_client, make_item):
    items = [
        make_item(Status.PENDING),
        make_item(Status.RETRY_PENDING, next_retry_at=timezone.now()),
        make_item(Status.PROCESSING),
        make_item(Status.COMPLETED),
    ]
    _, msgs = run_action(admin_client, "cancel_jobs", items)
    assert msgs == [
        "Cancelled 2 jobs; skipped 2 that were not pending or waiting for a retry."
    ]
    assert statuses(*items) == [
        Status.CANCELLED,
        Status.CANCELLED,
        Status.PROCESSING,
        Status.COMPLETED,
    ]


def test_stop_ends_running_extractions_and_leaves_the_rest(admin_client, make_item):
    WorkerHeartbeat.objects.create(worker_id="w1", status="busy")  # a live worker
    running = make_item(Status.PROCESSING, claimed_by="w1", attempts=1)
    waiting = make_item(Status.PENDING)
    _, msgs = run_action(admin_client, "stop_jobs", [running, waiting])
    assert msgs == [
        "Stopped 1 job: its worker ends it within seconds; skipped 1 that was not "
        "running, or runs in its worker's own thread (a task), which cannot be "
        "stopped midway."
    ]
    assert statuses(running, waiting) == [Status.CANCELLED, Status.PENDING]


def seed(owner, count: int, status: str, error_type: str = "") -> list[int]:
    """``count`` documents with one job each in ``status``, in a few statements."""
    documents = Document.objects.bulk_create(
        Document(owner=owner, original_filename=f"{n}.txt", size=1, sha256="0" * 64)
        for n in range(count)
    )
    items = QueueItem.objects.bulk_create(
        QueueItem(document=d, status=status, attempts=1, error_type=error_type)
        for d in documents
    )
    return [item.pk for item in items]


@pytest.mark.parametrize(
    ("action", "status", "done"),
    [
        ("cancel_jobs", Status.PENDING, "Cancelled %d jobs."),
        ("retry_jobs", Status.FAILED, "Retried %d jobs."),
        ("retry_anyway", Status.FAILED, "Retried %d jobs."),
    ],
)
def test_select_all_takes_as_many_statements_for_500_jobs_as_for_10(
    admin_client, admin_user, action, status, done
):
    """Cancelling or retrying every job of the list ("select all") was a transaction
    per job: 40,000 took a minute, past the proxy's timeout."""

    def statements(count: int) -> list[str]:
        QueueItem.objects.all().delete()
        jobs = seed(admin_user, count, status, ErrorType.TIMEOUT)
        data = {"action": action, "_selected_action": jobs[:1], "select_across": 1}
        with CaptureQueriesContext(connection) as captured:
            response = admin_client.post(CHANGELIST, data)
        assert response.status_code == 302
        assert [str(m) for m in get_messages(response.wsgi_request)] == [done % count]
        admin_client.get(response.url)  # shows the message, which clears it
        assert set(QueueItem.objects.values_list("status", flat=True)) != {status}
        entries = LogEntry.objects.filter(object_id__in=[str(j) for j in jobs])
        assert entries.count() == count
        # The history's inserts are Django's, a hundred or so rows per statement.
        return [q["sql"] for q in captured if "django_admin_log" not in q["sql"]]

    statements(2)  # Django's caches (the content type) filled
    assert len(statements(500)) == len(statements(10))


def test_select_all_keeps_the_skip_rules_and_their_counts(admin_client, admin_user):
    corrupt = seed(admin_user, 3, Status.FAILED, ErrorType.CORRUPTION)
    flaky = seed(admin_user, 4, Status.FAILED, ErrorType.TIMEOUT)
    waiting = seed(admin_user, 2, Status.PENDING)
    # A document queued again since its job failed keeps its new job alone.
    requeued = QueueItem.objects.get(pk=flaky[0])
    QueueItem.objects.create(document=requeued.document, status=Status.PENDING)
    select_all = {"_selected_action": waiting[:1], "select_across": 1}

    _, msgs = run_action(admin_client, "retry_jobs", [], **select_all)
    assert msgs == [
        "Retried 3 jobs; skipped 3 that were not failed; skipped 1 whose document "
        "is already queued again; skipped 3 that would fail again (Corrupt file: "
        "the same bytes fail the same way); choose “Retry anyway” to run them "
        "regardless."
    ]
    _, msgs = run_action(admin_client, "retry_anyway", [], **select_all)
    assert msgs[0].startswith("Retried 3 jobs; skipped 6 that were not failed;")
    _, msgs = run_action(admin_client, "cancel_jobs", [], **select_all)
    assert msgs == [
        "Cancelled 9 jobs; skipped 1 that was not pending or waiting for a retry."
    ]
    assert (
        statuses(*QueueItem.objects.exclude(pk=requeued.pk)) == [Status.CANCELLED] * 9
    )
    history = LogEntry.objects.filter(object_id=str(corrupt[0]))
    assert [e.change_message for e in history.order_by("pk")] == [
        "Retried (admin action).",
        "Cancelled 1 job (admin action).",
    ]


def test_release_returns_processing_jobs_to_pending(admin_client, make_item, queue):
    item = make_item(Status.PENDING)
    queue.claim("worker-x")  # no heartbeat: a dead worker, whose attempt counts
    other = make_item(Status.FAILED)
    _, msgs = run_action(admin_client, "release_jobs", [item, other])
    assert msgs == [
        "Released 1 job to pending (its worker is not alive: the lost attempt "
        "counts, as in a rescue); skipped 1 that was not processing (or was being "
        "changed meanwhile)."
    ]
    item.refresh_from_db()
    assert (item.status, item.attempts, item.claimed_by) == (Status.PENDING, 1, "")


def test_release_leaves_the_jobs_of_live_workers_alone(
    admin_client, make_item, queue, workers
):
    """Released, a live worker's job would run twice: there and on another worker."""
    held = make_item(Status.PENDING)
    queue.claim("alive-1")
    _, msgs = run_action(admin_client, "release_jobs", [held])
    assert msgs[0].startswith("Skipped 1 job that a live worker is running")
    assert statuses(held) == [Status.PROCESSING]


def test_priority_moves_only_waiting_jobs(admin_client, make_item):
    waiting, done = make_item(Status.PENDING), make_item(Status.COMPLETED)
    _, msgs = run_action(admin_client, "raise_priority", [waiting, done])
    assert msgs == [
        "Raised the priority of 1 job by 10; skipped 1 that was not waiting or was "
        "at the limit (-100 to 100)."
    ]
    _, msgs = run_action(admin_client, "lower_priority", [waiting])
    _, msgs = run_action(admin_client, "lower_priority", [waiting])
    assert msgs == ["Lowered the priority of 1 job by 10."]
    assert QueueItem.objects.get(pk=waiting.pk).priority == -10
    assert QueueItem.objects.get(pk=done.pk).priority == 0


def test_priority_stays_within_what_tasks_allow(admin_client, make_item):
    """A task pushed past 100 failed every attempt (InvalidTaskError)."""
    near_top, top = make_item(priority=95), make_item(priority=100)
    _, msgs = run_action(admin_client, "raise_priority", [near_top, top])
    assert msgs == [
        "Raised the priority of 1 job by 10; skipped 1 that was not waiting or was "
        "at the limit (-100 to 100)."
    ]
    near_bottom = make_item(priority=-95)
    run_action(admin_client, "lower_priority", [near_bottom])
    run_action(admin_client, "lower_priority", [near_bottom])
    assert [
        QueueItem.objects.get(pk=i.pk).priority for i in (near_top, top, near_bottom)
    ] == [100, 100, -100]


def test_nothing_done_is_a_warning(admin_client, make_item):
    response, msgs = run_action(admin_client, "retry_jobs", [make_item()])
    assert msgs == ["Retried 0 jobs; skipped 1 that was not failed."]
    assert "warning" in response.content.decode()


def test_delete_asks_first_and_keeps_active_jobs(admin_client, make_item):
    done = make_item(Status.COMPLETED)
    active = make_item(Status.PROCESSING)
    response, msgs = run_action(admin_client, "delete_selected", [done, active])
    assert msgs == ["Skipped 1 job that is still active; cancel it first."]
    assert response.templates[0].name == (
        "admin/jobqueue/queueitem/delete_selected_confirmation.html"
    )
    assert list(response.context["queryset"]) == [done]
    _, msgs = run_action(admin_client, "delete_selected", [done], post="yes")
    assert msgs == ["Successfully deleted 1 queue item."]
    assert list(QueueItem.objects.all()) == [active]
    url = reverse("admin:jobqueue_queueitem_delete", args=[active.pk])
    assert admin_client.post(url, {"post": "yes"}).status_code == 403


# --- Dashboard and pause -------------------------------------------------------


def test_dashboard_shows_counts_charts_failures_and_workers(admin_client, make_item):
    now = timezone.now()
    make_item(Status.PENDING, created_at=now - timedelta(minutes=5))
    job = make_item(Status.FAILED, error_type=ErrorType.CORRUPTION)
    for minutes, outcome, ms in [(2, "completed", 100), (3, "completed", 300)]:
        ExtractionMetric.objects.create(
            job=job,
            outcome=outcome,
            extraction_time_ms=ms,
            created_at=now - timedelta(minutes=minutes),
        )
    ExtractionMetric.objects.create(
        job=job,
        outcome="failed",
        error_type=ErrorType.CORRUPTION,
        created_at=now - timedelta(hours=5),
    )
    # A late result that fencing refused: shown as refused, never as completed.
    ExtractionMetric.objects.create(job=job, outcome="refused", created_at=now)
    WorkerHeartbeat.objects.create(worker_id="live-1", current_job=job)
    WorkerHeartbeat.objects.create(
        worker_id="gone-1", last_heartbeat=now - timedelta(hours=1)
    )
    response = admin_client.get(DASHBOARD)
    page = response.content.decode()
    ctx = response.context
    assert response.status_code == 200
    assert '<meta http-equiv="refresh" content="10">' in page
    assert {s["value"]: s["count"] for s in ctx["states"]}["pending"] == 1
    assert ctx["oldest_pending"] in {"5 min", "4 min"}
    assert (ctx["hour_chart"]["completed"], ctx["hour_chart"]["failed"]) == (2, 0)
    assert (ctx["day_chart"]["completed"], ctx["day_chart"]["failed"]) == (2, 1)
    assert len(ctx["hour_chart"]["bars"]) == 60 and len(ctx["day_chart"]["bars"]) == 24
    assert page.count('<svg class="queue-chart"') == 2
    assert ": 1 completed, 0 failed</title>" in page
    assert ctx["avg_hour_ms"] == 200
    assert ctx["stats"]["refused_24h"] == 1
    assert "late results refused (24 h)" in page
    assert [
        (r["value"], r["attempts"], r["failed_now"]) for r in ctx["failure_types"]
    ] == [("corruption", 1, 1)]
    assert [w.worker_id for w, _ in ctx["live_workers"]] == ["live-1"]
    assert ctx["stale_workers"] == 1
    assert "Pause processing" in page


def test_pause_switch_flips_queue_control(admin_client, admin_user):
    response = admin_client.post(PAUSE, {"paused": "1"}, follow=True)
    assert QueueControl.is_paused()
    assert QueueControl.objects.get().changed_by == admin_user.username
    assert "Resume processing" in response.content.decode()
    assert "Processing is paused" in admin_client.get(CHANGELIST).content.decode()
    admin_client.post(PAUSE, {"paused": "0"})
    assert not QueueControl.is_paused()
    assert admin_client.get(PAUSE).status_code == 405


def test_pause_needs_the_csrf_token(client, admin_user):
    client = type(client)(enforce_csrf_checks=True)
    client.force_login(admin_user)
    assert client.post(PAUSE, {"paused": "1"}).status_code == 403
    assert not QueueControl.is_paused()


def test_admin_index_links_the_dashboard(admin_client, client, staff_with):
    assert DASHBOARD in admin_client.get(reverse("admin:index")).content.decode()
    client.force_login(staff_with("documents.view_document"))
    assert DASHBOARD not in client.get(reverse("admin:index")).content.decode()


# --- Clearing old entries ------------------------------------------------------


def age(item, days: float) -> None:
    QueueItem.objects.filter(pk=item.pk).update(
        updated_at=timezone.now() - timedelta(days=days)
    )


def test_clear_old_entries_confirms_then_deletes(admin_client, make_item):
    old = [make_item(s) for s in (Status.COMPLETED, Status.FAILED, Status.CANCELLED)]
    for item in old:
        age(item, 40)
    recent = make_item(Status.COMPLETED)
    active = make_item(Status.PENDING)
    age(active, 40)

    assert admin_client.get(CLEAR).status_code == 200
    form = {"days": 30, "statuses": ["completed", "failed"]}
    step1 = admin_client.post(CLEAR, form)
    assert step1.context["step"] == "confirm" and step1.context["count"] == 2
    assert QueueItem.objects.count() == 5

    step2 = admin_client.post(CLEAR, {**form, "confirm": "yes"})
    assert step2.context["step"] == "done"
    assert (
        step2.context["before"],
        step2.context["deleted"],
        step2.context["after"],
    ) == (
        5,
        2,
        3,
    )
    assert 'id="count-before">5<' in step2.content.decode()
    assert set(QueueItem.objects.all()) == {old[2], recent, active}


def test_clear_rejects_bad_input(admin_client, make_item):
    old = make_item(Status.COMPLETED)
    age(old, 10)
    for data in ({"days": -1, "confirm": "yes"}, {"days": 1, "statuses": ["pending"]}):
        response = admin_client.post(CLEAR, data)
        assert response.context["step"] == "form" and response.context["form"].errors
    assert QueueItem.objects.count() == 1


def test_clear_is_allowed_with_delete_permission_only(client, staff_with, make_item):
    client.force_login(staff_with("jobqueue.delete_queueitem"))
    age(make_item(Status.FAILED), 5)
    response = client.post(CLEAR, {"days": 1, "statuses": ["failed"], "confirm": "1"})
    assert response.status_code == 200 and response.context["deleted"] == 1


# --- Workers and metrics -------------------------------------------------------


@pytest.fixture
def workers(settings):
    settings.QUEUE_STALE_WORKER_SECONDS = 60
    old = timezone.now() - timedelta(minutes=10)
    return {
        "alive": WorkerHeartbeat.objects.create(worker_id="alive-1"),
        "stale": WorkerHeartbeat.objects.create(
            worker_id="stale-1", last_heartbeat=old
        ),
        "stopped": WorkerHeartbeat.objects.create(
            worker_id="stopped-1",
            last_heartbeat=old,
            status=WorkerHeartbeat.State.STOPPED,
        ),
    }


@pytest.mark.parametrize("state", ["alive", "stale", "stopped"])
def test_worker_state_filter(admin_client, workers, state):
    response = admin_client.get(f"{WORKERS}?state={state}")
    assert [w.worker_id for w in response.context["cl"].result_list] == [f"{state}-1"]
    assert f"{state.capitalize()}</span>" in response.content.decode()


def test_rescue_action_rescues_jobs_of_stale_workers(
    admin_client, workers, make_item, queue
):
    item = make_item(Status.PENDING)
    queue.claim("stale-1")
    QueueItem.objects.filter(pk=item.pk).update(
        started_at=timezone.now() - timedelta(minutes=10)
    )
    _, msgs = run_action(admin_client, "rescue_stale_jobs", [workers["alive"]], WORKERS)
    assert msgs == ["None of the selected workers is stale; nothing was rescued."]
    _, msgs = run_action(admin_client, "rescue_stale_jobs", [workers["stale"]], WORKERS)
    assert msgs == ["Rescued 1 job of stale workers."]
    assert statuses(item) == [Status.PENDING]


def test_rescue_needs_change_permission_on_queue_items(client, staff_with, workers):
    client.force_login(staff_with("jobqueue.view_workerheartbeat"))
    assert "rescue_stale_jobs" not in client.get(WORKERS).content.decode()
    client.force_login(
        staff_with("jobqueue.view_workerheartbeat", "jobqueue.change_queueitem")
    )
    assert "rescue_stale_jobs" in client.get(WORKERS).content.decode()


def test_a_live_workers_heartbeat_cannot_be_deleted(admin_client, workers):
    """Without its row a live worker looks dead: its jobs would be rescued and run
    twice. Stopped and stale ones may go."""
    run_action(admin_client, "delete_selected", [workers["alive"]], WORKERS, post="yes")
    assert WorkerHeartbeat.objects.filter(worker_id="alive-1").exists()
    run_action(
        admin_client,
        "delete_selected",
        [workers["stale"], workers["stopped"]],
        WORKERS,
        post="yes",
    )
    assert list(WorkerHeartbeat.objects.values_list("worker_id", flat=True)) == [
        "alive-1"
    ]


def test_a_refused_late_result_shows_in_the_metrics_and_the_items_history(
    admin_client, make_item
):
    job = make_item(Status.PENDING)
    ExtractionMetric.objects.create(
        job=job, document=job.document, outcome=ExtractionMetric.Outcome.REFUSED
    )
    for url in (METRICS, reverse("admin:jobqueue_queueitem_change", args=[job.pk])):
        response = admin_client.get(url)
        assert response.status_code == 200, url
        assert "Late result refused" in response.content.decode()


def test_metrics_list_is_read_only_with_filters(admin_client, make_item):
    job = make_item(Status.COMPLETED)
    ExtractionMetric.objects.create(job=job, document=job.document, outcome="completed")
    ExtractionMetric.objects.create(job=job, outcome="retry", error_type="timeout")
    response = admin_client.get(f"{METRICS}?outcome__exact=retry")
    assert response.context["cl"].result_count == 1
    assert "delete_selected" not in response.content.decode()
    add = reverse("admin:jobqueue_extractionmetric_add")
    assert admin_client.get(add).status_code == 403


# --- Documents -----------------------------------------------------------------


def test_document_list_and_page(admin_client, make_document):
    doc = make_document(content=b"x" * 2048, name="report.txt")
    doc.text = "A" * 600
    doc.page_count = 3
    doc.save()
    page = admin_client.get(DOCUMENTS).content.decode()
    assert "report.txt" in page and "2.0\xa0KB" in page and "alice" in page
    detail = admin_client.get(
        reverse("admin:documents_document_change", args=[doc.pk])
    ).content.decode()
    assert "A" * 500 + "…</pre>" in detail and "A" * 501 not in detail
    assert 'name="_save"' not in detail


def test_reprocess_action_queues_and_skips_already_queued(
    admin_client, make_document, viewer_client
):
    docs = [make_document(name=f"d{i}.txt") for i in range(2)]
    run_action(viewer_client, "reprocess", docs[:1], DOCUMENTS)
    assert not QueueItem.objects.exists()
    _, msgs = run_action(admin_client, "reprocess", docs[:1], DOCUMENTS)
    assert msgs == ["Queued 1 document for reprocessing."]
    _, msgs = run_action(admin_client, "reprocess", docs, DOCUMENTS)
    assert msgs == [
        "Queued 1 document for reprocessing; "
        "skipped 1 whose extraction is already waiting or running."
    ]
    assert QueueItem.objects.filter(operation=Operation.REPROCESS).count() == 2
