"""An outside contract audit (the sixth): file names as scripts send them, the admin's
clear page beside the workers' housekeeping, and the item page's times."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from documents.models import Document
from jobqueue.admin import QueueItemAdmin
from jobqueue.models import QueueItem, Status, WorkerHeartbeat

pytestmark = pytest.mark.django_db

CLEAR = reverse("admin:jobqueue_clear_old")
EVERY_FINISHED_STATE = ["completed", "failed", "cancelled"]


@pytest.fixture
def api(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


# --- A quote in a file name, as browsers and curl send it (%22) ------------------------


def test_a_quote_sent_as_percent_22_is_a_quote_on_the_api_as_on_the_form(api):
    # curl -F 'file=@x;filename="a\"b"' and browsers send the quote as %22 (the HTML
    # standard's multipart encoding); the form decoded it, the API kept "%22".
    upload = SimpleUploadedFile("report %22final%22.txt", b"The final report.\n")
    response = api.post("/api/documents/", {"file": upload})
    assert response.status_code == 202
    assert response.json()["filename"] == 'report "final".txt'
    assert Document.objects.get().original_filename == 'report "final".txt'


def test_a_refusal_names_the_file_with_its_quote_on_the_api(api):
    upload = SimpleUploadedFile("empty %22one%22.txt", b"")
    response = api.post("/api/documents/", {"file": upload})
    assert response.status_code == 400
    assert (
        response.json()["error"]["message"] == '“empty "one".txt” is empty (0 bytes).'
    )


def test_a_refusal_on_the_form_names_the_file_with_its_quote(user_client):
    files = [
        SimpleUploadedFile("kept.txt", b"Kept.\n"),
        SimpleUploadedFile("empty %22one%22.txt", b""),
    ]
    response = user_client.post(reverse("documents:upload"), {"file": files})
    assert response.status_code == 302
    page = user_client.get(response["Location"]).content.decode()
    assert "“empty &quot;one&quot;.txt” is empty (0 bytes)." in page


# --- The clear page clears what the workers' housekeeping clears ----------------------


def _heartbeat(worker_id: str, status: str, age: timedelta) -> WorkerHeartbeat:
    beat = WorkerHeartbeat.objects.create(worker_id=worker_id, status=status)
    WorkerHeartbeat.objects.filter(pk=beat.pk).update(
        last_heartbeat=timezone.now() - age
    )
    return beat


@pytest.fixture
def heartbeats() -> None:
    _heartbeat("stopped-long-ago", WorkerHeartbeat.State.STOPPED, timedelta(days=40))
    _heartbeat("stopped-lately", WorkerHeartbeat.State.STOPPED, timedelta(days=2))
    _heartbeat("dead-long-ago", WorkerHeartbeat.State.IDLE, timedelta(days=40))
    _heartbeat("alive", WorkerHeartbeat.State.BUSY, timedelta(seconds=1))


def _workers() -> set[str]:
    return set(WorkerHeartbeat.objects.values_list("worker_id", flat=True))


def test_clearing_every_finished_state_deletes_long_stopped_workers_heartbeats(
    admin_client, make_document, heartbeats
):
    item = QueueItem.objects.create(document=make_document(), status=Status.COMPLETED)
    QueueItem.objects.filter(pk=item.pk).update(
        updated_at=timezone.now() - timedelta(days=40),
        finished_at=timezone.now() - timedelta(days=40),
    )
    form = {"days": "30", "statuses": EVERY_FINISHED_STATE}
    confirm = admin_client.post(CLEAR, form).content.decode()
    assert "With them, 2 heartbeats of workers stopped or silent more than 30 days" in (
        confirm
    )
    assert 'value="Yes, delete 1 item and 2 heartbeats"' in confirm
    response = admin_client.post(CLEAR, {**form, "confirm": "yes"})
    assert [m.message for m in response.context["messages"]] == [
        "Deleted 1 queue item older than 30 days and 2 stopped workers' heartbeats."
    ]
    # As clear_queue and the workers' housekeeping: stopped or killed (silent) long
    # ago, never a live worker's; a dead one's jobs were rescued within minutes.
    assert _workers() == {"stopped-lately", "alive"}


def test_only_heartbeats_to_clear_still_offer_the_button(admin_client, heartbeats):
    form = {"days": "30", "statuses": EVERY_FINISHED_STATE}
    confirm = admin_client.post(CLEAR, form).content.decode()
    assert 'value="Yes, delete 0 items and 2 heartbeats"' in confirm
    admin_client.post(CLEAR, {**form, "confirm": "yes"})
    assert not {"stopped-long-ago", "dead-long-ago"} & _workers()


def test_clearing_some_states_keeps_the_heartbeats_as_clear_queue_status_does(
    admin_client, heartbeats
):
    form = {"days": "0", "statuses": ["cancelled"]}
    confirm = admin_client.post(CLEAR, form).content.decode()
    assert "heartbeats are kept: only some states were chosen" in confirm
    admin_client.post(CLEAR, {**form, "confirm": "yes"})
    assert "stopped-long-ago" in _workers()


def test_a_view_only_staff_member_clears_nothing(client, django_user_model, heartbeats):
    viewer = django_user_model.objects.create_user("viewer", is_staff=True)
    viewer.user_permissions.add(
        *Permission.objects.filter(codename__startswith="view_")
    )
    client.force_login(viewer)
    form = {"days": "0", "statuses": EVERY_FINISHED_STATE, "confirm": "yes"}
    assert client.post(CLEAR, form).status_code == 403
    assert "stopped-long-ago" in _workers()


# --- The item page's times (one helper for the four of them) --------------------------


def test_the_item_page_shows_each_time_to_the_second(admin_client, make_document):
    item = QueueItem.objects.create(document=make_document(), status=Status.COMPLETED)
    moments = {
        "created_at": timezone.now() - timedelta(hours=1, seconds=7),
        "started_at": timezone.now() - timedelta(minutes=5, seconds=3),
        "finished_at": timezone.now() - timedelta(minutes=5, seconds=1),
        "updated_at": timezone.now() - timedelta(minutes=5),
    }
    QueueItem.objects.filter(pk=item.pk).update(**moments)
    url = reverse("admin:jobqueue_queueitem_change", args=[item.pk])
    page = admin_client.get(url).content.decode()
    for field, label in (
        ("created_at", "Created at"),
        ("started_at", "Latest attempt started at"),
        ("finished_at", "Finished at"),
        ("updated_at", "Updated at"),
    ):
        shown = timezone.localtime(moments[field]).strftime("%Y-%m-%d %H:%M:%S")
        assert f"{label}:</label>" in page
        assert f'<div class="readonly">{shown}</div>' in page, field
    QueueItem.objects.filter(pk=item.pk).update(started_at=None, finished_at=None)
    page = admin_client.get(url).content.decode()
    assert page.count('<div class="readonly">-</div>') >= 2
    assert (
        QueueItemAdmin.started_column.short_description == "Latest attempt started at"
    )


# --- "Delete selected" on workers: the live ones are skipped, not the whole lot --------

WORKERS = reverse("admin:jobqueue_workerheartbeat_changelist")


def test_deleting_a_selection_with_live_workers_deletes_the_others(
    admin_client, heartbeats
):
    everyone = list(WorkerHeartbeat.objects.values_list("pk", flat=True))
    action = {"action": "delete_selected", "_selected_action": everyone}
    confirm = admin_client.post(WORKERS, action)
    page = confirm.content.decode()
    # Django's page said "your account doesn't have permission" (to a superuser)
    # and deleted nothing at all.
    assert "permission" not in page
    assert "3 worker heartbeats will be deleted" in page
    response = admin_client.post(WORKERS, {**action, "post": "yes"}, follow=True)
    assert [m.message for m in response.context["messages"]] == [
        "Skipped 1 live worker's heartbeat: without it the worker would look dead, "
        "and its jobs would run twice.",
        "Successfully deleted 3 worker heartbeats.",
    ]
    assert _workers() == {"alive"}


def test_deleting_only_live_workers_says_why_nothing_went(admin_client, heartbeats):
    alive = WorkerHeartbeat.objects.get(worker_id="alive").pk
    action = {"action": "delete_selected", "_selected_action": [alive], "post": "yes"}
    response = admin_client.post(WORKERS, action, follow=True)
    assert [m.level_tag for m in response.context["messages"]] == ["warning"]
    assert "Skipped 1 live worker's heartbeat" in response.content.decode().replace(
        "&#x27;", "'"
    )
    assert "alive" in _workers()
