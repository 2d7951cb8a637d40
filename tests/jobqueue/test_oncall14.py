"""A day on call (14), in the operators' console with real workers: the page of a job
whose worker host vanished says so before anyone acts on it, and offers the release
that runs it again, where its only button, "Stop job", cancelled it for good."""

from __future__ import annotations

import html
import os
import re
import signal

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from jobqueue.models import ExtractionMetric, QueueItem, Status, WorkerHeartbeat
from tests.conftest import wait_for
from tests.jobqueue.test_worker_processes import SLOW_EXTRACTOR, store

pytestmark = pytest.mark.django_db(transaction=True)

STALE_SECONDS = 3
FAST = ["--workers", "1", "--poll-interval", "0.1", "--heartbeat-interval", "0.5"]
ENV = {**SLOW_EXTRACTOR, "QUEUE_STALE_WORKER_SECONDS": str(STALE_SECONDS)}


def messages_of(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def item_page(client, pk: int) -> str:
    response = client.get(reverse("admin:jobqueue_queueitem_change", args=[pk]))
    assert response.status_code == 200
    return response.content.decode()


def release_form(page: str) -> tuple[str, list[tuple[str, str]]] | None:
    """The item page's "Release job" form: where it posts, and its fields."""
    for action, body in re.findall(
        r'<form method="post" action="([^"]+)">(.*?)</form>', page, re.S
    ):
        if "Release job" in body:
            fields = re.findall(r'name="(\w+)" value="([^"]*)"', body)
            return html.unescape(action), [
                (name, value) for name, value in fields if name != "csrfmiddlewaretoken"
            ]
    return None


@pytest.fixture
def lost_job(start_worker, user, queue, settings):
    """A job running in a real worker that was then SIGKILLed (its host vanished),
    seen once its heartbeat went stale and before any rescue (no worker is left)."""
    settings.QUEUE_STALE_WORKER_SECONDS = STALE_SECONDS
    settings.QUEUE_HEARTBEAT_INTERVAL = 0.5
    job = queue.enqueue(store(user, "hangs.txt", b"sleep:60 hangs").pk)
    worker = start_worker(*FAST, env=ENV)
    wait_for(lambda: QueueItem.objects.get(pk=job).status == Status.PROCESSING)
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(10)
    wait_for(lambda: WorkerHeartbeat.objects.in_state("stale").exists(), 30)
    return QueueItem.objects.get(pk=job)


def test_a_lost_workers_job_page_says_so_and_releases_it(client, staff_user, lost_job):
    """An operator paged for a job stuck in "processing" opened its page: it showed the
    dead worker's id like any other and one button, "Stop job", which cancels the job
    for good (the message after it said a release would have run it again). The page
    now says the worker is not alive and offers "Release job", the list's release."""
    client.force_login(staff_user)
    page = item_page(client, lost_job.pk)
    text = html.unescape(page)
    assert f"Its worker {lost_job.claimed_by} is not alive" in text
    assert f"no heartbeat for {STALE_SECONDS} s" in text
    assert "“Stop job” would cancel it for good" in text
    form = release_form(page)
    assert form is not None
    action, fields = form
    response = client.post(action, dict(fields), follow=True)
    assert messages_of(response) == [
        "Released 1 job to pending (its worker is not alive: the lost attempt "
        "counts, as in a rescue)."
    ]
    lost_job.refresh_from_db()
    assert lost_job.status == Status.PENDING
    assert lost_job.attempts == 1  # the lost attempt counted
    assert ExtractionMetric.objects.filter(
        job=lost_job, outcome=ExtractionMetric.Outcome.RESCUED
    ).exists()
    # Released, the page no longer says a worker holds it.
    assert "is not alive" not in item_page(client, lost_job.pk)


def test_view_only_staff_see_the_lost_worker_but_cannot_release(
    client, viewer, lost_job
):
    client.force_login(viewer)
    page = item_page(client, lost_job.pk)
    assert f"Its worker {lost_job.claimed_by} is not alive" in page
    assert release_form(page) is None
    assert "would cancel it for good" not in html.unescape(page)
    # A crafted post of the release is refused, and changes nothing.
    client.post(
        reverse("admin:jobqueue_queueitem_changelist"),
        {"action": "release_jobs", "index": "0", "_selected_action": [lost_job.pk]},
    )
    lost_job.refresh_from_db()
    assert lost_job.status == Status.PROCESSING


def test_a_live_workers_job_page_offers_no_release(client, staff_user, make_document):
    WorkerHeartbeat.objects.create(worker_id="w-live", status="busy")
    job = QueueItem.objects.create(
        document=make_document(),
        status=Status.PROCESSING,
        claimed_by="w-live",
        attempts=1,
    )
    client.force_login(staff_user)
    page = item_page(client, job.pk)
    assert "is not alive" not in page
    assert release_form(page) is None
    assert "Stop job" in page


# --- An extraction child killed while idle (the OOM killer's pick) ------------------


def pool_children() -> list[int]:
    """The extraction children of this process's worker: the fork server's children."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    stat = fh.read()
            except OSError:
                continue
            # The parent's pid follows the name in parentheses and the state.
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    servers = {pid for pid, parent in parents.items() if parent == os.getpid()}
    return [pid for pid, parent in parents.items() if parent in servers]


def test_a_child_killed_while_idle_does_not_wedge_the_worker(run_worker, user, queue):
    """The OOM killer takes the largest process: often an extraction child that has
    just read a big document and waits, idle, for the next. The children's pool took
    the death of a child that ran no job for its own breakage ("All workers expired")
    and refused every job after it: the worker, alive and beating, claimed each job,
    failed to start it, released it as if the database had failed, and did so for
    ever; nothing was processed until someone restarted it. Seen on call after a
    burst of crashing documents, where a child dies before the pool hears it took
    its job, on both databases."""
    worker = run_worker()
    first = queue.enqueue(store(user, "first.txt", b"first document text").pk)
    wait_for(lambda: QueueItem.objects.get(pk=first).status == Status.COMPLETED)
    children = wait_for(pool_children)
    for pid in children:
        os.kill(pid, signal.SIGKILL)
    second = queue.enqueue(store(user, "second.txt", b"second document text").pk)
    wait_for(lambda: QueueItem.objects.get(pk=second).status == Status.COMPLETED, 30)
    assert worker.is_running()
