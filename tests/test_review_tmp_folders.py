"""Review: a worker removes only what dead workers left in the temporary folder,
never a live worker's folder whose pid means nothing here (another pid namespace:
containers sharing /tmp under one host name)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest

from jobqueue.runner import MULTIPROCESSING_LINK, JobRunner
from jobqueue.services import QueueManager


@pytest.fixture
def tmp(tmp_path, monkeypatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def started_runner() -> JobRunner:
    runner = JobRunner(queue=QueueManager(), processes=1)
    runner.start()
    return runner


def moved_to_pid(runner: JobRunner, pid: int) -> Path:
    """The runner's folder named as a worker with ``pid`` would name it."""
    folder = Path(runner.progress_dir)
    head, _pid, tail = folder.name.rsplit("-", 2)
    moved = folder.with_name(f"{head}-{pid}-{tail}")
    folder.rename(moved)
    runner.progress_dir = str(moved)
    return moved


def test_a_live_workers_folder_stays_though_its_pid_is_not_seen_here(tmp):
    elsewhere = started_runner()
    try:
        # Its pid is another namespace's: here no process has it.
        folder = moved_to_pid(elsewhere, dead_pid())
        theirs = tmp / "pymp-theirs"
        theirs.mkdir()
        (folder / MULTIPROCESSING_LINK).symlink_to(theirs)

        started_runner().close()

        assert folder.exists() and theirs.exists()
    finally:
        elsewhere.close()


def test_a_dead_workers_folder_goes_though_its_pid_lives_on_in_another_process(tmp):
    dead = started_runner()
    folder = Path(dead.progress_dir)  # named with this test's own, live, pid
    dead._alive.close()  # noqa: SLF001 - as a SIGKILL would: the folder stays

    started_runner().close()

    assert not folder.exists()
