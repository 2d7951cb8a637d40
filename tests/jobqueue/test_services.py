"""QueueManager and DocumentQueueService: every transition of the guide's diagram."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from documents.models import Document
from documents.services import document_delete
from jobqueue import services, sql
from jobqueue.models import (
    ErrorType,
    ExtractionMetric,
    Operation,
    QueueControl,
    QueueItem,
    Status,
    WorkerHeartbeat,
)
from jobqueue.services import STOPPED_MESSAGE, DocumentQueueService, QueueManager
from jobqueue.sql import db_now
from jobqueue.worker import ExtractionWorker
from tests.jobqueue.task_apps import mail

pytestmark = pytest.mark.django_db

Outcome = ExtractionMetric.Outcome


# --- Helpers --------------------------------------------------------------------


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):
    """The users of conftest need no slow hashing here."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def make_due(job_id: int) -> None:
    """Put a job's retry time in the past instead of sleeping through the backoff."""
    QueueItem.objects.filter(pk=job_id).update(
        next_retry_at=timezone.now() - timedelta(seconds=1)
    )


def started_ago(job_id: int, **delta: float) -> None:
    QueueItem.objects.filter(pk=job_id).update(
        started_at=timezone.now() - timedelta(**delta)
    )


def snapshot(job_id: int) -> dict:
    """Everything a transition could change: the item, its document, the metrics."""
    item = QueueItem.objects.values().get(pk=job_id)
    return {
        "item": item,
        "document": Document.objects.values().get(pk=item["document_id"]),
        "metrics": list(ExtractionMetric.objects.order_by("id").values()),
    }


def document_of(job_id: int) -> Document:
    return Document.objects.get(queue_items__pk=job_id)


def metrics_of(job_id: int) -> list[tuple[int, str]]:
    return list(
        ExtractionMetric.objects.filter(job_id=job_id)
        .order_by("id")
        .values_list("attempt", "outcome")
    )


@pytest.fixture
def job_in_state(make_document, queue):
    """A job brought to the given state through the queue API itself."""

    def make(state: str, worker_id: str = "w1") -> int:
        job_id = queue.enqueue(make_document().pk)
        if state == Status.PENDING:
            return job_id
        if state == Status.CANCELLED:
            assert queue.cancel(job_id)
            return job_id
        # Claim this very job, whatever else is waiting.
        assert DocumentQueueService(queue).mark_in_progress(
            queue.get_job(job_id), worker_id
        )
        if state == Status.COMPLETED:
            assert queue.complete(job_id, extraction_time_ms=5)
        elif state == Status.RETRY_PENDING:
            assert queue.failed(job_id, "flaky", ErrorType.TIMEOUT)
        elif state == Status.FAILED:
            assert queue.failed(job_id, "broken", ErrorType.CORRUPTION)
        assert queue.get_job(job_id).status == state
        return job_id

    return make


# --- Enqueue --------------------------------------------------------------------


def test_enqueue_creates_a_pending_job_and_marks_the_document_pending(
    make_document, queue
):
    document = make_document()
    Document.objects.filter(pk=document.pk).update(
        status=Status.FAILED, error_type="corruption", error_message="old"
    )
    job_id = queue.enqueue(document.pk, priority=7)
    job = queue.get_job(job_id)
    assert (job.status, job.priority, job.attempts) == (Status.PENDING, 7, 0)
    assert job.document_id == job.attachment_id == document.pk
    assert job.operation == Operation.EXTRACT
    document.refresh_from_db()
    assert (document.status, document.error_type, document.error_message) == (
        Status.PENDING,
        "",
        "",
    )


def test_enqueue_takes_max_retries_from_settings(make_document, queue, settings):
    settings.QUEUE_MAX_RETRIES = 7
    assert queue.get_job(queue.enqueue(make_document().pk)).max_retries == 7


@pytest.mark.parametrize(
    "state", [Status.PENDING, Status.PROCESSING, Status.RETRY_PENDING]
)
def test_enqueue_of_an_active_document_is_deduplicated(job_in_state, queue, state):
    job_id = job_in_state(state)
    before = snapshot(job_id)
    assert queue.enqueue(document_of(job_id).pk) is None
    assert QueueItem.objects.count() == 1
    assert snapshot(job_id) == before


@pytest.mark.parametrize(
    "state", [Status.PENDING, Status.PROCESSING, Status.RETRY_PENDING]
)
def test_database_refuses_a_second_active_item_even_from_the_orm(job_in_state, state):
    job_id = job_in_state(state)
    document = document_of(job_id)
    with pytest.raises(IntegrityError), transaction.atomic():
        QueueItem.objects.create(document=document, operation=Operation.EXTRACT)
    assert QueueItem.objects.count() == 1


def test_a_different_operation_on_the_same_document_is_its_own_job(
    make_document, queue
):
    document = make_document()
    extract_id = queue.enqueue(document.pk)
    service = DocumentQueueService()
    thumbnail_id = service.enqueue(document.pk, Operation.THUMBNAIL)
    assert thumbnail_id not in (None, extract_id)
    assert service.enqueue(document.pk, Operation.THUMBNAIL) is None


@pytest.mark.parametrize(
    "first, second",
    [
        (Operation.EXTRACT, Operation.REPROCESS),
        (Operation.REPROCESS, Operation.EXTRACT),
    ],
)
@pytest.mark.parametrize(
    "state", [Status.PENDING, Status.PROCESSING, Status.RETRY_PENDING]
)
def test_an_extraction_and_a_reprocess_are_never_active_together(
    make_document, first, second, state
):
    document = make_document()
    service = DocumentQueueService()
    job_id = service.enqueue(document.pk, first)
    QueueItem.objects.filter(pk=job_id).update(status=state)

    assert service.enqueue(document.pk, second) is None
    # The caller who wants the work done either way gets the active job.
    assert QueueManager(second).enqueue(document.pk, 5, deduplicate=False) == job_id
    assert QueueManager(second).enqueue_batch([document.pk]) == []
    assert list(QueueItem.objects.values_list("pk", "priority")) == [(job_id, 5)]
    # Not even the ORM, past the queue's checks, may add the second.
    with pytest.raises(IntegrityError), transaction.atomic():
        QueueItem.objects.create(document=document, operation=second)


def test_enqueue_without_dedup_returns_the_active_job_and_raises_its_priority(
    make_document, queue
):
    document = make_document()
    job_id = queue.enqueue(document.pk, priority=1)
    assert queue.enqueue(document.pk, priority=9, deduplicate=False) == job_id
    assert queue.get_job(job_id).priority == 9
    # A lower priority never demotes the job.
    assert queue.enqueue(document.pk, priority=-3, deduplicate=False) == job_id
    assert queue.get_job(job_id).priority == 9
    assert QueueItem.objects.count() == 1


def test_a_deduplicated_enqueue_raises_the_waiting_jobs_priority(make_document, queue):
    # An operator's reprocess at priority 9 of a document whose job waits at 0.
    document = make_document()
    job_id = queue.enqueue(document.pk)
    assert queue.enqueue(document.pk, priority=9) is None
    assert queue.get_job(job_id).priority == 9
    assert queue.enqueue(document.pk, priority=2) is None
    assert queue.get_job(job_id).priority == 9


def test_enqueue_without_dedup_on_an_idle_document_creates_a_job(make_document, queue):
    job_id = queue.enqueue(make_document().pk, deduplicate=False)
    assert queue.get_job(job_id).status == Status.PENDING


