"""PostgreSQL: trigram indexes for the list's search by name (``?q=``, a substring of
the title or the file name), which read the whole table (0.3-0.5 s at a million
documents; bench/RESULTS.md, staff_scale.py).

Each index holds the very expression Django compares for ``icontains``
(``UPPER("title"::text) LIKE UPPER(%s)``): the planner ORs a bitmap scan of each. They
hold the title and the file name alone, which a status move leaves as they were, so
that move stays a HOT update (0007, 0014). Written straight into the index, as 0008's
search index: no pending list for every search to read. Built CONCURRENTLY (outside a
transaction): uploads and the workers' status moves go on while they build (15-18 s at
a million documents). A database whose user may not add the pg_trgm extension (trusted
since PostgreSQL 13: the database's owner may) gets no indexes and a warning, not a
failed upgrade: the search is the same, only slower. Going back drops the indexes and
keeps the extension. SQLite: nothing to do (no index serves its LIKE of a substring)."""

import logging

from django.db import DatabaseError, migrations

logger = logging.getLogger(__name__)

NAME_INDEXES = {
    "doc_title_trgm": "title",
    "doc_filename_trgm": "original_filename",
}


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    try:
        schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except DatabaseError as exc:
        logger.warning(
            "The search by name gets no trigram indexes: the pg_trgm extension could "
            "not be added (%s). Searching works, reading the whole documents table; "
            "to add them, have the database's owner or a superuser run CREATE "
            "EXTENSION pg_trgm, then `manage.py migrate documents 0014` and "
            "`manage.py migrate`.",
            str(exc).strip(),
        )
        return
    for name, column in NAME_INDEXES.items():
        schema_editor.execute(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON documents_document "
            f"USING gin ((UPPER({column}::text)) gin_trgm_ops) WITH (fastupdate = off)"
        )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in NAME_INDEXES:
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY runs outside a transaction

    dependencies = [("documents", "0014_list_indexes")]

    operations = [migrations.RunPython(create, drop)]
