"""Faults not tried before, made to really happen: a statement timeout on the
workers' database user shorter than a large result's store; a media storage that
cannot keep a thumbnail; the database away for the web app (API, cron endpoint);
PostgreSQL's idle-in-transaction timeout ending a connection."""

from __future__ import annotations

import contextlib
import random
import string
import time
from collections.abc import Iterator

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import DatabaseError, connection, transaction
from django.test import Client

from documents.models import Document
from documents.tokens import create_token
from jobqueue.faults import is_database_away, is_database_fault
from jobqueue.models import ErrorType, Operation, QueueItem, Status
from tests import conftest
from tests.conftest import free_port, wait_for, worker_log
from tests.jobqueue.test_worker_processes import store

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

postgres_only = pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="a PostgreSQL fault"
)
FLAGS = ["--workers", "1", "--poll-interval", "0.1", "--heartbeat-interval", "0.3"]


def many_words(count: int) -> bytes:
    """Text of ``count`` random words: long to store (its search vector too)."""
    rng = random.Random(14)
    words = (
        "".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 10)))
        for _ in range(count)
    )
    return " ".join(words).encode()


@postgres_only
def test_a_store_the_statement_timeout_always_cancels_fails_the_attempt(
    start_worker, user, queue
):
    """A DBA's ``statement_timeout`` on the workers' user, shorter than the store of
    a large text: the worker kept the result and tried again every 2 s for ever,
    uncharged, the job ``processing`` under a live worker and its thread taken.
    Now the attempt fails as a ``timeout`` saying why, and the worker goes on."""
    big = store(user, "big.txt", many_words(200_000))
    small = store(user, "small.txt", b"a few words")
    jobs = [queue.enqueue(big.pk), queue.enqueue(small.pk)]
    url = conftest.test_database_url() + "?options=-c%20statement_timeout%3D100"
    proc = start_worker(*FLAGS, "--max-retries", "0", env={"DATABASE_URL": url})
    failed = QueueItem.objects.filter(pk=jobs[0], status=Status.FAILED)
    wait_for(failed.exists, 60)
    item = failed.get()
    assert item.error_type == ErrorType.TIMEOUT
    assert "statement_timeout" in item.error_message, item.error_message
    assert item.attempts == 1
    assert Document.objects.get(pk=big.pk).status == Status.FAILED
    # The thread is free again: the next job is done.
    done = QueueItem.objects.filter(pk=jobs[1], status=Status.COMPLETED)
    wait_for(done.exists, 30)
    assert proc.poll() is None, worker_log(proc)


def test_a_thumbnail_the_storage_cannot_keep_fails_its_attempts(
    start_worker, user, queue, settings
):
    """The media storage refuses the thumbnail's write (a full disk: ENOSPC, or a
    folder that cannot be made): the error escaped the record, the job was released
    uncharged and run again at once, for ever, a traceback each second. Now each
    attempt fails, saying why, and the retry rules end it; the document keeps its
    text."""
    settings.MEDIA_ROOT.mkdir(parents=True, exist_ok=True)
    (settings.MEDIA_ROOT / "pages").write_bytes(b"")  # no folder can be made there
    document = store(user, "note.txt", b"a note whose thumbnail cannot be kept")
    queue.enqueue(document.pk)
    proc = start_worker(*FLAGS, env={"THUMBNAILS": "1"})
    thumbnails = QueueItem.objects.filter(operation=Operation.THUMBNAIL)
    try:
        wait_for(lambda: thumbnails.filter(status=Status.FAILED).exists(), 60)
    except AssertionError:
        raise AssertionError(
            f"{list(QueueItem.objects.values())}\n{worker_log(proc)}"
        ) from None
    item = thumbnails.get()
    assert item.attempts == 2, "the thumbnail's one retry, then failed"
    assert "could not be stored" in item.error_message, item.error_message
    document.refresh_from_db()
    assert document.status == Status.COMPLETED
    assert "a note" in document.text
    assert "released job" not in worker_log(proc)
    assert proc.poll() is None


@contextlib.contextmanager
def database_unreachable() -> Iterator[None]:
    """This process's connections fail to open, as at a server's connection limit
    or mid-restart: PostgreSQL on a port nothing listens on, SQLite in a folder
    that is not there."""
    saved = dict(connection.settings_dict)
    connection.close()
    if connection.vendor == "postgresql":
        connection.settings_dict["PORT"] = free_port(range(18140, 18160))
    else:
        connection.settings_dict["NAME"] = "/nonexistent-faults14/db.sqlite3"
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.update(saved)


def test_the_api_and_cron_answer_503_while_the_database_is_unreachable(user, settings):
    """With the database away (every slot taken), an upload's token could not be
    looked up: 500 "Something went wrong on our side", where a database refusing
    the insert answers 503 with Retry-After, which HTTP clients' retries wait for.
    The cron endpoint's script and a scrape of /metrics got the same 500. They now
    say 503, and why."""
    settings.CRON_TOKEN = "cron-faults14"
    settings.METRICS_PUBLIC = True
    scraper = Client()
    scraper.raise_request_exception = False
    api = Client(HTTP_AUTHORIZATION=f"Token {create_token(user)[1]}")
    api.raise_request_exception = False
    cron = Client(HTTP_AUTHORIZATION="Bearer cron-faults14")
    cron.raise_request_exception = False
    upload = SimpleUploadedFile("a.txt", b"some words", content_type="text/plain")
    with database_unreachable():
        answers = [
            api.post("/api/documents/", {"file": upload}),
            api.get("/api/documents/"),
            cron.post("/queue/cron/"),
            scraper.get("/metrics"),
        ]
    for response in answers:
        assert response.status_code == 503, response.content
        assert response["Retry-After"].isdigit()
        error = response.json()["error"]
        assert error["code"] == "database_unavailable"
        assert "database" in error["message"]
    # Back: the same requests go through.
    assert api.get("/api/documents/").status_code == 200
    assert cron.post("/queue/cron/").status_code == 200


@postgres_only
def test_a_connection_ended_by_the_idle_in_transaction_timeout_is_a_fault():
    """``idle_in_transaction_session_timeout`` on the workers' database ends the
    connection of a transaction that waits between statements (a busy host, a
    long step in Python). Its error (SQLSTATE 25P03, an InternalError) was taken for
    the database refusing the data: the job failed for good as ``unsupported``, "too
    large, or characters it cannot hold", or its failure as unrecordable. It is the
    connection lost: the worker reconnects and stores the result, uncharged."""
    try:
        with (
            pytest.raises(DatabaseError) as raised,
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute("SET LOCAL idle_in_transaction_session_timeout = 100")
            time.sleep(0.5)
            cursor.execute("SELECT 1")
        assert raised.value.__cause__.sqlstate == "25P03"
        assert is_database_fault(raised.value)
        assert is_database_away(raised.value)
    finally:
        connection.close()
