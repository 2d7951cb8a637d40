"""Cancelling many tasks at once: each records its error and is announced as finished
once the cancel commits, as one task's cancel is, in a number of statements that
does not grow with the number of tasks."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django_tasks import TaskResultStatus, default_task_backend
from django_tasks.signals import task_finished

from jobqueue import operations
from jobqueue.child import JobFailed
from jobqueue.models import ExtractionMetric, QueueItem, Status
from jobqueue.services import QueueManager
from tests.jobqueue.task_apps import contract

pytestmark = pytest.mark.django_db(transaction=True)

CANCELLED = (
    f"{JobFailed.__module__}.{JobFailed.__qualname__}",
    "Cancelled before it ran.",
)


def enqueue(n: int) -> list[int]:
    return [int(contract.echo.enqueue(i).id) for i in range(n)]


def errors(result_id: int) -> list[tuple[str, str]]:
    result = default_task_backend.get_result(str(result_id))
    return [(e.exception_class_path, e.traceback) for e in result.errors]


def test_each_cancelled_task_records_one_error_and_is_announced_after_commit(
    finished,
):
    ids = enqueue(30)
    with transaction.atomic():
        assert sorted(QueueManager().cancel_many(ids, batch=7)) == sorted(ids)
        assert finished == []  # not before the commit
    assert sorted(int(r.id) for r in finished) == sorted(ids)
    assert {r.status for r in finished} == {TaskResultStatus.FAILED}
    assert all(r.errors[-1].traceback == CANCELLED[1] for r in finished)
    for pk in ids:
        assert errors(pk) == [CANCELLED]
        result = default_task_backend.get_result(str(pk))
        assert result.status == TaskResultStatus.FAILED


def test_a_rolled_back_cancel_records_and_announces_nothing(finished):
    ids = enqueue(10)
    with pytest.raises(RuntimeError), transaction.atomic():
        QueueManager().cancel_many(ids)
        raise RuntimeError
    assert finished == []
    assert set(
        QueueItem.objects.filter(pk__in=ids).values_list("status", flat=True)
    ) == {Status.PENDING}
    assert all(errors(pk) == [] for pk in ids)


def test_a_task_cancelled_again_after_a_failure_keeps_its_errors_and_workers(finished):
    (pk,) = enqueue(1)
    # A task lost twice (its workers in the metrics rows), now waiting to retry.
    QueueItem.objects.filter(pk=pk).update(
        status=Status.RETRY_PENDING,
        attempts=2,
        payload={
            **QueueItem.objects.get(pk=pk).payload,
            "errors": [{"exception_class_path": CANCELLED[0], "traceback": "lost"}],
        },
    )
    for attempt, worker in ((1, "w-1"), (2, "w-2")):
        ExtractionMetric.objects.create(
            job_id=pk,
            attempt=attempt,
            outcome=ExtractionMetric.Outcome.RESCUED,
            worker_id=worker,
        )
    assert QueueManager().cancel_many([pk]) == [pk]
    assert errors(pk) == [
        (CANCELLED[0], "lost"),
        (CANCELLED[0], "Cancelled after it ran, while it waited to be retried."),
    ]
    assert [r.worker_ids for r in finished] == [["w-1", "w-2"]]
    assert finished[0].worker_ids == default_task_backend.get_result(str(pk)).worker_ids


def test_a_receivers_error_neither_breaks_the_cancel_nor_silences_the_others(
    finished,
):
    ids = enqueue(5)
    failing = ids[2]

    def refuse(sender, task_result, **kwargs):
        if int(task_result.id) == failing:
            raise RuntimeError("receiver failed")

    task_finished.connect(refuse)
    try:
        assert sorted(QueueManager().cancel_many(ids)) == sorted(ids)
    finally:
        task_finished.disconnect(refuse)
    assert sorted(int(r.id) for r in finished) == sorted(ids)
    assert all(errors(pk) == [CANCELLED] for pk in ids)


def cancel_statements(n: int) -> int:
    ids = enqueue(n)
    with CaptureQueriesContext(connection) as queries:
        assert len(QueueManager().cancel_many(ids)) == n
    return len(queries)


def test_cancelling_many_tasks_takes_the_same_statements_as_a_few(finished):
    few = cancel_statements(20)
    many = cancel_statements(200)
    assert many == few
    assert len(finished) == 220  # the after-commit read is among those counted


def test_a_kind_without_a_batch_hook_hears_of_each_item(monkeypatch):
    told = []
    kind = operations.JobKind(
        name="h13_each",
        run=lambda item: None,
        on_failure=lambda i, o: told.append(i.pk),
    )
    monkeypatch.setitem(operations._kinds, kind.name, kind)
    ids = [QueueManager().enqueue_job(kind.name, payload={}).pk for _ in range(3)]
    assert sorted(QueueManager().cancel_many(ids)) == sorted(ids)
    assert sorted(told) == sorted(ids)
