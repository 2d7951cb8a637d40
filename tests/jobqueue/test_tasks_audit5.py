"""An outside audit of the tasks backend as a Django developer uses it, against
django-tasks 0.12 and its reference database backend (django-tasks-db), with
real workers: ``process_queue`` as a process, or ``--once`` in this one."""

from __future__ import annotations

import logging
import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import call_command
from django_tasks import TaskResultStatus

from tests.conftest import REPO_ROOT
from tests.jobqueue.task_apps import audit, contract
from tests.jobqueue.task_apps.early import tasks as early

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def task_log():
    """The records django-tasks' own logger emits during the test."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep(logging.DEBUG)
    logger = logging.getLogger("django_tasks")
    logger.addHandler(handler)
    yield records
    logger.removeHandler(handler)


def test_a_task_declared_while_the_apps_load_runs_on_the_worker(child_env):
    # An app's package that imports its tasks (Wagtail's search does) builds the
    # backend while Django loads the apps: it imported the queue's models then,
    # and every command, the worker's too, died of AppRegistryNotReady.
    # django-tasks-db defers its model import for this (its issue #30).
    result = early.shout.enqueue("hello")
    done = subprocess.run(
        [sys.executable, "manage.py", "process_queue", "--once", "--max-retries", "0"],
        cwd=REPO_ROOT,
        env={
            **child_env,
            "DJANGO_SETTINGS_MODULE": "tests.jobqueue.task_apps.early_settings",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result.refresh()
    assert (result.status, result.return_value) == (
        TaskResultStatus.SUCCESSFUL,
        "HELLO",
    )


def test_a_failed_tasks_finished_log_carries_the_exception_it_raised(task_log):
    # django-tasks logs a failed task's task_finished with logger.exception, "to
    # integrate with error monitoring tools": it sends it while the exception is
    # handled. Sent here after the commit, the log said "NoneType: None".
    failed = audit.boom.enqueue()
    done = contract.echo.enqueue(1)
    call_command("process_queue", "--once", "--max-retries", "0", stdout=StringIO())
    finished = {
        record.args[0]: record
        for record in task_log
        if record.getMessage().endswith(("FAILED", "SUCCESSFUL"))
    }
    record = finished[failed.id]
    assert record.levelno == logging.ERROR
    assert record.exc_info[0] is KeyError and "boom" in str(record.exc_info[1])
    assert finished[done.id].levelno == logging.INFO
    assert not finished[done.id].exc_info
    failed.refresh()
    assert failed.errors[0].exception_class is KeyError
    assert failed.errors[0].traceback.endswith("KeyError: 'boom'\n")
