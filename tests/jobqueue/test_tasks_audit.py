"""An outside audit of the tasks backend against django-tasks 0.12's API as a
``@task`` author relies on it, with real workers (``process_queue --once`` in this
process, or the in-process worker for a task caught while it runs)."""

from __future__ import annotations

import sys
from datetime import datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone
from django_tasks import TaskResultStatus, default_task_backend, task, task_backends
from django_tasks.exceptions import (
    InvalidTaskError,
    TaskResultDoesNotExist,
    TaskResultMismatch,
)
from django_tasks.signals import task_enqueued, task_finished, task_started

from jobqueue.models import Operation, QueueItem
from jobqueue.services import QueueManager
from jobqueue.tasks import QueueBackend
from tests.conftest import wait_for
from tests.jobqueue.task_apps import audit, contract

pytestmark = pytest.mark.django_db(transaction=True)

AUDIT_BACKEND = "tests.jobqueue.task_apps.audit.AuditBackend"


def run_once() -> None:
    call_command("process_queue", "--once", "--max-retries", "0", stdout=StringIO())


@pytest.fixture
def signals():
    """(signal name, sender, status, result) of each task signal sent."""
    sent = []

    def receiver(name):
        def record(sender, task_result, **kwargs):
            sent.append((name, sender, task_result.status, task_result))

        return record

    receivers = {
        signal: receiver(name)
        for signal, name in (
            (task_enqueued, "enqueued"),
            (task_started, "started"),
            (task_finished, "finished"),
        )
    }
    for signal, record in receivers.items():
        signal.connect(record)
    yield sent
    for signal, record in receivers.items():
        signal.disconnect(record)


def test_the_backend_declares_what_it_supports():
    backend = task_backends["default"]
    assert backend.supports_defer and backend.supports_async_task
    assert backend.supports_get_result and backend.supports_priority


def test_enqueue_returns_a_ready_result_with_every_field():
    before = timezone.now()
    result = audit.add.enqueue(1, b=2)
    assert isinstance(result.id, str) and result.id.isdigit()
    assert result.status == TaskResultStatus.READY
    # The database's clock, not ours: SQLite's counts in milliseconds and writes the
    # end of the millisecond, up to 1 ms past this process's now.
    after = timezone.now() + timedelta(milliseconds=1)
    assert before - timedelta(seconds=5) <= result.enqueued_at <= after
    assert timezone.is_aware(result.enqueued_at)
    assert (result.started_at, result.finished_at, result.last_attempted_at) == (
        None,
        None,
        None,
    )
    assert (result.args, result.kwargs) == ([1], {"b": 2})
    assert (result.backend, result.worker_ids, result.errors) == ("default", [], [])
    assert result.task == audit.add
    with pytest.raises(ValueError, match="not finished"):
        _ = result.return_value


def test_get_result_by_the_task_and_by_another_task():
    result = audit.add.enqueue(2, 3)
    assert audit.add.get_result(result.id) == result
    with pytest.raises(TaskResultMismatch):
        audit.boom.get_result(result.id)


def test_a_document_job_is_not_a_task_result():
    job = QueueManager().enqueue_job(Operation.NOOP, payload={})
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(str(job.pk))


def test_what_enqueue_refuses_leaves_nothing_queued():
    def local() -> None:
        return None

    with pytest.raises(InvalidTaskError, match="module level"):
        task()(local)
    with pytest.raises(InvalidTaskError, match="aware"):
        audit.add.using(run_after=datetime(2030, 1, 1))
    with pytest.raises(TypeError):
        audit.add.enqueue(timezone.now())
    with pytest.raises(InvalidTaskError, match="priority"):
        audit.add.using(priority=-101)
    assert not QueueItem.objects.exists()


def test_signals_carry_the_result_at_each_stage(signals):
    done = audit.add.enqueue(2, 2)
    failed = audit.boom.enqueue()
    run_once()
    by_id = {}
    for name, sender, status, result in signals:
        assert sender is QueueBackend
        by_id.setdefault(result.id, []).append((name, status))
    assert by_id[done.id] == [
        ("enqueued", TaskResultStatus.READY),
        ("started", TaskResultStatus.RUNNING),
        ("finished", TaskResultStatus.SUCCESSFUL),
    ]
    assert by_id[failed.id] == [
        ("enqueued", TaskResultStatus.READY),
        ("started", TaskResultStatus.RUNNING),
        ("finished", TaskResultStatus.FAILED),
    ]
    started = next(r for n, _, _, r in signals if n == "started" and r.id == done.id)
    assert started.started_at is not None and started.attempts == 1
    finished = next(r for n, _, _, r in signals if n == "finished" and r.id == done.id)
    assert finished.return_value == 4 and finished.finished_at is not None
    failure = next(r for n, _, _, r in signals if n == "finished" and r.id == failed.id)
    assert failure.errors[0].exception_class is KeyError
    assert "KeyError: 'boom'" in failure.errors[0].traceback