@pytest.mark.parametrize("state", [Status.COMPLETED, Status.FAILED, Status.CANCELLED])
def test_enqueue_after_the_job_finished_creates_a_new_one(job_in_state, queue, state):
    old_id = job_in_state(state)
    document = document_of(old_id)
    new_id = queue.enqueue(document.pk)
    assert new_id is not None and new_id != old_id
    assert queue.get_job(old_id).status == state
    assert queue.get_job(new_id).status == Status.PENDING
    document.refresh_from_db()
    assert (document.status, document.error_type, document.error_message) == (
        Status.PENDING,
        "",
        "",
    )


@pytest.mark.django_db(transaction=True)  # the foreign key is checked at commit
def test_enqueue_of_a_document_that_does_not_exist_raises(queue):
    """None means "already queued": a missing document must not pass for that."""
    with pytest.raises(ValueError, match="There is no document 999999."):
        queue.enqueue(999_999)
    assert not QueueItem.objects.exists()


def test_enqueue_of_an_operation_no_kind_runs_is_refused_at_once(make_document):
    with pytest.raises(ValueError, match="No job kind 'frobnicate'"):
        DocumentQueueService().enqueue(make_document().pk, "frobnicate")
    assert not QueueItem.objects.exists()


def test_enqueue_batch_returns_new_ids_in_input_order_and_skips_active(
    make_document, queue
):
    docs = [make_document(name=f"d{i}.txt") for i in range(5)]
    active_id = queue.enqueue(docs[2].pk)
    order = [docs[4].pk, docs[0].pk, docs[2].pk, docs[3].pk, docs[0].pk, docs[1].pk]
    ids = queue.enqueue_batch(order, priority=5)
    assert len(ids) == 4
    assert active_id not in ids
    assert [queue.get_job(i).document_id for i in ids] == [
        docs[4].pk,
        docs[0].pk,
        docs[3].pk,
        docs[1].pk,
    ]
    assert {queue.get_job(i).priority for i in ids} == {5}
    assert QueueItem.objects.count() == 5
    assert queue.get_job(active_id).priority == 5  # raised, as enqueue raises it
    assert set(Document.objects.values_list("status", flat=True)) == {Status.PENDING}


def test_enqueue_batch_of_only_active_documents_returns_nothing(make_document, queue):
    docs = [make_document(name=f"d{i}.txt") for i in range(2)]
    for document in docs:
        queue.enqueue(document.pk)
    assert queue.enqueue_batch([d.pk for d in docs]) == []
    assert QueueItem.objects.count() == 2


def test_enqueue_batch_is_one_transaction(make_document, queue, monkeypatch):
    docs = [make_document(name=f"d{i}.txt") for i in range(3)]
    Document.objects.update(status=Status.COMPLETED)

    def explode() -> None:
        raise RuntimeError("database went away")

    # The last step inside the batch's transaction: everything before it must roll back.
    monkeypatch.setattr(services, "notify_workers", explode)
    with pytest.raises(RuntimeError):
        queue.enqueue_batch([d.pk for d in docs])
    assert not QueueItem.objects.exists()
    assert set(Document.objects.values_list("status", flat=True)) == {Status.COMPLETED}


# --- Claim ----------------------------------------------------------------------


def test_claim_moves_pending_to_processing_and_counts_the_attempt(job_in_state, queue):
    job_id = job_in_state(Status.PENDING)
    before = db_now()
    job = queue.claim("worker-a")
    assert job.pk == job_id
    assert job.status == Status.PROCESSING
    assert job.attempts == 1
    assert job.claimed_by == "worker-a"
    assert job.started_at >= before
    assert document_of(job_id).status == Status.PROCESSING
    assert metrics_of(job_id) == []


def test_claim_of_an_empty_queue_returns_none(queue):
    assert queue.claim("w1") is None


def test_claim_takes_highest_priority_then_oldest(make_document, queue):
    now = timezone.now()
    jobs = {}
    # (name, priority, age in minutes): ids are deliberately not in age order.
    for name, priority, age in [
        ("low", -5, 50),
        ("normal-new", 0, 1),
        ("high-new", 10, 2),
        ("normal-old", 0, 30),
        ("high-old", 10, 20),
        ("mid", 5, 0),
    ]:
        job_id = queue.enqueue(make_document(name=f"{name}.txt").pk, priority=priority)
        QueueItem.objects.filter(pk=job_id).update(
            created_at=now - timedelta(minutes=age)
        )
        jobs[job_id] = name
    claimed = []
    while (job := queue.claim("w1")) is not None:
        claimed.append(jobs[job.pk])
    assert claimed == ["high-old", "high-new", "mid", "normal-old", "normal-new", "low"]


def test_claim_batch_gives_the_next_jobs_in_claim_order_one_per_worker(
    job_in_state, make_document, queue
):
    """A worker's idle threads are served by one claim: the first job for the
    first thread; a due retry counts among the waiting jobs."""
    retry = job_in_state(Status.RETRY_PENDING)
    make_due(retry)
    low = queue.enqueue(make_document(name="low.txt").pk, priority=-1)
    high = queue.enqueue(make_document(name="high.txt").pk, priority=5)
    normal = queue.enqueue(make_document(name="normal.txt").pk)
    claimed = queue.claim_batch(["t1", "t2", "t3"])
    assert [(job.pk, job.claimed_by) for job in claimed] == [
        (high, "t1"),
        (retry, "t2"),
        (normal, "t3"),
    ]
    assert [(job.status, job.attempts) for job in claimed] == [
        (Status.PROCESSING, 1),
        (Status.PROCESSING, 2),
        (Status.PROCESSING, 1),
    ]
    for job in claimed:
        assert queue.get_job(job.pk).claimed_by == job.claimed_by
        assert document_of(job.pk).status == Status.PROCESSING
    # Fewer due than threads: what there is, then nothing.
    assert [(job.pk, job.claimed_by) for job in queue.claim_batch(["t4", "t5"])] == [
        (low, "t4")
    ]
    assert queue.claim_batch(["t6", "t7"]) == []
    assert document_of(low).status == Status.PROCESSING


def test_a_pause_holds_from_its_commit_whatever_the_workers_last_read(
    job_in_state, make_document, queue
):
    """Every claim reads the operators' switch itself: a worker that has not looked
    at it since the pause (it looks once per poll interval) takes nothing more, and
    one finishing a job does not take the next with its completion."""
    first = queue.get_job(job_in_state(Status.PROCESSING, worker_id="w1"))
    retry = job_in_state(Status.RETRY_PENDING)
    make_due(retry)
    waiting = queue.enqueue(make_document(name="waiting.txt").pk)
    QueueControl.set_paused(True, by="operator")
    assert queue.claim("w2") is None
    assert queue.claim_batch(["w2", "w3"]) == []
    assert queue.complete_and_claim(
        first.pk,
        5,
        worker_id="w1",
        attempt=first.attempts,
        subject_id=first.document_id,
        queues=None,
    ) == (True, None)
    assert not QueueItem.objects.filter(
        pk__in=[retry, waiting], status=Status.PROCESSING
    ).exists()
    QueueControl.set_paused(False, by="operator")
    assert {job.pk for job in queue.claim_batch(["w2", "w3"])} == {retry, waiting}


