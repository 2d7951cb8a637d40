"""A title or file name in Chinese, Japanese, Korean or Thai ranks as a Latin one
does: ``search_grams`` (documents.grams.search_grams) now holds the name's grams,
a line break, then the text's, and the index gives the name's grams the name's
weight. The grams are also composed (NFC) now, so text stored decomposed is found.

SQLite: documents_fts reads a view, documents_fts_source, whose title column is the
title followed by the name's grams and whose search_grams column holds the text's
alone (so "rebuild" gives what the triggers give). PostgreSQL: documents_search_vector
(0011) puts the name's grams at weight A with the name, the text's at B. Documents
with grams and a name that is not all ASCII get their grams again; going back
restores 0011's index and keeps the grams (0011 reads them whole, line break and all).
"""

import importlib

from django.db import migrations

_grams_migration = importlib.import_module("documents.migrations.0011_search_grams")
_fold_migration = importlib.import_module(
    "documents.migrations.0010_search_folds_accents"
)
_WORDS_ONLY = _grams_migration._WORDS_ONLY
_TOKENIZE = "tokenize='unicode61 remove_diacritics 2'"
_TEXT_CHARS = 250000
BATCH = 200

# --- SQLite ---------------------------------------------------------------------------

_COLUMNS = "original_filename, title, text, search_grams"


def _sqlite_columns(row: str) -> str:
    """The index's columns of the documents_document row ``row`` (``new``, ``old``,
    or the table itself): the name's grams go with the title, the text's stay."""
    end = f"instr({row}search_grams, char(10))"
    return (
        f"{row}original_filename, {row}title || ' ' || substr({row}search_grams, 1, {end}), "
        f"{row}text, substr({row}search_grams, {end} + 1)"
    )


_CHANGED = " OR ".join(f"old.{c} IS NOT new.{c}" for c in _COLUMNS.split(", "))
SQLITE_DROP = [
    *_grams_migration.SQLITE_DROP,
    "DROP VIEW IF EXISTS documents_fts_source",
]
SQLITE_CREATE = [
    f"""CREATE VIEW documents_fts_source (id, {_COLUMNS}) AS
        SELECT id, {_sqlite_columns("")} FROM documents_document""",  # noqa: S608
    f"""CREATE VIRTUAL TABLE documents_fts USING fts5({_COLUMNS},
        content='documents_fts_source', content_rowid='id', {_TOKENIZE})""",
    f"""CREATE TRIGGER documents_fts_insert AFTER INSERT ON documents_document BEGIN
        INSERT INTO documents_fts(rowid, {_COLUMNS})
        VALUES (new.id, {_sqlite_columns("new.")});
    END""",  # noqa: S608 - only our own constants are interpolated
    f"""CREATE TRIGGER documents_fts_delete AFTER DELETE ON documents_document BEGIN
        INSERT INTO documents_fts(documents_fts, rowid, {_COLUMNS})
        VALUES ('delete', old.id, {_sqlite_columns("old.")});
    END""",  # noqa: S608
    f"""CREATE TRIGGER documents_fts_update AFTER UPDATE OF {_COLUMNS}
    ON documents_document WHEN {_CHANGED} BEGIN
        INSERT INTO documents_fts(documents_fts, rowid, {_COLUMNS})
        VALUES ('delete', old.id, {_sqlite_columns("old.")});
        INSERT INTO documents_fts(rowid, {_COLUMNS})
        VALUES (new.id, {_sqlite_columns("new.")});
    END""",  # noqa: S608
    "INSERT INTO documents_fts(documents_fts) VALUES ('rebuild')",
]

# --- PostgreSQL -----------------------------------------------------------------------


