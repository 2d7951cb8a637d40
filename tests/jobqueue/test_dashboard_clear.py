"""The "Clear old entries" page reads the queue's size once per step: a count of the
whole table was most of the page's cost, and it counted three times."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Count
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from jobqueue import dashboard
from jobqueue.models import QueueItem, Status
from jobqueue.services import QueueManager

pytestmark = pytest.mark.django_db

CLEAR = reverse("admin:jobqueue_clear_old")


@pytest.fixture
def items(make_document):
    """Old finished items in each finished state, recent ones and an old active one."""

    def item(status: str, days: float) -> QueueItem:
        made = QueueItem.objects.create(document=make_document(), status=status)
        QueueItem.objects.filter(pk=made.pk).update(
            updated_at=timezone.now() - timedelta(days=days)
        )
        return made

    return [
        item(Status.COMPLETED, 40),
        item(Status.COMPLETED, 40),
        item(Status.FAILED, 40),
        item(Status.CANCELLED, 40),
        item(Status.COMPLETED, 1),
        item(Status.PENDING, 40),
    ]


def reads_of_the_queue(queries) -> list[str]:
    """The statements that read the queue's table whole (no LIMIT: not a batch)."""
    return [
        q["sql"]
        for q in queries
        if q["sql"].startswith("SELECT")
        and '"extraction_queue"' in q["sql"]
        and "LIMIT" not in q["sql"]
    ]


def test_each_step_reads_the_table_once(admin_client, items):
    form = {"days": 30, "statuses": ["completed", "failed"]}
    with CaptureQueriesContext(connection) as queries:
        page = admin_client.get(CLEAR)
    assert page.context["total"] == 6
    assert len(reads_of_the_queue(queries)) == 1

    with CaptureQueriesContext(connection) as queries:
        step1 = admin_client.post(CLEAR, form)
    assert (step1.context["count"], step1.context["total"]) == (3, 6)
    assert step1.context["per_state"] == [("Completed", 2), ("Failed", 1)]
    assert "3 items (Completed, Failed) older than 30 days would be deleted, of 6" in (
        step1.content.decode()
    )
    assert len(reads_of_the_queue(queries)) == 1

    with CaptureQueriesContext(connection) as queries:
        step2 = admin_client.post(CLEAR, {**form, "confirm": "yes"})
    context = step2.context
    assert (context["before"], context["deleted"], context["after"]) == (6, 3, 3)
    assert context["total"] == 3
    page = step2.content.decode()
    assert 'id="count-before">6<' in page and 'id="count-after">3<' in page
    # The delete's own statements aside (a batch's ids, its DELETEs), one count.
    counts = [sql for sql in reads_of_the_queue(queries) if "COUNT(" in sql]
    assert len(counts) == 1


@pytest.mark.parametrize(
    ("days", "statuses"),
    [
        (30, ["completed", "failed", "cancelled"]),
        (30, ["cancelled"]),
        (0, ["completed"]),
        (100, ["completed", "failed"]),
    ],
)
def test_the_grouped_count_matches_what_the_clear_deletes(items, days, statuses):
    total, per_state = dashboard.clear_counts(days, statuses)
    matching = QueueManager().finished_older_than(days, statuses)
    expected = dict(matching.order_by().values_list("status").annotate(n=Count("pk")))
    assert (total, per_state) == (QueueItem.objects.count(), expected)
