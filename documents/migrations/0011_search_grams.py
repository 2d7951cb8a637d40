"""Chinese, Japanese, Korean and Thai words are found inside sentences: the index
gets a fourth part, ``search_grams`` (documents.search.search_grams), the bigrams of
those scripts' runs in the title, file name and text, written by Python with them.

SQLite: documents_fts is built again with a fourth column, its triggers with it (0005,
with 0009's "only on change"). PostgreSQL: documents_search_write (0010) adds the
grams, folded as the rest, at weight B and before the text: a phrase of grams needs
positions, which stop at 16,383. There, the runs are taken out of the text's part,
since the grams find them, so that the grams fit in tsvector's 1 MB; should they not
fit even so, the document is indexed as 0010 indexed it.

The column is added with plain ALTER TABLE, as 0004 added the title (Django's
SQLite AddField rebuilds the table, and its triggers with it). Existing documents
with non-ASCII words get their grams in batches, then are indexed again. Going back
restores 0010's index and empties the column but keeps it (see ``backward``).
"""

import importlib

from django.db import migrations, models

_fold_migration = importlib.import_module(
    "documents.migrations.0010_search_folds_accents"
)
_search_table = importlib.import_module("documents.migrations.0008_search_table")
_titles = importlib.import_module("documents.migrations.0005_search_titles")
_only_on_change = importlib.import_module(
    "documents.migrations.0009_fts_only_on_change"
)
_WORDS_ONLY = _search_table._WORDS_ONLY
_TEXT_CHARS = 250000
BATCH = 200

# documents.search.CJK_RANGES as of this migration, for PostgreSQL's regular expression.
_CJK_RANGES = (
    "\u0e00-\u0e7f\u1100-\u11ff\u3005-\u3007\u3031-\u3035\u303b\u303c\u3040-\u30ff"
    "\u3100-\u312f\u3130-\u318f\u31a0-\u31bf\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uffdc"
    "\U0001b000-\U0001b16f\U00020000-\U000323af"
)

# --- SQLite ---------------------------------------------------------------------------

_COLUMNS = "original_filename, title, text, search_grams"
_OLD = ", ".join(f"old.{c}" for c in _COLUMNS.split(", "))
_NEW = ", ".join(f"new.{c}" for c in _COLUMNS.split(", "))
_CHANGED = " OR ".join(f"old.{c} IS NOT new.{c}" for c in _COLUMNS.split(", "))
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS documents_fts_update",
    "DROP TRIGGER IF EXISTS documents_fts_delete",
    "DROP TRIGGER IF EXISTS documents_fts_insert",
    "DROP TABLE IF EXISTS documents_fts",
]
SQLITE_CREATE = [
    f"""CREATE VIRTUAL TABLE documents_fts USING fts5({_COLUMNS},
        content='documents_document', content_rowid='id', {_titles._TOKENIZE})""",
    f"""CREATE TRIGGER documents_fts_insert AFTER INSERT ON documents_document BEGIN
        INSERT INTO documents_fts(rowid, {_COLUMNS}) VALUES (new.id, {_NEW});
    END""",  # noqa: S608 - only our own constants are interpolated
    f"""CREATE TRIGGER documents_fts_delete AFTER DELETE ON documents_document BEGIN
        INSERT INTO documents_fts(documents_fts, rowid, {_COLUMNS})
        VALUES ('delete', old.id, {_OLD});
    END""",  # noqa: S608
    f"""CREATE TRIGGER documents_fts_update AFTER UPDATE OF {_COLUMNS}
    ON documents_document WHEN {_CHANGED} BEGIN
        INSERT INTO documents_fts(documents_fts, rowid, {_COLUMNS})
        VALUES ('delete', old.id, {_OLD});
        INSERT INTO documents_fts(rowid, {_COLUMNS}) VALUES (new.id, {_NEW});
    END""",  # noqa: S608
    "INSERT INTO documents_fts(documents_fts) VALUES ('rebuild')",
]
# 0005's table and triggers with 0009's update trigger, as 0010 left them.
SQLITE_PREVIOUS = [
    *[s for s in _titles.SQLITE_FORWARD[4:] if "documents_fts_update" not in s][:-1],
    _only_on_change.SQLITE_FORWARD[-1],
    _titles.SQLITE_FORWARD[-1],
]

# --- PostgreSQL -----------------------------------------------------------------------


def _vector(row: str, *, utf8: bool) -> str:
    """The search vector of the documents_document row ``row``, with its grams."""
    name = f"coalesce({row}.original_filename, '') || ' ' || coalesce({row}.title, '')"
    text = f"left(documents_search_fold(left(coalesce({row}.text, ''), {_TEXT_CHARS})), {_TEXT_CHARS})"
    if utf8:
        # The grams find these runs: the text's part keeps the other words.
        text = f"regexp_replace({text}, '[{_CJK_RANGES}]+', ' ', 'g')"
    grams = f"documents_search_fold(coalesce({row}.search_grams, ''))"
    return (
        "setweight(to_tsvector('simple', "
        f"{_WORDS_ONLY.format(f'documents_search_fold({name})')}), 'A')"
        f" || setweight(to_tsvector('simple', {grams}), 'B')"
        f" || setweight(to_tsvector('simple', {_WORDS_ONLY.format(text)}), 'B')"
    )