def _vector(row: str, *, utf8: bool) -> str:
    """0011's search vector of the row ``row``, the name's grams at weight A."""
    name = f"coalesce({row}.original_filename, '') || ' ' || coalesce({row}.title, '')"
    text = f"left(documents_search_fold(left(coalesce({row}.text, ''), {_TEXT_CHARS})), {_TEXT_CHARS})"
    if utf8:
        # The grams find these runs: the text's part keeps the other words.
        text = f"regexp_replace({text}, '[{_grams_migration._CJK_RANGES}]+', ' ', 'g')"
    grams = f"coalesce({row}.search_grams, '')"
    end = f"strpos({grams}, chr(10))"
    return (
        "setweight(to_tsvector('simple', "
        f"{_WORDS_ONLY.format(f'documents_search_fold({name})')}), 'A')"
        " || setweight(to_tsvector('simple', "
        f"documents_search_fold(substr({grams}, 1, {end}))), 'A')"
        " || setweight(to_tsvector('simple', "
        f"documents_search_fold(substr({grams}, {end} + 1))), 'B')"
        f" || setweight(to_tsvector('simple', {_WORDS_ONLY.format(text)}), 'B')"
    )


def _vector_function(*, utf8: bool) -> str:
    # 0011's function with this vector: the trigger's and the reindex's.
    return f"""CREATE OR REPLACE FUNCTION documents_search_vector(d documents_document)
    RETURNS tsvector LANGUAGE plpgsql STABLE AS $$
    BEGIN
        IF d.search_grams = '' THEN
            RETURN {_fold_migration._vector("d")};
        END IF;
        RETURN {_vector("d", utf8=utf8)};
    EXCEPTION WHEN program_limit_exceeded THEN
        -- Over tsvector's 1 MB: indexed without the grams, as before 0011.
        RETURN {_fold_migration._vector("d")};
    END $$"""


_REINDEX = """INSERT INTO documents_search (document_id, search_vector)
    SELECT d.id, documents_search_vector(d) FROM documents_document d
    WHERE strpos(d.search_grams, chr(10)) > 0
    ON CONFLICT (document_id) DO UPDATE SET search_vector = EXCLUDED.search_vector"""

# --- both -----------------------------------------------------------------------------


def _fill_grams(apps, schema_editor) -> None:
    from django.db.models.functions import Substr

    from documents.grams import search_grams

    Document = apps.get_model("documents", "Document")
    connection = schema_editor.connection
    name = "original_filename || title"
    if connection.vendor == "postgresql":
        non_ascii = f"octet_length({name}) <> length({name})"
    else:
        non_ascii = f"length(CAST({name} AS BLOB)) <> length({name})"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM documents_document "  # noqa: S608 - our own constants
            f"WHERE search_grams <> '' AND {non_ascii}"
        )
        ids = [row[0] for row in cursor.fetchall()]
    for first in range(0, len(ids), BATCH):
        rows = (
            Document.objects.filter(pk__in=ids[first : first + BATCH])
            .annotate(text_start=Substr("text", 1, _TEXT_CHARS))
            .values_list(
                "pk", "title", "original_filename", "text_start", "search_grams"
            )
        )
        for pk, title, filename, text, stored in rows:
            grams = search_grams(
                text=text or "", title=title, original_filename=filename
            )
            if grams != stored:
                Document.objects.filter(pk=pk).update(search_grams=grams)


def forward(apps, schema_editor) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        for statement in SQLITE_DROP:
            schema_editor.execute(statement)
    _fill_grams(apps, schema_editor)  # before SQLite's triggers: each row indexed once
    if vendor == "sqlite":
        for statement in SQLITE_CREATE:
            schema_editor.execute(statement)
    elif vendor == "postgresql":
        utf8 = _grams_migration._utf8(schema_editor.connection)
        schema_editor.execute(_vector_function(utf8=utf8))
        schema_editor.execute(_REINDEX)


def backward(apps, schema_editor) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        for statement in [*SQLITE_DROP, *_grams_migration.SQLITE_CREATE]:
            schema_editor.execute(statement)
    elif vendor == "postgresql":
        utf8 = _grams_migration._utf8(schema_editor.connection)
        schema_editor.execute(_grams_migration._vector_function(utf8=utf8))
        schema_editor.execute(_grams_migration._REINDEX)


class Migration(migrations.Migration):
    dependencies = [("documents", "0011_search_grams")]

    operations = [migrations.RunPython(forward, backward)]
