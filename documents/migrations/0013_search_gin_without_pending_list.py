"""PostgreSQL: the search index without a pending list on every database.

0008 was changed after it first ran (773a1d5) to build documents_search_vector_gin
WITH (fastupdate = off); a database migrated by the 0008 of 6fb598c kept a pending
list, which every search reads and which skews the planner's estimate of the index
until a vacuum empties it. This sets the option where it is missing and moves what the
list holds into the index. Idempotent; neither blocks reads nor writes of the table
(ALTER INDEX ... SET takes a SHARE UPDATE EXCLUSIVE lock). SQLite: nothing to do."""

from django.db import migrations

INDEX = "documents_search_vector_gin"


def fastupdate_off(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(f"ALTER INDEX {INDEX} SET (fastupdate = off)")
    schema_editor.execute(f"SELECT gin_clean_pending_list('{INDEX}'::regclass)")


class Migration(migrations.Migration):
    dependencies = [("documents", "0012_name_grams")]

    operations = [migrations.RunPython(fastupdate_off, migrations.RunPython.noop)]
