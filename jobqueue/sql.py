"""The queue's hot path in plain SQL, and the queue's one clock: the database's.

The rule: every time that another process compares (heartbeats, ``started_at``,
``next_retry_at``, ``finished_at``, stale and age cutoffs, clear-old cutoffs, the
dashboard's rates) is computed by the database in the statement that writes or
compares it: ``clock_timestamp()`` on PostgreSQL, ``'now'`` on SQLite. Never the
worker host's ``time.time()`` or ``timezone.now()``: hosts' clocks differ, and a
time read before a statement that then waits on a lock is stale when it lands.
``clock_timestamp()`` rather than ``now()``, because ``now()`` is the start of the
transaction, which for a statement blocked on a lock is in the past.

SQLite stores Django's datetimes as UTC text, ``YYYY-MM-DD HH:MM:SS.ffffff``, and
compares them as text; ``SQLITE_NOW`` produces that exact shape, so it sorts correctly
against values Django wrote. SQLite's clock has milliseconds: the last three digits are
``999``, the end of that millisecond, so a time written within it counts as past.

The ORM uses ``DbNow``; raw statements use ``Statements`` of the connection's vendor.
The ORM would spend more time compiling the hot statements than the database spends
running them. PostgreSQL does each step in one round trip (data-modifying CTEs,
atomic as one statement); SQLite runs the same steps as separate statements inside
one ``BEGIN IMMEDIATE`` transaction, which costs nothing extra in-process.
Values are always parameters; the state names are the fixed values of ``Status``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from typing import Any

from django.db import connection
from django.db.models import DateTimeField, Func
from django.utils.dateparse import parse_datetime

# '%%' because Django passes parameterised statements through %-formatting.
PG_NOW = "clock_timestamp()"
SQLITE_NOW = "(strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now') || '999')"

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
_FIELDS = ", ".join(CLAIMED_FIELDS)
# (status table, the kinds whose items it mirrors), as ``operations.mirrors`` gives.
Mirrors = tuple[tuple[str, tuple[str, ...]], ...]


class DbNow(Func):
    """The database's current time plus ``seconds`` (negative for a cutoff)."""

    output_field = DateTimeField()

    def __init__(self, seconds: float = 0.0) -> None:
        super().__init__()
        self.seconds = float(seconds)

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list]:
        if connection.vendor == "postgresql":
            return f"({PG_NOW} + %s * interval '1 second')", [self.seconds]
        return (
            "(strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now', %s) || '999')",
            [f"{self.seconds:+.3f} seconds"],
        )


