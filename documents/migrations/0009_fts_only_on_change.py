"""SQLite: the FTS5 index is rewritten only when a document's name, title or text
really changes, as PostgreSQL's search table is (0008). An UPDATE naming the text
fired the trigger even with the same text (a reprocess that reads the same words, a
save() of every column), and FTS5 then tokenized the whole text twice: once to take
the old words out, once to put them back."""

import importlib

from django.db import migrations

_previous = importlib.import_module("documents.migrations.0005_search_titles")
_run = importlib.import_module("documents.migrations.0002_search_index")._run
_UPDATE_TRIGGER = next(
    s for s in _previous.SQLITE_FORWARD if "TRIGGER documents_fts_update" in s
)
_CHANGED = " OR ".join(
    f"old.{column} IS NOT new.{column}"
    for column in ("original_filename", "title", "text")
)
SQLITE_FORWARD = [
    "DROP TRIGGER IF EXISTS documents_fts_update",
    _UPDATE_TRIGGER.replace(
        "ON documents_document BEGIN", f"ON documents_document WHEN {_CHANGED} BEGIN"
    ),
]
SQLITE_BACKWARD = ["DROP TRIGGER IF EXISTS documents_fts_update", _UPDATE_TRIGGER]


class Migration(migrations.Migration):
    dependencies = [("documents", "0008_search_table")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_FORWARD}), _run({"sqlite": SQLITE_BACKWARD})
        )
    ]