@pytest.mark.django_db(transaction=True)
def test_a_heartbeat_naming_a_deleted_job_still_lands_for_every_thread(
    make_document, queue
):
    """A job deleted while a thread holds it (its document deleted) failed every beat
    of the worker's threads on PostgreSQL (a foreign key, checked at commit) until
    other workers took the worker for dead and rescued its other job."""
    kept = queue.enqueue(make_document(name="kept.txt").pk)
    gone = queue.enqueue(make_document(name="gone.txt").pk)
    claimed = queue.claim_batch(["w1", "w2"])
    long_ago = timezone.now() - timedelta(minutes=5)
    for job in claimed:
        WorkerHeartbeat.objects.create(
            worker_id=job.claimed_by, current_job_id=job.pk, last_heartbeat=long_ago
        )
    document_delete(document=Document.objects.get(queue_items=gone))
    beats = [
        {
            "worker": job.claimed_by,
            "status": WorkerHeartbeat.State.BUSY,
            "job": job.pk,
            "completed": 0,
            "failed": 0,
            "refused": 0,
        }
        for job in claimed
    ]
    with transaction.atomic(), connection.cursor() as cursor:  # as the worker beats
        sql.dialect().send_beats(cursor, beats)
    landed = WorkerHeartbeat.objects.filter(last_heartbeat__gt=long_ago)
    assert sorted(landed.values_list("current_job_id", flat=True), key=str) == sorted(
        [kept, None], key=str
    )


def test_claim_batch_keeps_to_the_named_queues(queue):
    payload = {"task": "x", "backend": "default"}
    wanted = queue.enqueue_job(Operation.TASK, payload=payload, queue_name="reports")
    queue.enqueue_job(Operation.TASK, payload=payload)
    claimed = queue.claim_batch(["t1", "t2"], queues=["reports"])
    assert [job.pk for job in claimed] == [wanted.pk]


def test_retry_pending_job_is_not_claimed_before_its_retry_time(job_in_state, queue):
    job_id = job_in_state(Status.RETRY_PENDING)
    QueueItem.objects.filter(pk=job_id).update(
        next_retry_at=timezone.now() + timedelta(hours=1)
    )
    assert queue.claim("w2") is None
    assert queue.get_job(job_id).status == Status.RETRY_PENDING
    make_due(job_id)
    job = queue.claim("w2")
    assert (job.pk, job.status, job.attempts, job.claimed_by) == (
        job_id,
        Status.PROCESSING,
        2,
        "w2",
    )
    assert job.next_retry_at is None
    assert document_of(job_id).status == Status.PROCESSING


def test_a_claim_reads_none_of_the_jobs_scheduled_for_later(queue):
    """However many jobs wait for a later time (retries, tasks' run_after), a claim
    reads only those due: the index range of idx_queue_status_retry up to now."""
    payload = {"task": "x", "backend": "default"}
    later = db_now() + timedelta(hours=1)
    QueueItem.objects.bulk_create(
        QueueItem(
            operation=Operation.TASK,
            payload=payload,
            status=Status.RETRY_PENDING,
            next_retry_at=later,
            created_at=db_now(),
        )
        for _ in range(300)
    )
    wanted = queue.enqueue_job(Operation.TASK, payload=payload)
    if connection.vendor == "postgresql":
        # The rows this transaction has read so far, by any scan of the table.
        read = (
            "SELECT seq_tup_read + idx_tup_fetch FROM pg_stat_xact_user_tables "
            "WHERE relname = 'extraction_queue'"
        )
        with connection.cursor() as cursor:
            # With statistics, as autovacuum and the workers' housekeeping keep them.
            cursor.execute("ANALYZE extraction_queue")
            cursor.execute(read)
            before = cursor.fetchone()[0]
            assert queue.claim("w1").pk == wanted.pk
            cursor.execute(read)
            assert cursor.fetchone()[0] - before < 10
    else:
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN QUERY PLAN {sql.dialect().promote}", {})
            plan = " ".join(row[-1] for row in cursor.fetchall())
        assert "idx_queue_status_retry (status=? AND next_retry_at<?)" in plan
        assert queue.claim("w1").pk == wanted.pk


def test_a_due_retry_competes_by_priority_with_pending_jobs(make_document, queue):
    retried = queue.enqueue(make_document(name="retried.txt").pk, priority=3)
    queue.claim("w1")
    queue.failed(retried, "flaky", ErrorType.TIMEOUT)
    plain = queue.enqueue(make_document(name="plain.txt").pk, priority=1)
    QueueItem.objects.filter(pk=retried).update(
        next_retry_at=timezone.now() + timedelta(minutes=5)
    )
    assert queue.claim("w1").pk == plain
    make_due(retried)
    assert queue.claim("w1").pk == retried


# --- Complete, fail, release, cancel ------------------------------------------


def test_complete_finishes_the_job_mirrors_the_document_and_records_a_metric(
    job_in_state, queue
):
    job_id = job_in_state(Status.PROCESSING, worker_id="w7")
    assert queue.complete(
        job_id,
        extraction_time_ms=420,
        confidence=0.9,
        worker_id="w7",
        pages=3,
        characters=1200,
        extractor="pdfplumber",
    )
    job = queue.get_job(job_id)
    assert job.status == Status.COMPLETED
    assert job.finished_at is not None
    assert (job.extraction_time_ms, job.confidence) == (420, 0.9)
    document = document_of(job_id)
    assert (document.status, document.error_type, document.error_message) == (
        Status.COMPLETED,
        "",
        "",
    )
    metric = ExtractionMetric.objects.get()
    assert (metric.job_id, metric.document_id, metric.attempt) == (
        job_id,
        document.pk,
        1,
    )
    assert metric.outcome == Outcome.COMPLETED
    assert (metric.extraction_time_ms, metric.confidence) == (420, 0.9)
    assert (metric.pages, metric.characters, metric.extractor) == (
        3,
        1200,
        "pdfplumber",
    )
    assert metric.worker_id == "w7"


def test_retryable_failure_moves_processing_to_retry_pending(job_in_state, queue):
    job_id = job_in_state(Status.PROCESSING)
    assert queue.failed(job_id, "timed out after 300 s", ErrorType.TIMEOUT)
    job = queue.get_job(job_id)
    assert job.status == Status.RETRY_PENDING
    assert (job.error_type, job.error_message) == ("timeout", "timed out after 300 s")
    assert job.next_retry_at is not None
    assert job.finished_at is None
    document = document_of(job_id)
    assert (document.status, document.error_type, document.error_message) == (
        Status.RETRY_PENDING,
        "timeout",
        "timed out after 300 s",
    )
    assert metrics_of(job_id) == [(1, Outcome.RETRY)]
    assert ExtractionMetric.objects.get().error_type == ErrorType.TIMEOUT


def test_job_fails_for_good_once_max_retries_are_exceeded(job_in_state, queue):
    job_id = job_in_state(Status.PROCESSING)
    for _ in range(3):
        assert queue.failed(job_id, "flaky", ErrorType.UNKNOWN, max_retries=3)
        assert queue.get_job(job_id).status == Status.RETRY_PENDING
        make_due(job_id)
        assert queue.claim("w1").pk == job_id
    assert queue.get_job(job_id).attempts == 4
    assert queue.failed(job_id, "still flaky", ErrorType.UNKNOWN, max_retries=3)
    job = queue.get_job(job_id)
    assert job.status == Status.FAILED
    assert job.next_retry_at is None
    assert job.finished_at is not None
    document = document_of(job_id)
    assert (document.status, document.error_message) == (Status.FAILED, "still flaky")
    assert metrics_of(job_id) == [
        (1, Outcome.RETRY),
        (2, Outcome.RETRY),
        (3, Outcome.RETRY),
        (4, Outcome.FAILED),
    ]
    assert queue.get_failed_jobs() == [job]


