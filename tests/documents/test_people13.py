"""The list's Name sort follows the name it shows (a title, else the file name), read
in order from an index at any size; the search page's Type menu lists the person's
own types (staff: the library's), not all 28 formats (outside-in check, people13)."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse

from documents import views
from documents.models import Document
from tests.documents.test_people_scale import (
    add_documents,
    page_query,
    plan,
    sorts_or_scans,
    statements,
)
from tests.documents.test_search import make_text_document

pytestmark = pytest.mark.django_db

LIST = reverse("documents:list")
SEARCH = reverse("documents:search")
PDF = "application/pdf"


def named(owner, *names: tuple[str, str]) -> list[Document]:
    """Documents of (file name, title) each, in that upload order."""
    made = add_documents(owner, len(names))
    for document, (filename, title) in zip(made, names, strict=True):
        document.original_filename, document.title = filename, title
    Document.objects.bulk_update(made, ["original_filename", "title"])
    return made


def typed(owner, n: int, mime_type: str) -> None:
    made = add_documents(owner, n)
    Document.objects.filter(pk__in=[d.pk for d in made]).update(mime_type=mime_type)


def shown(client, data: dict) -> list[str]:
    return [str(d) for d in client.get(LIST, data).context["page"]]


# --- The Name sort, by the name shown -------------------------------------------------


def test_name_sorts_by_the_title_where_there_is_one_in_any_case(user_client, user):
    named(
        user,
        ("a.txt", "Zebra"),  # sorted under A before: by its file name
        ("b.txt", ""),
        ("C.txt", ""),
        ("m.txt", "apple"),
        ("d.txt", "Delta plan"),
    )
    expected = ["apple", "b.txt", "C.txt", "Delta plan", "Zebra"]
    assert shown(user_client, {"sort": "name"}) == expected
    assert shown(user_client, {"sort": "-name"}) == expected[::-1]


def test_equal_names_keep_one_order_across_pages(user_client, user):
    # 30 documents shown as "Report" (titles and file names in any case): the id
    # breaks the tie, so page 2 (read through its ids first) goes on where page 1
    # stopped, and the descending sort is the same list reversed.
    made = named(
        user,
        *(
            ("report", "") if n % 3 == 0 else (f"x{n}.txt", "REPORT" if n % 2 else "")
            for n in range(30)
        ),
    )
    ids = sorted(d.pk for d in made if str(d).lower() == "report")
    others = sorted((d for d in made if d.pk not in ids), key=lambda d: str(d).lower())

    def pages(sort: str) -> list[int]:
        return [
            d.pk
            for number in (1, 2)
            for d in user_client.get(LIST, {"sort": sort, "page": number}).context[
                "page"
            ]
        ]

    assert pages("name") == ids + [d.pk for d in others]
    assert pages("-name") == pages("name")[::-1]


def test_staff_see_the_whole_list_by_name_shown(client, staff_user, user, other_user):
    named(user, ("b.txt", "Zulu"), ("c.txt", ""))
    named(other_user, ("z.txt", "alpha"))
    client.force_login(staff_user)
    assert shown(client, {"sort": "name"}) == ["alpha", "c.txt", "Zulu"]


@pytest.mark.parametrize("sort", ["name", "-name"])
def test_a_person_s_name_sort_reads_its_page_from_the_shown_name_index(
    user_client, user, other_user, sort
):
    add_documents(user, 30, title="Some title")
    add_documents(other_user, 30)
    found = plan(page_query(statements(user_client, LIST, {"sort": sort})))
    assert "doc_owner_shown" in found, found
    assert not sorts_or_scans(found), found


@pytest.mark.parametrize("data", [{"sort": "name"}, {"sort": "-name", "page": "2"}])
def test_the_staff_name_sort_reads_its_page_from_the_shown_name_index(
    client, staff_user, user, data
):
    add_documents(user, 60, title="Some title")
    client.force_login(staff_user)
    found = plan(page_query(statements(client, LIST, data)))
    assert "doc_shown" in found, found
    assert not sorts_or_scans(found), found


def bound_plan(queryset) -> str:
    """The plan of ``queryset``'s statement as Django sends it, its parameters bound
    (the captured statements have them written in, which plans differently: SQLite
    matches an index's expression only to the same constants, not to a parameter).
    PostgreSQL, as ``plan``, told to avoid scans and sorts where an index serves."""
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
            return "\n".join(str(row[-1]) for row in cursor.fetchall())
        knobs = ("enable_seqscan", "enable_bitmapscan", "enable_sort")
        for knob in knobs:
            cursor.execute("SELECT set_config(%s, 'off', true)", [knob])
        cursor.execute(f"EXPLAIN {sql}", params)
        found = "\n".join(row[0] for row in cursor.fetchall())
        for knob in knobs:
            cursor.execute("SELECT set_config(%s, 'on', true)", [knob])
        return found


@pytest.mark.parametrize("sort", ["name", "-name"])
@pytest.mark.parametrize("as_staff", [False, True], ids=["person", "staff"])
def test_the_name_sort_as_sent_reads_the_shown_name_index(
    user, other_user, staff_user, sort, as_staff
):
    add_documents(user, 60, title="Some title")
    add_documents(other_user, 60)
    viewer = staff_user if as_staff else user
    page = (
        Document.objects.for_user(viewer)
        .select_related("owner")
        .order_by(*views.SORTS[sort])[:25]
    )
    found = bound_plan(page)
    assert ("doc_shown" if as_staff else "doc_owner_shown") in found, found
    assert not sorts_or_scans(found), found


def _indexes() -> dict[str, list[str]]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(
            cursor, Document._meta.db_table
        )
    return {name: c["columns"] for name, c in constraints.items() if c["index"]}


@pytest.mark.django_db(transaction=True)
def test_the_migration_goes_back_to_the_file_name_indexes_and_forward_again(user):
    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    try:
        MigrationExecutor(connection).migrate(
            [("documents", "0015_name_trigram_indexes")]
        )
        assert {"doc_owner_name", "doc_name"} <= set(_indexes())
        assert not {"doc_owner_shown", "doc_shown"} & set(_indexes())
        # As an interrupted run leaves it: an index of that name, not recorded.
        with connection.cursor() as cursor:
            cursor.execute("CREATE INDEX doc_shown ON documents_document (size)")
    finally:
        MigrationExecutor(connection).migrate(leaves)
    indexes = _indexes()
    assert {"doc_owner_shown", "doc_shown"} <= set(indexes)
    assert not {"doc_owner_name", "doc_name"} & set(indexes)
    assert "size" not in indexes["doc_shown"]  # built again, on the shown name
    add_documents(user, 3)
    assert Document.objects.filter(owner=user).count() == 3


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's statistics")
def test_an_analyzed_sqlite_database_gets_the_new_indexes_statistics(user, other_user):
    # With statistics for every index but the new ones, SQLite took doc_owner_shown
    # for any lookup by owner: the types menu read a person's every row.
    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    add_documents(user, 30)
    add_documents(other_user, 30)
    try:
        MigrationExecutor(connection).migrate(
            [("documents", "0015_name_trigram_indexes")]
        )
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        MigrationExecutor(connection).migrate(leaves)
        with connection.cursor() as cursor:
            cursor.execute("SELECT idx FROM sqlite_stat1")
            analyzed = {idx for (idx,) in cursor.fetchall()}
        assert {"doc_owner_shown", "doc_shown", "doc_owner_type"} <= analyzed
        types = Document.objects.filter(owner=user).values_list("mime_type")
        found = bound_plan(types.order_by().distinct())
        assert "COVERING INDEX doc_owner_type" in found, found
    finally:
        with connection.cursor() as cursor:  # the other tests plan without them
            cursor.execute("DROP TABLE IF EXISTS sqlite_stat1")


@pytest.mark.skipif(connection.vendor != "postgresql", reason="HOT is PostgreSQL's")
def test_a_status_move_stays_a_hot_update_with_the_shown_name_indexes(user):
    (document,) = add_documents(user, 1, title="Minutes")

    def hot_updates() -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_stat_get_xact_tuples_hot_updated(%s::regclass)",
                [Document._meta.db_table],
            )
            return cursor.fetchone()[0]

    before = hot_updates()
    Document.objects.filter(pk=document.pk).update(status="processing")
    assert hot_updates() == before + 1


# --- The search page's Type menu ------------------------------------------------------


def type_menu(client, path: str, data: dict | None = None) -> list[tuple[str, bool]]:
    """The Type menu's options but "Any": (label, chosen) each."""
    body = client.get(path, data or {}).content.decode()
    menu = re.search(
        r'<select (?:id="search-type" )?name="type">(.*?)</select>', body, re.S
    )
    options = re.findall(r"<option value=\"([^\"]*)\"( selected)?>([^<]*)<", menu[1])
    return [(label, bool(chosen)) for value, chosen, label in options if value]


def test_the_search_type_menu_lists_the_person_s_own_types(
    user_client, user, other_user
):
    typed(user, 2, PDF)
    add_documents(user, 1)
    typed(other_user, 1, "text/html")
    assert type_menu(user_client, SEARCH) == [("PDF", False), ("Plain text", False)]
    assert type_menu(user_client, SEARCH, {"q": "x", "type": PDF}) == [
        ("PDF", True),
        ("Plain text", False),
    ]
    # The list's menu is the same.
    assert type_menu(user_client, LIST) == [("PDF", False), ("Plain text", False)]


def test_staff_search_type_menu_lists_the_library_s_types(
    client, staff_user, user, other_user
):
    typed(user, 1, PDF)
    typed(other_user, 1, "text/html")
    client.force_login(staff_user)
    assert type_menu(client, SEARCH) == [("HTML", False), ("PDF", False)]


def test_a_type_asked_for_that_none_has_stays_chosen(user_client, user):
    # A link or a bookmark with ?type=: without it in the menu, the menu showed
    # "Any" and the next Search or Filter dropped the type.
    add_documents(user, 1)
    for path in (SEARCH, LIST):
        assert type_menu(user_client, path, {"q": "x", "type": PDF}) == [
            ("PDF", True),
            ("Plain text", False),
        ]
    # Not a format at all: ignored, as before.
    assert type_menu(user_client, SEARCH, {"type": "text/x-nonsense"}) == [
        ("Plain text", False)
    ]


def test_a_type_of_the_person_s_that_no_format_reads_any_more_still_filters(
    user_client, user
):
    # A document kept as a type no format now reads (a format dropped since): the
    # menu offers it, as the list's does, and choosing it filters the search.
    make_text_document(user, "old.bin", "okapi notes", mime_type="application/x-old")
    make_text_document(user, "new.txt", "okapi notes")
    data = {"q": "okapi", "type": "application/x-old"}
    assert type_menu(user_client, SEARCH, data) == [
        ("Other", True),
        ("Plain text", False),
    ]
    hits = user_client.get(SEARCH, data).context["hits"]
    assert [hit.document.original_filename for hit in hits] == ["old.bin"]


def test_a_person_with_no_documents_gets_an_empty_type_menu(user_client):
    assert type_menu(user_client, SEARCH) == []


@pytest.mark.parametrize("as_staff", [False, True], ids=["person", "staff"])
def test_the_search_type_menu_reads_an_index_not_the_table(
    client, user, staff_user, other_user, as_staff
):
    typed(user, 30, PDF)
    add_documents(other_user, 30)
    client.force_login(staff_user if as_staff else user)
    sqls = statements(client, SEARCH)
    (types,) = [s for s in sqls if "mime_type" in s]
    found = plan(types)
    assert ("doc_type" if as_staff else "doc_owner_type") in found, found
    assert "Seq Scan" not in found and "SCAN documents_document\n" not in found + "\n"
    if as_staff:  # a loose scan of the types' index, one lookup a type
        assert types.lstrip().startswith("WITH RECURSIVE"), types
