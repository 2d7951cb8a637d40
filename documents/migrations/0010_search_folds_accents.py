"""PostgreSQL: the search index folds words as SQLite's FTS5 does (unicode61
remove_diacritics 2), so "cafe" finds "café" on both databases, and a word typed
decomposed (NFD: "e" and a combining accent) finds it stored composed (NFC).

documents_search_fold puts the text in NFC with the accents of Latin letters taken
off; the search folds each query word alike in Python (documents.search._searchable).
It needs no extension (unaccent is not always there to be created) and reads no
dictionary: NFD, the accents after a Latin letter dropped, NFC again. Pure ASCII, most
text, is returned as it is. Every document with other characters is indexed again;
going back does the same with the old vector."""

import importlib
from collections.abc import Callable

from django.db import migrations

_search_table = importlib.import_module("documents.migrations.0008_search_table")
_WORDS_ONLY = _search_table._WORDS_ONLY

# normalize() needs a UTF8 database; any other encoding keeps the text as it is.
_FOLD = r"""normalize(regexp_replace(normalize(value, NFD),
                '([A-Za-z])[\u0300-\u036f]+', '\1', 'g'), NFC)"""
_FOLD_FUNCTION = """CREATE FUNCTION documents_search_fold(value text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN octet_length(value) = length(value) THEN value
                ELSE {fold} END
    $$"""


def _vector(row: str) -> str:
    """The search vector of the documents_document row ``row``, from folded words."""
    name = f"coalesce({row}.original_filename, '') || ' ' || coalesce({row}.title, '')"
    # Cut before folding (the text may be megabytes) and after (NFC may lengthen it).
    text = f"left(coalesce({row}.text, ''), 250000)"
    text = f"left(documents_search_fold({text}), 250000)"
    return (
        "setweight(to_tsvector('simple', "
        f"{_WORDS_ONLY.format(f'documents_search_fold({name})')}), 'A')"
        f" || setweight(to_tsvector('simple', {_WORDS_ONLY.format(text)}), 'B')"
    )


def _write_function(vector: Callable[[str], str]) -> str:
    return f"""CREATE OR REPLACE FUNCTION documents_search_write() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO documents_search (document_id, search_vector)
        VALUES (NEW.id, {vector("NEW")})
        ON CONFLICT (document_id) DO UPDATE SET search_vector = EXCLUDED.search_vector;
        RETURN NULL;
    END $$"""  # noqa: S608 - only our own constants are interpolated


def _reindex(vector: Callable[[str], str]) -> str:
    # Words all in ASCII fold to themselves: only the other documents change.
    words = "d.original_filename || d.title || left(d.text, 250000)"
    return f"""INSERT INTO documents_search (document_id, search_vector)
        SELECT d.id, {vector("d")} FROM documents_document d
        WHERE octet_length({words}) <> length({words})
        ON CONFLICT (document_id) DO UPDATE SET search_vector = EXCLUDED.search_vector"""  # noqa: S608


def forward(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SHOW server_encoding")
        utf8 = cursor.fetchone()[0].upper() in {"UTF8", "UTF-8"}
    schema_editor.execute(_FOLD_FUNCTION.format(fold=_FOLD if utf8 else "value"))
    schema_editor.execute(_write_function(_vector))
    schema_editor.execute(_reindex(_vector))


def backward(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(_write_function(_search_table._vector))
    schema_editor.execute(_reindex(_search_table._vector))
    schema_editor.execute("DROP FUNCTION IF EXISTS documents_search_fold(text)")


class Migration(migrations.Migration):
    dependencies = [("documents", "0009_fts_only_on_change")]

    operations = [migrations.RunPython(forward, backward)]