def test_an_error_message_the_database_cannot_store_is_recorded_escaped(
    job_in_state, queue
):
    """Any job kind's: U+0000 (PostgreSQL) or a lone surrogate (both databases) made
    the write fail, and the attempt went unrecorded, the job run again for ever."""
    job_id = job_in_state(Status.PROCESSING, worker_id="w1")
    assert queue.failed(job_id, "bad \x00 byte in caf\udce9.txt", "corruption")
    expected = "bad \\x00 byte in caf\\udce9.txt"
    assert queue.get_job(job_id).error_message == expected
    assert document_of(job_id).error_message == expected


def test_a_failed_job_that_succeeds_on_retry_clears_its_error(job_in_state, queue):
    job_id = job_in_state(Status.RETRY_PENDING)
    make_due(job_id)
    queue.claim("w1")
    assert queue.complete(job_id)
    job = queue.get_job(job_id)
    assert (job.status, job.error_type, job.error_message) == (
        Status.COMPLETED,
        "",
        "",
    )
    document = document_of(job_id)
    assert (document.status, document.error_type) == (Status.COMPLETED, "")
    assert metrics_of(job_id) == [(1, Outcome.RETRY), (2, Outcome.COMPLETED)]


def test_release_gives_a_processing_job_back_without_counting_the_attempt(
    job_in_state, queue
):
    job_id = job_in_state(Status.PROCESSING, worker_id="w3")
    assert queue.release(job_id, worker_id="w3")
    job = queue.get_job(job_id)
    assert (job.status, job.attempts, job.claimed_by, job.started_at) == (
        Status.PENDING,
        0,
        "",
        None,
    )
    assert document_of(job_id).status == Status.PENDING
    assert metrics_of(job_id) == [(1, Outcome.RELEASED)]
    assert queue.claim("w4").attempts == 1


@pytest.mark.parametrize("state", [Status.PENDING, Status.RETRY_PENDING])
def test_cancel_stops_a_job_that_has_not_started(job_in_state, queue, state):
    job_id = job_in_state(state)
    assert queue.cancel(job_id)
    job = queue.get_job(job_id)
    assert job.status == Status.CANCELLED
    assert job.finished_at is not None
    assert job.next_retry_at is None
    assert document_of(job_id).status == Status.CANCELLED
    assert queue.claim("w1") is None


NOT_PROCESSING = [
    Status.PENDING,
    Status.RETRY_PENDING,
    Status.COMPLETED,
    Status.FAILED,
    Status.CANCELLED,
]


@pytest.mark.parametrize("state", NOT_PROCESSING)
@pytest.mark.parametrize(
    "action",
    [
        lambda q, job_id: q.complete(job_id, extraction_time_ms=1),
        lambda q, job_id: q.failed(job_id, "nope", ErrorType.TIMEOUT),
        lambda q, job_id: q.failed(job_id, "nope", ErrorType.CORRUPTION),
        lambda q, job_id: q.release(job_id),
    ],
    ids=["complete", "failed-retryable", "failed-permanent", "release"],
)
def test_finishing_a_job_that_is_not_processing_is_refused_and_changes_nothing(
    job_in_state, queue, state, action
):
    job_id = job_in_state(state)
    before = snapshot(job_id)
    assert action(queue, job_id) is False
    assert snapshot(job_id) == before


@pytest.mark.parametrize("state", [Status.PROCESSING, Status.COMPLETED])
def test_cancel_of_a_started_or_finished_job_is_refused(job_in_state, queue, state):
    job_id = job_in_state(state)
    before = snapshot(job_id)
    assert queue.cancel(job_id) is False
    assert snapshot(job_id) == before


@pytest.mark.parametrize("state", [Status.FAILED, Status.CANCELLED])
def test_cancel_of_an_ended_job_is_refused(job_in_state, queue, state):
    job_id = job_in_state(state)
    before = snapshot(job_id)
    assert queue.cancel(job_id) is False
    assert snapshot(job_id) == before


def test_stop_ends_running_extractions_only(job_in_state, queue):
    running = job_in_state(Status.PROCESSING)
    waiting = job_in_state(Status.PENDING)
    ended = job_in_state(Status.COMPLETED)
    task_item = QueueItem.objects.get(pk=int(mail.send.enqueue("a@example.com").id))
    assert DocumentQueueService(queue).mark_in_progress(task_item, "w2")
    untouched = {pk: snapshot(pk) for pk in (waiting, ended)}
    task_before = QueueItem.objects.values().get(pk=task_item.pk)

    assert queue.stop_many([running, waiting, ended, task_item.pk]) == [running]
    job = queue.get_job(running)
    assert (job.status, job.error_message) == (Status.CANCELLED, STOPPED_MESSAGE)
    assert job.finished_at is not None
    document = document_of(running)
    assert (document.status, document.error_message) == (
        Status.CANCELLED,
        STOPPED_MESSAGE,
    )
    # A task runs in its worker's thread: it cannot be ended midway, so it is left
    # running rather than marked cancelled while its code goes on.
    assert QueueItem.objects.values().get(pk=task_item.pk) == task_before
    assert {pk: snapshot(pk) for pk in untouched} == untouched
    # Its worker's late result is refused.
    assert queue.complete(running, worker_id="w1") is False


@pytest.mark.parametrize(
    "action",
    [
        lambda q, job_id: q.complete(job_id, worker_id="intruder"),
        lambda q, job_id: q.failed(job_id, "x", "timeout", worker_id="intruder"),
        lambda q, job_id: q.release(job_id, worker_id="intruder"),
    ],
    ids=["complete", "failed", "release"],
)
def test_another_worker_cannot_finish_a_job_it_does_not_hold(
    job_in_state, queue, action
):
    job_id = job_in_state(Status.PROCESSING, worker_id="owner")
    before = snapshot(job_id)
    assert action(queue, job_id) is False
    assert snapshot(job_id) == before
    assert queue.complete(job_id, worker_id="owner")


def test_actions_on_a_missing_job_return_false(queue):
    assert queue.complete(999_999) is False
    assert queue.failed(999_999, "x") is False
    assert queue.release(999_999) is False
    assert queue.cancel(999_999) is False
    assert queue.get_job(999_999) is None
    assert queue.retry_failed(999_999) == 0


# --- Reading --------------------------------------------------------------------


def test_pending_count_includes_waiting_retries(job_in_state, queue):
    job_in_state(Status.PENDING)
    job_in_state(Status.RETRY_PENDING)
    job_in_state(Status.PROCESSING)
    job_in_state(Status.COMPLETED)
    job_in_state(Status.FAILED)
    assert queue.get_pending_count() == 2


def test_failed_jobs_are_listed_newest_first_up_to_the_limit(job_in_state, queue):
    first, second, third = (job_in_state(Status.FAILED) for _ in range(3))
    job_in_state(Status.COMPLETED)
    assert [j.pk for j in queue.get_failed_jobs()] == [third, second, first]
    assert [j.pk for j in queue.get_failed_jobs(limit=2)] == [third, second]
    assert queue.get_failed_jobs()[0].error_message == "broken"


