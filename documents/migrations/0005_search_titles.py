"""Search finds documents by their title too: the title joins the file name as the
name part of the index (FTS5 column on SQLite, weight A on PostgreSQL)."""

import importlib

from django.db import migrations

_previous = importlib.import_module("documents.migrations.0002_search_index")

_TOKENIZE = "tokenize='unicode61 remove_diacritics 2'"
SQLITE_FORWARD = [
    *_previous.SQLITE_BACKWARD,
    f"""CREATE VIRTUAL TABLE documents_fts USING fts5(original_filename, title, text,
        content='documents_document', content_rowid='id', {_TOKENIZE})""",
    """CREATE TRIGGER documents_fts_insert AFTER INSERT ON documents_document BEGIN
        INSERT INTO documents_fts(rowid, original_filename, title, text)
        VALUES (new.id, new.original_filename, new.title, new.text);
    END""",
    """CREATE TRIGGER documents_fts_delete AFTER DELETE ON documents_document BEGIN
        INSERT INTO documents_fts(documents_fts, rowid, original_filename, title, text)
        VALUES ('delete', old.id, old.original_filename, old.title, old.text);
    END""",
    """CREATE TRIGGER documents_fts_update AFTER UPDATE OF original_filename, title, text
    ON documents_document BEGIN
        INSERT INTO documents_fts(documents_fts, rowid, original_filename, title, text)
        VALUES ('delete', old.id, old.original_filename, old.title, old.text);
        INSERT INTO documents_fts(rowid, original_filename, title, text)
        VALUES (new.id, new.original_filename, new.title, new.text);
    END""",
    "INSERT INTO documents_fts(documents_fts) VALUES ('rebuild')",
]
SQLITE_BACKWARD = [
    *_previous.SQLITE_BACKWARD,
    *_previous.SQLITE_FORWARD,
    "INSERT INTO documents_fts(documents_fts) VALUES ('rebuild')",
]
_NAME = "coalesce(original_filename, '') || ' ' || coalesce(title, '')"
_WORDS_ONLY = _previous._WORDS_ONLY
POSTGRES_FORWARD = [
    *_previous.POSTGRES_BACKWARD,
    f"""ALTER TABLE documents_document ADD COLUMN search_vector tsvector
    GENERATED ALWAYS AS (
        setweight(to_tsvector('simple', {_WORDS_ONLY.format(_NAME)}), 'A')
        || setweight(to_tsvector('simple', {_WORDS_ONLY.format("left(coalesce(text, ''), 250000)")}), 'B')
    ) STORED""",
    "CREATE INDEX documents_search_vector_gin ON documents_document USING gin (search_vector)",
]
POSTGRES_BACKWARD = [*_previous.POSTGRES_BACKWARD, *_previous.POSTGRES_FORWARD]


class Migration(migrations.Migration):
    dependencies = [("documents", "0004_title_and_tags")]

    operations = [
        migrations.RunPython(
            _previous._run({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRES_FORWARD}),
            _previous._run(
                {"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRES_BACKWARD}
            ),
        )
    ]
