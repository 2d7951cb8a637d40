"""Security audit 13: the product attacked from outside, as a person, another person,
view-only staff, an operator, a script with a token and cron.

Found: uploads sent at once, from the upload form and the API, each counted the
person's active jobs before any of the others had made its own, so together they
went past ``USER_MAX_ACTIVE_JOBS`` (with a limit of 3, 19 of 30 uploads sent at once
to a real server were kept); reprocesses sent at once did the same (9 of 19 queued).
And a person's reprocess of a document whose job an operator had put back in the
queue (a lower priority) raised that job to the person's priority, 0.
"""

from __future__ import annotations

import threading

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client

from documents import api, services, views
from documents.models import Document
from documents.tokens import create_token
from jobqueue.models import Operation, QueueItem
from jobqueue.services import QueueManager

pytestmark = pytest.mark.django_db(transaction=True)


def _at_once(*calls) -> list:
    """Run ``calls`` in threads of their own (each its own connection); their
    answers, in order."""
    answers: list = [None] * len(calls)

    def run(index: int) -> None:
        try:
            answers[index] = calls[index]()
        except BaseException as error:  # noqa: BLE001 - shown by the assertion
            answers[index] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return answers


def test_the_form_and_the_api_at_once_stay_within_the_active_jobs_limit(
    settings, monkeypatch, user
):
    """Both uploads pass the views' own count (nothing is active yet) before either
    is stored: the two then took the person past a limit of 1."""
    settings.USER_MAX_ACTIVE_JOBS = 1
    both_counted = threading.Barrier(2, timeout=60)
    hash_file = services.file_sha256

    def after_both_counted(file):
        both_counted.wait()  # each view has checked the limit by now
        return hash_file(file)

    monkeypatch.setattr(services, "file_sha256", after_both_counted)
    page = Client()
    page.force_login(user)
    key = create_token(user)[1]

    def by_the_form():
        upload = SimpleUploadedFile("page.txt", b"sent by the form\n")
        return page.post("/documents/upload/", {"file": upload}).status_code

    def by_the_api():
        upload = SimpleUploadedFile("script.txt", b"sent by a script\n")
        response = Client().post(
            "/api/documents/",
            {"file": upload},
            headers={"Authorization": f"Token {key}"},
        )
        return response.status_code, response.headers.get("Retry-After")

    form_status, (api_status, retry_after) = _at_once(by_the_form, by_the_api)

    assert QueueItem.objects.active().filter(document__owner=user).count() == 1
    assert Document.objects.filter(owner=user).count() == 1
    # One kept (the form's redirect, or the API's 202), the other refused as over
    # the limit, as it is when the limit is already reached.
    assert sorted([form_status, api_status]) in ([202, 429], [302, 429])
    if api_status == 429:
        assert retry_after == "60"


def test_reprocesses_at_once_stay_within_the_active_jobs_limit(
    settings, monkeypatch, user, make_document
):
    """Two of the person's finished documents reprocessed at once, one from its page
    and one by a script: each request counted the person's active jobs before the
    other had queued its own, and both were queued past a limit of 1."""
    settings.USER_MAX_ACTIVE_JOBS = 1
    first, second = (make_document(content=n, name="d.txt") for n in (b"1", b"2"))
    Document.objects.update(status="completed")
    both_asked = threading.Barrier(2, timeout=60)

    def after_both_asked(reprocess):
        def wait_then_reprocess(**kwargs):
            both_asked.wait()  # each view is past its own look at the limit
            return reprocess(**kwargs)

        return wait_then_reprocess

    for view in (views, api):
        monkeypatch.setattr(
            view, "document_reprocess", after_both_asked(view.document_reprocess)
        )
    page = Client()
    page.force_login(user)
    key = create_token(user)[1]

    def from_the_page():
        return page.post(f"/documents/{first.pk}/reprocess/").status_code

    def by_a_script():
        return (
            Client()
            .post(
                f"/api/documents/{second.pk}/reprocess/",
                headers={"Authorization": f"Token {key}"},
            )
            .status_code
        )

    answers = _at_once(from_the_page, by_a_script)

    assert QueueItem.objects.active().filter(document__owner=user).count() == 1
    assert sorted(answers) in ([202, 429], [302, 429])


def test_a_persons_reprocess_does_not_undo_an_operators_lower_priority(
    user, user_client, make_document
):
    """An operator lowered a person's waiting job ("Lower priority of selected
    waiting jobs"); the person's reprocess, from the page or the API, answered that
    it was already queued, and raised it back to 0: only operators set priorities."""
    document = make_document()
    job_id = QueueManager(Operation.REPROCESS).enqueue(document.pk, priority=-50)
    key = create_token(user)[1]

    page = user_client.post(f"/documents/{document.pk}/reprocess/")
    script = Client().post(
        f"/api/documents/{document.pk}/reprocess/",
        headers={"Authorization": f"Token {key}"},
    )
    bulk = user_client.post(
        "/documents/bulk/", {"action": "reprocess", "id": [document.pk]}
    )

    assert (page.status_code, script.status_code, bulk.status_code) == (302, 202, 302)
    assert list(QueueItem.objects.values_list("pk", "priority")) == [(job_id, -50)]


def test_an_operators_reprocess_still_raises_a_waiting_jobs_priority(
    staff_user, make_document
):
    document = make_document()
    job_id = QueueManager(Operation.REPROCESS).enqueue(document.pk, priority=-50)
    key = create_token(staff_user)[1]

    answer = Client().post(
        f"/api/documents/{document.pk}/reprocess/",
        {"priority": 20},
        headers={"Authorization": f"Token {key}"},
    )

    assert answer.status_code == 202
    assert list(QueueItem.objects.values_list("pk", "priority")) == [(job_id, 20)]
