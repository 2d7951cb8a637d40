"""The operators' console used from outside (eleventh round): what view-only staff
see of the workers and the metrics, the stop action's message when it stopped
nothing, the history a priority bump leaves on jobs already at the limit, and what
a pause (or resume) that changed nothing says."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.messages import get_messages
from django.urls import reverse

from jobqueue.models import (
    MAX_PRIORITY,
    ExtractionMetric,
    QueueControl,
    QueueItem,
    Status,
    WorkerHeartbeat,
)
from tests.conftest import grant_operator

pytestmark = pytest.mark.django_db

QUEUE = reverse("admin:jobqueue_queueitem_changelist")
DASHBOARD = reverse("admin:jobqueue_dashboard")
WORKERS = reverse("admin:jobqueue_workerheartbeat_changelist")
METRICS = reverse("admin:jobqueue_extractionmetric_changelist")


@pytest.fixture
def heartbeat():
    return WorkerHeartbeat.objects.create(
        worker_id="host:1:abcd:w1", status=WorkerHeartbeat.State.IDLE, hostname="host"
    )


def said(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_view_only_staff_see_the_workers_and_metrics_the_dashboard_links(
    client, viewer, heartbeat
):
    # The dashboard showed them links to both lists, and each answered 403.
    metric = ExtractionMetric.objects.create(outcome="completed", worker_id="w1")
    client.force_login(viewer)
    dashboard = client.get(DASHBOARD).content.decode()
    assert WORKERS in dashboard and METRICS in dashboard
    for url in (
        WORKERS,
        METRICS,
        reverse("admin:jobqueue_workerheartbeat_change", args=[heartbeat.pk]),
        reverse("admin:jobqueue_extractionmetric_change", args=[metric.pk]),
    ):
        assert client.get(url).status_code == 200, url
    index = client.get(reverse("admin:index")).content.decode()
    assert WORKERS in index and METRICS in index
    # They look; they do not act: no action is offered, and a forged one does nothing.
    page = client.get(WORKERS).content.decode()
    assert "rescue_stale_jobs" not in page and 'name="action"' not in page
    for action in ("rescue_stale_jobs", "delete_selected"):
        client.post(
            WORKERS, {"action": action, "_selected_action": [heartbeat.pk], "post": 1}
        )
    assert WorkerHeartbeat.objects.filter(pk=heartbeat.pk).exists()
    delete = reverse("admin:jobqueue_workerheartbeat_delete", args=[heartbeat.pk])
    assert client.post(delete, {"post": "yes"}).status_code == 403
    assert WorkerHeartbeat.objects.filter(pk=heartbeat.pk).exists()


def test_staff_who_may_not_view_the_queue_still_see_neither(
    client, django_user_model, heartbeat
):
    nobody = django_user_model.objects.create_user("clerk", is_staff=True)
    client.force_login(nobody)
    for url in (WORKERS, METRICS, DASHBOARD):
        assert client.get(url).status_code == 403, url
    person = django_user_model.objects.create_user("person")
    client.force_login(person)
    for url in (WORKERS, METRICS):
        assert client.get(url)["Location"].startswith(reverse("admin:login"))


def test_stopping_jobs_that_are_not_running_promises_no_worker_will_end_them(
    client, staff_user, make_document
):
    # "Stopped 0 jobs: their workers end them within seconds" announced an end
    # that nothing was sent.
    items = [
        QueueItem.objects.create(document=make_document(), status=status)
        for status in (Status.COMPLETED, Status.PENDING)
    ]
    client.force_login(staff_user)
    response = client.post(
        QUEUE,
        {"action": "stop_jobs", "_selected_action": [i.pk for i in items]},
        follow=True,
    )
    [message] = said(response)
    assert message.startswith("Stopped 0 jobs; skipped 2 that were not running")
    assert "within seconds" not in message


def test_a_priority_bump_leaves_no_history_on_jobs_it_did_not_change(
    client, staff_user, make_document
):
    # A job already at the top was logged "Priority +10" though it stayed at 100.
    top = QueueItem.objects.create(
        document=make_document(), status=Status.PENDING, priority=MAX_PRIORITY
    )
    low = QueueItem.objects.create(
        document=make_document(), status=Status.PENDING, priority=0
    )
    client.force_login(staff_user)
    response = client.post(
        QUEUE,
        {"action": "raise_priority", "_selected_action": [top.pk, low.pk]},
        follow=True,
    )
    [message] = said(response)
    assert message.startswith("Raised the priority of 1 job by 10; skipped 1")
    top.refresh_from_db()
    low.refresh_from_db()
    assert (top.priority, low.priority) == (MAX_PRIORITY, 10)
    logged = set(
        LogEntry.objects.filter(change_message__startswith="Priority").values_list(
            "object_id", flat=True
        )
    )
    assert logged == {str(low.pk)}


def test_a_second_pause_or_resume_says_nothing_changed(
    client, staff_user, django_user_model
):
    # The second click said "Processing paused" as if it had paused it, while the
    # switch kept who paused it first and when (as ``pause_queue`` says).
    pause = reverse("admin:jobqueue_pause")
    first = grant_operator(
        django_user_model.objects.create_user("first", is_staff=True)
    )
    client.force_login(first)
    response = client.post(pause, {"paused": "1"}, follow=True)
    assert said(response) == [
        "Processing paused: workers finish their current jobs and take no new ones."
    ]
    client.force_login(staff_user)
    response = client.post(pause, {"paused": "1"}, follow=True)
    [message] = said(response)
    assert message.startswith("Processing was already paused (by first, since ")
    assert message.endswith("); nothing changed.")
    control = QueueControl.current()
    assert (control.paused, control.changed_by) == (True, "first")
    response = client.post(pause, {"paused": "0"}, follow=True)
    assert said(response) == ["Processing resumed."]
    response = client.post(pause, {"paused": "0"}, follow=True)
    assert said(response) == ["Processing was already running; nothing changed."]
