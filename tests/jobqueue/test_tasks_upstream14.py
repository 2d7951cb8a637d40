"""django-tasks' own tests (0.12.0: tests/tests/test_*.py; django-tasks-db:
tests/tests.py) turned into tests of this queue's backend, for the behaviours the
earlier ports (test_tasks_behaviour, test_tasks_contract, ...) left out: the
``django_tasks`` logger's lines, async signal receivers, a task raising
KeyboardInterrupt or SystemExit under a real ``process_queue --once``, a task path
that no longer imports, what a running task sees of its own result, status across a
retry, another backend's result, several worker processes at once, a signal while a
task runs, and the JSON round trip of arguments."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
from io import StringIO

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.db import connection
from django.test import override_settings
from django.utils import timezone as dj_timezone
from django_tasks import TaskResultStatus, default_task_backend
from django_tasks.exceptions import TaskResultDoesNotExist
from django_tasks.signals import task_enqueued, task_finished, task_started

from jobqueue.models import Operation, QueueItem
from jobqueue.services import QueueManager
from tests.conftest import REPO_ROOT, run_async, wait_for, worker_log
from tests.jobqueue.task_apps import upstream14 as tasks

pytestmark = pytest.mark.django_db(transaction=True)


def run_once(*flags: str) -> None:
    call_command(
        "process_queue", "--once", "--max-retries", "0", *flags, stdout=StringIO()
    )


def run_once_counts() -> dict:
    out = StringIO()
    call_command("process_queue", "--once", "--max-retries", "0", "--json", stdout=out)
    counts = json.loads(out.getvalue())
    return {key: counts[key] for key in ("processed", "completed", "failed")}


def task_lines(caplog) -> list[tuple[int, str]]:
    return [
        (r.levelno, r.getMessage()) for r in caplog.records if r.name == "django_tasks"
    ]


def test_enqueue_logs_one_line_naming_the_result(caplog):
    caplog.set_level(logging.DEBUG, logger="django_tasks")
    result = tasks.noop.enqueue()
    lines = task_lines(caplog)
    assert len(lines) == 1
    assert "enqueued" in lines[0][1] and result.id in lines[0][1]


def test_a_worker_logs_running_then_successful(caplog):
    result = tasks.noop.enqueue()
    caplog.set_level(logging.DEBUG, logger="django_tasks")
    run_once()
    path = "tests.jobqueue.task_apps.upstream14.noop"
    assert task_lines(caplog) == [
        (logging.INFO, f"Task id={result.id} path={path} state=RUNNING"),
        (logging.INFO, f"Task id={result.id} path={path} state=SUCCESSFUL"),
    ]


def test_a_worker_logs_a_failure_as_an_error_with_its_traceback(caplog):
    result = tasks.failing_value_error.enqueue()
    caplog.set_level(logging.DEBUG, logger="django_tasks")
    run_once()
    records = [r for r in caplog.records if r.name == "django_tasks"]
    assert [r.getMessage().rsplit("state=", 1)[1] for r in records] == [
        "RUNNING",
        "FAILED",
    ]
    assert result.id in records[1].getMessage()
    assert records[1].levelno == logging.ERROR
    assert records[1].exc_info[0] is ValueError


def test_async_receivers_hear_every_stage():
    heard = []

    async def on_enqueued(sender, task_result, **kwargs):
        heard.append(("enqueued", task_result.id, task_result.status))

    async def on_started(sender, task_result, **kwargs):
        heard.append(("started", task_result.id, task_result.status))

    async def on_finished(sender, task_result, **kwargs):
        heard.append(("finished", task_result.id, task_result.status))

    task_enqueued.connect(on_enqueued)
    task_started.connect(on_started)
    task_finished.connect(on_finished)
    try:
        # Enqueued in threads of their own, as a web request would: the browser
        # tests' Playwright leaves its event loop set in the main thread, where
        # async receivers (``async_to_sync``) cannot be called.
        first = run_async(sync_to_async(tasks.noop.enqueue)())
        second = run_async(tasks.noop.aenqueue())
        run_once()
    finally:
        task_enqueued.disconnect(on_enqueued)
        task_started.disconnect(on_started)
        task_finished.disconnect(on_finished)
    ready, running, ok = (
        TaskResultStatus.READY,
        TaskResultStatus.RUNNING,
        TaskResultStatus.SUCCESSFUL,
    )
    assert heard[:2] == [("enqueued", first.id, ready), ("enqueued", second.id, ready)]
    # Each task's start, then its end; the worker's threads may run both at once.
    assert len(heard) == 6
    for result in (first, second):
        assert [stage for stage in heard[2:] if stage[1] == result.id] == [
            ("started", result.id, running),
            ("finished", result.id, ok),
        ]


@pytest.mark.parametrize(
    ("task", "exception"),
    [
        (tasks.failing_task_system_exit, SystemExit),
        (tasks.failing_task_keyboard_interrupt, KeyboardInterrupt),
        (tasks.async_system_exit, SystemExit),
        (tasks.async_keyboard_interrupt, KeyboardInterrupt),
    ],
)
def test_a_task_raising_an_exit_fails_and_the_worker_exits_cleanly(
    task, exception, child_env
):
    # django-tasks-db's test_system_exit_task / test_keyboard_interrupt_task: a real
    # worker process, which ends as usual, the task failed with what it raised.
    result = task.enqueue()
    after = tasks.async_count_tasks.enqueue()
    done = subprocess.run(
        [sys.executable, "manage.py", "process_queue", "--once", "--max-retries", "0"],
        cwd=REPO_ROOT,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result.refresh()
    after.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[0].exception_class is exception
    assert result.errors[0].traceback.endswith(
        f"{exception.__name__}: This task failed due to {exception.__name__}\n"
    )
    # The worker's event loop for async tasks survived it too.
    assert (after.status, after.return_value) == (TaskResultStatus.SUCCESSFUL, 2)


def test_a_task_path_that_no_longer_imports_fails_naming_the_import_error():
    # django-tasks-db's test_task_import_string.
    job = QueueManager().enqueue_job(
        Operation.TASK,
        payload={
            "task": "tests.jobqueue.task_apps.upstream14.some_test",
            "backend": "default",
            "args": [],
            "kwargs": {},
            "errors": [],
        },
    )
    run_once()
    job.refresh_from_db()
    assert job.status == "failed"
    errors = job.payload["errors"]
    assert len(errors) == 1
    assert "ImportError" in errors[0]["exception_class_path"] + errors[0]["traceback"]


def test_a_running_task_sees_its_result_as_running():
    result = tasks.context_snapshot.using(priority=7, queue_name="q14").enqueue(
        1, two=[3]
    )
    run_once()
    result.refresh()
    assert result.return_value == {
        "status": "RUNNING",
        "attempts": 1,
        "started": True,
        "last_attempted": True,
        "finished": False,
        "enqueued": True,
        "args": [1],
        "kwargs": {"two": [3]},
        "backend": "default",
        "queue_name": "q14",
        "priority": 7,
    }


def test_get_result_takes_an_int_id():
    # django-tasks' test_cannot_get_result passes an int.
    result = tasks.noop.enqueue()
    assert default_task_backend.get_result(int(result.id)) == result
    assert run_async(default_task_backend.aget_result(int(result.id))) == result


def test_status_moves_from_ready_to_running_to_ready_again_then_successful():
    # READY while waiting, RUNNING in the task's own hands, READY again (not
    # finished, its error kept) when an attempt failed with retries left, then
    # SUCCESSFUL with the earlier error still listed.
    result = tasks.fail_once.enqueue()
    run_once("--max-retries", "3")
    result.refresh()
    assert result.status == TaskResultStatus.READY
    assert not result.is_finished and result.finished_at is None
    assert result.attempts == 1 and result.started_at is not None
    assert [e.exception_class for e in result.errors] == [ValueError]
    with pytest.raises(ValueError, match="Task has not finished yet"):
        result.return_value  # noqa: B018
    first_start = result.last_attempted_at
    QueueItem.objects.filter(pk=int(result.id)).update(next_retry_at=dj_timezone.now())
    run_once("--max-retries", "3")
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.is_finished and result.return_value == 2
    assert result.attempts == 2 and len(result.errors) == 1
    assert result.last_attempted_at >= first_start
    assert result.finished_at >= result.last_attempted_at >= result.enqueued_at


def test_tasks_a_task_enqueues_run_in_the_same_drain():
    # As django-tasks-db's ``db_worker --batch``: run until nothing is ready.
    tasks.chain.enqueue(3)
    run_once()
    assert sorted(
        QueueItem.objects.filter(operation=Operation.TASK).values_list(
            "status", "result"
        )
    ) == [("completed", n) for n in range(4)]


@override_settings(
    TASKS={
        "default": {"BACKEND": "jobqueue.tasks.QueueBackend", "QUEUES": []},
        "immediate": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"},
    }
)
def test_a_result_of_another_backend_is_not_ours():
    theirs = tasks.noop.using(backend="immediate").enqueue()
    assert theirs.status == TaskResultStatus.SUCCESSFUL
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(theirs.id)
    with pytest.raises(TaskResultDoesNotExist):
        tasks.noop.get_result(theirs.id)
    # And ours is refreshed by ours, whichever backend is the default.
    ours = tasks.noop.enqueue()
    run_once()
    ours.refresh()
    assert ours.status == TaskResultStatus.SUCCESSFUL


def test_arguments_and_return_values_keep_key_order_and_number_types():
    """As the README says: SQLite keeps the JSON as written; PostgreSQL's jsonb keeps
    the values (they compare equal) but neither a dict's key order nor a float
    written with an exponent."""
    months = {"January": 1.0, "February": 1e16, "March": -0.0}
    result = tasks.shape.enqueue(months)
    assert default_task_backend.get_result(result.id).args == [months]
    run_once()
    result.refresh()
    if connection.vendor == "postgresql":
        assert sorted(result.return_value["keys"]) == sorted(months)
        assert "int" in result.return_value["types"]
    else:
        assert result.return_value == {
            "keys": ["January", "February", "March"],
            "types": ["float", "float", "float"],
        }


def test_three_worker_processes_drain_the_queue_each_task_once(child_env, tmp_path):
    # django-tasks-db's test_multiple_workers: three ``--batch`` workers at once.
    runs = tmp_path / "runs"
    results = [tasks.sleep_for.enqueue(0.1, str(runs)) for _ in range(10)]
    command = [sys.executable, "manage.py", "process_queue", "--once"]
    workers = [
        subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=child_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(3)
    ]
    outputs = [worker.communicate(timeout=120)[0] for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0, 0], outputs
    assert len(runs.read_text().splitlines()) == 10
    for result in results:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL
        assert result.attempts == 1 and result.errors == []
    # Each task's start and end logged once, by the one worker that ran it.
    logged = "".join(outputs)
    for result in results:
        assert logged.count(f"Task id={result.id} path=") == 2


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_lets_the_running_task_finish_then_the_pool_exits(
    sig, start_worker, tmp_path
):
    # django-tasks-db's test_interrupt_signals: Ctrl+C or SIGTERM while a task runs.
    gate = tmp_path / "gate"
    result = tasks.wait_for_file.enqueue(str(gate))
    worker = start_worker("--workers", "1")

    def running():
        result.refresh()
        return result.status == TaskResultStatus.RUNNING

    wait_for(running)
    worker.send_signal(sig)
    gate.touch()
    assert worker.wait(timeout=60) == 0, worker_log(worker)
    result.refresh()
    assert (result.status, result.return_value) == (TaskResultStatus.SUCCESSFUL, "done")
    assert result.attempts == 1 and result.errors == []


@pytest.mark.parametrize("how", ["close", "close_all", "close_old"])
def test_a_task_closing_the_database_connections_leaves_the_worker_working(how):
    # A long task closes its connections (close_old_connections(), as Django does
    # between requests): the worker records it and runs the next ones.
    results = [tasks.close_connections.enqueue(how) for _ in range(2)]
    results.append(tasks.noop.enqueue())
    assert run_once_counts() == {"processed": 3, "completed": 3, "failed": 0}
    for result in results:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL
        assert result.errors == []


def test_an_async_task_enqueues_and_reads_other_tasks():
    result = tasks.async_fan_out.enqueue(3)
    assert run_once_counts() == {"processed": 4, "completed": 4, "failed": 0}
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    for result_id in result.return_value:
        assert tasks.noop.get_result(result_id).status == TaskResultStatus.SUCCESSFUL
