"""What operators read costs the same after a year of history: /metrics' counters and
histogram are totals folded by the housekeeping plus the last minutes' rows, old
metrics rows may then go without lowering a counter, and the dashboard's latest
failures are read off an index of failed items."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobqueue.metrics import registry
from jobqueue.models import (
    ExtractionMetric,
    FinishedCount,
    MetricsFold,
    MetricTotal,
    Operation,
    QueueItem,
    Status,
)
from jobqueue.monitoring import overview, recent_failures
from jobqueue.services import QueueManager
from jobqueue.sql import db_now
from tests.conftest import wait_for

FAMILIES = ("docqueue_attempts", "docqueue_extraction_seconds")
# (outcome, error_type, extraction_time_ms) of the rows each test writes: every
# bucket of the histogram, and attempts without a time.
ATTEMPTS = [
    ("completed", "", 50),
    ("completed", "", 100),
    ("completed", "", 101),
    ("completed", "", 3_000),
    ("completed", "", 700_000),
    ("failed", "corruption", 700),
    ("retry", "timeout", None),
    ("rescued", "unknown", None),
    ("refused", "", 20),
]


def counters() -> dict:
    """The attempts counter's and the histogram's samples, as a scrape has them."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in registry().collect()
        if family.name in FAMILIES
        for sample in family.samples
    }


def write_attempts(days_ago: float = 0, times: int = 1) -> None:
    then = timezone.now() - timedelta(days=days_ago)
    ExtractionMetric.objects.bulk_create(
        ExtractionMetric(
            outcome=outcome, error_type=error, extraction_time_ms=ms, created_at=then
        )
        for _ in range(times)
        for outcome, error, ms in ATTEMPTS
    )


def attempts_total(samples: dict) -> float:
    return sum(v for (name, _), v in samples.items() if name.endswith("_total"))


@pytest.mark.django_db
def test_counters_are_the_same_after_a_fold_and_after_old_rows_are_deleted(queue):
    write_attempts(days_ago=40)
    write_attempts(days_ago=0.5)
    write_attempts()
    before = counters()
    assert attempts_total(before) == 3 * len(ATTEMPTS)
    key = "docqueue_extraction_seconds_bucket"
    assert before[key, (("le", "0.1"),)] == 3 * 3  # 50, 100 and 20 ms
    assert before[key, (("le", "+Inf"),)] == 3 * 7

    assert queue.fold_metrics() == 2 * len(ATTEMPTS), "the last minutes' rows wait"
    assert counters() == before
    assert queue.fold_metrics(margin_seconds=0) == len(ATTEMPTS)
    assert queue.fold_metrics(margin_seconds=0) == 0, "nothing folded twice"
    assert counters() == before

    assert queue.expire_metrics(0) == 0, "0 keeps them"
    assert queue.expire_metrics(30) == len(ATTEMPTS), "only those over 30 days old"
    assert ExtractionMetric.objects.count() == 2 * len(ATTEMPTS)
    assert counters() == before

    write_attempts()
    after = counters()
    assert attempts_total(after) == 4 * len(ATTEMPTS)
    assert after[key, (("le", "0.1"),)] == 4 * 3


@pytest.mark.django_db
def test_expiry_keeps_unfolded_rows_a_day_and_rows_of_kept_jobs(queue):
    item = QueueManager().enqueue_job(Operation.NOOP, payload={})
    old = timezone.now() - timedelta(days=10)
    ExtractionMetric.objects.create(outcome="completed", job=item, created_at=old)
    write_attempts(days_ago=10)
    write_attempts(days_ago=0.9)
    assert queue.expire_metrics(0.5) == 0, "nothing is folded yet"
    queue.fold_metrics(margin_seconds=0)
    # A job's page lists its attempts while it is kept; the charts read a day.
    assert queue.expire_metrics(0.5) == len(ATTEMPTS)
    assert ExtractionMetric.objects.filter(job=item).exists()
    assert ExtractionMetric.objects.count() == len(ATTEMPTS) + 1


@pytest.mark.django_db
def test_a_fold_goes_a_batch_per_transaction(queue):
    write_attempts(days_ago=1, times=3)
    before = counters()
    assert queue.fold_metrics(batch=4) == 3 * len(ATTEMPTS)
    last = ExtractionMetric.objects.order_by("pk").last().pk
    assert MetricsFold.objects.get().folded_through == last
    assert counters() == before


