"""ExtractionWorker in this process: real threads, real extraction children, real DB."""

from __future__ import annotations

import threading
import time

import pytest
from django.urls import reverse

from jobqueue.models import (
    ErrorType,
    ExtractionMetric,
    Operation,
    QueueControl,
    QueueItem,
    Status,
    WorkerHeartbeat,
)
from jobqueue.services import QueueManager
from jobqueue.worker import ExtractionWorker, process_document_queue
from tests.conftest import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

TEST_EXTRACTOR = "tests.extractors_for_tests.extract"


@pytest.fixture
def make_worker():
    """Workers with fast polling; always stopped at teardown."""
    workers: list[ExtractionWorker] = []

    def make(**kwargs) -> ExtractionWorker:
        options = {"num_workers": 1, "poll_interval": 0.1, "heartbeat_interval": 0.5}
        worker = ExtractionWorker(**{**options, **kwargs})
        workers.append(worker)
        return worker

    yield make
    for worker in workers:
        if worker.is_running():
            worker.stop(timeout=5)


@pytest.fixture
def slow_extractor(settings):
    settings.QUEUE_EXTRACT_FUNCTION = TEST_EXTRACTOR


def status_of(job_id: int) -> str:
    return QueueItem.objects.get(pk=job_id).status


def test_worker_extracts_documents_and_reports_status(make_worker, make_document):
    worker = make_worker(num_workers=2)
    docs = [make_document(f"document number {n}\n".encode()) for n in range(6)]
    worker.start()
    job_ids = worker.enqueue_batch([d.pk for d in docs])
    wait_for(lambda: all(status_of(j) == Status.COMPLETED for j in job_ids), 60)

    for doc in docs:
        doc.refresh_from_db()
        assert doc.status == Status.COMPLETED
        assert doc.text.startswith("document number")
    assert ExtractionMetric.objects.filter(outcome="completed").count() == 6
    status = worker.get_status()
    for key in ("running", "paused", "queue_depth", "processing", "num_workers"):
        assert key in status
    assert (
        status["running"]
        and status["num_workers"] == 2
        and status["active_workers"] == 2
    )
    assert status["stats"]["jobs_completed"] == 6
    assert {"throughput_per_second", "avg_extraction_time_ms"} <= set(status["stats"])
    assert {w["worker_id"] for w in status["workers"]} == set(
        WorkerHeartbeat.objects.values_list("worker_id", flat=True)
    )
    assert len(worker.get_recent_jobs(limit=4)) == 4

    assert worker.stop(timeout=10) is True
    assert not worker.is_running()
    assert set(WorkerHeartbeat.objects.values_list("status", flat=True)) == {"stopped"}


def test_callbacks_fire_and_a_failing_callback_is_not_fatal(make_worker, make_document):
    worker = make_worker()
    events: list[tuple[str, int]] = []
    worker.on("job_started", lambda job, worker_id: events.append(("started", job.pk)))
    worker.on("job_started", lambda job, worker_id: 1 / 0)
    worker.on("job_completed", lambda job, result: events.append(("completed", job.pk)))
    worker.on("job_failed", lambda job, error: events.append(("failed", job.pk)))
    with pytest.raises(ValueError, match="Unknown event"):
        worker.on("job_exploded", print)
    good = worker.enqueue(make_document(b"fine text").pk)
    bad = worker.enqueue(
        make_document(b"%PDF-1.4 not really", "x.pdf", "application/pdf").pk
    )
    worker.start()
    wait_for(lambda: ("failed", bad) in events and ("completed", good) in events, 60)
    assert ("started", good) in events and ("started", bad) in events
    assert worker.is_running()


def test_a_thread_that_ran_out_of_work_says_idle_with_no_job_at_once(
    make_worker, make_document
):
    """Not after its idle wait (up to 5 s), and not with its last job as current."""
    worker = make_worker()
    worker.start()
    job_id = worker.enqueue(make_document(b"one job").pk)
    wait_for(lambda: status_of(job_id) == Status.COMPLETED, 30)

    def says_idle() -> bool:
        (thread,) = worker.get_status()["workers"]
        beat = WorkerHeartbeat.objects.get(worker_id=thread["worker_id"])
        return (thread["status"], thread["current_job"], beat.current_job_id) == (
            WorkerHeartbeat.State.IDLE,
            None,
            None,
        )

    wait_for(says_idle, 2)


