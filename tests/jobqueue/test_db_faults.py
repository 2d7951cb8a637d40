"""The queue through database faults, with real worker processes: connections killed,
the server "restarted", locks held past the stale threshold, a full disk. After each,
every job completes within a bounded time, none is stuck, no attempt is charged for
the database's fault, and every document is extracted exactly once."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Callable

import psycopg
import pytest
from django.db import connection

from jobqueue.models import (
    ExtractionMetric,
    Operation,
    QueueControl,
    QueueItem,
    Status,
)
from jobqueue.services import QueueManager
from tests import conftest
from tests.conftest import wait_for, worker_log
from tests.db_faults import (
    TcpProxy,
    disk_full,
    hold_pg_lock,
    hold_sqlite_write_lock,
    terminate_backends,
)
from tests.jobqueue.task_apps import reports
from tests.jobqueue.test_worker_processes import SLOW_EXTRACTOR, store

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

DOCUMENTS = 32
FLAGS = ["--workers", "2", "--poll-interval", "0.1", "--heartbeat-interval", "0.3"]
STALE_SECONDS = 2.0
# Longer than the stale threshold: an outage every worker shares is not a death.
OUTAGE_SECONDS = 3.0

postgres_only = pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="a PostgreSQL fault"
)
sqlite_only = pytest.mark.skipif(
    "connection.vendor != 'sqlite'", reason="a SQLite fault"
)


@pytest.fixture
def drain_through(start_worker, user, queue, tmp_path):
    """Queue documents, start two worker processes, inject ``fault`` once they are
    draining, then check that nothing was lost, stuck, charged or done twice."""

    def run(
        fault: Callable[[list], None],
        *,
        database_url: str | None = None,
        tasks: bool = False,
    ) -> None:
        """``tasks``: @task calls, run in the worker's thread, instead of documents
        extracted in children."""
        log = tmp_path / "extractions.log"
        runs = tmp_path / "runs"
        if tasks:
            runs.mkdir()
            jobs = [
                int(reports.logged.enqueue(f"task{n}", str(runs)).id)
                for n in range(DOCUMENTS)
            ]
        else:
            documents = [
                store(user, f"doc{n}.txt", b"sleep:0.3 document %d" % n)
                for n in range(DOCUMENTS)
            ]
            jobs = [queue.enqueue(d.pk) for d in documents]
        env = {
            **SLOW_EXTRACTOR,
            "QUEUE_STALE_WORKER_SECONDS": str(STALE_SECONDS),
            "EXTRACTION_LOG": str(log),
        }
        if database_url:
            env["DATABASE_URL"] = database_url
        procs = [start_worker(*FLAGS, env=env) for _ in range(2)]
        completed = QueueItem.objects.filter(pk__in=jobs, status=Status.COMPLETED)
        wait_for(lambda: completed.count() >= 4, 60)
        fault(procs)
        logs = lambda: "\n".join(worker_log(p)[-3000:] for p in procs)  # noqa: E731
        try:
            wait_for(lambda: completed.count() == DOCUMENTS, 60)
        except AssertionError:
            stuck = QueueItem.objects.filter(pk__in=jobs).exclude(
                status=Status.COMPLETED
            )
            raise AssertionError(
                f"not completed: {list(stuck.values())}\n{logs()}"
            ) from None

        assert all(p.poll() is None for p in procs), "workers never exit\n" + logs()
        assert set(
            QueueItem.objects.filter(pk__in=jobs).values_list("attempts", flat=True)
        ) == {1}, "no attempt charged for the database's fault\n" + logs()
        outcomes = Counter(
            ExtractionMetric.objects.filter(job_id__in=jobs).values_list(
                "outcome", flat=True
            )
        )
        assert outcomes[ExtractionMetric.Outcome.COMPLETED] == DOCUMENTS, outcomes
        assert set(outcomes) <= {"completed", "released"}, outcomes
        if tasks:
            extracted = Counter(path.name.split(".")[0] for path in runs.iterdir())
        else:
            extracted = Counter(log.read_text().split())
        assert len(extracted) == DOCUMENTS
        assert set(extracted.values()) == {1}, "each job done once"
        assert not QueueItem.objects.filter(status=Status.PROCESSING).exists()

    return run


def completed_count() -> int:
    return QueueItem.objects.filter(status=Status.COMPLETED).count()


def own_backend() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


@postgres_only
def test_postgres_connections_killed_again_and_again(drain_through):
    url, spare = conftest.test_database_url(), [own_backend()]

    def kill_connections(_procs) -> None:
        killed, end = 0, time.monotonic() + OUTAGE_SECONDS
        while time.monotonic() < end:
            killed += terminate_backends(url, spare)
            time.sleep(0.3)
        assert killed >= 5

    drain_through(kill_connections)


@postgres_only
def test_a_cron_drain_through_killed_connections_does_each_job_once(
    start_worker, tmp_path
):
    """``process_queue --once`` records each @task call with the next claim: its
    connections killed mid-drain, a tick may leave jobs to the next one, but loses
    none, runs none twice and leaves none processing."""
    url, spare = conftest.test_database_url(), [own_backend()]
    runs = tmp_path / "runs"
    runs.mkdir()
    jobs = [
        int(reports.logged.enqueue(f"task{n}", str(runs)).id) for n in range(DOCUMENTS)
    ]
    completed = QueueItem.objects.filter(pk__in=jobs, status=Status.COMPLETED)
    tick = start_worker("--once", *FLAGS)
    wait_for(lambda: completed.count() >= 4, 60)
    killed = 0
    while tick.poll() is None and killed < 5:
        killed += terminate_backends(url, spare)
        time.sleep(0.2)
    assert killed >= 1, "the drain ended before a connection was killed"
    assert tick.wait(60) == 0, worker_log(tick)
    assert not QueueItem.objects.filter(status=Status.PROCESSING).exists()
    log = worker_log(tick)
    assert "could not record job" in log, "a fault met recording a job is told"
    # Its main thread's connection died idle: the stop's release takes a fresh one.
    assert "Could not release" not in log, log

    # The next tick takes whatever this one left.
    assert start_worker("--once", *FLAGS).wait(60) == 0
    assert completed.count() == DOCUMENTS
    assert set(
        QueueItem.objects.filter(pk__in=jobs).values_list("attempts", flat=True)
    ) == {1}, "no attempt charged for the database's fault\n" + worker_log(tick)
    ran = Counter(path.name.split(".")[0] for path in runs.iterdir())
    assert len(ran) == DOCUMENTS
    assert set(ran.values()) == {1}, "each job done once"


@postgres_only
def test_postgres_restarted_mid_drain(drain_through):
    proxy = TcpProxy(connection.settings_dict.get("PORT") or 5432).start()

    def restart(_procs) -> None:
        proxy.cut()
        # A COMMIT the proxy forwarded just before the cut may still land: let it.
        time.sleep(0.5)
        before = completed_count()
        time.sleep(OUTAGE_SECONDS)
        assert completed_count() == before, "nothing can be recorded"
        proxy.restore()

    try:
        drain_through(restart, database_url=proxy.url(conftest.test_database_url()))
    finally:
        proxy.close()


@postgres_only
def test_postgres_lock_held_past_the_stale_threshold(drain_through):
    tables = ["extraction_queue", "worker_heartbeat"]
    drain_through(
        lambda _procs: hold_pg_lock(
            conftest.test_database_url(), tables, OUTAGE_SECONDS
        )
    )


# Tasks run in the worker's thread, recorded in the transaction that claims the next
# job (SQLite): the fault lands inside that joint transaction.
both_kinds = pytest.mark.parametrize("tasks", [False, True], ids=["documents", "tasks"])


@sqlite_only
@both_kinds
def test_sqlite_write_lock_held_past_the_stale_threshold(drain_through, tasks):
    path = connection.settings_dict["NAME"]
    drain_through(
        lambda _procs: hold_sqlite_write_lock(path, OUTAGE_SECONDS), tasks=tasks
    )


@sqlite_only
@both_kinds
def test_sqlite_disk_full_mid_drain_then_freed(drain_through, tasks):
    def fill(procs) -> None:
        with disk_full(p.pid for p in procs):
            time.sleep(0.5)  # what was being written when the disk filled
            before = completed_count()
            time.sleep(OUTAGE_SECONDS)
            assert completed_count() == before, "nothing can be recorded"

    drain_through(fill, tasks=tasks)


def test_a_worker_stalled_past_the_threshold_records_nothing_it_lost(
    start_worker, user, queue
):
    """SIGSTOP a worker mid-job for longer than the stale threshold: another worker
    rescues its jobs; when it wakes it records nothing for them (fencing), counts its
    late results as refused, and every document has one result."""
    jobs = [
        queue.enqueue(store(user, f"slow{n}.txt", b"sleep:2 slow %d" % n).pk)
        for n in range(4)
    ]
    env = {**SLOW_EXTRACTOR, "QUEUE_STALE_WORKER_SECONDS": str(STALE_SECONDS)}
    stalled = start_worker(*FLAGS, env=env)
    processing = QueueItem.objects.filter(pk__in=jobs, status=Status.PROCESSING)
    wait_for(lambda: processing.count() == 2, 30)
    os.kill(stalled.pid, signal.SIGSTOP)
    try:
        rescuer = start_worker(*FLAGS, env=env)
        rescued = ExtractionMetric.objects.filter(
            job_id__in=jobs, outcome=ExtractionMetric.Outcome.RESCUED
        )
        wait_for(lambda: rescued.count() == 2, 30)
    finally:
        os.kill(stalled.pid, signal.SIGCONT)
    done = QueueItem.objects.filter(pk__in=jobs, status=Status.COMPLETED)
    wait_for(lambda: done.count() == len(jobs), 60)
    refused = ExtractionMetric.objects.filter(
        job_id__in=jobs, outcome=ExtractionMetric.Outcome.REFUSED
    )
    wait_for(lambda: refused.count() == 2, 30)

    logs = worker_log(stalled) + worker_log(rescuer)
    completions = Counter(
        ExtractionMetric.objects.filter(
            job_id__in=jobs, outcome=ExtractionMetric.Outcome.COMPLETED
        ).values_list("job_id", flat=True)
    )
    assert completions == dict.fromkeys(jobs, 1), logs
    assert set(refused.values_list("worker_id", flat=True)) == set(
        rescued.values_list("worker_id", flat=True)
    ), "the stalled worker's results, and only those, were refused"
    assert "refused" in worker_log(stalled)
    assert stalled.poll() is None and rescuer.poll() is None


@postgres_only
def test_a_worker_started_while_postgres_is_down_waits_for_it(
    start_worker, user, queue
):
    proxy = TcpProxy(connection.settings_dict.get("PORT") or 5432).start()
    job = queue.enqueue(store(user, "later.txt", b"text for later").pk)
    try:
        proxy.cut()
        env = {"DATABASE_URL": proxy.url(conftest.test_database_url())}
        proc = start_worker(*FLAGS, env=env)
        wait_for(lambda: "Database unavailable at start" in worker_log(proc), 30)
        proxy.restore()
        wait_for(lambda: QueueItem.objects.get(pk=job).status == Status.COMPLETED, 30)
        assert proc.poll() is None
    finally:
        proxy.close()


@postgres_only
def test_a_batch_claim_killed_mid_statement_loses_nothing(
    run_worker, make_document, queue
):
    """Idle threads are claimed for in one statement: its connection is killed
    while it waits on a lock. No job is lost or charged; the threads claimed for
    carry on, and the jobs run once the database answers."""
    threads = 3
    QueueControl.set_paused(True)
    worker = run_worker(num_workers=threads, poll_interval=0.1, heartbeat_interval=0.2)
    wait_for(lambda: len(worker._idle) == threads, 30)
    jobs = QueueManager(Operation.NOOP).enqueue_batch(
        [make_document(f"{n}".encode()).pk for n in range(threads)]
    )
    url = conftest.test_database_url()
    waiting = """SELECT pid FROM pg_stat_activity WHERE datname = current_database()
        AND wait_event_type = 'Lock' AND query LIKE '%%jq_claim_batch%%'"""
    with psycopg.connect(url) as holder, psycopg.connect(url, autocommit=True) as db:
        # Claims (row writes) wait; reads, the heartbeats and the pause switch do not.
        holder.execute("LOCK TABLE extraction_queue IN EXCLUSIVE MODE")
        QueueControl.set_paused(False)
        wait_for(lambda: db.execute(waiting).fetchall(), 30)
        # One claim for every idle thread: the others wait for it, not the database.
        [(claimer,)] = db.execute(waiting).fetchall()
        db.execute("SELECT pg_terminate_backend(%s)", [claimer])
        holder.rollback()
    items = QueueItem.objects.filter(pk__in=jobs)
    wait_for(lambda: items.filter(status=Status.COMPLETED).count() == threads, 30)
    assert set(items.values_list("attempts", flat=True)) == {1}
    # Each ran once: no claim made for a thread was released by its reconcile pass.
    outcomes = ExtractionMetric.objects.values_list("job_id", "outcome")
    assert sorted(outcomes) == [(job, "completed") for job in sorted(jobs)]
    assert worker.get_status()["stats"]["jobs_refused"] == 0
    assert worker.is_running()
