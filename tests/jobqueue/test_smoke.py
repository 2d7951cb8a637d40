import pytest

from jobqueue.models import Status


@pytest.mark.django_db
def test_enqueue_claim_complete(make_document, queue):
    doc = make_document()
    job_id = queue.enqueue(doc.pk)
    assert queue.enqueue(doc.pk) is None
    job = queue.claim("w1")
    assert job.pk == job_id and job.attempts == 1
    assert queue.complete(job_id)
    doc.refresh_from_db()
    assert doc.status == Status.COMPLETED
