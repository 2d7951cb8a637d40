"""The staff-wide pages over a large library (bench/staff_scale.py): the list's counts
by status and a search by name read a bounded number of rows, and the dashboard's
counts by state come from the housekeeping's count. Tried on small tables, with the
threshold lowered where the point is the large tables' way; never timed."""

from __future__ import annotations

import pytest
from django.db import connection
from django.template.loader import render_to_string
from django.test.utils import CaptureQueriesContext

from documents import pagination, views
from documents.models import Document
from documents.pagination import Tally
from documents.views import SORTS
from jobqueue import admin_lists
from jobqueue.models import FinishedCount, MetricsFold, Operation, QueueItem, Status
from jobqueue.services import QueueManager
from tests.documents.test_people_scale import LIST, add_documents

pytestmark = pytest.mark.django_db

on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL's planner estimates"
)
# Per status: documents, each with one extract item in its state (as the queue
# leaves them: a document's status is its latest job's).
LIBRARY = {
    Status.COMPLETED: 12,
    Status.FAILED: 5,
    Status.CANCELLED: 3,
    Status.PENDING: 4,
    Status.PROCESSING: 2,
    Status.RETRY_PENDING: 1,
}


def library(owner) -> list[Document]:
    made = []
    for status, n in LIBRARY.items():
        made += add_documents(owner, n, status=status)
    QueueItem.objects.bulk_create(
        QueueItem(document=d, operation=Operation.EXTRACT, status=d.status)
        for d in made
    )
    return made


def get(client, data: dict | None = None):
    with CaptureQueriesContext(connection) as captured:
        response = client.get(LIST, data or {})
    assert response.status_code == 200
    return response, [q["sql"] for q in captured.captured_queries]


def shown(response) -> dict[str, Tally]:
    return {s: n for s, _label, n in response.context["statuses"]}


