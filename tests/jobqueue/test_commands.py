"""The operators' commands: clear_queue, rescue_stale_jobs, pause_queue and
resume_queue, import_documents, users."""

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.utils import timezone

from documents.models import Document
from jobqueue.models import (
    ExtractionMetric,
    QueueControl,
    QueueItem,
    Status,
    WorkerHeartbeat,
)
from jobqueue.services import delete_finished_items

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def aged(item_id: int, days: float, status: str) -> None:
    QueueItem.objects.filter(pk=item_id).update(
        status=status, updated_at=timezone.now() - timedelta(days=days)
    )


def test_clear_queue_deletes_only_old_finished_items(make_document, queue):
    old_done, old_failed, recent_done, active = (
        queue.enqueue(make_document().pk) for _ in range(4)
    )
    aged(old_done, 10, Status.COMPLETED)
    aged(old_failed, 10, Status.FAILED)
    aged(recent_done, 1, Status.COMPLETED)
    QueueItem.objects.filter(pk=active).update(
        updated_at=timezone.now() - timedelta(days=30)
    )

    assert run("clear_queue", "--older-than", "7", "--dry-run") == (
        "Would delete 2 queue items and 0 stopped workers' heartbeats (dry run).\n"
    )
    assert QueueItem.objects.count() == 4
    assert "Deleted 1 queue item " in run(
        "clear_queue", "--older-than", "7", "--status", "failed"
    )
    assert "Deleted 1 queue item " in run("clear_queue", "--older-than", "7")
    assert set(QueueItem.objects.values_list("pk", flat=True)) == {recent_done, active}


def test_pause_queue_and_resume_queue_work_the_operators_switch(
    make_document, queue, caplog
):
    """A deploy script pauses processing as the dashboard's switch does: a cron
    tick then takes nothing; saying it twice changes nothing and tells who paused."""
    job = queue.enqueue(make_document().pk)
    assert run("pause_queue").startswith("Processing paused: workers finish")
    control = QueueControl.objects.get(pk=1)
    assert control.paused and control.changed_by.endswith("(manage.py)")
    assert "Queue paused by " in caplog.text
    assert run("process_queue", "--once", "--json") == (
        '{"processed": 0, "completed": 0, "failed": 0, "paused": true}\n'
    )
    assert QueueItem.objects.get(pk=job).status == Status.PENDING

    again = run("pause_queue")
    assert again.startswith(f"Processing was already paused (by {control.changed_by}, ")
    assert QueueControl.objects.get(pk=1).changed_at == control.changed_at

    assert run("resume_queue") == "Processing resumed.\n"
    assert not QueueControl.is_paused()
    assert run("resume_queue") == "Processing was already running.\n"
    assert run("pause_queue", "-v0") == ""
    assert QueueControl.is_paused()


def test_a_job_retried_after_the_clear_read_it_is_not_deleted(make_document, queue):
    """The clear reads a batch's ids, then deletes them: an operator's retry in
    between makes one active again, and it stays."""
    retried, failed = (queue.enqueue(make_document().pk) for _ in range(2))
    for job in (retried, failed):
        aged(job, 10, Status.FAILED)
    read = list(queue.finished_older_than(7).values_list("pk", flat=True))
    assert queue.retry_failed(retried) == 1

    assert delete_finished_items(read) == 1
    assert QueueItem.objects.get().pk == retried


def test_clear_queue_keeps_the_history_that_pointed_at_the_items(make_document, queue):
    """Metrics and a heartbeat point at the cleared items: they stay, pointing at
    none (Django's delete() did the same, loading every row first)."""
    jobs = [queue.enqueue(make_document().pk) for _ in range(3)]
    for job in jobs:
        queue.claim("w1")
        queue.failed(job, "broken", "corruption")
        aged(job, 10, Status.FAILED)
    beat = WorkerHeartbeat.objects.create(worker_id="w1", current_job_id=jobs[0])
    assert ExtractionMetric.objects.filter(job_id__in=jobs).count() == 3

    assert run("clear_queue", "--older-than", "7", "--status", "failed") == (
        "Deleted 3 queue items older than 7 days.\n"
    )
    assert not QueueItem.objects.exists()
    assert ExtractionMetric.objects.filter(job=None).count() == 3
    beat.refresh_from_db()
    assert beat.current_job_id is None


