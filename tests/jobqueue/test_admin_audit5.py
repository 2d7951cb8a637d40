"""The operators' console as an outside audit used it (fifth round): a job's times to
the second, the metrics list at millions of rows, and what a dead worker's row says
about the job it last reported."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from jobqueue import admin_lists
from jobqueue.models import ExtractionMetric, QueueItem, Status, WorkerHeartbeat

pytestmark = pytest.mark.django_db

WORKERS = reverse("admin:jobqueue_workerheartbeat_changelist")
METRICS = reverse("admin:jobqueue_extractionmetric_changelist")


def test_a_jobs_page_gives_its_times_to_the_second(admin_client, make_document):
    # Started and finished within one minute: Django's format showed "9:33 a.m."
    # for both, and nothing of how long the job ran.
    item = QueueItem.objects.create(
        document=make_document(), status=Status.FAILED, attempts=1
    )
    started = datetime(2025, 1, 31, 14, 5, 9, tzinfo=UTC)
    QueueItem.objects.filter(pk=item.pk).update(
        started_at=started, finished_at=started + timedelta(seconds=41)
    )
    ExtractionMetric.objects.create(job=item, outcome="failed", created_at=started)
    page = admin_client.get(
        reverse("admin:jobqueue_queueitem_change", args=[item.pk])
    ).content.decode()
    assert "2025-01-31 14:05:09" in page  # started, and the attempt's end
    assert "2025-01-31 14:05:50" in page  # finished
    assert "2:05 p.m." not in page


def test_the_metrics_list_estimates_a_large_table_instead_of_counting_it(
    admin_client, make_document, monkeypatch
):
    # One row per attempt, never cleared with the queue: counting it on each view
    # took 0.1 s at two million rows (PostgreSQL), and grows with the history.
    when = datetime(2025, 1, 31, 14, 5, 9, tzinfo=UTC)
    ExtractionMetric.objects.create(outcome="completed", created_at=when)
    monkeypatch.setattr(admin_lists, "estimated_rows", lambda queryset: 2_000_000)
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(METRICS)
    assert response.status_code == 200
    assert [q["sql"] for q in queries if "COUNT(" in q["sql"]] == []
    page = response.content.decode()
    assert re.search(r"about</span> 2000000 extraction metrics", page)
    # Thousands of attempts end in a minute: each row says its second.
    assert "2025-01-31 14:05:09" in page


def test_a_dead_workers_row_says_its_last_job_is_no_longer_its_own(
    admin_client, make_document
):
    now = timezone.now()
    rescued = QueueItem.objects.create(
        document=make_document(name="a.txt"),
        status=Status.PROCESSING,
        claimed_by="live-1",
        attempts=2,
    )
    held = QueueItem.objects.create(
        document=make_document(name="b.txt"),
        status=Status.PROCESSING,
        claimed_by="live-2",
        attempts=1,
    )
    # Killed while it ran ``rescued``, which another worker runs now.
    WorkerHeartbeat.objects.create(
        worker_id="dead-1", current_job=rescued, status="busy"
    )
    WorkerHeartbeat.objects.filter(worker_id="dead-1").update(
        last_heartbeat=now - timedelta(hours=1)
    )
    WorkerHeartbeat.objects.create(worker_id="live-1", current_job=rescued)
    WorkerHeartbeat.objects.create(worker_id="live-2", current_job=held)
    with CaptureQueriesContext(connection) as queries:
        page = admin_client.get(WORKERS).content.decode()
    rows = {
        name: row
        for row in page.split("<tr")
        for name in ("dead-1", "live-1", "live-2")
        if f">{name}<" in row
    }
    assert "no longer held: rescued or ended" in rows["dead-1"]
    assert f"#{rescued.pk}" in rows["dead-1"]
    assert "no longer held" not in rows["live-1"] + rows["live-2"]
    # One query for the rows, whatever their number.
    assert len([q for q in queries if "extraction_queue" in q["sql"]]) == 1


def test_a_second_submit_of_the_clear_page_warns_that_nothing_went(
    admin_client, make_document
):
    QueueItem.objects.create(document=make_document(), status=Status.COMPLETED)
    confirm = {"days": "0", "statuses": ["completed"], "confirm": "yes"}
    url = reverse("admin:jobqueue_clear_old")
    levels = []
    for _ in range(2):
        response = admin_client.post(url, confirm)
        levels += [(m.level_tag, m.message) for m in response.context["messages"]]
    assert levels == [
        ("success", "Deleted 1 queue item older than 0 days."),
        ("warning", "Deleted 0 queue items older than 0 days."),
    ]
