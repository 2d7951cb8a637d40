"""The queue on SQLite: each step is a few statements inside the caller's one
``BEGIN IMMEDIATE`` transaction (no round trips: the database is in-process).

SQLite stores Django's datetimes as UTC text, ``YYYY-MM-DD HH:MM:SS.ffffff``, and
compares them as text; ``NOW`` produces that exact shape, so it sorts correctly
against values Django wrote. SQLite's clock has milliseconds: the last three digits
are ``999``, the end of that millisecond, so a time written within it counts as past.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import re
import select
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections

with contextlib.suppress(ImportError):  # Linux only; elsewhere the watch polls
    from inotify_simple import INotify, flags

from jobqueue.sql import base

# '%%' because Django passes parameterised statements through %-formatting.
NOW = "(strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now') || '999')"
# Without inotify: how often an idle worker looks for commits of other connections;
# with it, how often at most.
WATCH_SECONDS = 0.005
# With inotify: a commit writes the WAL file a moment before other connections can see
# it, and writes no file after; so after a write, look at once and then again after
# these pauses until a commit shows (a write that is no commit costs ten looks).
LOOK_AGAIN_SECONDS = (0, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1)

logger = logging.getLogger(__name__)


def now_plus(seconds: float) -> tuple[str, list[Any]]:
    return (
        "(strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now', %s) || '999')",
        [f"{seconds:+.3f} seconds"],
    )


def append_to_list(column: str, key: str) -> tuple[str, str]:
    """``AppendToList``'s expression (parameters: the column's, the key, the
    column's, the key, the value as JSON) and its key parameter. json_insert's
    '$[#]' is the end of the array."""
    return (
        f"json_set({column}, %s, json_insert("
        f"COALESCE(json_extract({column}, %s), '[]'), '$[#]', json(%s)))",
        "$." + json.dumps(key),
    )


class Dialect(base.Dialect):
    vendor = "sqlite"
    NOW = NOW

    def __init__(self, mirrors: base.Mirrors) -> None:
        super().__init__(mirrors)
        # Due retries are promoted first (``promote``), then the next job by
        # priority, then age: read straight off idx_queue_claim_order.
        next_job = f"""SELECT id FROM extraction_queue WHERE status = 'pending'
            {base.UNPAUSED} {{queues}} ORDER BY priority DESC, created_at, id LIMIT 1"""
        claim = f"{self.start} WHERE id = ({next_job}) RETURNING {base.FIELDS}"
        self.claim_any = claim.replace("{queues}", "")
        self.claim_in_queues = claim.replace(
            "{queues}", "AND queue_name IN (SELECT value FROM json_each(%(queues)s))"
        )
        self.metric = self.completed_metric.format(
            job="%(job)s",
            document="%(document_id)s",
            attempt="%(attempt)s",
            worker="%(claimed_by)s",
            source="",
        )

    def id_source(self, ids: list[int]) -> tuple[str, Any]:
        return "json_each(%s) AS subject", json.dumps(ids)

    def steps(self) -> Any:
        db = connections[DEFAULT_DB_ALIAS]
        # Django's own where it keeps a transaction (atomic(), or autocommit turned
        # off by hand) or logs the statements (DEBUG, tests that count them).
        if db.in_atomic_block or db.queries_logged or not db.get_autocommit():
            return super().steps()
        return _Steps(db)

    def claim(self, cursor: Any, worker: str, queues: Sequence[str]) -> tuple | None:
        cursor = native(cursor)
        cursor.execute(self.promote, {})
        self.mirror(cursor, cursor.fetchall(), "pending")
        if queues:
            params = {"worker": worker, "queues": json.dumps(sorted(queues))}
            cursor.execute(self.claim_in_queues, params)
        else:
            cursor.execute(self.claim_any, {"worker": worker})
        row = cursor.fetchone()
        if row is not None:
            self.mirror(cursor, [(row[2], row[1])], "processing")
        return row

    def complete(self, cursor: Any, params: dict[str, Any]) -> bool:
        cursor = native(cursor)
        cursor.execute(self.done, params)
        row = cursor.fetchone()
        if row is None:
            return False
        document_id, attempt, claimed_by, operation = row
        cursor.execute(
            self.metric,
            {
                **params,
                "document_id": document_id,
                "attempt": attempt,
                "claimed_by": claimed_by,
            },
        )
        self.mirror(
            cursor,
            [(operation, document_id)],
            "completed",
            {"error_type": "", "error_message": ""},
        )
        return True

    def watch(self, changed: Callable[[], None], stop: Any) -> None:
        """``PRAGMA data_version`` changes whenever another connection commits;
        reading it takes no lock. It is read when the database's directory reports
        a write (inotify: a commit appends to the WAL file), so an idle worker
        sleeps in the kernel; where inotify is missing, every ``WATCH_SECONDS``."""
        path = Path(connections["default"].settings_dict["NAME"])
        db = sqlite3.connect(path, timeout=5, check_same_thread=False)
        try:
            with _file_events(path.parent) as events:
                looks = (0,) if events is None else LOOK_AGAIN_SECONDS
                last = _data_version(db)
                # A commit was just seen: more may have followed, their writes
                # already read with its own.
                busy = False
                while not stop.is_set():
                    if events is None:
                        stop.wait(WATCH_SECONDS)
                    elif busy:
                        events.read(timeout=0)  # looked at anyway
                    else:
                        # Asleep in the kernel until a file is written, or the stop.
                        select.select([events, stop], [], [])
                        if not events.read(timeout=0):
                            continue
                    busy = False
                    for pause in looks:
                        if stop.wait(pause):
                            return
                        version = _data_version(db)
                        if version != last:
                            last, busy = version, True
                            changed()
                            break
                    if busy and events is not None:
                        # A busy queue commits thousands of times a second: look
                        # at most every WATCH_SECONDS, so that this thread does
                        # not take the interpreter from the workers at each one.
                        stop.wait(WATCH_SECONDS)
        finally:
            db.close()


# Django's cursor converts a statement's parameter style at every execute, in layers
# that cost more than a short statement takes to run: the queue's own statements go
# to the sqlite3 cursor beneath it, each converted once.
_sqlite3_execute = sqlite3.Cursor.execute
_NAMED = re.compile(r"%\((\w+)\)s")
_POSITIONAL = re.compile(r"(?<!%)%s")


@functools.lru_cache(maxsize=256)
def _sqlite_style(statement: str, named: bool) -> str:
    """``statement`` with Django's ``%(name)s`` or ``%s`` as sqlite3's ``:name``/``?``."""
    converted = (
        _NAMED.sub(r":\1", statement) if named else _POSITIONAL.sub("?", statement)
    )
    return converted.replace("%%", "%")


class _Native:
    """A sqlite3 cursor of Django's connection ``db``; errors raised as Django's
    cursor raises them."""

    __slots__ = ("cursor", "db")

    def __init__(self, cursor: sqlite3.Cursor, db: Any) -> None:
        self.cursor, self.db = cursor, db

    def execute(self, statement: str, params: Any) -> None:
        try:
            _sqlite3_execute(
                self.cursor, _sqlite_style(statement, isinstance(params, dict)), params
            )
        except sqlite3.Error:
            with self.db.wrap_database_errors:
                raise

    def fetchone(self) -> tuple | None:
        return self.cursor.fetchone()

    def fetchall(self) -> list[tuple]:
        return self.cursor.fetchall()


def native(cursor: Any) -> Any:
    """``cursor`` made direct, or left as it is where statements are logged (DEBUG,
    tests that count them)."""
    if isinstance(cursor, _Native) or cursor.db.queries_logged:
        return cursor
    return _Native(cursor.cursor, cursor.db)


class _Steps:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` on the sqlite3 connection beneath Django's,
    outside any ``atomic()`` block. Only named operations run in it, so none of
    Django's bookkeeping (savepoints, on_commit hooks) has work to do, and that
    bookkeeping costs some 15 µs a transaction: a tenth of a no-op job's CPU."""

    __slots__ = ("db", "raw", "cursor")

    def __init__(self, db: Any) -> None:
        self.db = db

    def __enter__(self) -> _Native:
        self.raw = self.db.connection  # connected by ``steps``'s get_autocommit()
        with self.db.wrap_database_errors:
            self.raw.execute("BEGIN IMMEDIATE")
        self.cursor = self.raw.cursor()
        return _Native(self.cursor, self.db)

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        self.cursor.close()
        try:
            if kind is None:
                with self.db.wrap_database_errors:
                    self.raw.execute("COMMIT")
        finally:
            # After an error, or a COMMIT that failed (a full disk): nothing of it.
            if self.raw.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self.raw.execute("ROLLBACK")


def _data_version(db: sqlite3.Connection) -> int:
    return db.execute("PRAGMA data_version").fetchone()[0]


@contextlib.contextmanager
def _file_events(directory: Path) -> Iterator[INotify | None]:
    """Writes to the files of ``directory``, or None where inotify is missing."""
    try:
        events = INotify()
        events.add_watch(directory, flags.MODIFY | flags.CREATE | flags.MOVED_TO)
    except (NameError, OSError) as exc:
        logger.info(
            "No inotify (%s): looking for commits every %g s", exc, WATCH_SECONDS
        )
        yield None
        return
    try:
        yield events
    finally:
        events.close()
