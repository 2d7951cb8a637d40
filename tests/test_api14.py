"""The JSON API as a team integrating it calls it (review api14): a body sent
compressed, and tags written by a Mac or in another case than the first time."""

from __future__ import annotations

import gzip
import json
import threading
import unicodedata

import pytest
from django.db import connection, transaction
from django.test import Client

from documents.extractors.base import ExtractionResult
from documents.models import Document, Tag
from documents.tokens import create_token
from jobqueue import operations
from jobqueue.models import QueueItem
from jobqueue.services import QueueManager
from tests.conftest import wait_for

pytestmark = pytest.mark.django_db

BOUNDARY = "api14"


@pytest.fixture
def api(user) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {create_token(user)[1]}")


def multipart(name: str, content: bytes) -> bytes:
    return (
        (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="{name}"\r\nContent-Type: text/plain\r\n\r\n'
        ).encode()
        + content
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )


# --- A body sent with a Content-Encoding ---------------------------------------------


def test_a_gzipped_upload_is_415_saying_to_send_it_as_it_is(api):
    """It was parsed as it stood: "Send the document as a file in the multipart
    field “file”", a 400 that sent the script's author looking at the wrong thing."""
    response = api.generic(
        "POST",
        "/api/documents/",
        gzip.compress(multipart("notes.txt", b"Minutes of the meeting.")),
        content_type=f"multipart/form-data; boundary={BOUNDARY}",
        HTTP_CONTENT_ENCODING="gzip",
    )
    assert response.status_code == 415, response.content
    error = response.json()["error"]
    assert error["code"] == "unsupported_media_type"
    assert "Content-Encoding" in error["message"]
    assert response["Accept-Encoding"] == "identity"
    assert not Document.objects.exists()


def test_a_body_labelled_compressed_is_not_taken_as_plain(api):
    """Not compressed but labelled so (a client's bug): it was kept as if plain."""
    response = api.generic(
        "POST",
        "/api/documents/",
        multipart("notes.txt", b"Minutes of the meeting."),
        content_type=f"multipart/form-data; boundary={BOUNDARY}",
        HTTP_CONTENT_ENCODING="br",
    )
    assert response.status_code == 415, response.content
    assert not Document.objects.exists()


def test_a_gzipped_json_patch_is_415_and_changes_nothing(api, make_document):
    """It was a 400 saying the body "is not UTF-8 text"."""
    document = make_document()
    response = api.patch(
        f"/api/documents/{document.pk}/",
        gzip.compress(json.dumps({"title": "Minutes"}).encode()),
        content_type="application/json",
        HTTP_CONTENT_ENCODING="gzip",
    )
    assert response.status_code == 415, response.content
    assert response.json()["error"]["code"] == "unsupported_media_type"
    document.refresh_from_db()
    assert document.title == ""


def test_identity_and_bodiless_requests_are_unchanged(api, make_document):
    document = make_document()
    response = api.patch(
        f"/api/documents/{document.pk}/",
        json.dumps({"title": "Minutes"}),
        content_type="application/json",
        HTTP_CONTENT_ENCODING="identity",
    )
    assert response.status_code == 200, response.content
    # A GET has no body to decode: a header sent out of habit changes nothing.
    response = api.get("/api/documents/", HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 200, response.content


# --- Tags written differently --------------------------------------------------------


def test_a_tag_decomposed_by_a_mac_is_the_same_tag(api, make_document):
    """ "é" as e + U+0301 (macOS file names, pasted text) beside the "é" of other
    keyboards: two tags that look the same, in the tag menu and on the document."""
    first, second = make_document(), make_document()
    composed, decomposed = "Café", unicodedata.normalize("NFD", "Café")
    for document, tag in ((first, composed), (second, decomposed)):
        response = api.patch(
            f"/api/documents/{document.pk}/",
            {"tags": [tag]},
            content_type="application/json",
        )
        assert response.status_code == 200, response.content
        assert response.json()["tags"] == [composed]
    response = api.patch(
        f"/api/documents/{first.pk}/",
        {"tags": [composed, decomposed]},
        content_type="application/json",
    )
    assert response.json()["tags"] == [composed]
    assert list(Tag.objects.values_list("name", flat=True)) == [composed]


def test_a_tag_in_another_case_of_a_non_ascii_letter_is_the_same_tag(
    api, make_document
):
    """SQLite's iexact folds ASCII letters only: "été" on one document and "Été" on
    another were two tags of one person (PostgreSQL's folded them)."""
    first, second = make_document(), make_document()
    for document, tag in ((first, "Été"), (second, "été")):
        response = api.patch(
            f"/api/documents/{document.pk}/",
            {"tags": [tag]},
            content_type="application/json",
        )
        assert response.status_code == 200, response.content
        assert response.json()["tags"] == ["Été"]
    assert list(Tag.objects.values_list("name", flat=True)) == ["Été"]
    assert second.tags.get().name == "Été"


# --- A DELETE while the worker commits the document's result -------------------------


def _blocked_on_a_lock(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid]
        )
        row = cursor.fetchone()
    return row is not None and row[0] == "Lock"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("method", ["DELETE", "PATCH"])
