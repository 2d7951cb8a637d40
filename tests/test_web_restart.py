"""SIGKILL gunicorn while uploads stream in: nothing accepted is lost, nothing half-made
stays behind (``check_storage`` clears files whose transaction never committed).

The full run, with figures: ``bench/web_restart.py``.
"""

from __future__ import annotations

import io
import threading
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection, transaction

from bench.web_restart import (
    Server,
    Tally,
    corpus_payloads,
    run_clients,
    storage_check,
    upload,
)
from documents.models import Document
from jobqueue.models import QueueItem, Status
from tests.conftest import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server(child_env, tmp_path):
    """gunicorn (2 sync workers) on a loopback port against the test database."""
    server = Server(child_env, tmp_path / "gunicorn.log")
    yield server
    server.kill()


@pytest.fixture
def token(user) -> str:
    out = io.StringIO()
    call_command("create_api_token", user.username, stdout=out)
    return out.getvalue().strip()


def lock_documents_table() -> None:
    """Hold the lock an upload's transaction needs (inside ``transaction.atomic``)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("LOCK TABLE documents_document IN EXCLUSIVE MODE")
    # SQLite: atomic() already ran BEGIN IMMEDIATE, which holds the write lock.


def stored_names(media_root: Path) -> set[str]:
    folder = media_root / "documents"
    return (
        {f"documents/{p.name}" for p in folder.iterdir()} if folder.exists() else set()
    )


def kill_between_file_and_commit(server: Server, token: str, media_root: Path) -> str:
    """Kill gunicorn while an upload has stored its file but waits to commit its
    rows; returns the name of the file left behind."""
    before = stored_names(media_root)
    failures: list[BaseException] = []

    def send() -> None:
        try:
            upload(server.port, token, "orphan.txt", b"never committed\n" * 100)
        except OSError as exc:
            failures.append(exc)

    with transaction.atomic():
        lock_documents_table()
        sender = threading.Thread(target=send)
        sender.start()
        new = wait_for(lambda: stored_names(media_root) - before, 30)
        server.kill()
        sender.join(30)
    assert failures, "the request must have been cut by the kill"
    (name,) = new
    return name


@pytest.mark.slow
def test_killed_web_server_loses_no_accepted_upload_and_leaves_no_orphan(
    server, token, media_root
):
    payloads = corpus_payloads(max_bytes=300_000, big_text_mb=6)
    tally = Tally()
    server.start()
    stop, threads = run_clients(
        lambda: server.port, token, payloads, tally, clients=2, throttle=0.002
    )
    for kills in (1, 2):
        wait_for(lambda k=kills: len(tally.accepted) >= 3 * k, 60)
        server.kill()
        server.start()
    wait_for(lambda: len(tally.accepted) >= 9, 60)
    stop.set()
    for thread in threads:
        thread.join(60)

    orphan = kill_between_file_and_commit(server, token, media_root)
    server.start()
    status, data = upload(server.port, token, "after.txt", b"the server is back\n")
    assert status == 202, data
    server.stop()

    assert not tally.server_errors
    checks = storage_check(tally.accepted)
    assert Document.objects.filter(pk=data["id"]).exists()
    assert checks["rows_without_file"] == []
    assert checks["rows_without_queue_item"] == []
    assert checks["accepted_missing"] == []
    assert checks["accepted_other_content"] == []
    # The random kills may have left more; the one made on purpose is always there.
    orphans = checks["orphan_files"]
    assert orphan in orphans
    assert Document.objects.count() == checks["documents"] >= len(tally.accepted)
    assert set(QueueItem.objects.values_list("status", flat=True)) == {Status.PENDING}

    out = io.StringIO()
    call_command("check_storage", "--older-than", "0", "--dry-run", stdout=out)
    assert f"Would remove {orphan}" in out.getvalue()
    assert (media_root / orphan).exists()
    out = io.StringIO()
    call_command("check_storage", "--older-than", "0", stdout=out)
    for name in orphans:
        assert f"Removed {name}\n" in out.getvalue()
    assert f"Removed {len(orphans)} orphan files" in out.getvalue()
    assert not (media_root / orphan).exists()
    assert storage_check({})["orphan_files"] == []
