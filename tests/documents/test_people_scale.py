"""People's pages at scale: what they cost must not grow with the documents there are.
Counted in statements and read from the databases' plans, never timed (the figures are
bench/people_scale.py's)."""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from documents.models import Document
from jobqueue.models import Status

pytestmark = pytest.mark.django_db

LIST = reverse("documents:list")
API_LIST = reverse("api:documents")


def add_documents(owner, n: int, **fields) -> list[Document]:
    """``n`` documents at once (without files: no page here opens them)."""
    start = Document.objects.count()
    return Document.objects.bulk_create(
        Document(
            owner=owner,
            original_filename=f"doc-{start + i}.txt",
            file=f"documents/{start + i}.txt",
            mime_type="text/plain",
            size=start + i,
            sha256="0" * 64,
            **{"status": Status.COMPLETED, **fields},
        )
        for i in range(n)
    )


def statements(client, url: str, data: dict | None = None) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, data or {})
    assert response.status_code == 200
    return [q["sql"] for q in captured.captured_queries]


def page_query(sqls: list[str]) -> str:
    """The statement that finds the page's documents in order: the rows of the first
    page, the ids of a later one."""
    (sql,) = [
        s
        for s in sqls
        if s.startswith('SELECT "documents_document"."id"')
        and " LIMIT " in s
        and "COUNT(" not in s
        and " IN (" not in s
    ]
    return sql


