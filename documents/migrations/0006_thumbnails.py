"""Where the first page's thumbnail is kept.

Added with plain ALTER TABLE, as the title was (0004): Django's SQLite AddField would
rebuild documents_document, and the rebuild drops the search index's triggers."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("documents", "0005_search_titles")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE documents_document "
                    "ADD COLUMN thumbnail varchar(255) NOT NULL DEFAULT ''",
                    "ALTER TABLE documents_document DROP COLUMN thumbnail",
                )
            ],
            state_operations=[
                migrations.AddField(
                    model_name="document",
                    name="thumbnail",
                    field=models.CharField(blank=True, max_length=255),
                )
            ],
        )
    ]