def test_clear_queue_prunes_old_stopped_and_dead_heartbeats_only():
    old = timezone.now() - timedelta(days=10)
    WorkerHeartbeat.objects.create(
        worker_id="gone", status="stopped", last_heartbeat=old
    )
    # Killed ten days ago: nothing marked it stopped.
    WorkerHeartbeat.objects.create(worker_id="dead", status="busy", last_heartbeat=old)
    WorkerHeartbeat.objects.create(worker_id="fresh", status="stopped")
    WorkerHeartbeat.objects.create(worker_id="alive", status="busy")
    assert run("clear_queue", "--older-than", "7", "--dry-run") == (
        "Would delete 0 queue items and 2 stopped workers' heartbeats (dry run).\n"
    )
    # Clearing only some items' states leaves the heartbeats alone.
    assert run("clear_queue", "--older-than", "7", "--status", "failed") == (
        "Deleted 0 queue items older than 7 days.\n"
    )
    assert WorkerHeartbeat.objects.count() == 4
    assert "and 2 stopped workers' heartbeats " in run(
        "clear_queue", "--older-than", "7"
    )
    # Whatever the age given, a live worker's heartbeat stays (deleted, its jobs
    # would be taken for lost).
    run("clear_queue", "--older-than", "0")
    assert set(WorkerHeartbeat.objects.values_list("worker_id", flat=True)) == {"alive"}


def test_clear_queue_refuses_bad_arguments():
    with pytest.raises(CommandError):
        call_command("clear_queue", "--older-than", "-1")
    with pytest.raises(CommandError):
        call_command("clear_queue", "--older-than", "1", "--status", "pending")


def test_rescue_stale_jobs_rescues_dead_workers_and_overlong_jobs(make_document, queue):
    long_ago = timezone.now() - timedelta(hours=2)
    WorkerHeartbeat.objects.create(worker_id="dead", last_heartbeat=long_ago)
    WorkerHeartbeat.objects.create(worker_id="alive")
    for worker in ("dead", "alive"):
        queue.enqueue(make_document().pk)
        job = queue.claim(worker)
        QueueItem.objects.filter(pk=job.pk).update(started_at=long_ago)
    out = run("rescue_stale_jobs", "--minutes", "60")
    assert out == ("Rescued 1 job of dead workers and 1 job stuck over 60 minutes.\n")
    assert set(QueueItem.objects.values_list("status", flat=True)) == {Status.PENDING}


def test_import_documents_imports_a_folder_and_says_what_it_skipped(
    user, tmp_path: Path
):
    folder = tmp_path / "inbox"
    (folder / "nested").mkdir(parents=True)
    (folder / "a.txt").write_text("first note")
    (folder / "nested" / "b.txt").write_text("second note")
    (folder / "copy.txt").write_text("first note")
    (folder / "empty.pdf").write_bytes(b"")
    (folder / "picture.pdf").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))

    stdout = io.StringIO()
    with pytest.raises(CommandError, match="2 of the files were refused"):
        call_command(
            "import_documents", str(folder), "--owner", "alice", "--priority", "5",
            stdout=stdout,
        )  # fmt: skip
    out = stdout.getvalue()
    assert out.startswith("Imported 2 of 5 files; skipped 3.")
    assert "copy.txt: duplicate" in out or "a.txt: duplicate" in out
    assert "empty.pdf: refused: “empty.pdf” is empty" in out
    assert "picture.pdf: refused" in out
    assert "Skipped by reason: " in out
    assert Document.objects.filter(owner=user).count() == 2
    assert set(QueueItem.objects.values_list("priority", "status")) == {
        (5, Status.PENDING)
    }
    # Running it again imports nothing new.
    stdout = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_documents", str(folder), "--owner", "alice", stdout=stdout)
    assert stdout.getvalue().startswith("Imported 0 of 5 files")


def test_import_documents_needs_a_real_owner_and_path(user, tmp_path: Path):
    with pytest.raises(CommandError, match="No user named"):
        call_command("import_documents", str(tmp_path), "--owner", "nobody")
    with pytest.raises(CommandError, match="neither a file nor a folder"):
        call_command("import_documents", str(tmp_path / "missing"), "--owner", "alice")


def test_create_api_token_prints_a_new_key_and_resets_on_request(user):
    first = run("create_api_token", "alice").strip()
    assert len(first) == 64
    assert run("create_api_token", "alice").strip() != first
    assert user.auth_token_set.count() == 2
    run("create_api_token", "alice", "--reset")
    assert user.auth_token_set.count() == 1
    with pytest.raises(CommandError, match="No user named"):
        call_command("create_api_token", "nobody")


def test_ensure_first_user_creates_one_superuser_once(settings, tmp_path: Path):
    settings.VAR_DIR = tmp_path
    out = run("ensure_first_user")
    assert "Created superuser “admin”" in out
    password = (tmp_path / "first-user.txt").read_text().split("password: ")[1].strip()
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_superuser and admin.check_password(password)
    assert "Users exist" in run("ensure_first_user")
    assert get_user_model().objects.count() == 1
