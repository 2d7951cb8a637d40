"""The queue's SQL: whole statements in one module per database, chosen once per
database vendor; the rest of the code calls their named operations (``dialect()``).

``base`` holds the statements that read the same on every database but for the
clock; ``postgresql`` and ``sqlite`` hold each database's own: PostgreSQL does each
step in one round trip (data-modifying CTEs, atomic as one statement), SQLite runs
the same steps as separate statements inside one ``BEGIN IMMEDIATE`` transaction,
which costs nothing extra in-process. The ORM would spend more time compiling the
hot statements than the database spends running them.

The queue's one clock is the database's: every time that another process compares
(heartbeats, ``started_at``, ``next_retry_at``, ``finished_at``, stale and age
cutoffs, clear-old cutoffs, the dashboard's rates) is computed by the database in the
statement that writes or compares it (each module's ``NOW``), never the worker host's
``time.time()`` or ``timezone.now()``: hosts' clocks differ, and a time read before a
statement that then waits on a lock is stale when it lands. The ORM uses ``DbNow``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import cache
from importlib import import_module
from types import ModuleType
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.db.models import DateTimeField, Expression, F, Func, JSONField
from django.utils.dateparse import parse_datetime

from jobqueue.sql.base import CLAIMED_FIELDS, CLAIMED_TIMES, Dialect

__all__ = [
    "CLAIMED_FIELDS",
    "CLAIMED_TIMES",
    "AppendToList",
    "DbNow",
    "Dialect",
    "db_now",
    "dialect",
    "storable",
]

MODULES = {"postgresql": "jobqueue.sql.postgresql", "sqlite": "jobqueue.sql.sqlite"}


def storable(text: str) -> str:
    """``text`` as both databases store it: U+0000 (which PostgreSQL's text and
    JSON cannot hold) written ``\\x00``, a lone surrogate (which neither database's
    driver sends as text: UnicodeEncodeError) ``\\udce9``, as Python's repr writes
    them. For what explains (an error, a traceback): nothing of it is lost."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text.replace("\x00", "\\x00")


@cache
def module(vendor: str) -> ModuleType:
    """The statements module of a database vendor."""
    try:
        return import_module(MODULES[vendor])
    except KeyError:
        raise ImproperlyConfigured(
            f"The queue runs on PostgreSQL or SQLite, not on {vendor}."
        ) from None


@cache
def _dialect(vendor: str, mirrors: tuple) -> Dialect:
    return module(vendor).Dialect(mirrors)


def dialect() -> Dialect:
    """The statements of the default connection's database, for the registered kinds'
    status tables (built once for each set of kinds)."""
    from jobqueue.operations import mirrors

    return _dialect(connection.vendor, mirrors())


class DbNow(Func):
    """The database's current time plus ``seconds`` (negative for a cutoff)."""

    output_field = DateTimeField()

    def __init__(self, seconds: float = 0.0) -> None:
        super().__init__()
        self.seconds = float(seconds)

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list]:
        return module(connection.vendor).now_plus(self.seconds)


class AppendToList(Expression):
    """A JSON column's object with ``value`` appended to its list at ``key`` (made
    if absent), computed by the database: the same entry added to many items'
    payloads (a task's errors) in one UPDATE, without reading them.
    ``QueueItem.objects.filter(...).update(payload=AppendToList(...))``."""

    def __init__(self, field: str, key: str, value: Any) -> None:
        super().__init__(output_field=JSONField())
        self.source: Any = F(field)
        self.key = key
        self.value = json.dumps(value)

    def get_source_expressions(self) -> list[Any]:
        return [self.source]

    def set_source_expressions(self, exprs: list[Any]) -> None:
        (self.source,) = exprs

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list]:
        column, params = compiler.compile(self.source)
        statement, key = module(connection.vendor).append_to_list(column, self.key)
        return statement, [*params, key, *params, key, self.value]


def db_now() -> datetime:
    """The database's current time, for the rare comparison made in Python."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {module(connection.vendor).NOW}", {})
        return as_datetime(cursor.fetchone()[0])


def as_datetime(value: datetime | str | None) -> datetime | None:
    """A time read by a raw statement, aware: SQLite gives Django's UTC text, or a
    naive UTC datetime for a column declared as one."""
    if isinstance(value, str):
        value = parse_datetime(value)
    if value is not None and value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value
