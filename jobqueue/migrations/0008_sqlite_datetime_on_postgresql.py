"""The guide's operator SQL, as written, on PostgreSQL too: it finds dead workers with
SQLite's ``datetime('now', '-60 seconds')``. PostgreSQL gets a ``datetime`` of the same
arguments (a moment, 'now' or a time, then modifiers such as '-60 seconds'), giving
the time in UTC as SQLite's does, so the statement compares like for like."""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION datetime(moment text, VARIADIC modifiers text[] DEFAULT '{}')
RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT (CASE lower(moment) WHEN 'now' THEN now() ELSE moment::timestamptz END)
        + COALESCE((SELECT sum(m::interval) FROM unnest(modifiers) AS m), interval '0')
$$;
"""
DROP = "DROP FUNCTION IF EXISTS datetime(text, text[]);"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("jobqueue", "0007_one_active_item_per_work")]

    operations = [migrations.RunPython(create, drop)]
