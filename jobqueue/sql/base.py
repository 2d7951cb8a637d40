"""What the queue's statements share on every database: the same text but for the
clock (``NOW``), written once here; each database's module adds its own.

Values are always parameters; the state names are the fixed values of ``Status``,
and the table names of ``mirrors`` come from the kinds' registrations, quoted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from django.db import connection, transaction

# In the model's field order: QueueItem.from_db maps them by position.
CLAIMED_FIELDS = (
    "id",
    "document_id",
    "operation",
    "status",
    "priority",
    "queue_name",
    "payload",
    "result",
    "attempts",
    "max_retries",
    "next_retry_at",
    "claimed_by",
    "started_at",
    "finished_at",
    "created_at",
)
# The claimed item's times: a task's result reports them (as it does ``result``), and
# a field left out would cost a query of its own when read.
CLAIMED_TIMES = ("next_retry_at", "started_at", "finished_at", "created_at")
FIELDS = ", ".join(CLAIMED_FIELDS)

# (status table, the kinds whose items it mirrors), as ``operations.mirrors`` gives.
Mirrors = tuple[tuple[str, tuple[str, ...]], ...]


# A claim takes nothing while an operator has paused processing: the claim reads the
# switch itself, so a pause holds from its commit, whatever a worker last read of it.
UNPAUSED = "AND NOT EXISTS (SELECT 1 FROM queue_control WHERE paused)"


def quote(value: str) -> str:
    """A string literal (the kinds' names, fixed at registration)."""
    return "'" + value.replace("'", "''") + "'"


class Dialect:
    """The statements of one database, for the status tables of ``mirrors``."""

    vendor = ""
    NOW = ""
    # The item's result parameter, as the database reads JSON text.
    RESULT = "%(result)s"
    # How a heartbeat reads the job it names (see ``beat``).
    JOB_LOCK = ""

    def __init__(self, mirrors: Mirrors) -> None:
        now = self.NOW
        self.mirrors = mirrors
        # Each mirrored kind's status table.
        self.tables = {kind: table for table, kinds in mirrors for kind in kinds}
        self._mirror_updates: dict[tuple[str, tuple[str, ...], str], str] = {}
        # retry_pending → pending once the backoff has passed (the guide's diagram); an
        # index probe on idx_queue_status_retry that usually matches nothing. The
        # promoted items' kinds are told (their subjects' status follows).
        self.promote = f"""UPDATE extraction_queue SET status = 'pending'
            WHERE status = 'retry_pending' AND next_retry_at <= {now}
            RETURNING operation, document_id"""

        self.start = f"""UPDATE extraction_queue SET status = 'processing',
            attempts = attempts + 1, claimed_by = %(worker)s, started_at = {now},
            finished_at = NULL, next_retry_at = NULL, updated_at = {now}"""
        # One given job, if it is still waiting (DocumentQueueService.mark_in_progress).
        self.start_one = (
            f"{self.start} WHERE id = %(job)s AND status = 'pending' RETURNING {FIELDS}"
        )

        # Fencing: only the claim that is still current may record (worker and attempt).
        self.done = f"""UPDATE extraction_queue SET status = 'completed',
            finished_at = {now}, error_type = '', error_message = '',
            extraction_time_ms = %(ms)s, confidence = %(confidence)s,
            result = {self.RESULT}, updated_at = {now}
            WHERE id = %(job)s AND status = 'processing'
            AND (%(worker)s IS NULL OR claimed_by = %(worker)s)
            AND (%(attempt)s IS NULL OR attempts = %(attempt)s)
            RETURNING document_id, attempts, claimed_by, operation"""
        # The completed attempt's metrics row: its job, subject, attempt and worker
        # as parameters (SQLite), or read ``FROM`` the completion's CTE (PostgreSQL).
        self.completed_metric = f"""INSERT INTO extraction_metrics (job_id,
            document_id, attempt, outcome, error_type, error_message,
            extraction_time_ms, pages, characters, confidence, extractor, worker_id,
            created_at)
            SELECT {{job}}, {{document}}, {{attempt}}, 'completed', '', '', %(ms)s,
            %(pages)s, %(characters)s, %(confidence)s, %(extractor)s, {{worker}}, {now}
            {{source}}"""

        # A worker's sign of life, stamped when the write lands. It names its job if
        # that still exists: one deleted meanwhile (its document deleted) would fail
        # the foreign key, and with it every beat of the worker's threads, until
        # others took the worker for dead and rescued its other jobs.
        self.beat = f"""UPDATE worker_heartbeat SET status = %(status)s,
            current_job_id = (SELECT id FROM extraction_queue
                WHERE id = %(job)s {self.JOB_LOCK}),
            jobs_completed = %(completed)s,
            jobs_failed = %(failed)s, jobs_refused = %(refused)s,
            last_heartbeat = {now}
            WHERE worker_id = %(worker)s"""

    def atomic(self) -> Any:
        """The transaction ``claim`` and ``complete`` need, around any code: SQLite's
        are several statements; a database that does each in one statement needs
        none (one round trip instead of three: no BEGIN, no COMMIT)."""
        return transaction.atomic(savepoint=False)

    @contextlib.contextmanager
    def steps(self) -> Iterator[Any]:
        """A cursor for named operations, and nothing else, in ``atomic()``."""
        with self.atomic(), connection.cursor() as cursor:
            yield cursor

    # --- Named operations, run inside ``steps()`` ----------------------------------

    def claim(self, cursor: Any, worker: str, queues: Sequence[str]) -> tuple | None:
        """Move the next due job (of ``queues``, if any) to processing for ``worker``;
        its ``CLAIMED_FIELDS`` row, or None."""
        raise NotImplementedError

    def claim_batch(
        self, cursor: Any, workers: Sequence[str], queues: Sequence[str]
    ) -> list[tuple]:
        """Claim up to one due job for each of ``workers``, the first job for the
        first worker; the claimed rows (whose ``claimed_by`` says whose). Here one
        claim after another in the caller's transaction, stopping when none is left."""
        rows = []
        for worker in workers:
            row = self.claim(cursor, worker, queues)
            if row is None:
                break
            rows.append(row)
        return rows

    def complete(self, cursor: Any, params: dict[str, Any]) -> bool:
        """Mark a processing job completed with its metrics row; False if the claim
        (``worker``, ``attempt``) no longer holds it."""
        raise NotImplementedError

    def complete_and_claim(
        self, cursor: Any, params: dict[str, Any], queues: Sequence[str]
    ) -> tuple[bool, tuple | None]:
        """``complete``, then ``claim`` the next job for the same worker, in the
        caller's transaction. (PostgreSQL's one statement passes over a job of the
        same subject, ``params["subject"]``.)"""
        return self.complete(cursor, params), self.claim(
            cursor, params["worker"], queues
        )

    def claim_one(self, cursor: Any, worker: str, job: int) -> tuple | None:
        """Claim one given job if it is still pending (due retries promoted first)."""
        cursor.execute(self.promote, {})
        self.mirror(cursor, cursor.fetchall(), "pending")
        cursor.execute(self.start_one, {"worker": worker, "job": job})
        row = cursor.fetchone()
        if row is not None:
            self.mirror(cursor, [(row[2], row[1])], "processing")
        return row

    def insert_for_subjects(
        self, cursor: Any, fields: dict[str, Any], subject_ids: list[int]
    ) -> list[tuple[int, int]]:
        """Insert one item of column values ``fields`` per subject, in one statement,
        skipping subjects that already have an active item of the same work;
        ``(subject id, item id)`` of those inserted."""
        source, ids = self.id_source(subject_ids)
        cursor.execute(
            f"INSERT INTO extraction_queue ({', '.join(fields)}, document_id) "
            f"SELECT {', '.join(['%s'] * len(fields))}, subject.value "
            f"FROM {source} WHERE true "  # WHERE: SQLite's parser needs it
            "ON CONFLICT DO NOTHING RETURNING document_id, id",
            [*fields.values(), ids],
        )
        return cursor.fetchall()

    def id_source(self, ids: list[int]) -> tuple[str, Any]:
        """A table expression named ``subject``, of one column ``value`` holding
        ``ids``: one parameter however many (``%s``), and its value."""
        raise NotImplementedError

    def send_beats(self, cursor: Any, beats: Iterable[dict[str, Any]]) -> int:
        """Write the heartbeats; how many rows there were to write."""
        written = 0
        for params in beats:
            cursor.execute(self.beat, params)
            written += cursor.rowcount
        return written

    def mirror(
        self,
        cursor: Any,
        items: Iterable[tuple[str, int | None]],
        status: str,
        fields: dict[str, str] | None = None,
    ) -> None:
        """Write ``status`` (and ``fields``: error_type, error_message) to the status
        table rows of ``items`` (``(operation, subject id)``)."""
        subjects: dict[str, list[int]] = {}
        for operation, subject_id in items:
            if subject_id is not None and operation in self.tables:
                subjects.setdefault(self.tables[operation], []).append(subject_id)
        fields = fields or {}
        for table, ids in subjects.items():
            if len(ids) == 1:  # a claim's or a completion's one subject
                which, value = "= %s", ids[0]
            else:
                source, value = self.id_source(ids)
                which = f"IN (SELECT value FROM {source})"
            cursor.execute(
                self._mirror_update(table, tuple(fields), which),
                [status, *fields.values(), value],
            )

    def _mirror_update(self, table: str, fields: tuple[str, ...], which: str) -> str:
        """``mirror``'s statement, written once for each shape."""
        key = (table, fields, which)
        if key not in self._mirror_updates:
            columns = "".join(f", {name} = %s" for name in fields)
            self._mirror_updates[key] = (
                f"UPDATE {connection.ops.quote_name(table)} SET status = %s, "
                f"updated_at = {self.NOW}{columns} WHERE id {which}"
            )
        return self._mirror_updates[key]

    def tidy(self, cursor: Any) -> bool:
        """Reclaim the space (and index entries) of finished jobs if worth it; run
        outside a transaction by the workers' housekeeping. True if it did."""
        return False

    def estimated_rows(self, cursor: Any, table: str) -> int | None:
        """The number of rows in ``table`` by the database's statistics, without
        counting them; None where it keeps none."""
        return None

    def notify(self, cursor: Any) -> None:
        """Wake idle workers when the transaction commits (where the database can)."""

    def watch(self, changed: Callable[[], None], stop: Any) -> None:
        """Call ``changed`` whenever another connection may have committed work, until
        ``stop`` (a ``jobqueue.wakeup.Flag``, which ``select()`` can wait for) is set."""
        raise NotImplementedError