def analyze() -> None:
    """Statistics for the planner (and the table's estimated size)."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE documents_document")
        cursor.execute("ANALYZE extraction_queue")


@pytest.fixture
def staff_client(client, staff_user):
    client.force_login(staff_user)
    return client


# --- Small libraries: every count exact, as before -----------------------------------


def test_a_small_library_is_counted_exactly_for_staff(staff_client, user):
    library(user)
    response, sqls = get(staff_client)
    assert shown(response) == LIBRARY
    assert all(n.exact for n in shown(response).values())
    assert response.context["total"] == sum(LIBRARY.values())
    body = response.content.decode()
    assert "about" not in body
    # One count of every status, of the documents alone.
    (counts,) = [s for s in sqls if "COUNT(" in s.upper()]
    assert "extraction_queue" not in counts


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite keeps no estimates")
def test_sqlite_counts_exactly_however_low_the_threshold(
    staff_client, user, monkeypatch
):
    monkeypatch.setattr(pagination, "ESTIMATE_ABOVE", 1)
    library(user)
    analyze()
    response, _ = get(staff_client)
    assert shown(response) == LIBRARY
    assert all(n.exact for n in shown(response).values())


# --- Large libraries (PostgreSQL): active states through the queue, "about" the rest --


@on_postgresql
def test_a_large_library_counts_the_active_exactly_and_estimates_the_finished(
    staff_client, user, monkeypatch
):
    monkeypatch.setattr(pagination, "ESTIMATE_ABOVE", 10)
    made = library(user)
    # A finished item left behind by a reprocess counts nothing.
    QueueItem.objects.create(
        document=made[0], operation=Operation.EXTRACT, status=Status.FAILED
    )
    analyze()
    response, sqls = get(staff_client)
    counts = shown(response)
    for status in (Status.PENDING, Status.PROCESSING, Status.RETRY_PENDING):
        assert counts[status] == LIBRARY[status] and counts[status].exact
    for status in (Status.COMPLETED, Status.FAILED, Status.CANCELLED):
        assert counts[status].about and counts[status] > 0
    assert response.context["total"].about
    # The active ones off the queue's items; the finished ones never counted.
    (active,) = [s for s in sqls if "COUNT(" in s.upper()]
    assert "extraction_queue" in active
    assert sum(s.startswith("EXPLAIN") for s in sqls) == 3
    body = response.content.decode()
    assert f"about {int(counts[Status.COMPLETED])}<" in body
    assert f'Pending <span class="count">{LIBRARY[Status.PENDING]}</span>' in body


@on_postgresql
def test_a_filter_of_few_documents_is_counted_exactly(staff_client, user, monkeypatch):
    monkeypatch.setattr(pagination, "ESTIMATE_ABOVE", 10)
    library(user)
    pdfs = add_documents(user, 2)
    Document.objects.filter(pk__in=[d.pk for d in pdfs]).update(
        mime_type="application/pdf"
    )
    analyze()
    response, _ = get(staff_client, {"type": "application/pdf"})
    assert {s: n for s, n in shown(response).items() if n} == {Status.COMPLETED: 2}
    assert all(n.exact for n in shown(response).values())


@on_postgresql
def test_an_active_state_s_page_is_read_through_the_queue(
    staff_client, user, monkeypatch
):
    monkeypatch.setattr(pagination, "ESTIMATE_ABOVE", 10)
    made = library(user)
    analyze()
    response, sqls = get(staff_client, {"status": Status.PENDING})
    pending = [d.pk for d in made if d.status == Status.PENDING]
    assert [d.pk for d in response.context["page"]] == sorted(pending, reverse=True)
    assert response.context["page"].paginator.count == len(pending)
    page = next(s for s in sqls if '"documents_document"."original_filename"' in s)
    assert "extraction_queue" in page


@on_postgresql
def test_a_page_past_an_estimate_is_empty_not_an_error(staff_client, user, monkeypatch):
    monkeypatch.setattr(pagination, "ESTIMATE_ABOVE", 10)
    library(user)
    analyze()
    response, _ = get(staff_client, {"page": "9"})
    assert response.context["page"].number == 9
    assert list(response.context["page"]) == []


# --- A search by name reads its matches once ---------------------------------------


@pytest.mark.parametrize("sort", ["-date", "name", "-size"])
def test_a_search_reads_its_matches_once_and_pages_them_in_order(
    staff_client, user, sort
):
    library(user)
    ids = list(Document.objects.order_by("pk").values_list("pk", flat=True))
    Document.objects.filter(pk__in=ids[::3]).update(
        original_filename="Quarterly-figures.pdf"
    )
    Document.objects.filter(pk__in=ids[1::7]).update(title="The quarterly report")
    response, sqls = get(staff_client, {"q": "QUARTERLY", "sort": sort})
    expected = Document.objects.filter(
        pk__in=[
            d.pk
            for d in Document.objects.all()
            if "quarterly" in (d.title + d.original_filename).lower()
        ]
    ).order_by(*SORTS[sort])
    assert [d.pk for d in response.context["page"]] == [d.pk for d in expected]
    counts = shown(response)
    assert sum(counts.values()) == len(expected) == response.context["total"]
    assert all(n.exact for n in counts.values())
    # The names are compared once: the page sorts the ids found, all of them (under
    # a LIMIT, PostgreSQL would walk the sort's index in search of them).
    assert len([s for s in sqls if "LIKE" in s]) == 1
    assert not any("COUNT(" in s.upper() for s in sqls)
    (ids,) = [
        s for s in sqls if s.startswith('SELECT "documents_document"."id" AS "pk" FROM')
    ]
    assert " IN (" in ids and " LIMIT " not in ids


def test_a_person_s_search_finds_their_documents_only(user_client, user, other_user):
    mine = add_documents(user, 3)
    add_documents(other_user, 4)
    Document.objects.update(original_filename="Budget.xlsx")
    response, _ = get(user_client, {"q": "budget"})
    assert [d.pk for d in response.context["page"]] == [d.pk for d in mine[::-1]]
    assert response.context["total"] == 3


def test_a_search_with_a_status_shows_that_status_s_matches(staff_client, user):
    made = library(user)
    failed = [d.pk for d in made if d.status == Status.FAILED]
    response, _ = get(staff_client, {"q": "doc-", "status": Status.FAILED})
    assert [d.pk for d in response.context["page"]] == sorted(failed, reverse=True)
    assert shown(response) == LIBRARY


def test_a_search_of_more_matches_than_it_reads_says_so(
    staff_client, user, monkeypatch
):
    monkeypatch.setattr(pagination, "MATCHES_READ", 10)
    made = library(user)
    response, sqls = get(staff_client, {"q": "doc-"})
    total = response.context["total"]
    assert total == 10 and total.at_least
    # The page is still the newest 25 (the count is no end to it).
    newest = sorted((d.pk for d in made), reverse=True)[:25]
    assert [d.pk for d in response.context["page"]] == newest
    if connection.vendor == "postgresql":
        # Sorted from a scan of the matches, by keys no index serves: no walk of an
        # index that may hold them all past its first million.
        (page,) = [s for s in sqls if "LIKE" in s and " LIMIT 25" in s]
        assert "ORDER BY COALESCE(" in page
    body = response.content.decode()
    assert 'All <span class="count">10+</span>' in body
    # Pages of 5: two at least, and the tenth match is not the last.
    monkeypatch.setattr(views, "PAGE_SIZE", 5)
    body = get(staff_client, {"q": "doc-", "page": "3"})[0].content.decode()
    assert "Page 3 of 2+" in body and "(10+ documents)" in body
    # Every status is offered (any may be among the matches not read).
    for status, _label in Status.choices:
        assert f"status={status}" in body


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ("REPORT", ["Q3-report.pdf"]),  # the file name, whatever the case
        ("annual", ["figures.xlsx"]),  # the title
        ("100%", ["100% done.txt"]),
        ("a_b", ["a_b.txt"]),
        ("%", ["100% done.txt"]),
        ("_", ["a_b.txt"]),
        ("3-", ["Q3-report.pdf"]),
        ("zzzqqq", []),
    ],
)
def test_a_search_by_name_finds_a_substring_of_the_title_or_file_name(
    staff_client, user, q, expected
):
    names = ["Q3-report.pdf", "figures.xlsx", "100% done.txt", "1000 done.txt"]
    made = add_documents(user, 6)
    for document, name in zip(made, [*names, "a_b.txt", "axb.txt"], strict=True):
        Document.objects.filter(pk=document.pk).update(original_filename=name)
    Document.objects.filter(original_filename="figures.xlsx").update(
        title="Annual Figures"
    )
    response, _ = get(staff_client, {"q": q})
    assert [d.original_filename for d in response.context["page"]] == expected


@on_postgresql
def test_a_search_by_name_reads_the_trigram_indexes(staff_client, user):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s "
            "AND indexdef LIKE %s",
            [Document._meta.db_table, "%gin_trgm_ops%"],
        )
        assert sorted(cursor.fetchall()) == [
            ("doc_filename_trgm",),
            ("doc_title_trgm",),
        ]
    add_documents(user, 50)
    _, sqls = get(staff_client, {"q": "quarterly"})
    (matches,) = [s for s in sqls if "LIKE" in s]
    with connection.cursor() as cursor:
        # A table this small is read whole otherwise, whatever its indexes.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {matches}")
        plan = "\n".join(row for (row,) in cursor.fetchall())
    assert "BitmapOr" in plan
    assert "doc_title_trgm" in plan and "doc_filename_trgm" in plan


# --- The wording ---------------------------------------------------------------------


def test_an_estimate_reads_about_with_grouped_thousands():
    about = render_to_string(
        "documents/_tally.html", {"tally": Tally(1234567, about=True)}
    )
    assert ">about 1,234,567</span>" in about
    assert render_to_string("documents/_tally.html", {"tally": Tally(12345)}) == "12345"
    assert (
        render_to_string(
            "documents/_tally.html", {"tally": Tally(10000, at_least=True)}
        )
        == "10,000+"
    )


# --- The dashboard's counts by state -------------------------------------------------


def test_queue_stats_take_the_housekeeping_s_count_of_a_large_queue(user, monkeypatch):
    library(user)
    queue = QueueManager()
    exact = queue.get_queue_stats()
    assert queue.count_finished(every_seconds=0)
    # Finished since the count: read by id, on top of it.
    QueueItem.objects.create(
        document=Document.objects.first(),
        operation=Operation.EXTRACT,
        status=Status.COMPLETED,
    )
    exact[Status.COMPLETED] += 1
    exact["total"] += 1
    # Small queue: counted, whatever the housekeeping's rows say.
    FinishedCount.objects.filter(status=Status.FAILED).update(items=1000)
    assert queue.get_queue_stats() == {
        **exact,
        "oldest_pending_seconds": pytest.approx(exact["oldest_pending_seconds"], 60),
    }
    # Large (the threshold lowered): the housekeeping's count, not a count of every row.
    monkeypatch.setattr(admin_lists, "ESTIMATE_ABOVE", 10)
    with CaptureQueriesContext(connection) as captured:
        stats = queue.get_queue_stats()
    assert stats[Status.FAILED] == 1000
    assert stats[Status.COMPLETED] == exact[Status.COMPLETED]
    for status in (Status.PENDING, Status.PROCESSING, Status.RETRY_PENDING):
        assert stats[status] == exact[status]
    assert stats["total"] == exact["total"] - LIBRARY[Status.FAILED] + 1000
    assert not any(
        'GROUP BY "extraction_queue"."status"' in q["sql"] and "WHERE" not in q["sql"]
        for q in captured.captured_queries
    )
    # A count gone stale is not used: every item is counted again.
    MetricsFold.objects.update(counted_at="2000-01-01T00:00:00Z")
    assert queue.get_queue_stats()[Status.FAILED] == LIBRARY[Status.FAILED]


# --- The type menu -------------------------------------------------------------------


def test_the_staff_type_menu_looks_each_type_up_in_the_index(
    staff_client, user, other_user
):
    add_documents(user, 3)
    pdf = add_documents(other_user, 2)
    Document.objects.filter(pk__in=[d.pk for d in pdf]).update(
        mime_type="application/pdf"
    )
    response, sqls = get(staff_client)
    assert [t for t, _label in response.context["types"]] == [
        "application/pdf",
        "text/plain",
    ]
    # One lookup per type, not a DISTINCT of every document's.
    assert not any("DISTINCT" in s.upper() for s in sqls)
    assert len([s for s in sqls if s.lstrip().startswith("WITH RECURSIVE types")]) == 1
