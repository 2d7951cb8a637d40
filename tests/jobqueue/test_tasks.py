"""Django's tasks API (@task) on this queue, run by real workers on a real database."""

from __future__ import annotations

import os
import re
import signal
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from django_tasks import TaskResultStatus, task_backends
from django_tasks.exceptions import InvalidTaskError, TaskResultDoesNotExist
from django_tasks.signals import task_enqueued, task_finished

from jobqueue.models import ExtractionMetric, QueueItem, Status
from jobqueue.tasks import QueueBackend
from tests.conftest import run_async, wait_for
from tests.jobqueue.task_apps import mail, reports

pytestmark = pytest.mark.django_db(transaction=True)


def finished(result) -> bool:
    result.refresh()
    return result.is_finished


def test_the_default_backend_is_this_queue():
    backend = task_backends["default"]
    assert isinstance(backend, QueueBackend)
    assert backend.supports_defer and backend.supports_get_result
    with pytest.raises(InvalidTaskError):
        reports.total.using(priority=101).enqueue([1])
    with pytest.raises(TaskResultDoesNotExist):
        backend.get_result("999999")


def test_tasks_of_two_apps_on_two_queues_by_priority_and_run_after(run_worker):
    enqueued = []

    def on_enqueued(sender, task_result, **kwargs):
        enqueued.append(task_result.id)

    task_enqueued.connect(on_enqueued)  # weak: gone with the test
    later = reports.total.using(run_after=timezone.now() + timedelta(seconds=1.5))
    deferred = later.enqueue([100])
    low = reports.total.using(priority=-5).enqueue([1, 2])
    high = reports.slow_total.enqueue([3, 4])  # async, priority 10
    mail_result = mail.send.enqueue("ops@example.com")
    assert len(enqueued) == 4
    assert low.status == TaskResultStatus.READY and low.args == [[1, 2]]

    run_worker(num_workers=1)
    wait_for(lambda: finished(low) and finished(high) and finished(mail_result), 30)
    assert high.return_value == 7 and low.return_value == 3
    assert mail_result.return_value["to"] == "ops@example.com"
    # Priority first, then age (one worker: one at a time).
    assert high.started_at <= low.started_at
    deferred.refresh()
    assert not deferred.is_finished  # not before its time
    wait_for(lambda: finished(deferred), 30)
    assert deferred.return_value == 100
    assert deferred.started_at >= deferred.enqueued_at + timedelta(seconds=1.4)
    assert deferred.attempts == 1 and deferred.worker_ids
    # Async access, as Django's API offers it (run_async: a thread of its own).
    again = run_async(reports.total.aget_result(deferred.id))
    assert again.return_value == 100


def test_a_failing_task_stores_its_errors_and_is_retried(run_worker):
    done = []

    def on_finished(sender, task_result, **kwargs):
        done.append(task_result)

    task_finished.connect(on_finished)  # weak: gone with the test
    flaky = mail.flaky.enqueue(fail_until=2)
    hopeless = mail.flaky.enqueue(fail_until=99)
    run_worker(max_retries=1)
    wait_for(lambda: finished(flaky) and finished(hopeless), 30)

    assert flaky.status == TaskResultStatus.SUCCESSFUL
    assert flaky.return_value == 2 and flaky.attempts == 2
    assert [e.exception_class for e in flaky.errors] == [ValueError]
    assert "attempt 1 failed" in flaky.errors[0].traceback

    assert hopeless.status == TaskResultStatus.FAILED
    assert len(hopeless.errors) == 2  # the first try and its one retry
    assert "Traceback" in hopeless.errors[-1].traceback
    with pytest.raises(ValueError, match="failed"):
        _ = hopeless.return_value
    outcomes = ExtractionMetric.objects.filter(job_id=int(hopeless.id))
    assert sorted(outcomes.values_list("outcome", flat=True)) == ["failed", "retry"]
    wait_for(lambda: {r.id for r in done} == {flaky.id, hopeless.id}, 10)


def test_a_worker_limited_to_one_queue_leaves_the_other_alone(run_worker):
    report = reports.total.enqueue([5])
    message = mail.send.enqueue("a@example.com")
    run_worker(queues=["mail"])
    wait_for(lambda: finished(message), 30)
    report.refresh()
    assert report.status == TaskResultStatus.READY
    assert QueueItem.objects.get(pk=int(report.id)).status == Status.PENDING