def test_the_guides_callbacks_hear_of_text_jobs_not_thumbnails(
    make_worker, make_document, settings, caplog
):
    """The guide's ``on_completed`` reads ``result.text``; the thumbnail that follows
    each document is the product's own side work, and its result is a PNG."""
    settings.THUMBNAILS = True
    worker = make_worker()
    heard: list[tuple[str, int, int]] = []
    worker.on(
        "job_completed",
        lambda job, result: heard.append((job.operation, job.pk, len(result.text))),
    )
    job_id = worker.enqueue(make_document(b"eleven char").pk)
    worker.start()
    wait_for(
        lambda: QueueItem.objects.filter(
            operation="thumbnail", status=Status.COMPLETED
        ).exists(),
        60,
    )
    assert heard == [("extract", job_id, 11)]
    assert "callback failed" not in caplog.text


def test_pause_and_resume_locally_and_through_the_operators_switch(
    make_worker, make_document, caplog
):
    worker = make_worker()
    worker.pause()  # before start: a claim already under way would still complete
    worker.start()
    assert worker.is_paused()
    first = worker.enqueue(make_document(b"one").pk)
    wait_for(lambda: worker.get_status()["workers"][0]["status"] == "paused", 10)
    assert status_of(first) == Status.PENDING
    worker.resume()
    wait_for(lambda: status_of(first) == Status.COMPLETED, 30)

    QueueControl.set_paused(True, by="operator")
    wait_for(worker.is_paused, 10)
    # The guide's advice for a queue not draining, worker.resume(), cannot lift an
    # operator's pause of every worker: it holds, and the log says where to lift it.
    worker.resume()
    assert worker.is_paused()
    assert "Resume it on the queue dashboard or with manage.py resume_queue" in (
        caplog.text
    )
    second = worker.enqueue(make_document(b"two").pk)
    wait_for(lambda: worker.get_status()["workers"][0]["status"] == "paused", 10)
    assert status_of(second) == Status.PENDING
    QueueControl.set_paused(False)
    wait_for(lambda: status_of(second) == Status.COMPLETED, 30)
    # The log says why the pool stopped taking jobs, and took them up again.
    said = [
        r.getMessage() for r in caplog.records if "by an operator" in r.getMessage()
    ]
    assert said == [
        "Processing paused by an operator",
        "Processing resumed by an operator",
    ]


def test_jobs_run_by_priority_then_age(make_worker, make_document):
    worker = make_worker()
    order: list[int] = []
    worker.on("job_started", lambda job, worker_id: order.append(job.pk))
    docs = [make_document(f"doc {n}".encode()) for n in range(9)]
    expected_first = [worker.enqueue(docs[n].pk, priority=10) for n in range(3)]
    expected_last = [worker.enqueue(docs[n].pk, priority=-5) for n in range(3, 6)]
    middle = [worker.enqueue(docs[n].pk) for n in range(6, 9)]
    worker.start()
    wait_for(lambda: len(order) == 9, 60)
    assert order == expected_first + middle + expected_last


def test_hanging_job_times_out_is_retried_then_fails_while_others_complete(
    make_worker, make_document, slow_extractor
):
    worker = make_worker(num_workers=2, extraction_timeout=1, max_retries=1)
    hanging = worker.enqueue(make_document(b"sleep:60").pk)
    worker.start()
    others = [worker.enqueue(make_document(f"quick {n}".encode()).pk) for n in range(5)]
    wait_for(lambda: status_of(hanging) == Status.FAILED, 60)
    job = QueueItem.objects.get(pk=hanging)
    assert job.error_type == ErrorType.TIMEOUT
    assert job.attempts == 2  # the first try and one retry, per max_retries=1
    outcomes = list(
        ExtractionMetric.objects.filter(job=job)
        .order_by("id")
        .values_list("outcome", flat=True)
    )
    assert outcomes == ["retry", "failed"]
    wait_for(lambda: all(status_of(j) == Status.COMPLETED for j in others), 60)
    assert worker.is_running()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"exit", "crashed (exit code 3)"),
        (b"segfault", "crashed (killed by SIGSEGV)"),
        (b"memory", "memory"),
    ],
)
def test_a_crashing_or_exploding_extractor_costs_one_job_not_the_worker(
    make_worker, make_document, slow_extractor, settings, content, message
):
    settings.QUEUE_CHILD_MEMORY_MB = 400
    worker = make_worker(max_retries=0)
    bad = worker.enqueue(make_document(content).pk)
    worker.start()
    wait_for(lambda: status_of(bad) == Status.FAILED, 60)
    assert message in QueueItem.objects.get(pk=bad).error_message
    good = worker.enqueue(make_document(b"still working").pk)
    wait_for(lambda: status_of(good) == Status.COMPLETED, 60)


