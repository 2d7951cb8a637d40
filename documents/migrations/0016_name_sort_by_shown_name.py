"""The list's Name sort by the name it shows (the title, else the file name), not by
the file name alone: a document titled "Zebra" uploaded as a.txt sorted under A.

doc_owner_shown and doc_shown hold that name in lower case, then the id (a person's
list, staff's whole list), so a sorted page is read in order from an index, as
doc_owner_name and doc_name did for the file name; those two serve nothing now and
go (each index is written at every upload). The new ones hold the title and the file
name alone, which a status move leaves as they were: that move stays a HOT update
(0007, 0014). PostgreSQL builds them CONCURRENTLY, outside a transaction, as 0015 its
trigram indexes: uploads and the workers' status moves go on while they build. An
index an interrupted run left (on PostgreSQL, an invalid one) is dropped and built
again. SQLite builds them as any index, and gathers their statistics where it keeps
some (``_analyze``)."""

import django.db.models.expressions
import django.db.models.functions.comparison
import django.db.models.functions.text
from django.db import migrations, models

SHOWN_NAME = django.db.models.functions.text.Lower(
    django.db.models.functions.comparison.Coalesce(
        # '' as SQL, not a parameter (documents.models.shown_name says why).
        django.db.models.functions.comparison.NullIf(
            "title", django.db.models.expressions.RawSQL("''", ())
        ),
        "original_filename",
    )
)
NEW = [
    models.Index(models.F("owner"), SHOWN_NAME, models.F("id"), name="doc_owner_shown"),
    models.Index(SHOWN_NAME, models.F("id"), name="doc_shown"),
]
OLD = [
    models.Index(
        models.F("owner"),
        django.db.models.functions.text.Lower("original_filename"),
        models.F("id"),
        name="doc_owner_name",
    ),
    models.Index(
        django.db.models.functions.text.Lower("original_filename"),
        models.F("id"),
        name="doc_name",
    ),
]


def _swap(schema_editor, model, adding: list, dropping: list) -> None:
    concurrently = schema_editor.connection.vendor == "postgresql"
    for index in adding:
        # One left by an interrupted run (invalid, or built but not recorded).
        _drop(schema_editor, index, concurrently)
        schema_editor.add_index(
            model, index, **({"concurrently": True} if concurrently else {})
        )
    for index in dropping:
        _drop(schema_editor, index, concurrently)
    _analyze(schema_editor, adding)


def _analyze(schema_editor, indexes: list) -> None:
    """SQLite: the new indexes' statistics, where the database keeps some (someone
    ran ANALYZE). Without them beside the others', the planner took doc_owner_shown
    for every lookup by owner, the types menu's too (1 s for a person's 50,000
    documents, read row by row, where doc_owner_type holds them all). PostgreSQL
    sizes an index from the index itself."""
    if schema_editor.connection.vendor != "sqlite":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_stat1'"
        )
        if cursor.fetchone() is None:
            return
    for index in indexes:
        schema_editor.execute(f"ANALYZE {schema_editor.quote_name(index.name)}")


def _drop(schema_editor, index: models.Index, concurrently: bool) -> None:
    schema_editor.execute(
        f"DROP INDEX {'CONCURRENTLY ' if concurrently else ''}IF EXISTS "
        f"{schema_editor.quote_name(index.name)}"
    )


def forwards(apps, schema_editor):
    _swap(schema_editor, apps.get_model("documents", "Document"), NEW, OLD)


def backwards(apps, schema_editor):
    _swap(schema_editor, apps.get_model("documents", "Document"), OLD, NEW)


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY runs outside a transaction

    dependencies = [("documents", "0015_name_trigram_indexes")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                *(
                    migrations.RemoveIndex(model_name="document", name=index.name)
                    for index in OLD
                ),
                *(
                    migrations.AddIndex(model_name="document", index=index)
                    for index in NEW
                ),
            ],
            database_operations=[migrations.RunPython(forwards, backwards)],
        ),
    ]