def test_queue_stats_of_an_empty_queue(queue):
    stats = queue.get_queue_stats()
    assert stats["pending"] == stats["processing"] == stats["retry_pending"] == 0
    assert stats["completed_24h"] == 0
    assert stats["avg_extraction_time_ms"] == 0
    assert stats["total"] == 0
    assert stats["oldest_pending_seconds"] is None


def test_queue_stats_count_every_state_and_the_last_day(job_in_state, queue):
    pending = [job_in_state(Status.PENDING) for _ in range(2)]
    job_in_state(Status.PROCESSING)
    job_in_state(Status.RETRY_PENDING)
    for ms in (100, 300):
        job_id = job_in_state(Status.PROCESSING)
        queue.complete(job_id, extraction_time_ms=ms)
    job_in_state(Status.FAILED)
    job_in_state(Status.CANCELLED)
    # A completion two hours ago counts for the day but not for the last hour, and
    # one from two days ago counts for neither.
    now = timezone.now()
    two_hours_ago = job_in_state(Status.PROCESSING)
    queue.complete(two_hours_ago, extraction_time_ms=800)
    ExtractionMetric.objects.filter(job_id=two_hours_ago).update(
        created_at=now - timedelta(hours=2)
    )
    two_days_ago = job_in_state(Status.PROCESSING)
    queue.complete(two_days_ago, extraction_time_ms=10_000)
    ExtractionMetric.objects.filter(job_id=two_days_ago).update(
        created_at=now - timedelta(days=2)
    )
    QueueItem.objects.filter(pk=pending[0]).update(created_at=now - timedelta(hours=1))

    stats = queue.get_queue_stats()
    # The guide prints these five.
    assert stats["pending"] == 2
    assert stats["processing"] == 1
    assert stats["retry_pending"] == 1
    assert stats["completed_24h"] == 3
    assert stats["avg_extraction_time_ms"] == 400.0  # (100 + 300 + 800) / 3
    # And the rest the service returns.
    assert stats["completed"] == 4
    assert stats["failed"] == 1
    assert stats["cancelled"] == 1
    assert stats["in_progress"] == 1
    assert stats["total"] == 10
    assert stats["failed_24h"] == 1
    assert stats["refused_24h"] == 0
    assert stats["throughput_per_hour"] == 2
    assert 3600 <= stats["oldest_pending_seconds"] < 7200
    assert set(stats) == {
        "pending",
        "processing",
        "retry_pending",
        "completed",
        "failed",
        "cancelled",
        "in_progress",
        "total",
        "completed_24h",
        "failed_24h",
        "refused_24h",
        "avg_extraction_time_ms",
        "throughput_per_hour",
        "oldest_pending_seconds",
    }
    assert DocumentQueueService(queue).get_queue_stats() == {
        **stats,
        "oldest_pending_seconds": pytest.approx(
            stats["oldest_pending_seconds"], abs=60
        ),
    }


# --- Repair: retry_failed, stale jobs, dead workers -----------------------------


def test_retry_failed_puts_every_failed_job_back_with_fresh_attempts(
    job_in_state, queue
):
    failed = [job_in_state(Status.FAILED) for _ in range(3)]
    completed = job_in_state(Status.COMPLETED)
    assert queue.retry_failed() == 3
    for job_id in failed:
        job = queue.get_job(job_id)
        assert (job.status, job.attempts, job.error_type, job.error_message) == (
            Status.PENDING,
            0,
            "",
            "",
        )
        assert job.finished_at is None
        document = document_of(job_id)
        assert (document.status, document.error_type, document.error_message) == (
            Status.PENDING,
            "",
            "",
        )
    assert queue.get_job(completed).status == Status.COMPLETED
    assert queue.retry_failed() == 0


def test_retry_failed_with_a_job_id_retries_only_that_job(job_in_state, queue):
    first, second = job_in_state(Status.FAILED), job_in_state(Status.FAILED)
    assert queue.retry_failed(job_id=second) == 1
    assert queue.get_job(second).status == Status.PENDING
    assert queue.get_job(first).status == Status.FAILED


@pytest.mark.parametrize(
    "state", [Status.PENDING, Status.PROCESSING, Status.RETRY_PENDING, Status.COMPLETED]
)
def test_retry_failed_ignores_a_job_that_has_not_failed(job_in_state, queue, state):
    job_id = job_in_state(state)
    before = snapshot(job_id)
    assert queue.retry_failed(job_id=job_id) == 0
    assert snapshot(job_id) == before


def test_retry_failed_skips_a_document_that_was_queued_again(job_in_state, queue):
    failed_id = job_in_state(Status.FAILED)
    other_failed = job_in_state(Status.FAILED)
    document = document_of(failed_id)
    requeued = queue.enqueue(document.pk)
    assert queue.retry_failed() == 1
    assert queue.get_job(failed_id).status == Status.FAILED
    assert queue.get_job(requeued).status == Status.PENDING
    assert queue.get_job(other_failed).status == Status.PENDING
    assert queue.retry_failed(job_id=failed_id) == 0


def test_retry_failed_revives_one_job_per_document_that_failed_twice(
    job_in_state, queue
):
    older = job_in_state(Status.FAILED)
    document = document_of(older)
    newer = queue.enqueue(document.pk)
    queue.claim("w1")
    queue.failed(newer, "broken again", ErrorType.CORRUPTION)
    assert queue.retry_failed() == 1
    assert queue.get_job(newer).status == Status.PENDING
    assert queue.get_job(older).status == Status.FAILED
    assert document_of(newer).status == Status.PENDING


def test_retry_failed_never_brings_back_work_another_kind_is_doing(job_in_state, queue):
    """A reprocess reads a document's text as its first extraction does: retrying a
    failed extract while a reprocess is active would read it twice."""
    failed = job_in_state(Status.FAILED)
    document = document_of(failed)
    reprocess = QueueManager(Operation.REPROCESS)
    active = reprocess.enqueue(document.pk)
    assert queue.retry_failed(job_id=failed) == 0
    assert queue.get_job(failed).status == Status.FAILED

    # Both failed: one comes back, the latest.
    reprocess.claim("w1")
    reprocess.failed(active, "broken", ErrorType.CORRUPTION)
    assert queue.retry_failed() == 1
    assert [queue.get_job(j).status for j in (failed, active)] == [
        Status.FAILED,
        Status.PENDING,
    ]


def test_cleanup_stale_jobs_rescues_long_running_jobs_and_counts_the_attempt(
    job_in_state, queue
):
    stale = job_in_state(Status.PROCESSING, worker_id="stuck")
    fresh = job_in_state(Status.PROCESSING, worker_id="busy")
    started_ago(stale, minutes=31)
    started_ago(fresh, minutes=29)
    fresh_before = snapshot(fresh)["item"]
    assert queue.cleanup_stale_jobs() == 1
    job = queue.get_job(stale)
    assert (job.status, job.attempts, job.claimed_by) == (Status.PENDING, 1, "")
    assert "stuck" in job.error_message
    assert document_of(stale).status == Status.PENDING
    assert metrics_of(stale) == [(1, Outcome.RESCUED)]
    assert QueueItem.objects.values().get(pk=fresh) == fresh_before
    # The lost attempt counts: the next claim is attempt two.
    assert queue.claim("w9").attempts == 2