@pytest.mark.django_db
def test_a_scrape_costs_the_same_statements_whatever_the_history(queue):
    def statements() -> int:
        with CaptureQueriesContext(connection) as captured:
            list(registry().collect())
        return len(captured)

    empty = statements()
    write_attempts(days_ago=3, times=50)
    assert statements() == empty
    queue.fold_metrics(margin_seconds=0)
    write_attempts()
    assert statements() == empty
    assert MetricTotal.objects.count() <= len(ATTEMPTS), "a row per kind of attempt"


# SQLite's words for a read of an id range (the rows above a watermark).
ID_RANGE = "USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"


def plan(sql: str, params: tuple) -> str:
    """The database's plan of a statement, as text; PostgreSQL's with sequential
    scans and sorts discouraged (a test table is too small for its planner to pick
    the index it picks at a million rows)."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
            return "\n".join(str(row[-1]) for row in cursor.fetchall())
        with transaction.atomic():
            for method in ("seqscan", "bitmapscan", "sort"):
                cursor.execute(f"SET LOCAL enable_{method} = off")
            cursor.execute("EXPLAIN " + sql, params)
            return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.django_db
def test_a_scrape_reads_metrics_rows_above_the_watermark_only(queue):
    write_attempts(days_ago=3, times=5)
    queue.fold_metrics(margin_seconds=0)
    with CaptureQueriesContext(connection) as captured:
        list(registry().collect())
    [statement] = [q["sql"] for q in captured if "extraction_metric_totals" in q["sql"]]
    text = plan(statement, ())  # captured with its parameters inlined
    if connection.vendor == "sqlite":
        assert "SCAN extraction_metrics" not in text.splitlines(), text
        assert f"SEARCH extraction_metrics {ID_RANGE}" in text, text
    else:
        assert "extraction_metrics_pkey" in text, text


@pytest.mark.django_db
def test_the_latest_failures_come_off_their_index_newest_first(make_document):
    now = timezone.now()
    dated = [
        QueueItem.objects.create(
            document=make_document(),
            status=Status.FAILED,
            finished_at=now - timedelta(minutes=n),
        )
        for n in (5, 1, 3)
    ]
    undated = [
        QueueItem.objects.create(document=make_document(), status=Status.FAILED)
        for _ in range(2)
    ]
    QueueItem.objects.create(
        document=make_document(), status=Status.COMPLETED, finished_at=now
    )
    # Enough other rows, with statistics, for the planner to see failures are few.
    QueueItem.objects.bulk_create(
        QueueItem(status=Status.COMPLETED, operation=Operation.NOOP, finished_at=now)
        for _ in range(500)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    expected = [dated[1], dated[2], dated[0], undated[1], undated[0]]
    assert recent_failures(10) == expected
    assert recent_failures(2) == expected[:2]
    assert overview(db_now())["recent_failures"] == expected

    failed = QueueItem.objects.filter(status=Status.FAILED, finished_at__isnull=False)
    query = failed.order_by("-finished_at", "-id")[:10].query
    sql, params = query.sql_with_params()
    text = plan(sql, params)
    assert "idx_queue_failed_recent" in text, text
    if connection.vendor == "sqlite":
        assert "TEMP B-TREE" not in text, "no sort of every failed item"
    else:
        assert "Sort" not in text, text


# --- Depth -------------------------------------------------------------------------


def depth() -> dict:
    [family] = [f for f in registry().collect() if f.name == "docqueue_jobs"]
    return {
        (s.labels["status"], s.labels["operation"]): s.value for s in family.samples
    }


def items(status: str, count: int, operation: str = Operation.NOOP) -> list[int]:
    made = QueueItem.objects.bulk_create(
        QueueItem(status=status, operation=operation) for _ in range(count)
    )
    return [item.pk for item in made]


def live_depth() -> dict:
    """What the depth is, counted the plain way."""
    found = dict.fromkeys(depth(), 0)
    for status, operation in QueueItem.objects.values_list("status", "operation"):
        found[status, operation] += 1
    return found


@pytest.mark.django_db
def test_depth_is_exact_beside_the_count_of_finished_items(queue):
    items(Status.COMPLETED, 5)
    failed = items(Status.FAILED, 3, Operation.TASK)
    items(Status.PENDING, 2)
    before = depth()
    assert before == live_depth()
    assert before[Status.COMPLETED, Operation.NOOP] == 5

    assert queue.count_finished()
    assert not queue.count_finished(), "counted within the minute"
    counted = FinishedCount.objects.values_list("status", "operation", "items")
    assert set(counted) == {
        (Status.COMPLETED, Operation.NOOP, 5),
        (Status.FAILED, Operation.TASK, 3),
    }
    assert depth() == before
    # Jobs queued since the count, finished or not, are read live.
    items(Status.COMPLETED, 4)
    items(Status.CANCELLED, 1)
    items(Status.PROCESSING, 2)
    assert depth() == live_depth()
    assert depth()[Status.COMPLETED, Operation.NOOP] == 9

    # A count no housekeeping has renewed for 5 minutes is not used: the scrape
    # counts them all (an operator deleted some meanwhile).
    QueueItem.objects.filter(pk__in=failed[:2]).delete()
    MetricsFold.objects.update(counted_at=timezone.now() - timedelta(minutes=6))
    assert depth() == live_depth()
    assert depth()[Status.FAILED, Operation.TASK] == 1
    assert queue.count_finished()
    assert depth() == live_depth()


@pytest.mark.django_db
def test_depth_reads_the_active_items_and_those_queued_since_the_count(queue):
    items(Status.COMPLETED, 300)
    items(Status.PENDING, 3)
    queue.count_finished()
    items(Status.COMPLETED, 2)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    with CaptureQueriesContext(connection) as captured:
        depth()
    [statement] = [q["sql"] for q in captured if "finished_counts" in q["sql"]]
    text = plan(statement, ())
    if connection.vendor == "sqlite":
        assert "SCAN extraction_queue" not in text.splitlines(), text
        assert f"SEARCH extraction_queue {ID_RANGE}" in text, text
        assert "SEARCH extraction_queue USING INDEX idx_queue_status_created" in text
    else:
        assert "extraction_queue_pkey" in text, text


# --- Races -----------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_two_scrapes_racing_folds_agree(queue):
    write_attempts(days_ago=1, times=40)
    expected = counters()
    seen: list[dict] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def fold() -> None:
        try:
            # Small batches: many commits for the scrapes to fall between.
            QueueManager().fold_metrics(margin_seconds=0, batch=7)
        except BaseException as error:  # noqa: BLE001 - reported by the test
            errors.append(error)
        finally:
            connections.close_all()

    def scrape() -> None:
        try:
            while not done.is_set():
                seen.append(counters())
            seen.append(counters())
        except BaseException as error:  # noqa: BLE001 - reported by the test
            errors.append(error)
        finally:
            connections.close_all()

    folds = [threading.Thread(target=fold) for _ in range(2)]
    scrapes = [threading.Thread(target=scrape) for _ in range(2)]
    for thread in scrapes + folds:
        thread.start()
    for thread in folds:
        thread.join(60)
    done.set()
    for thread in scrapes:
        thread.join(60)
    assert not errors, errors
    assert len(seen) >= 4
    assert all(samples == expected for samples in seen)
    assert counters() == expected, "two folds never count a row twice"
    assert MetricsFold.objects.get().folded_through == (
        ExtractionMetric.objects.order_by("pk").last().pk
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    connection.vendor == "sqlite",
    reason="SQLite writes one transaction at a time: ids commit in their order",
)
def test_a_row_committed_late_is_not_lost(queue):
    write_attempts(days_ago=1)
    inserted, commit = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def slow_attempt() -> None:
        # Takes its id now, commits after rows of higher ids and after a fold.
        try:
            with transaction.atomic():
                ExtractionMetric.objects.create(
                    outcome="completed", created_at=db_now()
                )
                inserted.set()
                commit.wait(30)
        except BaseException as error:  # noqa: BLE001 - reported by the test
            errors.append(error)
        finally:
            connections.close_all()

    thread = threading.Thread(target=slow_attempt)
    thread.start()
    assert inserted.wait(30)
    ExtractionMetric.objects.create(outcome="completed")
    queue.fold_metrics()
    commit.set()
    thread.join(30)
    assert not errors, errors
    samples = counters()
    key = ("docqueue_attempts_total", (("error_type", ""), ("outcome", "completed")))
    assert samples[key] == 5 + 2
    queue.fold_metrics(margin_seconds=0)
    assert counters() == samples


@pytest.mark.django_db(transaction=True)
def test_a_worker_folds_and_expires_metrics_in_its_housekeeping(settings, run_worker):
    settings.QUEUE_KEEP_FINISHED_DAYS = 7
    write_attempts(days_ago=8)
    write_attempts(days_ago=0.5)
    before = counters()
    run_worker()
    wait_for(lambda: ExtractionMetric.objects.count() == len(ATTEMPTS), 30)
    assert MetricTotal.objects.exists()
    assert counters() == before
    assert MetricsFold.objects.get().counted_at is not None, "finished items counted"
