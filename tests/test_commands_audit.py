"""The operators' commands as a shell or cron script meets them: files that cannot be
read, failures to store, Ctrl+C, defaults that match the workers', quiet output."""

from __future__ import annotations

import io
import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from documents.management.commands import import_documents
from documents.models import Document
from documents.services import StorageFull
from jobqueue.models import QueueItem, Status, WorkerHeartbeat

pytestmark = pytest.mark.django_db


def import_folder(folder: Path, *args: str) -> tuple[str, CommandError | None]:
    out = io.StringIO()
    try:
        call_command(
            "import_documents", str(folder), "--owner", "alice", *args, stdout=out
        )
    except CommandError as error:
        return out.getvalue(), error
    return out.getvalue(), None


@pytest.mark.timeout(30)
def test_import_skips_dangling_links_and_pipes_without_hanging(user, tmp_path: Path):
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "letter.txt").write_text("a real letter")
    (folder / "gone.txt").symlink_to(tmp_path / "nowhere.txt")  # or deleted meanwhile
    os.mkfifo(folder / "pipe.txt")

    out, error = import_folder(folder)

    assert Document.objects.get().original_filename == "letter.txt"
    assert out.startswith("Imported 1 of 3 files; skipped 2.")
    assert "gone.txt: unreadable: a symbolic link" in out
    assert "pipe.txt: unreadable: not a regular file" in out
    # Not imported is a failure a cron job must see.
    assert error is not None and error.returncode == 1
    assert "2 of the files were refused or unreadable" in str(error)


def test_import_goes_on_when_a_file_cannot_be_stored(user, tmp_path, monkeypatch):
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "a.txt").write_text("first")
    (folder / "b.txt").write_text("second")
    real = import_documents.document_create

    def full_for_a(*, upload, **kwargs):
        if upload.filename == "a.txt":
            raise StorageFull("“a.txt” was not kept: the server's storage is full.")
        return real(upload=upload, **kwargs)

    monkeypatch.setattr(import_documents, "document_create", full_for_a)
    out, error = import_folder(folder)

    assert out.startswith("Imported 1 of 2 files; skipped 1.")
    assert "a.txt: refused: “a.txt” was not kept: the server's storage is full." in out
    assert error is not None and "1 of the files was refused" in str(error)


def test_import_interrupted_says_what_it_did_and_exits_130(user, tmp_path, monkeypatch):
    folder = tmp_path / "inbox"
    folder.mkdir()
    for name in ("a.txt", "b.txt", "c.txt"):
        (folder / name).write_text(f"words of {name}")
    real = import_documents.Command._import

    def ctrl_c_on_b(self, path, *args):
        if path.name == "b.txt":
            raise KeyboardInterrupt
        return real(self, path, *args)

    monkeypatch.setattr(import_documents.Command, "_import", ctrl_c_on_b)
    try:
        out, error = import_folder(folder)
    except KeyboardInterrupt:
        pytest.fail("Ctrl+C ended the import with a traceback and no summary")

    assert out.startswith("Imported 1 of 3 files; skipped 0.")
    assert error is not None and error.returncode == 130
    assert "Interrupted after 1 of 3 files" in str(error)
    assert Document.objects.get().original_filename == "a.txt"


def test_import_interrupted_while_walking_exits_130_without_a_traceback(
    user, tmp_path, monkeypatch
):
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "a.txt").write_text("words")

    def ctrl_c(self, folder):
        raise KeyboardInterrupt  # in a large folder's walk, before any import

    monkeypatch.setattr(import_documents.Command, "_walk", ctrl_c)
    try:
        _out, error = import_folder(folder)
    except KeyboardInterrupt:
        pytest.fail("Ctrl+C while walking ended the import with a traceback")
    assert error is not None and error.returncode == 130
    assert str(error) == "Interrupted while looking for files: nothing was imported."
    assert not Document.objects.exists()


def test_import_lists_the_accepted_formats_once(user, tmp_path: Path):
    folder = tmp_path / "inbox"
    folder.mkdir()
    for name in ("a.py", "b.js", "c.sh"):
        (folder / name).write_text("code")
    out, error = import_folder(folder)
    assert error is None
    assert out.count("PNG image") == 1
    assert "  skipped " + str(folder / "a.py") + ": not a supported format" in out


def test_rescue_by_default_spares_jobs_within_twice_the_timeout(
    make_document, queue, settings
):
    # As the workers do: a page may take the whole timeout, so a job quiet for less
    # than that may be running.
    settings.QUEUE_EXTRACTION_TIMEOUT = 3600.0
    settings.QUEUE_STALE_JOB_MINUTES = 30.0
    WorkerHeartbeat.objects.create(worker_id="alive")
    queue.enqueue(make_document().pk)
    job = queue.claim("alive")
    QueueItem.objects.filter(pk=job.pk).update(
        started_at=timezone.now() - timedelta(minutes=45)
    )
    out = io.StringIO()
    call_command("rescue_stale_jobs", stdout=out)
    assert "stuck over 120 minutes" in out.getvalue()
    assert QueueItem.objects.get(pk=job.pk).status == Status.PROCESSING


def test_rescue_refuses_minutes_below_the_extraction_timeout(settings):
    settings.QUEUE_EXTRACTION_TIMEOUT = 300.0
    with pytest.raises(CommandError, match="live workers"):
        call_command("rescue_stale_jobs", "--minutes", "1")


def test_create_api_token_quiet_prints_the_key_only(user):
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "create_api_token", "alice", "--reset", verbosity=0, stdout=out, stderr=err
    )
    assert len(out.getvalue().strip()) == 64
    assert err.getvalue() == ""


def test_process_queue_help_gives_the_stop_timeout_default(capsys):
    with pytest.raises(SystemExit):
        call_command("process_queue", "--help")
    assert "(default: 60)" in " ".join(capsys.readouterr().out.split())
