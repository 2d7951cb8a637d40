"""The workers' housekeeping: finished items expire after QUEUE_KEEP_FINISHED_DAYS,
and on PostgreSQL the queue table is vacuumed once finished jobs left enough dead
rows behind, whether or not autovacuum runs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from jobqueue.models import (
    ExtractionMetric,
    MetricsFold,
    Operation,
    QueueItem,
    Status,
    WorkerHeartbeat,
)
from jobqueue.services import QueueManager
from jobqueue.sql import postgresql
from tests.conftest import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def task_item(status: str, days_ago: float) -> int:
    item = QueueManager().enqueue_job(Operation.NOOP, payload={})
    then = timezone.now() - timedelta(days=days_ago)
    QueueItem.objects.filter(pk=item.pk).update(
        status=status, created_at=then, updated_at=then
    )
    return item.pk


def test_finished_items_expire_and_nothing_else_does():
    old = [
        task_item(s, 40) for s in (Status.COMPLETED, Status.FAILED, Status.CANCELLED)
    ]
    recent = task_item(Status.COMPLETED, 5)
    waiting = [task_item(s, 40) for s in (Status.PENDING, Status.RETRY_PENDING)]
    running = task_item(Status.PROCESSING, 40)
    queue = QueueManager()
    assert queue.clear_expired(0) == 0, "0 keeps everything"
    assert queue.clear_expired(30, batch=2) == 2, "a batch at a time"
    assert queue.clear_expired(30) == 1
    assert queue.clear_expired(30) == 0
    left = set(QueueItem.objects.values_list("pk", flat=True))
    assert left == {recent, *waiting, running}
    assert not left & set(old)


def test_a_worker_clears_expired_items_as_it_starts(settings, run_worker):
    settings.QUEUE_KEEP_FINISHED_DAYS = 7
    expired = task_item(Status.COMPLETED, 8)
    kept = task_item(Status.COMPLETED, 6)
    # Each cron tick leaves a stopped worker's heartbeat, and each killed worker
    # a heartbeat nothing marked stopped (a dead host's): they go too.
    State = WorkerHeartbeat.State  # noqa: N806
    for worker, state, days in (
        ("cron:old", State.STOPPED, 8),
        ("cron:recent", State.STOPPED, 6),
        ("killed:old", State.BUSY, 8),
        ("killed:recent", State.BUSY, 6),
    ):
        WorkerHeartbeat.objects.create(
            worker_id=worker,
            status=state,
            last_heartbeat=timezone.now() - timedelta(days=days),
        )
    run_worker()
    wait_for(lambda: not QueueItem.objects.filter(pk=expired).exists(), 30)
    assert QueueItem.objects.filter(pk=kept).exists()
    wait_for(lambda: not WorkerHeartbeat.objects.filter(worker_id="cron:old"), 30)
    assert not WorkerHeartbeat.objects.filter(worker_id="killed:old").exists()
    left = set(WorkerHeartbeat.objects.values_list("worker_id", flat=True))
    assert {"cron:recent", "killed:recent"} <= left


def dead_rows() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
        cursor.execute(
            "SELECT n_dead_tup FROM pg_stat_user_tables "
            "WHERE relid = 'extraction_queue'::regclass"
        )
        return cursor.fetchone()[0]


def test_postgresql_vacuums_the_queue_table_once_dead_rows_pile_up():
    if connection.vendor != "postgresql":
        pytest.skip("SQLite leaves no dead rows behind")
    queue = QueueManager()
    assert not queue.tidy(), "nothing to reclaim yet"
    template = queue.enqueue_job(Operation.NOOP, payload={})
    columns = ", ".join(
        f.column for f in QueueItem._meta.concrete_fields if f.column != "id"
    )
    rows = postgresql.VACUUM_AFTER_DEAD_ROWS + 2000
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO extraction_queue ({columns}) SELECT {columns} "  # noqa: S608
            "FROM extraction_queue, generate_series(1, %s) WHERE id = %s",
            [rows, template.pk],
        )
        # As claims and completions do: every row moves on, leaving a dead version.
        cursor.execute("UPDATE extraction_queue SET status = 'completed'")
    wait_for(lambda: dead_rows() >= rows, 10, 0.2)
    assert queue.tidy()
    wait_for(lambda: dead_rows() < postgresql.VACUUM_AFTER_DEAD_ROWS, 10, 0.2)
    assert not queue.tidy()


@pytest.mark.django_db(transaction=True)
def test_a_cron_run_does_the_housekeeping_too(settings):
    # A `process_queue --once` ends before its first beat: nothing expired where
    # cron drives the queue, and /metrics's totals were never folded.
    settings.QUEUE_KEEP_FINISHED_DAYS = 7
    expired = task_item(Status.COMPLETED, 8)
    ExtractionMetric.objects.create(outcome="completed", extraction_time_ms=5)
    ExtractionMetric.objects.update(created_at=timezone.now() - timedelta(hours=1))
    call_command("process_queue", once=True, verbosity=0)
    assert not QueueItem.objects.filter(pk=expired).exists()
    assert MetricsFold.objects.get().folded_through > 0