def test_cleanup_stale_jobs_takes_its_threshold_in_minutes(job_in_state, queue):
    job_id = job_in_state(Status.PROCESSING)
    started_ago(job_id, minutes=6)
    assert queue.cleanup_stale_jobs(stale_threshold_minutes=10) == 0
    assert queue.cleanup_stale_jobs(stale_threshold_minutes=5) == 1
    assert queue.get_job(job_id).status == Status.PENDING


def exhaust_retries(queue: QueueManager, job_id: int, worker_id: str) -> None:
    """Fail a job until its next claim is its last allowed attempt, then claim it."""
    for _ in range(3):
        queue.failed(job_id, "flaky", ErrorType.TIMEOUT, max_retries=3)
        make_due(job_id)
        assert queue.claim(worker_id).pk == job_id
    assert queue.get_job(job_id).attempts == 4


def test_cleanup_stale_jobs_fails_a_job_with_no_retries_left(job_in_state, queue):
    job_id = job_in_state(Status.PROCESSING)
    exhaust_retries(queue, job_id, "w1")
    started_ago(job_id, hours=2)
    assert queue.cleanup_stale_jobs() == 1
    job = queue.get_job(job_id)
    assert (job.status, job.error_type) == (Status.FAILED, ErrorType.UNKNOWN)
    assert "No retries left" in job.error_message
    assert job.finished_at is not None
    document = document_of(job_id)
    assert (document.status, document.error_type) == (Status.FAILED, "unknown")
    assert metrics_of(job_id)[-1] == (4, Outcome.FAILED)
    assert queue.claim("w2") is None


def heartbeat(worker_id: str, seconds_ago: float, status: str = "busy") -> None:
    WorkerHeartbeat.objects.create(
        worker_id=worker_id,
        status=status,
        last_heartbeat=timezone.now() - timedelta(seconds=seconds_ago),
    )


def test_rescue_stale_workers_returns_their_jobs_to_pending(job_in_state, queue):
    heartbeat("dead", seconds_ago=300)
    heartbeat("alive", seconds_ago=1)
    heartbeat("stopped", seconds_ago=1, status=WorkerHeartbeat.State.STOPPED)
    dead_job = job_in_state(Status.PROCESSING, worker_id="dead")
    live_job = job_in_state(Status.PROCESSING, worker_id="alive")
    stopped_job = job_in_state(Status.PROCESSING, worker_id="stopped")
    ghost_job = job_in_state(Status.PROCESSING, worker_id="never-beat")
    for job_id in (dead_job, live_job, stopped_job, ghost_job):
        started_ago(job_id, minutes=5)
    live_before = snapshot(live_job)["item"]

    assert queue.rescue_stale_workers(60) == 3

    for job_id in (dead_job, stopped_job, ghost_job):
        job = queue.get_job(job_id)
        assert (job.status, job.attempts, job.claimed_by) == (Status.PENDING, 1, "")
        assert "stopped responding" in job.error_message
        assert document_of(job_id).status == Status.PENDING
        assert metrics_of(job_id) == [(1, Outcome.RESCUED)]
    assert QueueItem.objects.values().get(pk=live_job) == live_before
    assert document_of(live_job).status == Status.PROCESSING
    assert queue.rescue_stale_workers(60) == 0


def test_processing_longer_than_tells_whether_a_rescue_has_anything_to_take(
    job_in_state, queue
):
    """The worker's beats ask this first, and rescue only when it says yes."""
    fresh = job_in_state(Status.PROCESSING, worker_id="busy")
    job_in_state(Status.COMPLETED)
    assert not queue.processing_longer_than(60)
    old = job_in_state(Status.PROCESSING, worker_id="dead")
    started_ago(old, minutes=5)
    assert queue.processing_longer_than(60)
    assert not queue.processing_longer_than(60, exclude=[old])
    assert not queue.processing_longer_than(600)
    assert queue.get_job(fresh).status == Status.PROCESSING


def test_rescue_stale_workers_spares_a_job_claimed_within_the_threshold(
    job_in_state, queue
):
    # The worker may not have written its first heartbeat yet.
    job_id = job_in_state(Status.PROCESSING, worker_id="just-started")
    assert queue.rescue_stale_workers(60) == 0
    assert queue.get_job(job_id).status == Status.PROCESSING


def test_rescue_stale_workers_fails_a_job_with_no_retries_left(job_in_state, queue):
    heartbeat("dead", seconds_ago=600)
    job_id = job_in_state(Status.PROCESSING, worker_id="dead")
    exhaust_retries(queue, job_id, "dead")
    started_ago(job_id, minutes=5)
    assert queue.rescue_stale_workers(60) == 1
    job = queue.get_job(job_id)
    assert job.status == Status.FAILED
    assert document_of(job_id).status == Status.FAILED
    assert metrics_of(job_id)[-1] == (4, Outcome.FAILED)


@pytest.mark.parametrize("rescue", ["rescue_stale_workers", "cleanup_stale_jobs"])
def test_a_rescue_with_a_budget_counts_retries_by_it(job_in_state, queue, rescue):
    """A worker's rescue passes its own ``max_retries``, as its failures do."""
    heartbeat("dead", seconds_ago=600)
    job_id = job_in_state(Status.PROCESSING, worker_id="dead")
    exhaust_retries(queue, job_id, "dead")  # attempt 4 of a budget of 3
    started_ago(job_id, hours=2)
    threshold = {"rescue_stale_workers": 60, "cleanup_stale_jobs": 30}[rescue]
    assert getattr(queue, rescue)(threshold, max_retries=5) == 1
    job = queue.get_job(job_id)
    assert (job.status, job.max_retries) == (Status.PENDING, 5)
    assert metrics_of(job_id)[-1] == (4, Outcome.RESCUED)


def test_a_rescued_job_cannot_be_finished_by_the_worker_that_lost_it(
    job_in_state, queue
):
    job_id = job_in_state(Status.PROCESSING, worker_id="slow")
    started_ago(job_id, hours=1)
    queue.cleanup_stale_jobs()
    assert queue.claim("fast").pk == job_id
    assert queue.complete(job_id, worker_id="slow") is False
    assert queue.complete(job_id, worker_id="fast")


# --- DocumentQueueService -------------------------------------------------------


def test_service_enqueue_deduplicates_per_operation(make_document):
    service = DocumentQueueService()
    document = make_document()
    job_id = service.enqueue(document.pk, Operation.EXTRACT, priority=2)
    assert service.enqueue(document.pk, Operation.EXTRACT, priority=2) is None
    item = QueueItem.objects.get(pk=job_id)
    assert (item.operation, item.priority, item.status) == (
        Operation.EXTRACT,
        2,
        Status.PENDING,
    )
    document.refresh_from_db()
    assert document.status == Status.PENDING


def test_service_pending_items_are_the_due_ones_in_claim_order(
    make_document, job_in_state
):
    service = DocumentQueueService()
    low = service.enqueue(make_document().pk, Operation.EXTRACT, priority=0)
    high = service.enqueue(make_document().pk, Operation.EXTRACT, priority=5)
    waiting = job_in_state(Status.RETRY_PENDING)
    QueueItem.objects.filter(pk=waiting).update(
        next_retry_at=timezone.now() + timedelta(hours=1)
    )
    job_in_state(Status.PROCESSING)
    assert [i.pk for i in service.get_pending_items(limit=10)] == [high, low]
    assert [i.pk for i in service.get_pending_items(limit=1)] == [high]
    make_due(waiting)
    assert {i.pk for i in service.get_pending_items(limit=10)} == {high, low, waiting}