def test_the_log_tells_a_retried_attempt_from_the_end_of_the_job(
    make_worker, make_document, slow_extractor, caplog
):
    worker = make_worker(max_retries=1)
    bad = worker.enqueue(make_document(b"exit").pk)
    worker.start()
    wait_for(lambda: status_of(bad) == Status.FAILED, 60)
    lines = [
        r.getMessage() for r in caplog.records if f"job {bad} failed" in r.getMessage()
    ]
    assert len(lines) == 2, lines
    assert "at attempt 1; trying again in 0.5 s" in lines[0]
    assert "failed for good (unknown) after 2 attempts" in lines[1]
    retried = [r for r in caplog.records if getattr(r, "event", "") == "job_failed"]
    assert [r.retry_in_seconds for r in retried] == [0.5, None]


def test_stop_releases_a_job_that_does_not_finish_in_time(
    make_worker, make_document, slow_extractor
):
    worker = make_worker()
    job_id = worker.enqueue(make_document(b"sleep:60").pk)
    worker.start()
    wait_for(lambda: status_of(job_id) == Status.PROCESSING, 30)
    assert worker.stop(timeout=0.5) is False
    job = QueueItem.objects.get(pk=job_id)
    assert job.status == Status.PENDING
    assert job.attempts == 0  # a released job was not really attempted
    assert set(WorkerHeartbeat.objects.values_list("status", flat=True)) == {"stopped"}


def test_retry_failed_jobs_puts_failed_jobs_back(make_worker, make_document):
    worker = make_worker()
    job_id = worker.enqueue(
        make_document(b"%PDF-1.4 broken", "b.pdf", "application/pdf").pk
    )
    worker.start()
    wait_for(lambda: status_of(job_id) == Status.FAILED, 30)
    worker.pause()
    assert worker.retry_failed_jobs([job_id]) == 1
    assert status_of(job_id) == Status.PENDING
    assert worker.retry_failed_jobs() == 0


def test_process_document_queue_processes_what_is_due(make_document, queue):
    good = [queue.enqueue(make_document(f"text {n}".encode()).pk) for n in range(3)]
    bad = queue.enqueue(make_document(b"%PDF-1.4 junk", "j.pdf", "application/pdf").pk)
    assert process_document_queue(limit=2) == {
        "processed": 2,
        "completed": 2,
        "failed": 0,
    }
    counts = process_document_queue()
    assert counts == {"processed": 2, "completed": 1, "failed": 1}
    assert all(status_of(j) == Status.COMPLETED for j in good)
    assert status_of(bad) == Status.FAILED
    assert WorkerHeartbeat.objects.get(
        worker_id__startswith="cron:", jobs_completed=1
    ).status == ("stopped")


def test_an_idle_worker_wakes_for_a_new_job_long_before_its_poll(
    make_worker, make_document, queue
):
    """The database's own signal wakes it (PostgreSQL: NOTIFY; SQLite: a write to
    the database's directory, then PRAGMA data_version), not the fallback poll."""
    worker = make_worker(poll_interval=600)
    worker.start()
    time.sleep(1)  # its first look found nothing: it now waits
    job_id = queue.enqueue(make_document(b"wake up").pk)
    wait_for(lambda: status_of(job_id) == Status.COMPLETED, 30)


def test_one_claim_serves_every_idle_thread(make_worker, make_document):
    """A burst of work wakes one idle thread, which claims for all of them in one
    statement, where each would otherwise claim (and race) on its own."""
    threads = 4
    documents = [make_document(f"{n}".encode()).pk for n in range(threads)]
    worker = make_worker(num_workers=threads, poll_interval=600)
    worker.start()
    wait_for(lambda: len(worker._idle) == threads, 30)
    claims: list[tuple[int, int]] = []  # (threads claimed for, jobs found)

    def counted(claim, batch: bool):
        def run(*args, **kwargs):
            found = claim(*args, **kwargs)
            claims.append(
                (len(args[0]), len(found)) if batch else (1, int(found is not None))
            )
            return found

        return run

    worker.queue.claim = counted(worker.queue.claim, batch=False)
    worker.queue.claim_batch = counted(worker.queue.claim_batch, batch=True)
    job_ids = QueueManager(Operation.NOOP).enqueue_batch(documents)
    wait_for(lambda: all(status_of(j) == Status.COMPLETED for j in job_ids), 30)
    # The first claim took all four; any after it (threads idle again) found none.
    assert claims[0] == (threads, threads)
    assert [found for _, found in claims[1:]] == [0] * (len(claims) - 1)
    claimed_by = QueueItem.objects.values_list("claimed_by", flat=True)
    assert sorted(claimed_by) == sorted(s.worker_id for s in worker._states)


