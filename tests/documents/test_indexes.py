"""The documents table keeps the indexes its lookups use and no others: a document's
status moves twice a job, and on PostgreSQL each move writes every index."""

from __future__ import annotations

import pytest
from django.db import connection

from documents.models import Document

pytestmark = pytest.mark.django_db


def _indexed_columns() -> list[list[str]]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(
            cursor, Document._meta.db_table
        )
    return [c["columns"] for c in constraints.values() if c["index"]]


def test_status_and_hash_lookups_keep_their_indexes():
    columns = _indexed_columns()
    assert ["status"] in columns
    assert ["sha256"] in columns


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
