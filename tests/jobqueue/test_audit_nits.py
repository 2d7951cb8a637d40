"""What a worker says of a job taken from it (deleted, or rescued), and the plain
shapes of ``get_status()`` and ``get_recent_jobs()``."""

from __future__ import annotations

import json
import logging
import time
from concurrent.futures import Future

import pytest

from documents.services import document_delete
from jobqueue.models import ExtractionMetric, QueueItem
from jobqueue.runner import Flight
from jobqueue.worker import ExtractionWorker

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def held_job(make_document, queue):
    """A worker (not started) whose thread holds a running job, and its document."""
    worker = ExtractionWorker(num_workers=1)
    state = worker._states[0]
    document = make_document(b"some text\n")
    queue.enqueue(document.pk)
    item = queue.claim(state.worker_id)
    flight = Flight(item=item, started=time.monotonic(), future=Future())
    state.held[item.pk] = flight
    return worker, state, flight, document


def take_away(how: str, flight: Flight, document) -> None:
    """Delete the job with its document (as the API does), or rescue it elsewhere."""
    if how == "deleted":
        document_delete(document=document)
    else:
        QueueItem.objects.filter(pk=flight.item.pk).update(
            claimed_by="elsewhere:w1", attempts=flight.item.attempts + 1
        )


@pytest.mark.parametrize(
    ("how", "said", "logged_refusals"),
    [
        ("deleted", "was deleted meanwhile", 0),
        ("rescued", "was rescued from this worker meanwhile", 1),
    ],
)
def test_a_refused_result_says_whether_its_job_was_deleted_or_rescued(
    held_job, caplog, how, said, logged_refusals
):
    worker, state, flight, document = held_job
    take_away(how, flight, document)
    with caplog.at_level(logging.INFO, logger="jobqueue.worker"):
        worker._refused(state, flight)
    assert f"job {flight.item.pk} {said}; its result is refused" in caplog.text
    # A deleted job leaves nothing to log the refusal against: no failed attempt.
    assert "Could not log" not in caplog.text
    assert state.jobs_refused == 1
    refusals = ExtractionMetric.objects.filter(outcome="refused")
    assert refusals.count() == logged_refusals


@pytest.mark.parametrize(
    ("how", "said"),
    [("deleted", "was deleted"), ("rescued", "was rescued while this worker stalled")],
)
def test_a_lost_job_s_extraction_is_stopped_with_the_reason(
    held_job, caplog, how, said
):
    worker, _state, flight, document = held_job
    take_away(how, flight, document)
    with caplog.at_level(logging.INFO, logger="jobqueue.worker"):
        worker._stop_lost_jobs()
    assert flight.future.cancelled()
    assert f"job {flight.item.pk} {said}; stopping its extraction" in caplog.text


def test_get_status_gives_each_worker_s_status_as_a_plain_string():
    status = ExtractionWorker(num_workers=2).get_status()
    assert [type(w["status"]) for w in status["workers"]] == [str, str]
    assert json.loads(json.dumps(status))["workers"][0]["status"] == "idle"


def test_recent_jobs_name_their_document_s_file_plainly(make_document, queue):
    job_id = queue.enqueue(make_document(name="report.txt").pk)
    [recent] = ExtractionWorker().get_recent_jobs()
    assert (recent["id"], recent["filename"]) == (job_id, "report.txt")
    assert not [key for key in recent if "__" in key]