def plan(sql: str) -> str:
    """The database's plan of ``sql``. PostgreSQL plans a small table as a scan and a
    sort whatever its indexes; told to avoid both, it plans what it would for a large
    one, and keeps a scan or a sort only where no index serves."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for knob in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
                cursor.execute("SELECT set_config(%s, 'off', true)", [knob])
            cursor.execute(f"EXPLAIN {sql}")
            found = "\n".join(row[0] for row in cursor.fetchall())
            for knob in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
                cursor.execute("SELECT set_config(%s, 'on', true)", [knob])
            return found
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}")
        return "\n".join(str(row[-1]) for row in cursor.fetchall())


def sorts_or_scans(found: str) -> bool:
    """Whether the plan reads the whole table or sorts what it reads. An incremental
    sort is neither: it orders rows already in upload time by their id, for ties."""
    if connection.vendor == "postgresql":
        return "Seq Scan" in found or any(
            "Sort" in line and "Incremental Sort" not in line and "Key" not in line
            for line in found.splitlines()
        )
    return "TEMP B-TREE" in found or "SCAN documents_document\n" in found + "\n"


# --- The same statements however many documents -------------------------------------


@pytest.mark.parametrize("as_staff", [False, True], ids=["person", "staff"])
@pytest.mark.parametrize(
    "url,data",
    [
        (LIST, {}),
        (LIST, {"page": "last", "sort": "name"}),
        (LIST, {"status": "completed", "tag": "taxes", "q": "doc"}),
        (reverse("documents:statuses"), {"id": ["1", "2", "3"]}),
        (API_LIST, {}),
        (API_LIST, {"page": "2", "page_size": "2", "status": "completed"}),
    ],
    ids=["list", "list-last-page", "list-filtered", "status-poll", "api", "api-page"],
)
def test_a_page_makes_as_many_statements_for_500_documents_as_for_5(
    client, user, staff_user, url, data, as_staff
):
    client.force_login(staff_user if as_staff else user)
    tag = user.tags.create(name="Taxes")
    # A later page needs two pages' worth.
    few = 30 if "page" in data else 5
    for made in (add_documents(user, few), add_documents(user, 500 - few)):
        for document in made[:3]:
            document.tags.add(tag)
    few = statements(client, url, data)
    Document.objects.filter(pk__in=[d.pk for d in made[-200:]]).delete()
    add_documents(user, 200, status=Status.FAILED)
    assert len(statements(client, url, data)) == len(few)


def test_the_list_counts_its_documents_once(user_client, user):
    add_documents(user, 30)
    add_documents(user, 4, status=Status.FAILED)
    for data, shown in (({}, 34), ({"status": "completed"}, 30)):
        sqls = statements(user_client, LIST, data)
        assert [s for s in sqls if "COUNT(" in s.upper()] == [sqls[2]], (
            "the status counts are the only count"
        )
        page = user_client.get(LIST, data).content.decode()
        assert f"({shown} documents)" in page


# --- Read through indexes, not row by row -------------------------------------------


@pytest.mark.parametrize("sort", ["-date", "date", "name", "-name", "size", "-size"])
def test_a_person_s_list_reads_its_page_from_an_index_on_the_owner(
    user_client, user, other_user, sort
):
    add_documents(user, 30)
    add_documents(other_user, 30)
    found = plan(page_query(statements(user_client, LIST, {"sort": sort})))
    assert "doc_owner_" in found
    assert not sorts_or_scans(found), found


@pytest.mark.parametrize("sort", ["-date", "name", "-size"])
def test_the_staff_list_reads_its_page_in_order_from_an_index(
    client, staff_user, user, sort
):
    add_documents(user, 30)
    client.force_login(staff_user)
    found = plan(page_query(statements(client, LIST, {"sort": sort})))
    assert not sorts_or_scans(found), found


def test_the_status_counts_and_the_types_read_the_owner_s_documents_only(
    user_client, user, other_user
):
    add_documents(user, 30)
    add_documents(other_user, 30)
    sqls = statements(user_client, LIST)
    counts = next(s for s in sqls if "COUNT(" in s.upper())
    types = next(s for s in sqls if "DISTINCT" in s.upper())
    for sql in (counts, types):
        found = plan(sql)
        # Off an index on the owner (PostgreSQL, told a small table is large, picks
        # any of them; an index-only scan needs a vacuumed table); the types from
        # doc_owner_type alone on SQLite.
        assert "doc_owner_" in found, found
        assert "Seq Scan" not in found and "SCAN documents_document " not in found
    if connection.vendor == "sqlite":
        assert "COVERING INDEX doc_owner_type" in plan(types)


def test_the_date_filter_reads_a_range_of_upload_times_from_the_index(
    user_client, user
):
    add_documents(user, 30)
    today = date.today().isoformat()
    sql = page_query(statements(user_client, LIST, {"since": today, "until": today}))
    # Not the date of each row (a cast the index cannot serve): a range of times.
    assert "cast_date" not in sql and "AT TIME ZONE" not in sql
    found = plan(sql)
    assert "doc_owner_created" in found
    assert not sorts_or_scans(found), found


def test_the_api_list_reads_a_person_s_page_from_the_owner_s_index(client, user):
    add_documents(user, 30)
    client.force_login(user)
    sqls = statements(client, API_LIST, {"page": "2", "page_size": "5"})
    found = plan(page_query(sqls))
    assert "doc_owner_created" in found
    assert not sorts_or_scans(found), found


@pytest.mark.parametrize("as_staff", [False, True], ids=["person", "staff"])
@pytest.mark.parametrize(
    "url,data",
    [
        (LIST, {"page": "3"}),
        (LIST, {"page": "3", "sort": "-name"}),
        (API_LIST, {"page": "3", "page_size": "20"}),
    ],
    ids=["list", "list-by-name", "api"],
)
def test_a_deep_page_skips_index_entries_not_rows(
    client, user, staff_user, as_staff, url, data
):
    add_documents(user, 70)
    client.force_login(staff_user if as_staff else user)
    sqls = statements(client, url, data)
    skipping = [s for s in sqls if " OFFSET " in s]
    assert skipping == [page_query(sqls)]
    assert skipping[0].startswith('SELECT "documents_document"."id" AS "pk" FROM')
    found = plan(skipping[0])
    assert not sorts_or_scans(found), found
    # Both databases read the rows of an expression index (the name sort's) for
    # the column it is made from; the others hold all the ids query needs.
    if "sort" not in data:
        only_index = "Index Only Scan" if connection.vendor == "postgresql" else ""
        assert (only_index or "COVERING INDEX") in found, found


# --- Same results as before ----------------------------------------------------------


def test_a_day_is_the_site_s_day_at_both_ends(user_client, user, settings):
    settings.TIME_ZONE = "Pacific/Auckland"
    zone = ZoneInfo("Pacific/Auckland")
    times = {
        "before.txt": datetime(2024, 3, 9, 23, 59, 59, tzinfo=zone),
        "first.txt": datetime(2024, 3, 10, 0, 0, tzinfo=zone),
        "last.txt": datetime(2024, 3, 10, 23, 59, 59, 999999, tzinfo=zone),
        "after.txt": datetime(2024, 3, 11, 0, 0, tzinfo=zone),
    }
    for (name, at), document in zip(
        times.items(), add_documents(user, len(times)), strict=True
    ):
        Document.objects.filter(pk=document.pk).update(
            original_filename=name, created_at=at
        )

    def names(data: dict) -> set[str]:
        page = user_client.get(LIST, data)
        return {d.original_filename for d in page.context["page"]}

    assert names({"since": "2024-03-10", "until": "2024-03-10"}) == {
        "first.txt",
        "last.txt",
    }
    assert names({"since": "2024-03-11"}) == {"after.txt"}
    assert names({"until": "2024-03-09"}) == {"before.txt"}
    # The ends of the calendar are days like any other, not an error.
    assert names({"since": "0001-01-01", "until": "9999-12-31"}) == set(times)
    assert names({"until": "0001-01-01"}) == set()
    assert names({"since": "9999-12-31"}) == set()


def test_a_deep_page_shows_the_documents_in_the_same_order(user_client, user):
    add_documents(user, 60)
    everything = list(
        Document.objects.filter(owner=user)
        .order_by("-created_at", "-id")
        .values_list("pk", flat=True)
    )
    shown = []
    for number in (1, 2, 3):
        page = user_client.get(LIST, {"page": number}).context["page"]
        shown += [d.pk for d in page]
    assert shown == everything