def _vector_function(*, utf8: bool) -> str:
    # One function for the trigger and for indexing the documents again.
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


_WRITE_FUNCTION = """CREATE OR REPLACE FUNCTION documents_search_write() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO documents_search (document_id, search_vector)
        VALUES (NEW.id, documents_search_vector(NEW))
        ON CONFLICT (document_id) DO UPDATE SET search_vector = EXCLUDED.search_vector;
        RETURN NULL;
    END $$"""
_REINDEX = """INSERT INTO documents_search (document_id, search_vector)
    SELECT d.id, documents_search_vector(d) FROM documents_document d
    WHERE d.search_grams <> ''
    ON CONFLICT (document_id) DO UPDATE SET search_vector = EXCLUDED.search_vector"""


def _update_trigger(columns: tuple[str, ...]) -> list[str]:
    changed = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in columns)
    return [
        "DROP TRIGGER IF EXISTS documents_search_update ON documents_document",
        f"""CREATE TRIGGER documents_search_update
        AFTER UPDATE OF {", ".join(columns)} ON documents_document
        FOR EACH ROW WHEN ({changed})
        EXECUTE FUNCTION documents_search_write()""",
    ]


# --- both -----------------------------------------------------------------------------


def _non_ascii(vendor: str) -> str:
    """SQL: documents whose words are not all ASCII (the others have no grams)."""
    words = f"original_filename || title || substr(text, 1, {_TEXT_CHARS})"
    if vendor == "postgresql":
        return f"octet_length({words}) <> length({words})"
    return f"length(CAST({words} AS BLOB)) <> length({words})"


def _fill_grams(apps, schema_editor) -> None:
    from django.db.models.functions import Substr

    from documents.search import search_grams

    Document = apps.get_model("documents", "Document")
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id FROM documents_document WHERE {_non_ascii(connection.vendor)}"  # noqa: S608
        )
        ids = [row[0] for row in cursor.fetchall()]
    for first in range(0, len(ids), BATCH):
        rows = (
            Document.objects.filter(pk__in=ids[first : first + BATCH])
            .annotate(text_start=Substr("text", 1, _TEXT_CHARS))
            .values_list("pk", "title", "original_filename", "text_start")
        )
        for pk, title, filename, text in rows:
            grams = search_grams(
                text=text or "", title=title, original_filename=filename
            )
            if grams:
                Document.objects.filter(pk=pk).update(search_grams=grams)


def _utf8(connection) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_encoding")
        return cursor.fetchone()[0].upper() in {"UTF8", "UTF-8"}


def _add_column(schema_editor) -> None:
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        table = connection.introspection.get_table_description(
            cursor, "documents_document"
        )
    if "search_grams" not in {column.name for column in table}:
        schema_editor.execute(
            "ALTER TABLE documents_document "
            "ADD COLUMN search_grams text NOT NULL DEFAULT ''"
        )


def forward(apps, schema_editor) -> None:
    vendor = schema_editor.connection.vendor
    _add_column(schema_editor)
    if vendor == "sqlite":
        for statement in SQLITE_DROP:
            schema_editor.execute(statement)
    _fill_grams(apps, schema_editor)  # before the triggers: each row indexed once
    if vendor == "sqlite":
        for statement in SQLITE_CREATE:
            schema_editor.execute(statement)
    elif vendor == "postgresql":
        schema_editor.execute(_vector_function(utf8=_utf8(schema_editor.connection)))
        schema_editor.execute(_WRITE_FUNCTION)
        columns = ("original_filename", "title", "text", "search_grams")
        for statement in _update_trigger(columns):
            schema_editor.execute(statement)
        schema_editor.execute(_REINDEX)


def backward(apps, schema_editor) -> None:
    # The emptied column stays: code of 0010 inserts without it (its default), and
    # so does this code, tests that go back included; forward fills it again.
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        for statement in [*SQLITE_DROP, *SQLITE_PREVIOUS[:-1]]:
            schema_editor.execute(statement)
    elif vendor == "postgresql":
        previous = _fold_migration._vector
        schema_editor.execute(_fold_migration._write_function(previous))
        columns = ("original_filename", "title", "text")
        for statement in _update_trigger(columns):
            schema_editor.execute(statement)
        schema_editor.execute(_fold_migration._reindex(previous))
        schema_editor.execute("DROP FUNCTION IF EXISTS documents_search_vector")
    # No trigger watches the column any more.
    schema_editor.execute(
        "UPDATE documents_document SET search_grams = '' WHERE search_grams <> ''"
    )
    if vendor == "sqlite":
        schema_editor.execute(SQLITE_PREVIOUS[-1])  # rebuild


class Migration(migrations.Migration):
    dependencies = [("documents", "0010_search_folds_accents")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name="document",
                    name="search_grams",
                    field=models.TextField(blank=True, default="", editable=False),
                )
            ],
        ),
        migrations.RunPython(forward, backward),
    ]
