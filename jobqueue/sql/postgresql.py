"""The queue on PostgreSQL: each step in one round trip (data-modifying CTEs, atomic
as one statement), the kinds' status tables written by the same statement.

``NOW`` is ``clock_timestamp()`` rather than ``now()``, because ``now()`` is the start
of the transaction, which for a statement blocked on a lock is in the past.
"""

from __future__ import annotations

import contextlib
import re
import select
import weakref
import zlib
from collections.abc import Callable, Sequence
from typing import Any

from django.db import connection, connections

from jobqueue.sql import base

NOW = "clock_timestamp()"
# What a claim counts as due: jobs due by the statement's start. A stable time, unlike
# ``NOW``, bounds the index scan of idx_queue_status_retry, so jobs scheduled for later
# (retries, tasks' run_after) are never read by a claim, however many wait.
DUE_BY = "statement_timestamp()"
CHANNEL = "extraction_queue"
# The hot statements' parameters, typed for PREPARE.
TYPES = {
    "worker": "text",
    "workers": "text[]",
    "queues": "text[]",
    "job": "bigint",
    "attempt": "integer",
    "ms": "integer",
    "confidence": "double precision",
    "pages": "integer",
    "characters": "integer",
    "extractor": "text",
    "result": "text",
    "subject": "bigint",
}
# Dead rows after which housekeeping vacuums the queue table. A claim reads the
# claim index from its oldest pending entry: until a vacuum, the entries of jobs
# claimed since are dead ones it must step over (1M of them: 7.8 ms a claim).
VACUUM_AFTER_DEAD_ROWS = 10_000
# One vacuum at a time, whichever worker's housekeeping gets there first.
VACUUM_LOCK = 0x6A6F6271  # "jobq"


def now_plus(seconds: float) -> tuple[str, list[Any]]:
    return f"({NOW} + %s * interval '1 second')", [seconds]


def append_to_list(column: str, key: str) -> tuple[str, str]:
    """``AppendToList``'s expression (parameters: the column's, the key, the
    column's, the key, the value as JSON) and its key parameter."""
    return (
        f"jsonb_set({column}, ARRAY[%s::text], COALESCE({column} -> %s::text, "
        "'[]'::jsonb) || jsonb_build_array(%s::jsonb))",
        key,
    )


def mirror_ctes(source: str, status: str, mirrors: base.Mirrors, clear: bool) -> str:
    """CTEs that write ``status`` to the status tables of the items in the CTE
    ``source`` (its columns operation, document_id), one per table."""
    errors = ", error_type = '', error_message = ''" if clear else ""
    return "".join(
        f""",
            {source}_mirror_{n} AS (UPDATE {connection.ops.quote_name(table)} AS subject
                SET status = '{status}', updated_at = {NOW}{errors}
                FROM {source} WHERE subject.id = {source}.document_id
                AND {source}.operation IN ({", ".join(map(base.quote, kinds))}))"""
        for n, (table, kinds) in enumerate(mirrors)
    )


class Prepared:
    """A statement prepared once per connection (PREPARE, then EXECUTE): parsed and
    planned once, where the claim and the completion would otherwise spend more
    time being planned than being run."""

    def __init__(self, name: str, statement: str) -> None:
        self.name = name
        self.params = list(dict.fromkeys(re.findall(r"%\((\w+)\)s", statement)))
        body = re.sub(
            r"%\((\w+)\)s",
            lambda m: f"${self.params.index(m[1]) + 1}",
            statement.replace("%%", "%"),
        )
        types = ", ".join(TYPES[p] for p in self.params)
        self.prepare = f"PREPARE {name} ({types}) AS {body}"
        self.execute = f"EXECUTE {name} ({', '.join(['%s'] * len(self.params))})"

    def run(self, cursor: Any, params: dict[str, Any]) -> None:
        """Execute, preparing first on a connection that has not seen it."""
        raw = cursor.cursor.connection
        prepared = _prepared.setdefault(raw, set())
        if self.name not in prepared:
            cursor.execute(self.prepare)
            prepared.add(self.name)
        cursor.execute(self.execute, [params[p] for p in self.params])


def _variants(prefix: str, statement: str) -> tuple[Prepared, Prepared]:
    """A statement taking jobs of any queue, and one of the named ``queues`` only;
    named by their text: kinds registered later make new statements."""
    tag = f"{zlib.crc32(statement.encode()):08x}"
    return (
        Prepared(f"{prefix}_{tag}", statement.replace("{queues}", "")),
        Prepared(
            f"{prefix}_queues_{tag}",
            statement.replace("{queues}", "AND queue_name = ANY(%(queues)s)"),
        ),
    )