WORKER = ("--workers", "1", "--heartbeat-interval", "0.2", "--poll-interval", "0.1")


def test_process_queue_takes_only_the_queues_it_is_given(start_worker):
    report = reports.total.enqueue([2, 3])
    message = mail.send.enqueue("b@example.com")
    start_worker(*WORKER, "--queue", "reports", "--queue", "other")
    wait_for(lambda: finished(report), 30)
    assert report.return_value == 5
    message.refresh()
    assert message.status == TaskResultStatus.READY


def test_once_drains_only_the_queues_it_is_given():
    report = reports.total.enqueue([4, 5])
    message = mail.send.enqueue("c@example.com")
    out = StringIO()
    call_command("process_queue", "--once", "--queue", "reports", stdout=out)
    assert "Processed 1 job: 1 completed" in out.getvalue()
    report.refresh()
    message.refresh()
    assert (report.status, report.return_value) == (TaskResultStatus.SUCCESSFUL, 9)
    assert message.status == TaskResultStatus.READY


def test_a_queue_no_job_has_used_is_named_a_likely_typo():
    reports.total.enqueue([1])
    err = StringIO()
    call_command(
        "process_queue", "--once", "--queue", "reports", "--queue", "reprots",
        stdout=StringIO(), stderr=err,
    )  # fmt: skip
    assert err.getvalue() == "No job has used the queue “reprots” yet.\n"


def test_a_stalled_task_is_rescued_and_its_late_result_refused(start_worker):
    env = {"QUEUE_STALE_WORKER_SECONDS": "1"}
    result = mail.stall_once.enqueue(seconds=3)
    job = QueueItem.objects.filter(pk=int(result.id))
    stalled = start_worker(*WORKER, env=env)
    wait_for(lambda: job.filter(status=Status.PROCESSING).exists(), 30)
    os.killpg(stalled.pid, signal.SIGSTOP)
    try:
        start_worker(*WORKER, env=env)
        wait_for(lambda: finished(result), 30)
    finally:
        os.killpg(stalled.pid, signal.SIGCONT)
    assert result.return_value == 2 and result.attempts == 2
    outcomes = ExtractionMetric.objects.filter(job_id=job.get().pk)
    wait_for(lambda: outcomes.filter(outcome="refused").exists(), 30)
    assert sorted(outcomes.values_list("outcome", flat=True)) == [
        "completed",
        "refused",
        "rescued",
    ]
    result.refresh()
    assert result.return_value == 2


def listed(admin_client, **filters) -> list[str]:
    """The subject column of the admin's queue list, row by row."""
    page = admin_client.get("/admin/jobqueue/queueitem/", filters)
    assert page.status_code == 200
    return re.findall(r'<td class="field-document_column">(.*?)</td>', page.text)


def test_tasks_are_listed_in_the_admin_by_queue_and_name(admin_client):
    report = reports.total.enqueue([1])
    mail.send.enqueue("c@example.com")
    [row] = listed(admin_client, queue_name="reports")
    assert "tests.jobqueue.task_apps.reports.total" in row
    [row] = listed(admin_client, q="mail.send")
    assert "tests.jobqueue.task_apps.mail.send" in row
    # The task filter offers each task by its path and shows only that task's jobs.
    [row] = listed(admin_client, task="tests.jobqueue.task_apps.mail.send")
    assert "tests.jobqueue.task_apps.mail.send" in row
    page = admin_client.get("/admin/jobqueue/queueitem/").text
    assert "?task=tests.jobqueue.task_apps.reports.total" in page
    item_page = admin_client.get(f"/admin/jobqueue/queueitem/{report.id}/change/")
    assert item_page.status_code == 200
    assert admin_client.get(reverse("admin:jobqueue_dashboard")).status_code == 200


@pytest.mark.parametrize(("flags", "threads"), [((), 1), (("--workers", "2"), 2)])
def test_once_drains_in_one_thread_unless_given_workers(flags, threads, tmp_path):
    jobs = [reports.logged.enqueue(f"job{n}", str(tmp_path)) for n in range(6)]
    call_command("process_queue", "--once", *flags, stdout=StringIO())
    claimed_by = QueueItem.objects.filter(pk__in=[int(j.id) for j in jobs])
    assert set(claimed_by.values_list("status", flat=True)) == {Status.COMPLETED}
    assert claimed_by.values("claimed_by").distinct().count() == threads
