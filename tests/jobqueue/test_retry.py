"""The retry policy: the guide's backoff table and which error types retry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from jobqueue import retry
from jobqueue.models import ErrorType, ExtractionMetric, QueueItem, Status
from jobqueue.sql import db_now

RETRYABLE = [ErrorType.TIMEOUT, ErrorType.UNKNOWN, ErrorType.EXTRACTOR_MISSING]
PERMANENT = [ErrorType.CORRUPTION, ErrorType.UNSUPPORTED]


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):
    """The users of conftest need no slow hashing here."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def make_due(job_id: int) -> None:
    """Move a job's retry time into the past instead of sleeping through the backoff."""
    QueueItem.objects.filter(pk=job_id).update(
        next_retry_at=timezone.now() - timedelta(seconds=1)
    )


# --- Pure policy ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("attempt", "delay"),
    [(1, 0.5), (2, 2.0), (3, 10.0), (4, 30.0), (5, 60.0), (6, 60.0), (100, 60.0)],
)
def test_backoff_follows_the_guides_table(attempt, delay):
    assert retry.backoff_delay(attempt) == delay
    assert retry.backoff_delay(attempt, ErrorType.TIMEOUT) == delay
    assert retry.backoff_delay(attempt, ErrorType.UNKNOWN) == delay


def test_backoff_table_constant_is_the_guides():
    assert retry.BACKOFF_SECONDS == (0.5, 2.0, 10.0, 30.0, 60.0)


@pytest.mark.parametrize(
    ("attempt", "delay"), [(1, 30.0), (2, 30.0), (3, 30.0), (4, 30.0), (5, 60.0)]
)
def test_extractor_missing_waits_at_least_thirty_seconds(attempt, delay):
    assert retry.backoff_delay(attempt, ErrorType.EXTRACTOR_MISSING) == delay


def test_attempt_numbers_below_one_use_the_first_delay():
    assert retry.backoff_delay(0) == 0.5


def test_next_retry_at_adds_the_delay_to_now():
    now = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
    assert retry.next_retry_at(now, 3, ErrorType.TIMEOUT) == now + timedelta(seconds=10)
    assert retry.next_retry_at(now, 1, ErrorType.EXTRACTOR_MISSING) == now + timedelta(
        seconds=30
    )


@pytest.mark.parametrize("error_type", RETRYABLE)
def test_transient_error_types_are_retryable(error_type):
    assert retry.is_retryable(error_type)


@pytest.mark.parametrize("error_type", PERMANENT)
def test_corruption_and_unsupported_are_permanent(error_type):
    assert not retry.is_retryable(error_type)


@pytest.mark.parametrize("error_type", ["", "boom", "TIMEOUT", "MemoryError", None])
def test_unexpected_error_types_normalise_to_unknown(error_type):
    assert retry.normalise_error_type(error_type) == ErrorType.UNKNOWN


@pytest.mark.parametrize("error_type", ErrorType.values)
def test_known_error_types_are_kept(error_type):
    assert retry.normalise_error_type(error_type) == error_type


# --- The policy applied by QueueManager.failed ----------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("error_type", RETRYABLE)
def test_retryable_failure_schedules_a_retry_after_the_backoff(
    make_document, queue, error_type
):
    document = make_document()
    job_id = queue.enqueue(document.pk)
    queue.claim("w1")
    before = db_now()
    assert queue.failed(job_id, "went wrong", error_type)
    after = db_now()
    job = queue.get_job(job_id)
    delay = timedelta(seconds=retry.backoff_delay(1, error_type))
    assert job.status == Status.RETRY_PENDING
    assert job.error_type == error_type
    assert before + delay <= job.next_retry_at <= after + delay
    document.refresh_from_db()
    assert document.status == Status.RETRY_PENDING
    assert document.error_type == error_type


@pytest.mark.django_db
def test_extractor_missing_is_not_retried_within_thirty_seconds(make_document, queue):
    job_id = queue.enqueue(make_document().pk)
    queue.claim("w1")
    before = db_now()
    queue.failed(job_id, "pdfplumber is not installed", ErrorType.EXTRACTOR_MISSING)
    assert queue.get_job(job_id).next_retry_at >= before + timedelta(seconds=30)


@pytest.mark.django_db
@pytest.mark.parametrize("error_type", PERMANENT)
def test_permanent_failure_fails_at_once_with_retries_left(
    make_document, queue, error_type
):
    document = make_document()
    job_id = queue.enqueue(document.pk)
    queue.claim("w1")
    assert queue.failed(job_id, "cannot read it", error_type, max_retries=5)
    job = queue.get_job(job_id)
    assert job.status == Status.FAILED
    assert job.attempts == 1
    assert job.next_retry_at is None
    assert job.finished_at is not None
    document.refresh_from_db()
    assert document.status == Status.FAILED
    assert (document.error_type, document.error_message) == (
        error_type,
        "cannot read it",
    )
    outcomes = list(ExtractionMetric.objects.values_list("outcome", flat=True))
    assert outcomes == [ExtractionMetric.Outcome.FAILED]


@pytest.mark.django_db
def test_unknown_error_type_is_stored_as_unknown_and_retried(make_document, queue):
    document = make_document()
    job_id = queue.enqueue(document.pk)
    queue.claim("w1")
    assert queue.failed(job_id, "odd", error_type="segfault")
    job = queue.get_job(job_id)
    assert job.error_type == ErrorType.UNKNOWN
    assert job.status == Status.RETRY_PENDING
    document.refresh_from_db()
    assert document.error_type == ErrorType.UNKNOWN
    assert ExtractionMetric.objects.get().error_type == ErrorType.UNKNOWN


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("max_retries", "expected_delays"),
    [(3, [0.5, 2.0, 10.0]), (5, [0.5, 2.0, 10.0, 30.0, 60.0]), (0, [])],
)
def test_every_attempt_waits_per_the_table_until_retries_run_out(
    make_document, queue, max_retries, expected_delays
):
    job_id = queue.enqueue(make_document().pk)
    delays = []
    for attempt in range(1, max_retries + 2):
        job = queue.claim("w1")
        assert (job.pk, job.attempts) == (job_id, attempt)
        before = db_now()
        assert queue.failed(job_id, f"try {attempt}", "timeout", max_retries)
        after = db_now()
        job = queue.get_job(job_id)
        if job.status == Status.FAILED:
            break
        delays.append((before, job.next_retry_at, after))
        make_due(job_id)
    assert job.status == Status.FAILED
    assert job.attempts == max_retries + 1
    assert len(delays) == len(expected_delays)
    for (before, retry_at, after), expected in zip(
        delays, expected_delays, strict=True
    ):
        delay = timedelta(seconds=expected)
        assert before + delay <= retry_at <= after + delay
    outcomes = list(
        ExtractionMetric.objects.order_by("id").values_list("outcome", flat=True)
    )
    assert outcomes == ["retry"] * max_retries + ["failed"]