# The names prepared on each (live) connection.
_prepared: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()


class Dialect(base.Dialect):
    vendor = "postgresql"
    NOW = NOW
    RESULT = "CAST(%(result)s AS jsonb)"
    # Deleting the job waits for the beat's commit, or the beat for the delete's
    # (and then names no job): never a foreign key failing at the beat's commit.
    JOB_LOCK = "FOR KEY SHARE"

    def __init__(self, mirrors: base.Mirrors) -> None:
        super().__init__(mirrors)
        # One statement: the next job, of those pending and of those whose retry
        # (or run_after) is due, by priority then age; each read off its own index
        # (idx_queue_claim_order, idx_queue_status_retry). A due retry is claimed
        # straight from retry_pending: promoting it first would leave it behind a
        # lower-priority pending job for this claim (one statement, one snapshot).
        # SKIP LOCKED lets concurrent claimers pass a locked row. The commit does
        # not wait for the disk (synchronous_commit off, this transaction only): a
        # claim lost in a server crash leaves the job waiting, and the completion of
        # a job no longer processing is refused (fencing), so the job runs again;
        # never lost. Completions wait for the disk.
        order = "ORDER BY priority DESC, created_at, id LIMIT 1"
        claim_ctes = f"""
            waiting AS (SELECT id, priority, created_at FROM extraction_queue
                WHERE status = 'pending' {base.UNPAUSED} {{queues}}
                {order} FOR UPDATE SKIP LOCKED),
            due AS (SELECT id, priority, created_at FROM extraction_queue
                WHERE status = 'retry_pending' AND next_retry_at <= {DUE_BY}
                {base.UNPAUSED} {{queues}}
                {order} FOR UPDATE SKIP LOCKED),
            claimed AS ({self.start} WHERE id = (SELECT id FROM
                (SELECT * FROM waiting UNION ALL SELECT * FROM due) AS next {order})
                RETURNING {base.FIELDS}){
            mirror_ctes("claimed", "processing", mirrors, clear=False)
        }"""
        claimed_fields = ", ".join(f"claimed.{f}" for f in base.CLAIMED_FIELDS)
        claim = f"""WITH {claim_ctes}
            SELECT {claimed_fields}
            FROM (SELECT set_config('synchronous_commit', 'off', true)) AS async
            LEFT JOIN claimed ON true"""
        self.claim_any, self.claim_in_queues = _variants("jq_claim", claim)

        # Several jobs for several workers (a worker's idle threads), in the same
        # order: the n-th job for the n-th worker.
        batch = "ORDER BY priority DESC, created_at, id LIMIT cardinality(%(workers)s)"
        batch_ctes = f"""
            waiting AS (SELECT id, priority, created_at FROM extraction_queue
                WHERE status = 'pending' {base.UNPAUSED} {{queues}}
                {batch} FOR UPDATE SKIP LOCKED),
            due AS (SELECT id, priority, created_at FROM extraction_queue
                WHERE status = 'retry_pending' AND next_retry_at <= {DUE_BY}
                {base.UNPAUSED} {{queues}}
                {batch} FOR UPDATE SKIP LOCKED),
            next AS (SELECT id AS job, row_number() OVER (
                    ORDER BY priority DESC, created_at, id) AS n
                FROM (SELECT * FROM waiting UNION ALL SELECT * FROM due) AS candidates
                {batch}),
            claimed AS ({
            self.start.replace("%(worker)s", "(%(workers)s)[next.n]")
        } FROM next WHERE id = next.job RETURNING {base.FIELDS}){
            mirror_ctes("claimed", "processing", mirrors, clear=False)
        }"""
        self.claim_batch_any, self.claim_batch_in_queues = _variants(
            "jq_claim_batch",
            f"""WITH {batch_ctes}
            SELECT {claimed_fields}
            FROM (SELECT set_config('synchronous_commit', 'off', true)) AS async
            JOIN claimed ON true
            ORDER BY claimed.priority DESC, claimed.created_at, claimed.id""",
        )

        metric = self.completed_metric.format(
            job="%(job)s",
            document="document_id",
            attempt="attempts",
            worker="claimed_by",
            source="FROM done",
        )
        completion_ctes = f"""
            done AS ({self.done}),
            metric AS ({metric}){mirror_ctes("done", "completed", mirrors, clear=True)}"""
        # The completion, its metrics row and its subject's status: one statement.
        self.completion = Prepared(
            f"jq_complete_{zlib.crc32(completion_ctes.encode()):08x}",
            f"WITH {completion_ctes} SELECT 1 FROM done",
        )
        # The completion and the next claim: one statement, one commit (waiting for
        # the disk, as the completion's must). The claim passes over a job of the
        # same subject, whose status table row the completion writes (a row is
        # written once per statement).
        other_subject = (
            "AND (%(subject)s IS NULL OR document_id IS DISTINCT FROM %(subject)s)"
        )
        joint = f"""WITH {completion_ctes},{
            claim_ctes.replace("{queues}", other_subject + " {queues}")
        }
            SELECT (SELECT count(*) FROM done), {claimed_fields}
            FROM (SELECT 1) AS one LEFT JOIN claimed ON true"""
        self.joint_any, self.joint_in_queues = _variants("jq_joint", joint)

    def atomic(self) -> Any:
        # Each step is one statement, atomic by itself: in autocommit, its own
        # transaction (set_config's local value holds until its commit).
        return contextlib.nullcontext()

    def id_source(self, ids: list[int]) -> tuple[str, Any]:
        return "unnest(CAST(%s AS bigint[])) AS subject(value)", ids

    def claim(self, cursor: Any, worker: str, queues: Sequence[str]) -> tuple | None:
        if queues:
            statement = self.claim_in_queues
            params = {"worker": worker, "queues": sorted(queues)}
        else:
            statement, params = self.claim_any, {"worker": worker}
        statement.run(cursor, params)
        row = cursor.fetchone()
        return None if row[0] is None else row

    def claim_batch(
        self, cursor: Any, workers: Sequence[str], queues: Sequence[str]
    ) -> list[tuple]:
        if queues:
            statement = self.claim_batch_in_queues
            params = {"workers": list(workers), "queues": sorted(queues)}
        else:
            statement, params = self.claim_batch_any, {"workers": list(workers)}
        statement.run(cursor, params)
        return cursor.fetchall()

    def complete(self, cursor: Any, params: dict[str, Any]) -> bool:
        self.completion.run(cursor, params)
        return cursor.fetchone() is not None

    def complete_and_claim(
        self, cursor: Any, params: dict[str, Any], queues: Sequence[str]
    ) -> tuple[bool, tuple | None]:
        if queues:
            statement, params = self.joint_in_queues, {**params, "queues": queues}
        else:
            statement = self.joint_any
        statement.run(cursor, params)
        row = cursor.fetchone()
        return bool(row[0]), None if row[1] is None else row[1:]

    def tidy(self, cursor: Any) -> bool:
        cursor.execute(
            "SELECT n_dead_tup FROM pg_stat_user_tables "
            "WHERE relid = 'extraction_queue'::regclass"
        )
        row = cursor.fetchone()
        if row is None or row[0] < VACUUM_AFTER_DEAD_ROWS:
            return False
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [VACUUM_LOCK])
        if not cursor.fetchone()[0]:
            return False
        try:
            # Whether or not autovacuum is on, or keeping up: a queue table is hot.
            cursor.execute("VACUUM (ANALYZE) extraction_queue")
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [VACUUM_LOCK])
        return True

    def estimated_rows(self, cursor: Any, table: str) -> int | None:
        # The planner's estimate: the statistics' rows per page, times the table's
        # pages now (so it follows growth since the last ANALYZE); reltuples is -1
        # until the table is first analysed.
        cursor.execute(
            "SELECT CASE WHEN c.reltuples < 0 THEN NULL"
            " WHEN c.relpages = 0 THEN 0"
            " ELSE c.reltuples / c.relpages"
            " * (pg_relation_size(c.oid) / current_setting('block_size')::int)"
            " END::bigint FROM pg_class c WHERE c.oid = to_regclass(%s)",
            [connection.ops.quote_name(table)],
        )
        row = cursor.fetchone()
        return None if row is None else row[0]

    def notify(self, cursor: Any) -> None:
        # Delivered when the transaction commits; one per transaction however many.
        cursor.execute(f"NOTIFY {CHANNEL}")

    def watch(self, changed: Callable[[], None], stop: Any) -> None:
        """LISTEN on a connection of its own for the NOTIFY that enqueues send."""
        conn = connections.create_connection("default")
        try:
            # psycopg's errors as Django's: a lost connection, or a refused one, is a
            # database fault (a warning, and a reconnect), not a failure of the watch.
            with conn.wrap_database_errors:
                conn.connect()
                raw = conn.connection
                raw.autocommit = True
                raw.execute(f"LISTEN {CHANNEL}")
                while not stop.is_set():
                    # Asleep in the kernel until the server sends something, or the
                    # stop (psycopg's own wait looks up ten times a second).
                    readable, _, _ = select.select([raw, stop], [], [])
                    if raw in readable and list(raw.notifies(timeout=0)):
                        changed()
        finally:
            conn.close()
