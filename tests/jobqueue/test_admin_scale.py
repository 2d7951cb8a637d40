"""The operators' console at scale: what a page or an action costs must not grow with
the rows it covers (a "select all" of a million items, the whole table's count, a
bulk cancel of tasks)."""

from __future__ import annotations

import re
from itertools import count

import pytest
from django.contrib.admin.models import DELETION, LogEntry
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from jobqueue import admin_lists
from jobqueue.admin import QueueItemAdmin
from jobqueue.admin_lists import DELETE_SAMPLE, EstimatedCountPaginator, estimated_rows
from jobqueue.models import Operation, QueueItem, Status
from jobqueue.services import QueueManager
from jobqueue.sql import AppendToList
from tests import admin_actions
from tests.jobqueue.task_apps import contract

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:jobqueue_queueitem_changelist")
_names = count()
postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL's statistics"
)


@pytest.fixture
def make_items(make_document):
    """``n`` queue items in ``status``, each on its own document."""

    def make(n: int, status: str = Status.COMPLETED) -> list[QueueItem]:
        return [
            QueueItem.objects.create(
                document=make_document(name=f"scale-{next(_names)}.txt"), status=status
            )
            for _ in range(n)
        ]

    return make


def select_all(client, url: str = CHANGELIST, **extra):
    return admin_actions.select_all(client, url, QueueItem, **extra)


def confirm(client, response, url: str = CHANGELIST):
    return admin_actions.confirm(client, response, url)


# --- The bulk delete -------------------------------------------------------------


def test_select_all_delete_confirmation_names_a_sample_and_counts_the_rest(
    admin_client, make_items
):
    make_items(DELETE_SAMPLE + 5, Status.COMPLETED)
    make_items(3, Status.FAILED)
    make_items(2, Status.PENDING)
    response, msgs = select_all(admin_client)
    assert msgs == ["Skipped 2 jobs that are still active; cancel them first."]
    assert response.templates[0].name == (
        "admin/jobqueue/queueitem/delete_selected_confirmation.html"
    )
    listed = response.context["deletable_objects"][0]
    assert len(listed) == DELETE_SAMPLE  # Django's page lists all 28
    page = response.content.decode()
    assert "28 finished queue items will be deleted" in page
    assert "Completed: 25" in page and "Failed: 3" in page
    assert f"… and {28 - DELETE_SAMPLE} more" in page
    # The form posts the selection back, not one input per item.
    assert page.count('name="_selected_action"') == 1
    assert 'name="select_across" value="1"' in page
    assert "Pending" not in page.split("<h2>Objects</h2>")[0].split("deleted:")[1]


def test_the_confirmation_costs_the_same_for_more_items(admin_client, make_items):
    make_items(5)
    with CaptureQueriesContext(connection) as few:
        select_all(admin_client)
    make_items(DELETE_SAMPLE * 3)
    with CaptureQueriesContext(connection) as many:
        response, _ = select_all(admin_client)
    assert response.status_code == 200
    assert len(many) == len(few)


def test_confirming_deletes_what_was_counted_in_batches_and_logs_each(
    admin_client, make_items, monkeypatch
):
    monkeypatch.setattr(QueueItemAdmin, "delete_batch", 4)
    done = make_items(10, Status.COMPLETED) + make_items(3, Status.CANCELLED)
    active = make_items(2, Status.RETRY_PENDING)
    response, _ = select_all(admin_client)
    # Finished after the operator saw the count: not deleted by this confirmation.
    later = make_items(1, Status.FAILED)
    with CaptureQueriesContext(connection) as queries:
        response, msgs = confirm(admin_client, response)
    assert response.status_code == 200
    assert msgs == [
        "Skipped 2 jobs that are still active; cancel them first.",
        "Successfully deleted 13 queue items.",
    ]
    assert set(QueueItem.objects.values_list("pk", flat=True)) == {
        item.pk for item in active + later
    }
    logged = LogEntry.objects.filter(action_flag=DELETION)
    assert sorted(int(pk) for pk in logged.values_list("object_id", flat=True)) == [
        item.pk for item in done
    ]
    # Per batch of four: a locked read, the history, the deletion (and the
    # pointers nulled): four batches, not thirteen deletions of one.
    deletes = [q for q in queries if q["sql"].startswith("DELETE FROM")]
    assert len(deletes) <= 4 + 1  # four batches; the session's own at most