def test_a_drain_with_two_threads_takes_no_more_than_its_limit(make_document, queue):
    jobs = [queue.enqueue(make_document(f"text {n}".encode()).pk) for n in range(5)]
    worker = ExtractionWorker(num_workers=2, heartbeat_interval=0.2, poll_interval=0.1)
    progress = []
    counts = worker.drain(limit=3, on_progress=progress.append)
    assert counts == {"processed": 3, "completed": 3, "failed": 0}
    assert progress == [1, 1, 1]
    statuses = sorted(status_of(j) for j in jobs)
    assert statuses == [Status.COMPLETED] * 3 + [Status.PENDING] * 2
    # The same loop as the pool: its heartbeats end stopped, its children are gone.
    assert not worker.is_running()
    assert set(WorkerHeartbeat.objects.values_list("status", flat=True)) == {
        WorkerHeartbeat.State.STOPPED
    }


def test_a_drain_watches_for_no_wake_up(make_document, queue):
    """A drain's threads end when nothing is due, so nothing would wait for the
    database's signal; the watch's stop (up to half a second, in the kernel) would
    only hold up the end of every cron run."""
    queue.enqueue(make_document(b"some text").pk)
    worker = ExtractionWorker(num_workers=1, heartbeat_interval=0.2, poll_interval=0.1)
    running = []
    worker.on("job_started", lambda *_: running.extend(threading.enumerate()))
    assert worker.drain()["completed"] == 1
    assert running
    assert "queue-wakeup" not in {thread.name for thread in running}


def test_process_document_queue_honours_the_pause_switch(make_document, queue):
    job_id = queue.enqueue(make_document().pk)
    QueueControl.set_paused(True)
    assert process_document_queue() == {"processed": 0, "completed": 0, "failed": 0}
    assert status_of(job_id) == Status.PENDING


@pytest.mark.parametrize(
    ("token", "header", "expected"),
    [
        ("", "Bearer anything", 404),
        ("s3cret-token", None, 401),
        ("s3cret-token", "Bearer", 401),
        ("s3cret-token", "Bearer wrong-token", 403),
        ("s3cret-token", "Token s3cret-token", 401),
        ("s3cret-token", "Bearer s3cret-token", 200),
    ],
)
def test_cron_endpoint_needs_the_token(
    client, settings, make_document, queue, token, header, expected
):
    settings.CRON_TOKEN = token
    job_id = queue.enqueue(make_document().pk)
    headers = {"HTTP_AUTHORIZATION": header} if header else {}
    response = client.post(reverse("jobqueue:cron"), **headers)
    assert response.status_code == expected
    if expected == 200:
        assert response.json() == {
            "processed": 1,
            "completed": 1,
            "failed": 0,
            "paused": False,
        }
        assert status_of(job_id) == Status.COMPLETED
    else:
        assert status_of(job_id) == Status.PENDING


@pytest.mark.parametrize("method", ["get", "post"])
def test_a_disabled_cron_endpoint_is_a_json_404(client, settings, queue, method):
    settings.CRON_TOKEN = ""
    response = getattr(client, method)(
        reverse("jobqueue:cron"), HTTP_AUTHORIZATION="Bearer anything"
    )
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "not_found"
    assert "CRON_TOKEN is not set" in error["message"]


def test_cron_endpoint_answers_without_its_trailing_slash(
    client, settings, make_document, queue
):
    settings.CRON_TOKEN = "s3cret-token"
    job_id = queue.enqueue(make_document().pk)
    url = reverse("jobqueue:cron").rstrip("/")
    response = client.post(url, HTTP_AUTHORIZATION="Bearer s3cret-token")
    assert response.status_code == 200 and response.json()["processed"] == 1
    assert status_of(job_id) == Status.COMPLETED


def test_cron_endpoint_refuses_get(client, settings):
    settings.CRON_TOKEN = "s3cret-token"
    response = client.get(
        reverse("jobqueue:cron"), HTTP_AUTHORIZATION="Bearer s3cret-token"
    )
    assert response.status_code == 405


def test_two_workers_never_run_the_same_job(make_worker, make_document):
    seen: list[int] = []
    lock = threading.Lock()

    def record(job, worker_id):
        with lock:
            seen.append(job.pk)

    workers = [make_worker(num_workers=2) for _ in range(2)]
    for worker in workers:
        worker.on("job_started", record)
    job_ids = workers[0].enqueue_batch(
        [make_document(f"n{n}".encode()).pk for n in range(40)]
    )
    for worker in workers:
        worker.start()
    wait_for(lambda: all(status_of(j) == Status.COMPLETED for j in job_ids), 120)
    assert sorted(seen) == sorted(job_ids)