def test_service_mark_in_progress_is_refused_to_the_second_worker(make_document):
    service = DocumentQueueService()
    job_id = service.enqueue(make_document().pk, Operation.EXTRACT)
    [mine] = service.get_pending_items(limit=1)
    [theirs] = service.get_pending_items(limit=1)
    assert service.mark_in_progress(mine, worker_id="w1") is True
    assert service.mark_in_progress(theirs, worker_id="w2") is False
    item = QueueItem.objects.get(pk=job_id)
    assert (item.status, item.attempts, item.claimed_by) == (
        Status.PROCESSING,
        1,
        "w1",
    )
    assert document_of(job_id).status == Status.PROCESSING


def test_service_mark_completed(make_document):
    service = DocumentQueueService()
    job_id = service.enqueue(make_document().pk, Operation.REPROCESS)
    [item] = service.get_pending_items(limit=1)
    assert service.mark_completed(item) is False  # not started yet
    service.mark_in_progress(item)
    assert service.mark_completed(item) is True
    assert QueueItem.objects.get(pk=job_id).status == Status.COMPLETED
    assert document_of(job_id).status == Status.COMPLETED
    assert metrics_of(job_id) == [(1, Outcome.COMPLETED)]


def test_service_mark_failed_records_the_message_and_schedules_a_retry(
    make_document,
):
    service = DocumentQueueService()
    job_id = service.enqueue(make_document().pk, Operation.EXTRACT)
    [item] = service.get_pending_items(limit=1)
    service.mark_in_progress(item)
    assert service.mark_failed(item, "parser crashed") is True
    item.refresh_from_db()
    assert (item.status, item.error_type, item.error_message) == (
        Status.RETRY_PENDING,
        ErrorType.UNKNOWN,
        "parser crashed",
    )
    document = document_of(job_id)
    assert (document.status, document.error_message) == (
        Status.RETRY_PENDING,
        "parser crashed",
    )
    assert metrics_of(job_id) == [(1, Outcome.RETRY)]


def test_service_mark_failed_respects_the_items_max_retries(make_document):
    service = DocumentQueueService()
    job_id = service.enqueue(make_document().pk, Operation.EXTRACT)
    QueueItem.objects.filter(pk=job_id).update(max_retries=0)
    [item] = service.get_pending_items(limit=1)
    service.mark_in_progress(item)
    assert service.mark_failed(item, "no luck") is True
    assert QueueItem.objects.get(pk=job_id).status == Status.FAILED
    assert document_of(job_id).status == Status.FAILED


def test_service_and_queue_manager_share_one_queue(make_document, queue):
    service = DocumentQueueService(queue)
    assert service.queue is queue
    job_id = service.enqueue(make_document().pk, Operation.EXTRACT)
    assert queue.claim("w1").pk == job_id


def test_complete_and_claim_records_one_job_and_takes_the_next(make_document):
    first, second = make_document(b"one"), make_document(b"two")
    noop = QueueManager(Operation.NOOP)
    a, b = noop.enqueue(first.pk), noop.enqueue(second.pk)
    assert noop.claim("w1").pk == a
    done, following = noop.complete_and_claim(
        a, 5, worker_id="w1", attempt=1, subject_id=first.pk, queues=None
    )
    assert done and following.pk == b and following.claimed_by == "w1"
    assert following.status == Status.PROCESSING and following.attempts == 1
    assert QueueItem.objects.get(pk=a).status == Status.COMPLETED
    assert ExtractionMetric.objects.get(job_id=a).outcome == Outcome.COMPLETED
    statuses = dict(Document.objects.values_list("pk", "status"))
    assert statuses == {first.pk: "completed", second.pk: "processing"}
    # Fenced like ``complete``: a claim no longer held records nothing, claims still.
    done, following = noop.complete_and_claim(
        b, 5, worker_id="w2", attempt=1, subject_id=second.pk, queues=None
    )
    assert not done and following is None
    assert QueueItem.objects.get(pk=b).status == Status.PROCESSING


def test_complete_and_claim_leaves_the_subject_status_true(make_document):
    """Another job of the same document waits: whether it is claimed with the
    completion (SQLite: two statements) or passed over for the next claim
    (PostgreSQL: a statement writes a row once), the document's status says what
    its jobs are doing."""
    document = make_document(b"one")
    a = QueueManager(Operation.NOOP).enqueue(document.pk)
    b = QueueManager(Operation.EXTRACT).enqueue(document.pk)
    queue = QueueManager()
    assert queue.claim("w1").pk == a
    _, following = queue.complete_and_claim(
        a, 5, worker_id="w1", attempt=1, subject_id=document.pk, queues=None
    )
    if following is None:
        following = queue.claim("w1")
    assert following.pk == b
    document.refresh_from_db()
    assert document.status == "processing"


# --- Bulk: the operators' actions on many jobs at once ----------------------------


def end_state(job_ids: list[int]) -> list[tuple]:
    """What a cancel or retry leaves of each job (its task's errors too), its
    document and its metrics, comparable between two sets of jobs."""
    return [
        (
            item.operation,
            item.status,
            item.attempts,
            item.error_type,
            item.error_message,
            item.claimed_by,
            item.next_retry_at is None,
            item.started_at is None,
            item.finished_at is None,
            item.payload.get("errors"),
            item.document
            and (
                item.document.status,
                item.document.error_type,
                item.document.error_message,
            ),
            metrics_of(item.pk),
        )
        for item in (QueueItem.objects.get(pk=job_id) for job_id in job_ids)
    ]


@pytest.fixture
def every_kind_of_job(job_in_state, queue):
    """Jobs in each state, tasks among them, and the retry's hard cases: a document
    that failed twice, and one queued again since it failed."""
    from tests.jobqueue.task_apps import contract

    def make() -> list[int]:
        jobs = [job_in_state(state) for state in Status.values]
        # Not due within the test: a claim below would promote it to pending (its
        # first backoff is 0.5 s), in one set and not the other.
        QueueItem.objects.filter(pk__in=jobs, status=Status.RETRY_PENDING).update(
            next_retry_at=timezone.now() + timedelta(hours=1)
        )

        def fail(job_id: int, error_type: str) -> None:
            assert DocumentQueueService(queue).mark_in_progress(
                queue.get_job(job_id), "w1"
            )
            assert queue.failed(job_id, "broken", error_type)

        task = int(contract.echo.enqueue(1).id)
        later = contract.echo.using(run_after=timezone.now() + timedelta(hours=1))
        deferred_task = int(later.enqueue(2).id)
        failed_task = int(contract.echo.enqueue(3).id)
        fail(failed_task, ErrorType.UNSUPPORTED)
        older = job_in_state(Status.FAILED)
        newer = queue.enqueue(document_of(older).pk)
        fail(newer, ErrorType.CORRUPTION)
        requeued = job_in_state(Status.FAILED)
        queue.enqueue(document_of(requeued).pk)
        return [*jobs, task, deferred_task, failed_task, older, newer, requeued]

    return make