def test_the_delete_keeps_the_lists_filter(admin_client, make_items):
    kept = make_items(3, Status.COMPLETED)
    gone = make_items(4, Status.FAILED)
    url = f"{CHANGELIST}?status__exact=failed"
    response, _ = select_all(admin_client, url)
    assert "4 finished queue items will be deleted" in response.content.decode()
    _, msgs = confirm(admin_client, response, url)
    assert msgs == ["Successfully deleted 4 queue items."]
    assert set(QueueItem.objects.values_list("pk", flat=True)) == {i.pk for i in kept}
    assert not QueueItem.objects.filter(pk__in=[i.pk for i in gone]).exists()


# --- The list's count ------------------------------------------------------------


def test_a_large_unfiltered_list_shows_the_estimate_without_counting(
    admin_client, make_items, monkeypatch
):
    make_items(3)
    monkeypatch.setattr(admin_lists, "estimated_rows", lambda queryset: 1_000_000)
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(CHANGELIST)
    counts = [q["sql"] for q in queries if "COUNT(" in q["sql"]]
    assert counts == []
    page = response.content.decode()
    assert re.search(r"about</span> 1000000 queue items", page)
    assert "Select all (about 1000000) queue items" in page
    assert "All (about 1000000) selected" in page
    # A page past the estimate's end is empty, not an error.
    assert admin_client.get(f"{CHANGELIST}?p=20000").status_code == 200


def test_a_small_or_filtered_list_is_counted_exactly(
    admin_client, make_items, monkeypatch
):
    make_items(3)
    monkeypatch.setattr(admin_lists, "estimated_rows", lambda queryset: 10)
    page = admin_client.get(CHANGELIST).content.decode()
    assert "about" not in page and "3 queue items" in page
    monkeypatch.setattr(admin_lists, "estimated_rows", lambda queryset: None)
    page = admin_client.get(f"{CHANGELIST}?status__exact=completed").content.decode()
    assert "about" not in page and "3 queue items" in page


def test_only_the_whole_postgresql_table_is_estimated(make_items):
    make_items(3)
    everything = QueueItem.objects.all()
    if connection.vendor != "postgresql":
        assert estimated_rows(everything) is None
        return
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE extraction_queue")
    assert estimated_rows(everything) == 3
    assert estimated_rows(everything.filter(status=Status.COMPLETED)) is None
    assert estimated_rows(everything.distinct()) is None


@postgresql_only
def test_the_paginator_takes_the_estimate_above_the_threshold(make_items, monkeypatch):
    make_items(3)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE extraction_queue")
    monkeypatch.setattr(admin_lists, "ESTIMATE_ABOVE", 2)
    paginator = EstimatedCountPaginator(QueueItem.objects.order_by("-pk"), 2)
    with CaptureQueriesContext(connection) as queries:
        assert paginator.count == 3 and paginator.estimated
    assert not any("COUNT(" in q["sql"] for q in queries)
    assert list(paginator.page(5).object_list) == []  # past the end: empty


# --- A task's error appended in SQL ------------------------------------------------


def test_append_to_list_appends_in_one_statement(make_document):
    error = {"exception_class_path": "a.B", "traceback": "Line 1\n“quoted” ü 😀"}
    rows = [
        QueueItem.objects.create(payload={"errors": [{"old": 1}], "task": "t"}),
        QueueItem.objects.create(payload={"task": "t", "args": [1, "x"]}),
        QueueItem.objects.create(payload={}),
    ]
    untouched = QueueItem.objects.create(payload={"errors": []})
    with CaptureQueriesContext(connection) as queries:
        QueueItem.objects.filter(pk__in=[r.pk for r in rows]).update(
            payload=AppendToList("payload", "errors", error)
        )
    assert len(queries) == 1
    got = [QueueItem.objects.get(pk=r.pk).payload for r in rows]
    assert got == [
        {"errors": [{"old": 1}, error], "task": "t"},
        {"task": "t", "args": [1, "x"], "errors": [error]},
        {"errors": [error]},
    ]
    assert QueueItem.objects.get(pk=untouched.pk).payload == {"errors": []}


@pytest.mark.django_db(transaction=True)
def test_a_bulk_cancel_appends_tasks_errors_without_rewriting_payloads():
    ids = [int(contract.echo.enqueue(i).id) for i in range(12)]
    with CaptureQueriesContext(connection) as queries:
        assert sorted(QueueManager().cancel_many(ids)) == sorted(ids)
    writes = [q["sql"] for q in queries if '"payload" =' in q["sql"]]
    assert len(writes) == 1 and "CASE WHEN" not in writes[0]
    for item in QueueItem.objects.filter(pk__in=ids):
        assert item.operation == Operation.TASK and item.status == Status.CANCELLED
        assert [e["traceback"] for e in item.payload["errors"]] == [
            "Cancelled before it ran."
        ]
