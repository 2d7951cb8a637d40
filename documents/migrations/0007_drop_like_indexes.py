"""Drop the LIKE indexes PostgreSQL got beside the status and sha256 indexes.

``db_index`` on a CharField adds a ``varchar_pattern_ops`` index for ``LIKE`` on
PostgreSQL. Nothing queries either column with ``LIKE``, yet a document's status moves
twice a job and each move writes a new entry in every index of the table (bench:
write_volume.py). The fields keep ``db_index`` (their plain indexes stay): changing it
would make Django rebuild the table on SQLite, dropping the search index's triggers."""

from django.db import migrations

LIKE_INDEXES = {
    "documents_document_status_9de21ed2_like": "status",
    "documents_document_sha256_9c516612_like": "sha256",
}


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for name in LIKE_INDEXES:
            schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


def restore(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for name, column in LIKE_INDEXES.items():
            schema_editor.execute(
                f"CREATE INDEX IF NOT EXISTS {name} "
                f"ON documents_document ({column} varchar_pattern_ops)"
            )


class Migration(migrations.Migration):
    dependencies = [("documents", "0006_thumbnails")]

    operations = [migrations.RunPython(drop, restore)]
