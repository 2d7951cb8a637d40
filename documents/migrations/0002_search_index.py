"""Full-text search kept by the database itself, in the same transaction as the text.

SQLite: an FTS5 table over documents_document, kept in step by triggers.
PostgreSQL: a generated tsvector column with a GIN index.
"""

from django.db import migrations

SQLITE_FORWARD = [
    """CREATE VIRTUAL TABLE documents_fts USING fts5(
        original_filename, text,
        content='documents_document', content_rowid='id',
        tokenize='unicode61 remove_diacritics 2')""",
    """CREATE TRIGGER documents_fts_insert AFTER INSERT ON documents_document BEGIN
        INSERT INTO documents_fts(rowid, original_filename, text)
        VALUES (new.id, new.original_filename, new.text);
    END""",
    """CREATE TRIGGER documents_fts_delete AFTER DELETE ON documents_document BEGIN
        INSERT INTO documents_fts(documents_fts, rowid, original_filename, text)
        VALUES ('delete', old.id, old.original_filename, old.text);
    END""",
    """CREATE TRIGGER documents_fts_update AFTER UPDATE OF original_filename, text
    ON documents_document BEGIN
        INSERT INTO documents_fts(documents_fts, rowid, original_filename, text)
        VALUES ('delete', old.id, old.original_filename, old.text);
        INSERT INTO documents_fts(rowid, original_filename, text)
        VALUES (new.id, new.original_filename, new.text);
    END""",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS documents_fts_update",
    "DROP TRIGGER IF EXISTS documents_fts_delete",
    "DROP TRIGGER IF EXISTS documents_fts_insert",
    "DROP TABLE IF EXISTS documents_fts",
]
# 'simple': no stemming, so every language is indexed alike (as FTS5 does). The text is
# capped because a tsvector may not exceed 1 MB; the rest stays readable, not searchable.
# The cap counts characters and a character takes up to 4 bytes, so 250,000 keeps even
# text of all-different non-Latin words under the limit (500,000 did not).
# ASCII punctuation becomes a space first, so words split as FTS5 splits them: the
# default parser would index "report-2024.pdf" or "a/b" only as one whole token. The
# range is spelled out, not [[:punct:]], because classes depend on the collation.
_WORDS_ONLY = "regexp_replace({}, '[!-/:-@[-`{{-~]+', ' ', 'g')"
POSTGRES_FORWARD = [
    f"""ALTER TABLE documents_document ADD COLUMN search_vector tsvector
    GENERATED ALWAYS AS (
        setweight(to_tsvector('simple', {_WORDS_ONLY.format("coalesce(original_filename, '')")}), 'A')
        || setweight(to_tsvector('simple', {_WORDS_ONLY.format("left(coalesce(text, ''), 250000)")}), 'B')
    ) STORED""",
    "CREATE INDEX documents_search_vector_gin ON documents_document USING gin (search_vector)",
]
POSTGRES_BACKWARD = [
    "DROP INDEX IF EXISTS documents_search_vector_gin",
    "ALTER TABLE documents_document DROP COLUMN IF EXISTS search_vector",
]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("documents", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRES_FORWARD}),
            _run({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRES_BACKWARD}),
        )
    ]
