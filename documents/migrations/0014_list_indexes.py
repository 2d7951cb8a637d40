"""Indexes for the documents list, the API list and the status counts at scale.

A person's list filtered by owner was read row by row and sorted (a person with 50,000
documents: 0.4 s a page on SQLite; bench/people_scale.py); each index below gives a
list its rows in the order shown, or counts them from the index alone. The owner's and
the upload time's own indexes go: doc_owner_created and doc_created begin with them
and serve every lookup they served. So does the status's: a document's status moves
twice a job, and every index holding it is written at each move (on PostgreSQL every
index of the table, as such an update cannot be HOT), so no index holds it: a job
writes less than before, and the status counts read the owner's rows. Dropped by name, not through AlterField, which on
SQLite would rebuild the table and drop the search index's triggers (as 0007 says of
status and sha256)."""

import django.db.models.deletion
import django.db.models.functions.text
from django.conf import settings
from django.db import migrations, models

# Django's names for the indexes db_index gave the two columns.
SINGLE_COLUMN_INDEXES = {
    "owner_id": "documents_document_owner_id_04d2b723",
    "created_at": "documents_document_created_at_8fa354e8",
    "status": "documents_document_status_9de21ed2",
}


def _single_column_indexes(schema_editor) -> dict[str, list[str]]:
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(
            cursor, "documents_document"
        )
    found: dict[str, list[str]] = {column: [] for column in SINGLE_COLUMN_INDEXES}
    for name, c in constraints.items():
        if c["index"] and not c["unique"] and c["columns"] in ([k] for k in found):
            found[c["columns"][0]].append(name)
    return found


def drop_single_column_indexes(apps, schema_editor):
    for names in _single_column_indexes(schema_editor).values():
        for name in names:
            schema_editor.execute(f"DROP INDEX {schema_editor.quote_name(name)}")


def restore_single_column_indexes(apps, schema_editor):
    for column, names in _single_column_indexes(schema_editor).items():
        if not names:
            schema_editor.execute(
                f"CREATE INDEX {SINGLE_COLUMN_INDEXES[column]} "
                f"ON documents_document ({column})"
            )


class Migration(migrations.Migration):
    dependencies = [
        ("documents", "0013_search_gin_without_pending_list"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name="document",
            index=models.Index(fields=["-created_at", "-id"], name="doc_created"),
        ),
        migrations.AddIndex(
            model_name="document",
            index=models.Index(
                fields=["owner", "-created_at", "-id"], name="doc_owner_created"
            ),
        ),
        migrations.AddIndex(
            model_name="document",
            index=models.Index(fields=["owner", "mime_type"], name="doc_owner_type"),
        ),
        migrations.AddIndex(
            model_name="document",
            index=models.Index(fields=["mime_type"], name="doc_type"),
        ),
        migrations.AddIndex(
            model_name="document",
            index=models.Index(
                models.F("owner"),
                django.db.models.functions.text.Lower("original_filename"),
                models.F("id"),
                name="doc_owner_name",
            ),
        ),
        migrations.AddIndex(
            model_name="document",
            index=models.Index(fields=["owner", "size", "id"], name="doc_owner_size"),
        ),
        migrations.AddIndex(
            model_name="document",
            index=models.Index(
                django.db.models.functions.text.Lower("original_filename"),
                models.F("id"),
                name="doc_name",
            ),
        ),
        migrations.AddIndex(
            model_name="document",
            index=models.Index(fields=["size", "id"], name="doc_size"),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="document",
                    name="owner",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="documents",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AlterField(
                    model_name="document",
                    name="created_at",
                    field=models.DateTimeField(auto_now_add=True),
                ),
                migrations.AlterField(
                    model_name="document",
                    name="status",
                    field=models.CharField(
                        choices=[
                            ("pending", "Pending"),
                            ("processing", "Processing"),
                            ("completed", "Completed"),
                            ("retry_pending", "Retry pending"),
                            ("failed", "Failed"),
                            ("cancelled", "Cancelled"),
                        ],
                        default="pending",
                        max_length=16,
                    ),
                ),
            ],
            database_operations=[
                migrations.RunPython(
                    drop_single_column_indexes, restore_single_column_indexes
                ),
            ],
        ),
    ]