def test_a_request_while_the_worker_stores_the_result_is_not_a_deadlock(
    user, make_document, settings, method
):
    """The worker's completion writes the document's row twice (its status, then its
    text), so PostgreSQL checks the row's owner key again at its commit (FOR KEY
    SHARE). A DELETE or a PATCH held the owner's row FOR UPDATE and waited for the
    document's: a deadlock, and the request, rolled back, answered 500. (A thumbnail
    job the completion queued for a deleted document must go with it too.)"""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite's writers take turns from BEGIN: no row locks")
    settings.THUMBNAILS = True
    document = make_document()
    queue = QueueManager()
    queue.enqueue(document.pk)
    item = queue.claim("api14-worker")
    api = Client(
        raise_request_exception=False,
        HTTP_AUTHORIZATION=f"Token {create_token(user)[1]}",
    )
    stored, deleting, answers = threading.Event(), threading.Event(), []

    def worker() -> None:
        try:
            with transaction.atomic():
                assert queue.complete(
                    item.pk, 5, worker_id="api14-worker", attempt=item.attempts
                )
                result = ExtractionResult("The minutes.", None, 1.0, "text")
                operations.get(item.operation).on_success(item, result)
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_backend_pid()")
                    stored.pid = cursor.fetchone()[0]
                stored.set()
                deleting.wait(30)
                # Until the DELETE waits for this transaction's row locks.
                wait_for(lambda: _blocked_on_a_lock(deleting.pid), 30)
        finally:
            connection.close()

    def delete() -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                deleting.pid = cursor.fetchone()[0]
            deleting.set()
            answers.append(
                api.generic(
                    method,
                    f"/api/documents/{document.pk}/",
                    json.dumps({"tags": ["minutes"]}),
                    content_type="application/json",
                )
            )
        finally:
            connection.close()

    threads = [threading.Thread(target=worker)]
    threads[0].start()
    assert stored.wait(30)
    threads.append(threading.Thread(target=delete))
    threads[1].start()
    for thread in threads:
        thread.join(60)
    [answer] = answers
    if method == "PATCH":
        assert answer.status_code == 200, answer.content
        document.refresh_from_db()
        assert (document.status, document.text) == ("completed", "The minutes.")
        assert [tag.name for tag in document.tags.all()] == ["minutes"]
        return
    assert answer.status_code == 204, answer.content
    assert not Document.objects.filter(pk=document.pk).exists()
    assert not QueueItem.objects.filter(document_id=document.pk).exists()


# --- A number too large for a float -------------------------------------------------


@pytest.mark.parametrize(
    "body", ['{"title": 1e999999}', '{"tags": [-1e400]}', '{"priority": 1E+309}']
)
def test_a_number_too_large_for_a_float_is_not_json_not_inf(api, make_document, body):
    """json reads 1e999999 as infinity (Infinity itself is refused): the title was
    kept as "inf", a tag as "-inf"."""
    document = make_document()
    url = f"/api/documents/{document.pk}/"
    if "priority" in body:
        url += "reprocess/"
        response = api.post(url, body, content_type="application/json")
    else:
        response = api.patch(url, body, content_type="application/json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "parse_error"
    assert "too large" in error["message"]
    document.refresh_from_db()
    assert (document.title, list(document.tags.all())) == ("", [])


def test_ordinary_numbers_still_read(api, make_document):
    document = make_document()
    response = api.post(
        f"/api/documents/{document.pk}/reprocess/",
        '{"priority": 0.0}',
        content_type="application/json",
    )
    assert response.status_code == 202, response.content
