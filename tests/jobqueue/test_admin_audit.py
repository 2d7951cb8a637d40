"""The operators' console as an operator uses it on a busy day: finding a job, a
worker's jobs, "select all" on a long list, the pause shown where it matters, times
in the site's zone."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from documents.models import Document
from jobqueue.admin import QueueItemAdmin
from jobqueue.models import (
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
WORKERS = reverse("admin:jobqueue_workerheartbeat_changelist")


def item_page(item: QueueItem) -> str:
    return reverse("admin:jobqueue_queueitem_change", args=[item.pk])


def shown(client, query: str) -> set[int]:
    response = client.get(f"{CHANGELIST}?{query}")
    assert response.status_code == 200
    return {item.pk for item in response.context["cl"].result_list}


def seed(owner, count: int, status: str, **fields) -> list[QueueItem]:
    """``count`` documents with one job each, in a few statements."""
    documents = Document.objects.bulk_create(
        Document(owner=owner, original_filename=f"{n}.txt", size=1, sha256="0" * 64)
        for n in range(count)
    )
    return QueueItem.objects.bulk_create(
        QueueItem(document=d, status=status, attempts=1, **fields) for d in documents
    )


def task(status: str = Status.PENDING, **fields) -> QueueItem:
    payload = {"task": "app.tasks.send_mail", "args": [], "kwargs": {}, "errors": []}
    return QueueItem.objects.create(
        operation=Operation.TASK, status=status, payload=payload, **fields
    )


@pytest.fixture
def viewer_client(client, django_user_model):
    viewer = django_user_model.objects.create_user(
        "viewer", password="x-password-1", is_staff=True
    )
    viewer.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="jobqueue", codename__startswith="view_"
        )
    )
    client.force_login(viewer)
    return client


# --- Finding a job ---------------------------------------------------------------


def test_search_finds_a_job_by_its_number(admin_client, admin_user):
    """An operator pastes the number from a log line or a user's report; a task has
    no document name to search by."""
    job = task(Status.FAILED)
    other = seed(admin_user, 1, Status.FAILED)[0]
    assert shown(admin_client, f"q={job.pk}") == {job.pk}
    assert shown(admin_client, f"q=%23{job.pk}") == {job.pk}
    # Within the filters chosen, and no error for a number past any id.
    assert shown(admin_client, f"q={job.pk}&status__exact=pending") == set()
    assert shown(admin_client, "q=" + "9" * 30) == set()
    assert other.pk not in shown(admin_client, f"q={job.pk}")


def test_a_workers_jobs_by_filter_and_by_search(admin_client, admin_user):
    WorkerHeartbeat.objects.create(worker_id="host-b:7:w0")
    WorkerHeartbeat.objects.create(
        worker_id="host-c:9:w0", status=WorkerHeartbeat.State.STOPPED
    )
    held = seed(admin_user, 2, Status.PROCESSING, claimed_by="host-b:7:w0")
    seed(admin_user, 3, Status.PROCESSING, claimed_by="host-a:1:w0")
    expected = {item.pk for item in held}
    assert shown(admin_client, "worker=host-b:7:w0") == expected
    assert shown(admin_client, "q=host-b") == expected
    sidebar = admin_client.get(CHANGELIST).content.decode()
    sidebar = sidebar.split('id="changelist-filter"')[1]
    # Workers that stopped are history: the filter offers those that may run jobs.
    assert "?worker=host-b%3A7%3Aw0" in sidebar and "host-c:9:w0" not in sidebar


# --- Select all on a long list ------------------------------------------------------


def test_release_of_select_all_reads_only_the_processing_jobs(admin_client, admin_user):
    """ "Select all 40,000" and "Release" opened a transaction for every job on the
    list, processing or not: thousands of statements for a handful of releases."""

    def statements(waiting: int) -> int:
        QueueItem.objects.all().delete()
        lost = seed(admin_user, 2, Status.PROCESSING, claimed_by="gone-worker")
        seed(admin_user, waiting, Status.PENDING)
        data = {
            "action": "release_jobs",
            "_selected_action": [lost[0].pk],
            "select_across": 1,
        }
        with CaptureQueriesContext(connection) as captured:
            response = admin_client.post(CHANGELIST, data)
        assert [str(m) for m in get_messages(response.wsgi_request)] == [
            "Released 2 jobs to pending (their workers are not alive: the lost "
            f"attempts count, as in a rescue); skipped {waiting} that were not "
            "processing (or were being changed meanwhile)."
        ]
        admin_client.get(response.url)  # shows the message, which clears it
        return len(captured)

    statements(2)  # Django's caches (the content type) filled
    assert statements(60) == statements(5)


# --- The item page ------------------------------------------------------------------


def test_progress_time_is_in_the_sites_time_zone(admin_client, admin_user, settings):
    """Every other time on the page is in TIME_ZONE; this one was in UTC."""
    settings.TIME_ZONE = "Asia/Kathmandu"  # +05:45: no hour shift matches it
    now = timezone.now()
    item = seed(
        admin_user,
        1,
        Status.PROCESSING,
        started_at=now - timedelta(minutes=1),
        progress_at=now,
        progress_done=3,
        progress_total=10,
    )[0]
    page = admin_client.get(item_page(item)).content.decode()
    local = timezone.localtime(now).strftime("%H:%M:%S")
    assert f"3 of 10 pages (at {local})" in page


# --- The pause, shown where it matters ----------------------------------------------


def test_the_pause_is_shown_on_the_workers_list_and_a_waiting_jobs_page(
    admin_client, admin_user
):
    WorkerHeartbeat.objects.create(worker_id="w-1", status="paused")
    waiting, done = seed(admin_user, 1, Status.PENDING)[0], task(Status.COMPLETED)
    assert 'id="queue-paused"' not in admin_client.get(WORKERS).content.decode()
    QueueControl.set_paused(True, by="admin")
    for url in (CHANGELIST, WORKERS, item_page(waiting)):
        page = admin_client.get(url).content.decode()
        assert 'id="queue-paused"' in page, url
        assert f'href="{DASHBOARD}">Resume it' in page, url
    # A finished job does not wait for anything.
    assert 'id="queue-paused"' not in admin_client.get(item_page(done)).content.decode()


def test_view_only_staff_are_told_of_the_pause_but_not_offered_to_resume(
    viewer_client,
):
    WorkerHeartbeat.objects.create(worker_id="w-1")
    item = task()
    QueueControl.set_paused(True, by="admin")
    for url in (CHANGELIST, WORKERS, item_page(item)):
        page = viewer_client.get(url).content.decode()
        assert 'id="queue-paused"' in page and "Resume it" not in page, url


def test_operators_find_clear_old_entries_on_the_admin_index(client, django_user_model):
    """An operator may clear old entries (jobqueue.dashboard.can_clear); the index
    linked the page only to those with the delete permission."""
    operator = django_user_model.objects.create_user(
        "op", password="x-password-1", is_staff=True
    )
    operator.user_permissions.add(Permission.objects.get(codename="change_queueitem"))
    client.force_login(operator)
    assert reverse("admin:jobqueue_clear_old") in client.get("/admin/").content.decode()


# --- The dashboard ------------------------------------------------------------------


def test_dashboard_of_an_empty_queue_claims_no_average_and_names_the_zone(
    admin_client, settings
):
    settings.TIME_ZONE = "America/New_York"
    page = admin_client.get(DASHBOARD).content.decode()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))
    # "0 ms" would say extractions took no time; none ran.
    assert "- average extraction (24 h)" in text
    assert "Times are in America/New_York" in text


# --- Guards -------------------------------------------------------------------------


def test_the_list_takes_as_many_queries_for_100_rows_as_for_5_and_no_text(
    admin_client, admin_user, monkeypatch
):
    monkeypatch.setattr(QueueItemAdmin, "list_per_page", 100)
    WorkerHeartbeat.objects.create(worker_id="w-1")

    def queries(count: int) -> list[str]:
        QueueItem.objects.all().delete()
        items = seed(admin_user, count // 2, Status.FAILED, claimed_by="w-1")
        items += [task(Status.FAILED) for _ in range(count - len(items))]
        ExtractionMetric.objects.bulk_create(
            ExtractionMetric(job=i, document_id=i.document_id, outcome="failed")
            for i in items
        )
        Document.objects.update(text="extracted " * 1000)
        with CaptureQueriesContext(connection) as captured:
            response = admin_client.get(CHANGELIST)
        assert len(response.context["cl"].result_list) == count
        return [q["sql"] for q in captured]

    queries(5)
    few, many = queries(5), queries(100)
    assert len(many) == len(few)
    assert not [sql for sql in many if '"documents_document"."text"' in sql]
