"""An operators' audit (9), after ops8's notes: the clear page starts at the
housekeeping's age, one limit on days everywhere, a stop of a dead worker's job says
what really happens, and clearing every finished state deletes the stopped workers'
heartbeats in the command as on the page."""

from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.messages import get_messages
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from jobqueue.management.arguments import MAX_DAYS
from jobqueue.models import QueueItem, Status, WorkerHeartbeat
from jobqueue.services import QueueManager

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:jobqueue_queueitem_changelist")
CLEAR = reverse("admin:jobqueue_clear_old")
ALL_FINISHED = ["completed", "failed", "cancelled"]


def messages_of(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def finished(make_document, days_ago: float, status: str = Status.COMPLETED):
    item = QueueItem.objects.create(document=make_document(), status=status)
    # updated_at is the clearing's age; set it past auto_now.
    QueueItem.objects.filter(pk=item.pk).update(
        updated_at=timezone.now() - timedelta(days=days_ago)
    )
    return item


def initial_days(client) -> str:
    page = client.get(CLEAR).content.decode()
    return re.search(r'<input type="number" name="days" value="([^"]*)"', page)[1]


# --- 1. The clear page starts at QUEUE_KEEP_FINISHED_DAYS -----------------------------


@pytest.mark.parametrize(
    ("keep", "shown"), [(7.0, "7"), (7.5, "8"), (30.0, "30"), (0.0, "30")]
)
def test_the_clear_page_starts_at_the_housekeeping_age(
    admin_client, settings, keep, shown
):
    settings.QUEUE_KEEP_FINISHED_DAYS = keep
    assert initial_days(admin_client) == shown
    help_text = admin_client.get(CLEAR).content.decode()
    assert "QUEUE_KEEP_FINISHED_DAYS" in help_text
    assert f"Default {shown}" in help_text


def test_the_default_clears_what_housekeeping_would(
    admin_client, settings, make_document
):
    # With the setting at 7, the page's old 30 days cleared nothing housekeeping
    # would not: a job finished 10 days ago stayed.
    settings.QUEUE_KEEP_FINISHED_DAYS = 7
    old = finished(make_document, 10)
    recent = finished(make_document, 3)
    days = initial_days(admin_client)
    response = admin_client.post(
        CLEAR, {"days": days, "statuses": ALL_FINISHED, "confirm": "yes"}, follow=True
    )
    assert messages_of(response) == ["Deleted 1 queue item older than 7 days."]
    assert not QueueItem.objects.filter(pk=old.pk).exists()
    assert QueueItem.objects.filter(pk=recent.pk).exists()


# --- 2. One limit on days ---------------------------------------------------------------


def test_the_command_the_token_and_the_page_stop_at_the_same_day(
    admin_client, user, make_document
):
    assert MAX_DAYS == 36_500
    # clear_queue took 36,525 days (and 36,501) where the others stopped at 36,500.
    with pytest.raises(CommandError, match="at most 36,500"):
        call_command("clear_queue", "--older-than", str(MAX_DAYS + 1))
    call_command("clear_queue", "--older-than", str(MAX_DAYS), stdout=StringIO())
    with pytest.raises(CommandError, match="from 1 to 36500"):
        call_command(
            "create_api_token", user.username, "--expires-days", str(MAX_DAYS + 1)
        )
    out = StringIO()
    call_command(
        "create_api_token",
        user.username,
        "--expires-days",
        str(MAX_DAYS),
        stdout=out,
        stderr=StringIO(),
    )
    assert out.getvalue().strip()
    finished(make_document, 1)
    too_far = admin_client.post(CLEAR, {"days": MAX_DAYS + 1, "statuses": "completed"})
    assert too_far.context["form"].errors["days"]
    furthest = admin_client.post(CLEAR, {"days": MAX_DAYS, "statuses": "completed"})
    assert furthest.context["step"] == "confirm"


# --- 3. Stopping a job whose worker is dead ----------------------------------------------


@pytest.fixture
def dead_workers_job(make_document):
    WorkerHeartbeat.objects.create(
        worker_id="w-dead", last_heartbeat=timezone.now() - timedelta(minutes=10)
    )
    return QueueItem.objects.create(
        document=make_document(),
        status=Status.PROCESSING,
        claimed_by="w-dead",
        attempts=1,
        started_at=timezone.now() - timedelta(minutes=10),
    )


@pytest.fixture
def live_workers_job(make_document):
    WorkerHeartbeat.objects.create(worker_id="w-live", status="busy")
    return QueueItem.objects.create(
        document=make_document(),
        status=Status.PROCESSING,
        claimed_by="w-live",
        attempts=1,
        started_at=timezone.now(),
    )


def test_stopping_a_dead_workers_job_says_no_worker_ends_it(
    admin_client, dead_workers_job, live_workers_job
):
    response = admin_client.post(
        CHANGELIST,
        {
            "action": "stop_jobs",
            "_selected_action": [dead_workers_job.pk, live_workers_job.pk],
        },
        follow=True,
    )
    assert messages_of(response) == [
        "Stopped 1 job: its worker ends it within seconds; stopped 1 job whose "
        "worker is not alive (stopped, or no heartbeat for 60 s): it is cancelled at "
        "once, and no rescue will send it back to the queue (“Release selected "
        "processing jobs to pending” would have)."
    ]
    # What the message says: cancelled, and the rescue no longer takes it.
    assert QueueManager().rescue_stale_workers() == 0
    dead_workers_job.refresh_from_db()
    assert dead_workers_job.status == Status.CANCELLED


def test_the_item_pages_stop_of_a_dead_workers_job_says_so(
    admin_client, dead_workers_job
):
    cancel = reverse("admin:jobqueue_queueitem_cancel", args=[dead_workers_job.pk])
    (message,) = messages_of(admin_client.post(cancel, follow=True))
    assert message.startswith(
        f"Stopped job #{dead_workers_job.pk}: its worker w-dead is not alive"
    )
    assert "ends it within seconds" not in message
    assert "no rescue will send it back" in message


def test_the_item_pages_stop_of_a_live_workers_job_is_unchanged(
    admin_client, live_workers_job
):
    cancel = reverse("admin:jobqueue_queueitem_cancel", args=[live_workers_job.pk])
    assert messages_of(admin_client.post(cancel, follow=True)) == [
        f"Stopped job #{live_workers_job.pk}: its worker ends it within seconds."
    ]


# --- 4. Every finished state chosen: the heartbeats go, in the command as on the page ---


@pytest.fixture
def old_stopped_worker():
    return WorkerHeartbeat.objects.create(
        worker_id="old-stopped",
        status="stopped",
        last_heartbeat=timezone.now() - timedelta(days=40),
    )


def test_clear_queue_with_every_state_deletes_stopped_heartbeats(old_stopped_worker):
    args = ["--older-than", "30"] + [a for s in ALL_FINISHED for a in ("--status", s)]
    out = StringIO()
    call_command("clear_queue", *args, "--dry-run", stdout=out)
    assert out.getvalue() == (
        "Would delete 0 queue items and 1 stopped worker's heartbeat (dry run).\n"
    )
    out = StringIO()
    call_command("clear_queue", *args, stdout=out)
    assert "and 1 stopped worker's heartbeat" in out.getvalue()
    assert not WorkerHeartbeat.objects.filter(pk=old_stopped_worker.pk).exists()


def test_clear_queue_with_some_states_keeps_them(old_stopped_worker):
    out = StringIO()
    call_command(
        "clear_queue",
        "--older-than",
        "30",
        "--status",
        "completed",
        "--status",
        "failed",
        stdout=out,
    )
    assert out.getvalue() == "Deleted 0 queue items older than 30 days.\n"
    assert WorkerHeartbeat.objects.filter(pk=old_stopped_worker.pk).exists()


def test_the_clear_page_with_every_state_does_as_the_command(
    admin_client, old_stopped_worker
):
    response = admin_client.post(
        CLEAR, {"days": 30, "statuses": ALL_FINISHED, "confirm": "yes"}, follow=True
    )
    assert messages_of(response) == [
        "Deleted 0 queue items older than 30 days and 1 stopped worker's heartbeat."
    ]
    assert not WorkerHeartbeat.objects.filter(pk=old_stopped_worker.pk).exists()
