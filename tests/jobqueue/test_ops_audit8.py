"""An operator's audit against the worker guide: the commands' limits and help, the
guide's dead-worker SQL as written, and the admin's release for operators only."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command, load_command_class
from django.db import connection
from django.utils import timezone

from jobqueue.management.commands.process_queue import retry_count
from jobqueue.models import QueueItem, Status, WorkerHeartbeat
from tests.conftest import grant_operator

pytestmark = pytest.mark.django_db


def help_text(name: str) -> str:
    parser = load_command_class("jobqueue", name).create_parser("manage.py", name)
    return " ".join(parser.format_help().split())


def test_max_retries_over_the_bound_is_refused_before_anything_runs():
    # 3,000,000,000 passed argparse and overflowed PostgreSQL's integer at each
    # failure: the job was released and run again until the budget ended.
    with pytest.raises(CommandError, match="out of range: use from 0 to 1000"):
        call_command("process_queue", "--once", "--max-retries", "3000000000")


def test_the_largest_retry_budget_is_stored(queue, make_document):
    job = queue.enqueue(make_document().pk)
    queue.claim("w1")
    assert queue.failed(job, "boom", max_retries=retry_count("1000"))
    item = QueueItem.objects.get(pk=job)
    assert (item.status, item.max_retries) == (Status.RETRY_PENDING, 1000)


def test_a_queue_name_no_job_can_have_is_a_bad_option():
    with pytest.raises(CommandError, match="at most 100 characters") as refused:
        call_command("process_queue", "--once", "--queue", "q" * 101)
    assert refused.value.returncode == 2


@pytest.mark.parametrize(
    "args", [["--minutes", "1"], ["--heartbeat-seconds", "5"]], ids=str
)
def test_rescue_refuses_unsafe_thresholds_as_bad_options(args):
    with pytest.raises(CommandError, match="live workers") as refused:
        call_command("rescue_stale_jobs", *args)
    assert refused.value.returncode == 2


def test_help_shows_the_defaults_in_force(settings):
    settings.QUEUE_WORKERS = 5
    settings.QUEUE_MAX_RETRIES = 4
    settings.QUEUE_EXTRACTION_TIMEOUT = 600
    settings.QUEUE_POLL_INTERVAL = 0.5
    text = help_text("process_queue")
    for shown in (
        "QUEUE_WORKERS, 5",
        "QUEUE_MAX_RETRIES, 4",
        "QUEUE_EXTRACTION_TIMEOUT, 600",
        "QUEUE_POLL_INTERVAL, 0.5",
        "QUEUE_HEARTBEAT_INTERVAL, 10",
    ):
        assert shown in text
    # Twice the 600 s timeout is 20 minutes, under QUEUE_STALE_JOB_MINUTES' 30.
    assert "if more: 30)" in help_text("rescue_stale_jobs")


def test_the_guides_dead_worker_query_runs_as_written():
    old = timezone.now() - timedelta(minutes=5)
    WorkerHeartbeat.objects.create(worker_id="dead", last_heartbeat=old)
    WorkerHeartbeat.objects.create(
        worker_id="gone", status="stopped", last_heartbeat=old
    )
    WorkerHeartbeat.objects.create(worker_id="alive")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT * FROM worker_heartbeat\n"
            "WHERE last_heartbeat < datetime('now', '-60 seconds')\n"
            "AND status != 'stopped';"
        )
        columns = [column[0] for column in cursor.description]
        rows = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    assert [row["worker_id"] for row in rows] == ["dead"]


def test_release_is_an_operators_action(
    client, queue, make_document, django_user_model
):
    job = queue.enqueue(make_document().pk)
    queue.claim("crashed-worker")  # no heartbeat: nobody runs it
    viewer = django_user_model.objects.create_user("viewer", is_staff=True)
    viewer.user_permissions.add(
        Permission.objects.get(
            content_type__app_label="jobqueue", codename="view_queueitem"
        )
    )
    form = {"action": "release_jobs", "_selected_action": [job], "index": 0}
    client.force_login(viewer)
    client.post("/admin/jobqueue/queueitem/", form)
    assert QueueItem.objects.get(pk=job).status == Status.PROCESSING
    client.force_login(grant_operator(viewer))
    response = client.post("/admin/jobqueue/queueitem/", form, follow=True)
    assert "Released 1 job to pending" in response.content.decode()
    assert QueueItem.objects.get(pk=job).status == Status.PENDING