def db_now() -> datetime:
    """The database's current time, for the rare comparison made in Python."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {now_sql()}", {})
        return as_datetime(cursor.fetchone()[0])


def as_datetime(value: datetime | str | None) -> datetime | None:
    """A time read by a raw statement, aware: SQLite gives Django's UTC text, or a
    naive UTC datetime for a column declared as one."""
    if isinstance(value, str):
        value = parse_datetime(value)
    if value is not None and value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value


def now_sql() -> str:
    return PG_NOW if connection.vendor == "postgresql" else SQLITE_NOW


def _quote(name: str) -> str:
    return "'" + name.replace("'", "''") + "'"


def _mirror_ctes(
    now: str, source: str, status: str, mirrors: Mirrors, clear_error: bool = False
) -> str:
    """PostgreSQL: CTEs that write ``status`` to the status tables of the items in the
    CTE ``source`` (its columns operation, document_id), one per table."""
    errors = ", error_type = '', error_message = ''" if clear_error else ""
    return "".join(
        f""",
            mirror_{n} AS (UPDATE {connection.ops.quote_name(table)} AS subject
                SET status = '{status}', updated_at = {now}{errors}
                FROM {source} WHERE subject.id = {source}.document_id
                AND {source}.operation IN ({", ".join(map(_quote, kinds))}))"""
        for n, (table, kinds) in enumerate(mirrors)
    )


class Statements:
    """The queue's statements, with the database's clock of one vendor; ``queues``:
    whether the claim is limited to some named queues (``%(queues)s``);
    ``mirrors``: the status tables and the kinds they mirror (``operations.mirrors``).
    """

    def __init__(self, now: str, vendor: str, queues: bool, mirrors: Mirrors) -> None:
        # retry_pending → pending once the backoff has passed (the guide's diagram); an
        # index probe on idx_queue_status_retry that usually matches nothing. The
        # promoted items' kinds are told (their subjects' status follows).
        due = f"status = 'retry_pending' AND next_retry_at <= {now}"
        self.promote_items = f"""UPDATE extraction_queue SET status = 'pending'
            WHERE {due} RETURNING operation, document_id"""

        # The next job by priority, then age: read straight off idx_queue_claim_order.
        in_queues = ""
        if queues:
            in_queues = (
                "AND queue_name = ANY(%(queues)s)"
                if vendor == "postgresql"
                else "AND queue_name IN (SELECT value FROM json_each(%(queues)s))"
            )
        next_job = f"""SELECT id FROM extraction_queue WHERE status = 'pending'
            {in_queues} ORDER BY priority DESC, created_at, id LIMIT 1"""
        take = f"""UPDATE extraction_queue SET status = 'processing',
            attempts = attempts + 1, claimed_by = %(worker)s, started_at = {now},
            finished_at = NULL, next_retry_at = NULL, updated_at = {now}"""
        self.claim = f"{take} WHERE id = ({next_job}) RETURNING {_FIELDS}"
        # One given job, if it is still waiting (DocumentQueueService.mark_in_progress).
        self.take = (
            f"{take} WHERE id = %(job)s AND status = 'pending' RETURNING {_FIELDS}"
        )

        # PostgreSQL: one statement. SKIP LOCKED lets concurrent claimers pass a locked
        # row. One statement sees one snapshot: retries it promotes become claimable on
        # the next run, so the last column (what it promoted) says to run it again.
        # Its commit does not wait for the disk (synchronous_commit off, this
        # transaction only): a claim lost in a server crash leaves the job pending,
        # and the completion of a job no longer processing is refused (fencing), so
        # the job runs again; never lost. Completions wait for the disk as before.
        self.pg_claim = f"""WITH
            promoted AS ({self.promote_items}),
            claimed AS ({take} WHERE id = ({next_job} FOR UPDATE SKIP LOCKED)
                RETURNING {_FIELDS}){_mirror_ctes(now, "claimed", "processing", mirrors)}
            SELECT {", ".join(f"claimed.{f}" for f in CLAIMED_FIELDS)},
                (SELECT json_agg(json_build_array(operation, document_id))
                 FROM promoted)
            FROM (SELECT set_config('synchronous_commit', 'off', true)) AS async
            LEFT JOIN claimed ON true"""

        # Fencing: only the claim that is still current may record (worker and attempt).
        result = "CAST(%(result)s AS jsonb)" if vendor == "postgresql" else "%(result)s"
        done = f"""UPDATE extraction_queue SET status = 'completed', finished_at = {now},
            error_type = '', error_message = '', extraction_time_ms = %(ms)s,
            confidence = %(confidence)s, result = {result}, updated_at = {now}
            WHERE id = %(job)s AND status = 'processing'
            AND (%(worker)s IS NULL OR claimed_by = %(worker)s)
            AND (%(attempt)s IS NULL OR attempts = %(attempt)s)"""
        metric = """INSERT INTO extraction_metrics (job_id, document_id, attempt,
            outcome, error_type, error_message, extraction_time_ms, pages, characters,
            confidence, extractor, worker_id, created_at)
            {source}"""
        metric_values = """%(job)s, {document}, {attempt}, 'completed', '', '',
            %(ms)s, %(pages)s, %(characters)s, %(confidence)s, %(extractor)s, {worker},
            {now}"""

        self.complete = f"{done} RETURNING document_id, attempts, claimed_by, operation"
        self.complete_metric = metric.format(
            source="VALUES ("
            + metric_values.format(
                document="%(document_id)s",
                attempt="%(attempt)s",
                worker="%(claimed_by)s",
                now=now,
            )
            + ")"
        )
        done_source = "SELECT " + metric_values.format(
            document="document_id", attempt="attempts", worker="claimed_by", now=now
        )
        self.pg_complete = f"""WITH
            done AS ({self.complete}),
            metric AS ({metric.format(source=done_source + " FROM done")}){
            _mirror_ctes(now, "done", "completed", mirrors, clear_error=True)
        }
            SELECT operation, document_id FROM done"""

        # A worker's sign of life, stamped when the write lands.
        self.beat = f"""UPDATE worker_heartbeat SET status = %(status)s,
            current_job_id = %(job)s, jobs_completed = %(completed)s,
            jobs_failed = %(failed)s, jobs_refused = %(refused)s,
            last_heartbeat = {now}
            WHERE worker_id = %(worker)s"""


@cache
def _statements(vendor: str, queues: bool, mirrors: Mirrors) -> Statements:
    now = PG_NOW if vendor == "postgresql" else SQLITE_NOW
    return Statements(now, vendor, queues, mirrors)


def statements(*, queues: bool = False) -> Statements:
    """The statements for the current connection's database and registered kinds."""
    from jobqueue.operations import mirrors

    return _statements(connection.vendor, queues, mirrors())


def mirror(table: str, ids: list[int], status: str, fields: dict[str, str]) -> None:
    """Write an item state to its subjects' rows of a status table (error_type and
    error_message too, when given)."""
    columns = "".join(f", {name} = %s" for name in fields)
    placeholders = ", ".join(["%s"] * len(ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {connection.ops.quote_name(table)} SET status = %s, "
            f"updated_at = {now_sql()}{columns} WHERE id IN ({placeholders})",
            [status, *fields.values(), *ids],
        )
