"""A person's ZIP downloads running at once are bounded (``USER_MAX_ZIP_DOWNLOADS``):
each holds a web thread and reads up to 1 GB, so one account must not take them all.
A slot is given back however the stream ends: read to its end, closed by the server
when the client goes away, or broken by an error."""

from __future__ import annotations

import gc
import io
import zipfile

import pytest
from django.core.files.storage import FileSystemStorage
from django.core.signals import request_finished
from django.db import close_old_connections
from django.urls import reverse

from documents.access import ZIP_DOWNLOADS

pytestmark = pytest.mark.django_db


@pytest.fixture
def limit(settings) -> int:
    settings.USER_MAX_ZIP_DOWNLOADS = 2
    return 2


def server_closes(response) -> None:
    """What the WSGI server does once a response ends, the client gone mid-stream
    included: close it. (As the test client does it, keeping the test's database
    connection, which ``request_finished`` would close.)"""
    request_finished.disconnect(close_old_connections)
    try:
        response.close()
    finally:
        request_finished.connect(close_old_connections)


@pytest.fixture
def start_download(user_client, make_document):
    """Ask for a ZIP of one document; the stream is left unread, as a slow client's
    (and closed after the test, so no slot outlives it)."""
    document = make_document(b"x" * 1000, name="big.txt")
    started = []

    def start():
        response = user_client.post(
            reverse("documents:bulk"), {"action": "download", "id": [document.pk]}
        )
        started.append(response)
        return response

    yield start
    for response in started:
        server_closes(response)


def test_downloads_over_the_limit_are_refused_until_one_ends(
    limit, start_download, user
):
    running = [start_download() for _ in range(limit)]
    assert all(r.status_code == 200 and r.streaming for r in running)
    assert ZIP_DOWNLOADS.running(user) == limit

    refused = start_download()
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0
    assert refused["Content-Type"].startswith("text/html")
    assert "the most ZIP downloads running at once (2)" in refused.content.decode()

    # The client went away before a byte was read: the server closes the response.
    # (The stream's generator never started, so its own finally would never run;
    # reading part of a stream, then closing it: test_an_error_mid_stream_...)
    server_closes(running[0])
    assert ZIP_DOWNLOADS.running(user) == limit - 1
    again = start_download()
    assert again.status_code == 200

    # Read to its end, a download gives its slot back too (the test client closes
    # the response then, as a WSGI server does); closing twice gives back one.
    archive = zipfile.ZipFile(io.BytesIO(b"".join(again.streaming_content)))
    assert archive.read("big.txt") == b"x" * 1000
    server_closes(again)
    assert ZIP_DOWNLOADS.running(user) == limit - 1
    server_closes(running[1])
    assert ZIP_DOWNLOADS.running(user) == 0


def test_an_error_mid_stream_gives_the_slot_back(
    settings, user_client, user, make_document, monkeypatch
):
    settings.USER_MAX_ZIP_DOWNLOADS = 1
    first, second = make_document(name="a.txt"), make_document(name="b.txt")
    ids = [first.pk, second.pk]
    read = FileSystemStorage._open

    def second_unreadable(storage, name, mode="rb"):
        if name == second.file.name:
            raise PermissionError("the disk said no")
        return read(storage, name, mode)

    monkeypatch.setattr(FileSystemStorage, "_open", second_unreadable)
    url = reverse("documents:bulk")
    broken = user_client.post(url, {"action": "download", "id": ids})
    chunks = iter(broken.streaming_content)
    assert next(chunks)  # a.txt is on its way
    with pytest.raises(PermissionError):
        list(chunks)
    assert ZIP_DOWNLOADS.running(user) == 0

    monkeypatch.undo()
    again = user_client.post(url, {"action": "download", "id": ids})
    assert again.status_code == 200
    server_closes(again)


def test_a_download_dropped_unclosed_gives_its_slot_back(
    limit, user_client, user, make_document
):
    # A middleware failing after the view answers with its error page instead: the
    # download's response is dropped, and nobody closes it.
    document = make_document(name="a.txt")
    url = reverse("documents:bulk")
    response = user_client.post(url, {"action": "download", "id": [document.pk]})
    assert ZIP_DOWNLOADS.running(user) == 1
    del response
    gc.collect()
    assert ZIP_DOWNLOADS.running(user) == 0


def test_the_limit_is_each_persons_staff_included(
    settings, client, user, staff_user, make_document
):
    settings.USER_MAX_ZIP_DOWNLOADS = 1
    mine = make_document(name="mine.txt")
    theirs = make_document(name="theirs.txt", owner=staff_user)

    def download(person, document):
        client.force_login(person)
        return client.post(
            reverse("documents:bulk"), {"action": "download", "id": [document.pk]}
        )

    held, staffs = download(user, mine), download(staff_user, theirs)
    assert held.status_code == 200 and staffs.status_code == 200  # a slot each
    assert download(staff_user, theirs).status_code == 429  # staff are bounded too
    assert download(user, mine).status_code == 429
    server_closes(held)
    again = download(user, mine)
    assert again.status_code == 200
    for response in (staffs, again):
        server_closes(response)


def test_a_download_refused_for_its_size_holds_no_slot(
    settings, user_client, user, make_document, monkeypatch
):
    settings.USER_MAX_ZIP_DOWNLOADS = 1
    monkeypatch.setattr("documents.manage_views.ZIP_MAX_BYTES", 5)
    document = make_document(b"more than five bytes")
    response = user_client.post(
        reverse("documents:bulk"), {"action": "download", "id": [document.pk]}
    )
    assert response.status_code == 302
    assert ZIP_DOWNLOADS.running(user) == 0
