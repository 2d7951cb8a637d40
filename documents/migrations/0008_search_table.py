"""PostgreSQL: the search vector moves out of documents_document into a table of its
own, written by triggers only when a document's name, title or text changes.

A document's status moves twice a job, and a status index makes each move a new row
version, which a GIN index on the same table receives in full: every word of the text
again, twice a job, into the index's pending list (bench: a 5,000-word document took
5-19 ms per status change). Beside the table, the words are indexed once per change
of the words. SQLite's FTS5 table already works this way: nothing changes there.

Django's flush empties tables with TRUNCATE, without CASCADE: so no foreign key to
documents_document; triggers follow its deletes and truncates instead."""

import importlib

from django.db import migrations

_previous = importlib.import_module("documents.migrations.0005_search_titles")
_run = importlib.import_module("documents.migrations.0002_search_index")._run
_WORDS_ONLY = _previous._WORDS_ONLY


def _vector(row: str) -> str:
    """0005's search vector, of the documents_document row ``row``."""
    name = f"coalesce({row}.original_filename, '') || ' ' || coalesce({row}.title, '')"
    text = f"left(coalesce({row}.text, ''), 250000)"
    return (
        f"setweight(to_tsvector('simple', {_WORDS_ONLY.format(name)}), 'A')"
        f" || setweight(to_tsvector('simple', {_WORDS_ONLY.format(text)}), 'B')"
    )


_WORDS_CHANGED = " OR ".join(
    f"OLD.{column} IS DISTINCT FROM NEW.{column}"
    for column in ("original_filename", "title", "text")
)
POSTGRES_FORWARD = [
    """CREATE TABLE documents_search (
        document_id bigint PRIMARY KEY,
        search_vector tsvector NOT NULL
    )""",
    """INSERT INTO documents_search (document_id, search_vector)
        SELECT id, search_vector FROM documents_document""",
    # Drops its GIN index with it.
    "ALTER TABLE documents_document DROP COLUMN search_vector",
    # Written once per change of the words now, so straight into the index: no
    # pending list (fastupdate) that every search reads and that skews the
    # planner's estimate of the index until a vacuum empties it.
    "CREATE INDEX documents_search_vector_gin ON documents_search USING gin "
    "(search_vector) WITH (fastupdate = off)",
    f"""CREATE FUNCTION documents_search_write() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO documents_search (document_id, search_vector)
        VALUES (NEW.id, {_vector("NEW")})
        ON CONFLICT (document_id) DO UPDATE SET search_vector = EXCLUDED.search_vector;
        RETURN NULL;
    END $$""",  # noqa: S608 - only our own constants are interpolated
    """CREATE FUNCTION documents_search_forget() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM documents_search WHERE document_id = OLD.id;
        RETURN NULL;
    END $$""",
    """CREATE FUNCTION documents_search_clear() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        TRUNCATE documents_search;
        RETURN NULL;
    END $$""",
    """CREATE TRIGGER documents_search_insert AFTER INSERT ON documents_document
        FOR EACH ROW EXECUTE FUNCTION documents_search_write()""",
    # A save() of every column names the text too: only a real change re-indexes.
    f"""CREATE TRIGGER documents_search_update
        AFTER UPDATE OF original_filename, title, text ON documents_document
        FOR EACH ROW WHEN ({_WORDS_CHANGED})
        EXECUTE FUNCTION documents_search_write()""",
    """CREATE TRIGGER documents_search_delete AFTER DELETE ON documents_document
        FOR EACH ROW EXECUTE FUNCTION documents_search_forget()""",
    """CREATE TRIGGER documents_search_truncate AFTER TRUNCATE ON documents_document
        FOR EACH STATEMENT EXECUTE FUNCTION documents_search_clear()""",
]
POSTGRES_BACKWARD = [
    "DROP TRIGGER IF EXISTS documents_search_truncate ON documents_document",
    "DROP TRIGGER IF EXISTS documents_search_delete ON documents_document",
    "DROP TRIGGER IF EXISTS documents_search_update ON documents_document",
    "DROP TRIGGER IF EXISTS documents_search_insert ON documents_document",
    "DROP FUNCTION IF EXISTS documents_search_clear()",
    "DROP FUNCTION IF EXISTS documents_search_forget()",
    "DROP FUNCTION IF EXISTS documents_search_write()",
    "DROP TABLE IF EXISTS documents_search",
    *_previous.POSTGRES_FORWARD[-2:],
]


class Migration(migrations.Migration):
    dependencies = [("documents", "0007_drop_like_indexes")]

    operations = [
        migrations.RunPython(
            _run({"postgresql": POSTGRES_FORWARD}),
            _run({"postgresql": POSTGRES_BACKWARD}),
        )
    ]
