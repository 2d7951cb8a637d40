"""Telling the database's faults from the data's, and waiting for the database.

A fault of the database (connection lost, server restarting or shutting down, lock
timeout, disk full) says nothing about the job: the worker keeps what it holds,
reconnects and tries again, and no attempt is charged. A data problem (a value the
database refuses) is the job's: it fails with a clear message.
"""

from __future__ import annotations

import contextlib
import random

from django.db import DatabaseError, InterfaceError, OperationalError, connection

# SQLSTATE classes of a database that is unavailable rather than refusing data:
# 08 connection exception, 40 transaction rollback (serialisation, deadlock),
# 53 insufficient resources (disk full, out of memory, too many connections),
# 57 operator intervention (admin/crash shutdown, cannot connect now), 58 system error.
PG_FAULT_CLASSES = frozenset({"08", "40", "53", "57", "58"})
# Lock not available, object in use; and a connection the server ended for its
# idle_in_transaction_session_timeout (25P03: class 25 is otherwise a misuse).
PG_FAULT_STATES = frozenset({"55P03", "55006", "25P03"})
# SQLite primary result codes of the same kind: BUSY, LOCKED, NOMEM, READONLY,
# INTERRUPT, IOERR, CORRUPT, FULL, CANTOPEN, PROTOCOL.
SQLITE_FAULT_CODES = frozenset({5, 6, 7, 8, 9, 10, 11, 13, 14, 15})


def is_database_fault(exc: BaseException) -> bool:
    """True when ``exc`` is the database failing, not the data being refused."""
    if isinstance(exc, InterfaceError):
        return True
    if not isinstance(exc, DatabaseError):
        return False
    cause = exc.__cause__ or exc
    sqlstate = getattr(cause, "sqlstate", None)
    if sqlstate:
        return sqlstate[:2] in PG_FAULT_CLASSES or sqlstate in PG_FAULT_STATES
    code = getattr(cause, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in SQLITE_FAULT_CODES
    # No code at all: the connection went away mid-conversation.
    return isinstance(exc, OperationalError)


# Faults of one statement rather than of the database: the server cancelled it
# (statement timeout) or rolled it back (deadlock, serialisation, lock not available).
PG_STATEMENT_STATES = frozenset({"57014", "40001", "40P01", "55P03"})


def is_database_away(exc: BaseException) -> bool:
    """True when ``exc`` is the database itself failing (connection lost, server
    shutting down, disk full), not a statement it stopped: what a job's own queries
    may meet without the database being away."""
    cause = exc.__cause__ or exc
    return (
        is_database_fault(exc)
        and getattr(cause, "sqlstate", None) not in PG_STATEMENT_STATES
    )


def is_timed_out(exc: BaseException) -> bool:
    """True when PostgreSQL stopped the work for a timeout of its own: the
    statement (``statement_timeout``, or an operator's ``pg_cancel_backend``), or
    the connection of a transaction idle between statements
    (``idle_in_transaction_session_timeout``)."""
    cause = exc.__cause__ or exc
    return getattr(cause, "sqlstate", None) in {"57014", "25P03"}


def drop_connection() -> None:
    """Forget this thread's connection, whatever state it is in; the next query
    opens a fresh one."""
    with contextlib.suppress(Exception):
        connection.close()


class Backoff:
    """Pauses between tries at a database that is away: from ``first`` seconds,
    doubling up to ``cap``, with jitter, so a worker never spins and comes back
    within ``cap`` of the database."""

    def __init__(self, first: float = 0.1, cap: float = 2.0) -> None:
        self.first, self.cap = first, cap
        self.delay = first

    def next(self) -> float:
        delay, self.delay = self.delay, min(self.delay * 2, self.cap)
        return delay * random.uniform(0.75, 1.25)  # noqa: S311 - jitter, not crypto

    def reset(self) -> None:
        self.delay = self.first