@pytest.mark.parametrize("batch", [1, 1000])
def test_cancel_many_ends_every_job_as_cancelling_each_does(
    every_kind_of_job, queue, batch, django_capture_on_commit_callbacks
):
    from django_tasks import default_task_backend
    from django_tasks.signals import task_finished

    announced: list[str] = []

    def on_finished(sender, task_result, **kwargs):
        announced.append(task_result.id)

    task_finished.connect(on_finished)
    try:
        each, together = every_kind_of_job(), every_kind_of_job()
        with django_capture_on_commit_callbacks(execute=True):
            cancelled_each = {job for job in each if queue.cancel(job)}
        with django_capture_on_commit_callbacks(execute=True):
            cancelled = set(queue.cancel_many(together, batch=batch))
    finally:
        task_finished.disconnect(on_finished)

    assert [job in cancelled for job in together] == [
        job in cancelled_each for job in each
    ]
    assert len(cancelled) == 4  # pending, retry_pending, both tasks waiting
    assert end_state(together) == end_state(each)
    tasks = [job for job in cancelled if QueueItem.objects.get(pk=job).document is None]
    for job in tasks:
        result = default_task_backend.get_result(str(job))
        assert [error.traceback for error in result.errors] == [
            "Cancelled before it ran."
        ]
    assert sorted(announced[len(announced) // 2 :]) == sorted(map(str, tasks))


@pytest.mark.parametrize("batch", [1, 1000])
def test_retry_failed_many_ends_every_job_as_retrying_each_does(
    every_kind_of_job, queue, batch
):
    each, together = every_kind_of_job(), every_kind_of_job()
    # As the admin did, one by one in its list's order: newest first.
    retried_each = {
        job for job in sorted(each, reverse=True) if queue.retry_failed(job)
    }
    retried = set(queue.retry_failed_many(together, batch=batch))

    assert [job in retried for job in together] == [job in retried_each for job in each]
    # The failed extraction and task, and the newer of the document that failed
    # twice; not the older one, nor the document queued again.
    assert len(retried) == 3
    assert end_state(together) == end_state(each)


def test_bulk_cancel_and_retry_touch_only_the_jobs_given(job_in_state, queue):
    waiting, other_waiting = job_in_state(Status.PENDING), job_in_state(Status.PENDING)
    failed, other_failed = job_in_state(Status.FAILED), job_in_state(Status.FAILED)
    assert queue.cancel_many([waiting, failed]) == [waiting]
    assert queue.retry_failed_many([failed, waiting]) == [failed]
    assert queue.cancel_many([]) == [] and queue.retry_failed_many([]) == []
    assert [queue.get_job(j).status for j in (other_waiting, other_failed)] == [
        Status.PENDING,
        Status.FAILED,
    ]


def seed_jobs(owner, count: int, status: str) -> list[int]:
    """``count`` documents with one job each in ``status``, in a few statements."""
    documents = Document.objects.bulk_create(
        Document(owner=owner, original_filename=f"{n}.txt", size=1, sha256="0" * 64)
        for n in range(count)
    )
    items = QueueItem.objects.bulk_create(
        QueueItem(
            document=document,
            status=status,
            attempts=1,
            error_type=ErrorType.TIMEOUT if status == Status.FAILED else "",
        )
        for document in documents
    )
    return [item.pk for item in items]


@pytest.mark.parametrize(
    ("status", "action"),
    [(Status.PENDING, "cancel_many"), (Status.FAILED, "retry_failed_many")],
)
def test_bulk_cancel_and_retry_take_as_many_statements_for_500_jobs_as_for_10(
    user, queue, status, action
):
    """The statements of a batch do not grow with its jobs: the admin's "select all"
    was one transaction per job, minutes for tens of thousands."""

    def statements(count: int) -> list[str]:
        jobs = seed_jobs(user, count, status)
        with CaptureQueriesContext(connection) as captured:
            assert len(getattr(queue, action)(jobs)) == count
        return [query["sql"] for query in captured]

    few, many = statements(10), statements(500)
    assert len(many) == len(few)
    assert sum("NOTIFY" in statement for statement in many) <= 1
    # Past a batch, a batch's statements more.
    more = seed_jobs(user, 30, status)
    with CaptureQueriesContext(connection) as captured:
        getattr(queue, action)(more, batch=10)
    notify = sum("NOTIFY" in query["sql"] for query in captured)
    assert len(captured) - notify == 3 * (len(few) - notify)


def test_the_guides_retry_of_listed_jobs_is_set_based_too(user):
    # ExtractionWorker.retry_failed_jobs(ids) went job by job, as the admin did.
    worker = ExtractionWorker(num_workers=1)

    def statements(count: int) -> int:
        jobs = seed_jobs(user, count, Status.FAILED)
        with CaptureQueriesContext(connection) as captured:
            assert worker.retry_failed_jobs(jobs) == count
        return len(captured)

    assert statements(10) == statements(200)


def test_clear_finished_nulls_what_points_at_the_items_and_counts_them(
    job_in_state, queue
):
    done = [job_in_state(Status.COMPLETED) for _ in range(3)]
    failed, active = job_in_state(Status.FAILED), job_in_state(Status.PENDING)
    WorkerHeartbeat.objects.create(worker_id="w9", current_job_id=done[0])
    QueueItem.objects.update(updated_at=timezone.now() - timedelta(days=10))
    kept_metrics = ExtractionMetric.objects.exclude(job_id__in=done).count()

    assert queue.clear_finished(7, [Status.COMPLETED], batch=2) == 3
    assert set(QueueItem.objects.values_list("pk", flat=True)) == {failed, active}
    assert WorkerHeartbeat.objects.get(worker_id="w9").current_job_id is None
    # The attempts' history stays, no longer tied to a job.
    assert ExtractionMetric.objects.filter(job=None).count() == 3
    assert ExtractionMetric.objects.exclude(job=None).count() == kept_metrics
    assert queue.clear_finished(7, batch=2) == 1
    assert queue.clear_finished(7) == 0


def test_clear_finished_reads_a_batch_at_a_time(user, queue):
    """Django's delete() would load every row (300,000: half a minute and 600 MB);
    here each batch is a few statements and holds only its ids."""
    jobs = seed_jobs(user, 25, Status.COMPLETED)
    ExtractionMetric.objects.bulk_create(
        ExtractionMetric(job_id=job, attempt=1, outcome=Outcome.COMPLETED)
        for job in jobs
    )
    QueueItem.objects.update(updated_at=timezone.now() - timedelta(days=10))
    with CaptureQueriesContext(connection) as captured:
        assert queue.clear_finished(7, batch=10) == 25
    selects = [q["sql"] for q in captured if q["sql"].startswith("SELECT")]
    # Three batches (each read, then read again under lock as it is deleted) and
    # the read that finds no more; no row loaded to be deleted.
    assert len(selects) == 7
    assert all('"extraction_queue"."id"' in s.split("FROM")[0] for s in selects)
    assert QueueItem.objects.count() == 0
    assert ExtractionMetric.objects.filter(job=None).count() == 25


@pytest.mark.django_db(transaction=True)  # the foreign key is checked at commit
def test_enqueue_batch_naming_no_document_queues_nothing_and_says_so(
    make_document, queue
):
    with pytest.raises(ValueError, match="There is no document 999999: nothing"):
        queue.enqueue_batch([make_document().pk, 999_999])
    assert not QueueItem.objects.exists()