def test_a_started_receivers_error_fails_the_task_a_finished_ones_does_not():
    def refuse(sender, task_result, **kwargs):
        raise RuntimeError(f"receiver refused {task_result.status}")

    task_started.connect(refuse)
    try:
        refused = audit.add.enqueue(1)
        run_once()
    finally:
        task_started.disconnect(refuse)
    refused.refresh()
    assert refused.status == TaskResultStatus.FAILED
    assert "receiver refused RUNNING" in refused.errors[0].traceback
    # After the commit, and robust: the task's outcome stands.
    task_finished.connect(refuse)
    try:
        done = audit.add.enqueue(2)
        run_once()
    finally:
        task_finished.disconnect(refuse)
    done.refresh()
    assert (done.status, done.return_value) == (TaskResultStatus.SUCCESSFUL, 2)


def test_a_result_read_while_its_task_runs_is_running(run_worker):
    audit.release.clear()
    audit.waiting.clear()
    result = audit.wait.enqueue()
    run_worker()
    try:
        assert audit.waiting.wait(30)
        result.refresh()
        assert result.status == TaskResultStatus.RUNNING
        assert not result.is_finished and result.finished_at is None
        assert result.started_at and result.last_attempted_at and result.worker_ids
        with pytest.raises(ValueError, match="not finished"):
            _ = result.return_value
    finally:
        audit.release.set()
    wait_for(lambda: result.refresh() or result.is_finished, 30)
    assert result.return_value == result.id


def test_return_values_come_back_as_json():
    result = audit.shaped.enqueue()
    run_once()
    result.refresh()
    assert result.return_value == {"pair": [1, 2], "raw": "bytes"}


def test_a_second_alias_of_this_backend(settings):
    settings.TASKS = {
        "default": {"BACKEND": "jobqueue.tasks.QueueBackend"},
        "other": {"BACKEND": "jobqueue.tasks.QueueBackend", "QUEUES": ["mail"]},
    }
    with pytest.raises(InvalidTaskError, match="not valid"):
        audit.add.using(backend="other")
    result = audit.add.using(backend="other", queue_name="mail").enqueue(5)
    assert result.backend == "other" and result.task.backend == "other"
    run_once()
    again = task_backends["other"].get_result(result.id)
    assert (again.return_value, again.backend) == (5, "other")
    result.refresh()
    assert result.return_value == 5


# --- Defects found ------------------------------------------------------------


@pytest.mark.parametrize("task_", [audit.aliased, audit.Holder.method_task])
def test_a_task_its_path_does_not_import_is_refused_before_it_is_queued(task_):
    # The worker finds a task by its function's path; one that leads elsewhere
    # was queued, then enqueue raised (AttributeError, ModuleNotFoundError) and
    # left a job behind that could only fail.
    with pytest.raises(InvalidTaskError, match="import"):
        task_.enqueue()
    assert not QueueItem.objects.exists()


def test_a_task_of_main_is_refused_the_worker_has_another_main(monkeypatch):
    # A script's or a shell's tasks: importable there, never in the worker.
    def scripted() -> None:
        return None

    scripted.__module__, scripted.__qualname__ = "__main__", "scripted"
    monkeypatch.setattr(sys.modules["__main__"], "scripted", task()(scripted), False)
    with pytest.raises(InvalidTaskError, match="import"):
        sys.modules["__main__"].scripted.enqueue()
    assert not QueueItem.objects.exists()


def test_the_result_in_hand_holds_what_the_database_gives_back(signals):
    # JSON's keys are text: the result enqueue returned said {1: ...} while the
    # task was called with {"1": ...}; task_finished's return value likewise.
    result = contract.echo.enqueue({1: "one"})
    assert result.args == [{"1": "one"}]
    run_once()
    result.refresh()
    assert result.return_value == {"1": "one"}
    [finished] = [r for name, _, _, r in signals if name == "finished"]
    assert finished.return_value == result.return_value


def test_the_signals_name_the_backends_own_class(settings, signals):
    # The worker sent started and finished as QueueBackend's, whatever the class
    # configured: a receiver connected for a subclass never heard them.
    settings.TASKS = {"default": {"BACKEND": AUDIT_BACKEND}}
    audit.add.enqueue(1)
    audit.boom.enqueue()
    run_once()
    assert [(name, sender) for name, sender, *_ in signals] == [
        ("enqueued", audit.AuditBackend),
        ("enqueued", audit.AuditBackend),
        ("started", audit.AuditBackend),
        ("finished", audit.AuditBackend),
        ("started", audit.AuditBackend),
        ("finished", audit.AuditBackend),
    ]


def test_a_failure_is_recorded_on_a_row_without_an_errors_list():
    # A row queued by hand, or by an older release, may lack the errors list: its
    # failure was lost to a KeyError, the attempt's outcome with it.
    result = audit.boom.enqueue()
    item = QueueItem.objects.get(pk=result.id)
    item.payload = {k: v for k, v in item.payload.items() if k != "errors"}
    item.save(update_fields=["payload"])
    run_once()
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert len(result.errors) == 1
