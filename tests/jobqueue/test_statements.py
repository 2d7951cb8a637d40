"""How many SQL statements one claim and one completion cost: a regression to chatty
ORM paths fails here. Counted with transactions real (BEGIN/COMMIT included where
the backend sends them as statements)."""

from __future__ import annotations

import re
import sqlite3
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import DatabaseError, OperationalError, connection
from django.db.backends.signals import connection_created
from django.test.utils import CaptureQueriesContext

import jobqueue
from jobqueue import sql
from jobqueue.faults import is_database_fault
from jobqueue.models import (
    ExtractionMetric,
    Operation,
    QueueItem,
    Status,
    WorkerHeartbeat,
)
from jobqueue.services import QueueManager
from jobqueue.worker import ExtractionWorker
from tests.conftest import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

# (claim, completion) per database, BEGIN and COMMIT included: for a task (no
# subject), and for a document, whose status follows its job in the same transaction.
# SQLite: promote + claim, complete + metrics row, and for a document one UPDATE of its
# status; PostgreSQL: one statement each, in autocommit (data-modifying CTEs write the
# metrics row and the document's status too; no BEGIN or COMMIT round trips).
EXPECTED = {
    "sqlite": {"task": (4, 4), "document": (5, 5)},
    "postgresql": {"task": (1, 1), "document": (1, 1)},
}


def count(action) -> int:
    with CaptureQueriesContext(connection) as queries:
        action()
    return len(queries)


def test_statements_per_claim_and_completion(make_document):
    queue = QueueManager()
    # A connection's first claim and completion also prepare them (PostgreSQL).
    assert queue.claim("w0") is None
    assert not queue.complete(0)
    queue.enqueue_job(Operation.TASK, payload={"task": "x", "backend": "default"})
    queue.enqueue(make_document(b"some text").pk)  # newer, so claimed second
    figures = {}
    for kind in ("task", "document"):
        item = None

        def claim():
            nonlocal item
            item = queue.claim("w1")

        claimed = count(claim)
        completed = count(
            lambda: queue.complete(item.pk, 5, worker_id="w1", attempt=1)  # noqa: B023
        )
        figures[kind] = (claimed, completed)
    assert figures == EXPECTED[connection.vendor]


def test_a_claimed_item_is_the_model_instance_a_query_would_load(make_document):
    """Built from the claim's row without ``Model.__init__``: the instance must
    still be Django's in every way a kind, a task or an event handler may use it."""
    queue = QueueManager()
    document = make_document(b"text")
    job = queue.enqueue(document.pk, priority=3)
    item = queue.claim("w1")
    loaded = QueueItem.objects.get(pk=job)
    assert item == loaded and not item._state.adding and item._state.db == "default"
    for name in sql.CLAIMED_FIELDS:
        assert getattr(item, name) == getattr(loaded, name), name
    assert item.created_at.tzinfo is not None and item.payload == {}
    # The fields the claim does not return load when read, as deferred ones do.
    assert "error_message" in item.get_deferred_fields()
    assert item.error_message == "" and item.document == document
    item.error_message = "noted"
    item.save(update_fields=["error_message"])
    assert QueueItem.objects.get(pk=job).error_message == "noted"


# What only a database's own module may say: which database this is, or its SQL.
VENDOR_SPECIFIC = re.compile(
    r"\bvendor\b|clock_timestamp|strftime\('|\bNOTIFY\b|\bLISTEN\b|json_each"
)


def test_database_specific_sql_lives_only_in_the_database_modules():
    root = Path(jobqueue.__file__).parent
    outside = [
        path.relative_to(root)
        for path in root.rglob("*.py")
        if path.relative_to(root).parts[0] not in ("sql", "migrations")
        and VENDOR_SPECIFIC.search(path.read_text())
    ]
    assert outside == []


@pytest.mark.parametrize("mode", ["pool", "drain"])
def test_a_worker_commits_once_per_job(mode, run_worker, make_document):
    """A job run in the worker's thread is recorded with the claim of the next one:
    one commit per job, where separate steps would take two (SQLite: one
    transaction; PostgreSQL: one statement, in autocommit). A cron drain too."""
    jobs = 20
    QueueManager(Operation.NOOP).enqueue_batch(
        [make_document(f"{n}".encode()).pk for n in range(jobs)]
    )
    commits: list[str] = []  # the names of the threads that committed

    def committed(statement: str) -> None:
        if statement == "COMMIT":
            commits.append(threading.current_thread().name)

    def autocommitted(execute, sql, params, many, context):
        if not sql.startswith("PREPARE"):
            commits.append(threading.current_thread().name)
        return execute(sql, params, many, context)

    def trace(sender, connection, **kwargs):
        if connection.vendor == "sqlite":
            connection.connection.set_trace_callback(committed)
        else:
            connection.execute_wrappers.append(autocommitted)

    connection_created.connect(trace)
    try:
        if mode == "pool":
            worker = run_worker(poll_interval=30)
            wait_for(
                lambda: (
                    QueueItem.objects.filter(status=Status.COMPLETED).count() == jobs
                )
            )
            worker.stop(timeout=5)
        else:
            worker = ExtractionWorker(num_workers=1, heartbeat_interval=30)
            assert worker.drain()["completed"] == jobs
    finally:
        connection_created.disconnect(trace)
    thread = worker._states[0].worker_id
    # The first claim, one per job (the last one's finds nothing), and a few idle
    # looks; recording and claiming apart would take twice the jobs.
    assert jobs + 1 <= commits.count(thread) <= jobs + 4


