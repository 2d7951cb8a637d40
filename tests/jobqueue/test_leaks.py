"""What a long-running worker must not leave behind: found by bench/soak.py."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from jobqueue import operations
from jobqueue.child import CHILD_FOLDER_PREFIX, process_exists
from jobqueue.models import ErrorType, QueueItem
from jobqueue.runner import JobRunner
from jobqueue.services import QueueManager
from tests.conftest import wait_for, worker_log

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FAST = ["--workers", "1", "--poll-interval", "0.1", "--heartbeat-interval", "0.5"]
MISBEHAVING = {"QUEUE_EXTRACT_FUNCTION": "tests.extractors_for_tests.extract"}


def test_the_next_worker_removes_the_temporary_folders_a_killed_worker_left(
    start_worker, make_document, queue, tmp_path
):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**MISBEHAVING, "TMPDIR": str(tmp)}
    # Reports a page, then hangs: the job's progress file is written.
    queue.enqueue(make_document(b"hang-after:1\n", "hang.txt").pk)
    killed = start_worker(*FAST, env=env)
    wait_for(lambda: list(tmp.glob("docqueue-progress-*/*-1")), 60)
    left = sorted(tmp.iterdir())
    assert {p.name.split("-")[0] for p in left} == {"docqueue", "pymp"}

    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    started = start_worker(*FAST, env=env)

    wait_for(lambda: not any(p.exists() for p in left), 60)
    assert started.poll() is None, worker_log(started)
    # Its own folder stays while it runs.
    assert len(list(tmp.glob("docqueue-progress-*"))) == 1


@pytest.fixture
def runner():
    """A runner with one child, closed at teardown."""
    runner = JobRunner(queue=QueueManager(), processes=1, max_tasks=1)
    runner.start()
    yield runner
    runner.close(kill=True)


def register(monkeypatch, **fields) -> operations.JobKind:
    kind = operations.JobKind(name="leaks_test", **fields)
    monkeypatch.setitem(operations._kinds, kind.name, kind)
    return kind


def child_folders(runner: JobRunner) -> list[Path]:
    return sorted(Path(runner.progress_dir).glob(f"{CHILD_FOLDER_PREFIX}*"))


def test_a_killed_childs_temporary_files_are_removed_by_its_worker(monkeypatch, runner):
    # Never returns: stopped by the timeout, as a hanging extraction is.
    kind = register(monkeypatch, child="signal.pause", timeout=1.0)
    first = runner.begin(QueueItem(pk=1, operation=kind.name, attempts=1))
    folder = wait_for(lambda: child_folders(runner), 60)[0]
    # What a library of the child's leaves there until it is done.
    (folder / "attachment-part").write_bytes(b"left")
    assert runner.wait(first).error_type == ErrorType.TIMEOUT
    wait_for(lambda: not process_exists(int(folder.name.rpartition("-")[2])), 60)

    second = runner.begin(QueueItem(pk=2, operation=kind.name, attempts=1))
    assert runner.wait(second).error_type == ErrorType.TIMEOUT
    assert not folder.exists()


def test_a_child_replaced_after_its_jobs_leaves_no_folder(monkeypatch, runner):
    # max_tasks=1: each job has a new child, as every QUEUE_CHILD_MAX_TASKS jobs.
    kind = register(monkeypatch, child="os.getpid")
    first = runner.begin(QueueItem(pk=1, operation=kind.name, attempts=1))
    pid = runner.wait(first).result
    second = runner.begin(QueueItem(pk=2, operation=kind.name, attempts=1))
    assert runner.wait(second).result != pid

    wait_for(lambda: not process_exists(pid), 60)
    assert Path(runner.progress_dir, f"{CHILD_FOLDER_PREFIX}{pid}") not in (
        child_folders(runner)
    )
