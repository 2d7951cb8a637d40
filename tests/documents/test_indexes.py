"""The documents table keeps the indexes its lookups use and no others: a document's
status moves twice a job, and on PostgreSQL each move writes every index. So the
search index lives beside it, written only when the words change."""

from __future__ import annotations

import pytest
from django.db import connection

from documents.models import Document
from documents.search import search_documents
from jobqueue.models import Status
from tests.documents.test_search import make_text_document

pytestmark = pytest.mark.django_db


def _indexed_columns() -> list[list[str]]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(
            cursor, Document._meta.db_table
        )
    return [c["columns"] for c in constraints.values() if c["index"]]


def test_the_hash_lookup_keeps_its_index_and_no_index_holds_the_status():
    # An index holding the status would be written at each move (on PostgreSQL,
    # with every other index: the update could not be HOT); the list's status
    # counts read the owner's rows instead.
    columns = _indexed_columns()
    assert ["sha256"] in columns
    assert [c for c in columns if "status" in c] == []


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="LIKE indexes are PostgreSQL's"
)
def test_no_like_index_on_the_documents_table():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s "
            "AND indexdef LIKE %s",
            [Document._meta.db_table, "%pattern_ops%"],
        )
        assert cursor.fetchall() == []


def _search_row_version(document: Document) -> str | None:
    """Where the document's search row lies: any write of it moves it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT ctid::text FROM documents_search WHERE document_id = %s",
            [document.pk],
        )
        row = cursor.fetchone()
    return row and row[0]


on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the search table is PostgreSQL's"
)


@on_postgresql
def test_a_status_change_leaves_the_words_indexed_as_they_were(user):
    document = make_text_document(user, "report.txt", "quarterly aardvark figures")
    indexed = _search_row_version(document)
    assert indexed is not None
    # As the queue moves it (an UPDATE of the status alone), and as a save() of
    # every column writes it, with the text unchanged.
    Document.objects.filter(pk=document.pk).update(status=Status.PROCESSING)
    document.status = Status.COMPLETED
    document.save()
    assert _search_row_version(document) == indexed

    Document.objects.filter(pk=document.pk).update(title="Aardvark annual")
    assert _search_row_version(document) != indexed
    assert [hit.document.pk for hit in search_documents(user, "annual")] == [
        document.pk
    ]


@on_postgresql
def test_deleted_and_truncated_documents_leave_no_search_rows(user):
    kept = make_text_document(user, "kept.txt", "aardvark")
    gone = make_text_document(user, "gone.txt", "aardvark")
    gone.delete()
    assert _search_row_version(gone) is None
    assert _search_row_version(kept) is not None

    with connection.cursor() as cursor:
        # As Django's flush empties the tables between tests.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(f"TRUNCATE {Document._meta.db_table} CASCADE")
        cursor.execute("SELECT count(*) FROM documents_search")
        assert cursor.fetchone()[0] == 0


@pytest.mark.skipif(connection.vendor != "sqlite", reason="FTS5 is SQLite's")
def test_the_same_words_written_again_leave_the_fts_index_alone(user):
    text = "quarterly aardvark figures"
    document = make_text_document(user, "report.txt", text)
    raw = connection.connection

    def rows_written(**fields) -> int:
        """Rows the update wrote, those of the FTS5 trigger's statements included."""
        before = raw.total_changes
        Document.objects.filter(pk=document.pk).update(**fields)
        return raw.total_changes - before

    # A reprocess that reads the same words, with its status.
    same = {"original_filename": "report.txt", "title": ""}
    assert rows_written(text=text, status=Status.COMPLETED, **same) == 1
    assert rows_written(text="quarterly platypus figures") > 1
    assert search_documents(user, "aardvark") == []
    assert [hit.document.pk for hit in search_documents(user, "platypus")] == [
        document.pk
    ]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="HOT is PostgreSQL's")
def test_a_status_move_is_a_hot_update(user):
    # No index of the table may hold a column the queue's moves write, or each
    # move writes a new entry in every index (the trigram indexes of the names too).
    document = make_text_document(user, "report.txt", "quarterly figures")

    def hot_updates() -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_stat_get_xact_tuples_hot_updated(%s::regclass)",
                [Document._meta.db_table],
            )
            return cursor.fetchone()[0]

    before = hot_updates()
    Document.objects.filter(pk=document.pk).update(status=Status.PROCESSING)
    assert hot_updates() == before + 1