@pytest.mark.skipif(
    connection.vendor != "sqlite", reason="SQLite's statements skip Django's cursor"
)
def test_a_statement_sqlite_refuses_raises_djangos_error():
    """The queue's statements run on the sqlite3 cursor beneath Django's; a failure
    still comes out as Django's error, which the worker tells a fault by."""
    other = sqlite3.connect(connection.settings_dict["NAME"])
    other.execute("BEGIN IMMEDIATE")  # holds the write lock
    try:
        with connection.cursor() as cursor:
            raw = connection.connection
            (timeout,) = raw.execute("PRAGMA busy_timeout").fetchone()
            raw.execute("PRAGMA busy_timeout = 50")
            try:
                with pytest.raises(OperationalError, match="locked") as raised:
                    sql.dialect().claim(cursor, "w1", [])
            finally:
                raw.execute(f"PRAGMA busy_timeout = {timeout}")
    finally:
        other.rollback()
        other.close()
    assert is_database_fault(raised.value)


# The guide's operator query for dead workers, exactly as the guide prints it.
GUIDE_DEAD_WORKERS = """SELECT * FROM worker_heartbeat
WHERE last_heartbeat < datetime('now', '-60 seconds')
AND status != 'stopped';"""


def test_the_guides_dead_worker_query_runs_as_written():
    now = sql.db_now()
    beats = {
        "dead": (now - timedelta(seconds=90), WorkerHeartbeat.State.BUSY),
        "alive": (now - timedelta(seconds=5), WorkerHeartbeat.State.IDLE),
        "stopped": (now - timedelta(hours=1), WorkerHeartbeat.State.STOPPED),
    }
    for worker_id, (at, state) in beats.items():
        WorkerHeartbeat.objects.create(
            worker_id=worker_id, status=state, last_heartbeat=at
        )
    with connection.cursor() as cursor:
        cursor.execute(GUIDE_DEAD_WORKERS.replace("%", "%%"))
        columns = [column[0] for column in cursor.description]
        found = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    assert [row["worker_id"] for row in found] == ["dead"]


REFUSE_METRICS = {
    "sqlite": [
        """CREATE TRIGGER refuse_metrics BEFORE INSERT ON extraction_metrics
        BEGIN SELECT RAISE(ABORT, 'refused'); END"""
    ],
    "postgresql": [
        """CREATE FUNCTION refuse_metrics() RETURNS trigger LANGUAGE plpgsql
        AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$""",
        """CREATE TRIGGER refuse_metrics BEFORE INSERT ON extraction_metrics
        FOR EACH ROW EXECUTE FUNCTION refuse_metrics()""",
    ],
}


def test_a_completion_refused_midway_leaves_nothing_and_the_connection_usable(
    make_document,
):
    """On SQLite a completion is several statements in a transaction of its own,
    outside Django's ``atomic()``: one refused after the first (the metrics row)
    rolls back the job's and the document's new state, and the connection takes
    the next transaction."""
    queue = QueueManager()
    document = make_document(b"some text")
    queue.enqueue(document.pk)
    item = queue.claim("w1")
    with connection.cursor() as cursor:
        for statement in REFUSE_METRICS[connection.vendor]:
            cursor.execute(statement)
    with pytest.raises(DatabaseError, match="refused"):
        queue.complete(item.pk, worker_id="w1", attempt=1)
    item.refresh_from_db()
    document.refresh_from_db()
    assert (item.status, document.status) == (Status.PROCESSING, Status.PROCESSING)
    assert not ExtractionMetric.objects.exists()
    with connection.cursor() as cursor:
        cursor.execute(
            "DROP TRIGGER refuse_metrics"
            + " ON extraction_metrics" * (connection.vendor == "postgresql")
        )
    assert queue.complete(item.pk, worker_id="w1", attempt=1)
    document.refresh_from_db()
    assert document.status == Status.COMPLETED
    assert ExtractionMetric.objects.get().job_id == item.pk
