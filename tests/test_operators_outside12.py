"""The operators' console used from outside (twelfth round): a worker SIGKILLed before
its first beat after a claim (its row said idle, with no job, while it held one), the
console's "… ago" and "in …" counted by this host's clock where everything else counts
by the database's, the times on a worker's page, the day chart's hours in a zone a
half-hour off UTC, and what the console's index promises view-only staff."""

from __future__ import annotations

import io
import os
import re
import signal
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from jobqueue.dashboard import dashboard_context
from jobqueue.models import ExtractionMetric, QueueItem, Status, WorkerHeartbeat
from jobqueue.sql import DbNow, db_now
from tests.conftest import grant_operator, wait_for, worker_log
from tests.jobqueue.test_worker_processes import SLOW_EXTRACTOR, store

QUEUE = reverse("admin:jobqueue_queueitem_changelist")
DASHBOARD = reverse("admin:jobqueue_dashboard")
WORKERS = reverse("admin:jobqueue_workerheartbeat_changelist")


@pytest.fixture
def operator(django_user_model):
    return grant_operator(
        django_user_model.objects.create_user("operator", password="op-password-12")
    )


def row_of(page: str, worker_id: str) -> str:
    (row,) = [
        row.split("</tr>")[0] for row in page.split("<tr") if f">{worker_id}<" in row
    ]
    return row


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_before_reporting_its_claim_shows_the_job_it_holds(
    start_worker, user, queue, settings, client, operator
):
    job_id = queue.enqueue(store(user, "held.txt", b"sleep:120 held").pk)
    # The beat after the start's is twenty minutes away: the claim is never reported.
    env = {**SLOW_EXTRACTOR, "QUEUE_STALE_WORKER_SECONDS": "3600"}
    proc = start_worker(
        "--workers",
        "1",
        "--poll-interval",
        "0.1",
        "--heartbeat-interval",
        "1200",
        env=env,
    )
    try:
        wait_for(lambda: QueueItem.objects.get(pk=job_id).status == Status.PROCESSING)
    except AssertionError:
        raise AssertionError(worker_log(proc)) from None
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)
    worker = WorkerHeartbeat.objects.get()
    # What its row says: its start's beat, idle, no job.
    assert (worker.status, worker.current_job_id) == ("idle", None)
    client.force_login(operator)

    # Still within the stale threshold: alive as far as anyone can tell, but busy.
    settings.QUEUE_STALE_WORKER_SECONDS = 3600
    row = row_of(client.get(WORKERS).content.decode(), worker.worker_id)
    assert "Alive" in row and "Busy" in row and "Idle" not in row
    assert f">#{job_id}<" in row
    live = row_of(client.get(DASHBOARD).content.decode(), worker.worker_id)
    assert "Busy" in live and f">#{job_id}<" in live

    # Past it: a lost worker, still holding the job, which waits for a rescue.
    settings.QUEUE_HEARTBEAT_INTERVAL, settings.QUEUE_STALE_WORKER_SECONDS = 0.1, 0.5
    wait_for(lambda: WorkerHeartbeat.objects.in_state("stale").exists(), 30)
    row = row_of(client.get(WORKERS).content.decode(), worker.worker_id)
    assert "Stale" in row and "Busy" in row
    assert f">#{job_id}</a> (held by this lost worker: awaits rescue)" in row
    # The status filter goes by what the rows show.
    assert worker.worker_id in client.get(WORKERS, {"status": "busy"}).content.decode()
    assert (
        worker.worker_id not in client.get(WORKERS, {"status": "idle"}).content.decode()
    )

    # The console's rescue sends it back to the queue; the lost attempt counts.
    def rescued() -> bool:
        client.post(
            WORKERS,
            {"action": "rescue_stale_jobs", "_selected_action": [worker.pk]},
        )
        return QueueItem.objects.get(pk=job_id).status == Status.PENDING

    wait_for(rescued, 30, interval=0.5)
    job = QueueItem.objects.get(pk=job_id)
    assert job.attempts == 1
    assert ExtractionMetric.objects.get(job=job).outcome == "rescued"
    row = row_of(client.get(WORKERS).content.decode(), worker.worker_id)
    assert "Stale" in row and "Idle" in row and f"#{job_id}" not in row


def cell(row: str, field: str) -> str:
    return re.search(rf'class="field-{field}">(.*?)</t[dh]>', row).group(1)


@pytest.mark.django_db
def test_the_console_counts_times_by_the_database_clock(
    admin_client, make_document, monkeypatch
):
    # Hosts' clocks differ: the "due now" filter, the rescue and the workers' state
    # go by the database's; the columns beside them went by the web host's.
    item = QueueItem.objects.create(
        document=make_document(name="r.txt"), status=Status.RETRY_PENDING
    )
    QueueItem.objects.filter(pk=item.pk).update(
        next_retry_at=DbNow(-5), created_at=DbNow(-5)
    )
    worker = WorkerHeartbeat.objects.create(worker_id="skew-1")
    WorkerHeartbeat.objects.filter(pk=worker.pk).update(last_heartbeat=DbNow())
    real_now = timezone.now

    # This host's clock an hour slow: the job the filter finds due read "in 1 h".
    monkeypatch.setattr(timezone, "now", lambda: real_now() - timedelta(hours=1))
    page = admin_client.get(QUEUE, {"retry": "due"}).content.decode()
    (row,) = [r.split("</tr>")[0] for r in page.split("<tr") if "r.txt" in r]
    assert cell(row, "next_retry_column") == "due"
    assert cell(row, "age_column") != "0 s"  # created 5 s before

    # An hour fast: a live worker read "1 h ago" beside its "Alive".
    monkeypatch.setattr(timezone, "now", lambda: real_now() + timedelta(hours=1))
    row = row_of(admin_client.get(WORKERS).content.decode(), "skew-1")
    assert "Alive" in row
    assert cell(row, "last_seen_column").endswith(" s ago")


@pytest.mark.django_db
def test_a_workers_page_gives_its_times_to_the_second_in_the_sites_zone(
    admin_client, settings
):
    settings.TIME_ZONE = "Asia/Kolkata"
    worker = WorkerHeartbeat.objects.create(worker_id="page-1")
    page = admin_client.get(
        reverse("admin:jobqueue_workerheartbeat_change", args=[worker.pk])
    ).content.decode()
    local = timezone.localtime(worker.last_heartbeat)
    # As the queue item's page writes them; Django's format stopped at the minute.
    assert local.strftime("%Y-%m-%d %H:%M:%S") in page
    assert "p.m." not in page and "a.m." not in page


@pytest.mark.django_db
def test_the_day_chart_labels_hours_as_the_zone_has_them(settings):
    # India is UTC+5:30: the hour from 00:00 UTC starts at 05:30 there; "%H:00"
    # wrote 05:00 under it.
    settings.TIME_ZONE = "Asia/Kolkata"
    chart = dashboard_context(db_now())["day_chart"]
    labels = [label for _, _, label in chart["ticks"]]
    labels += [bar["tip"].split(": ")[0] for bar in chart["bars"]]
    assert labels and all(label.endswith(":30") for label in labels), labels


@pytest.mark.django_db
def test_view_only_staff_are_not_promised_the_pause_switch(client, viewer, operator):
    client.force_login(viewer)
    index = client.get(reverse("admin:index")).content.decode()
    assert DASHBOARD in index and "pause and resume" not in index
    client.force_login(operator)
    assert "pause and resume" in client.get(reverse("admin:index")).content.decode()


@pytest.mark.django_db
def test_rescue_takes_the_jobs_of_the_selected_workers_only(
    client, operator, make_document
):
    # It rescued every lost worker's jobs, whichever were selected.
    jobs = {}
    for name in ("lost-1", "lost-2"):
        WorkerHeartbeat.objects.create(worker_id=name, status="busy")
        jobs[name] = QueueItem.objects.create(
            document=make_document(name=f"{name}.txt"),
            status=Status.PROCESSING,
            claimed_by=name,
            attempts=1,
        )
    WorkerHeartbeat.objects.update(last_heartbeat=DbNow(-3600))
    QueueItem.objects.update(started_at=DbNow(-3600))
    client.force_login(operator)
    chosen = WorkerHeartbeat.objects.get(worker_id="lost-1")
    page = client.get(WORKERS).content.decode()
    assert "Rescue the jobs of selected stale workers" in page
    client.post(
        WORKERS, {"action": "rescue_stale_jobs", "_selected_action": [chosen.pk]}
    )
    states = {
        name: QueueItem.objects.get(pk=job.pk).status for name, job in jobs.items()
    }
    assert states == {"lost-1": Status.PENDING, "lost-2": Status.PROCESSING}
    # A worker stopped with a job left processing (its stop timed out) is lost too.
    WorkerHeartbeat.objects.filter(worker_id="lost-2").update(status="stopped")
    row = row_of(client.get(WORKERS).content.decode(), "lost-2")
    assert "held by this lost worker: awaits rescue" in row
    chosen = WorkerHeartbeat.objects.get(worker_id="lost-2")
    client.post(
        WORKERS, {"action": "rescue_stale_jobs", "_selected_action": [chosen.pk]}
    )
    assert QueueItem.objects.get(pk=jobs["lost-2"].pk).status == Status.PENDING


@pytest.mark.django_db
def test_the_clear_page_says_a_killed_workers_heartbeat_stays_a_day(client, operator):
    # "Stopped or silent more than 0 days ago" promised the row of a worker killed
    # an hour ago, which stays (a paused host is silent too, and not dead).
    stopped = WorkerHeartbeat.objects.create(worker_id="done-1", status="stopped")
    killed = WorkerHeartbeat.objects.create(worker_id="killed-1", status="busy")
    WorkerHeartbeat.objects.update(last_heartbeat=DbNow(-3600))
    client.force_login(operator)
    clear = reverse("admin:jobqueue_clear_old")
    form = client.get(clear).content.decode()
    assert "for a day at least" in form
    chosen = {"days": 0, "statuses": ["completed", "failed", "cancelled"]}
    confirm = client.post(clear, chosen).content.decode()
    assert "1 heartbeat of workers stopped or silent more than 0 days ago" in confirm
    assert "(silent ones after a day at least)" in confirm
    done = client.post(clear, {**chosen, "confirm": "yes"}).content.decode()
    assert "(silent ones after a day at least)" in done
    assert list(WorkerHeartbeat.objects.all()) == [killed]
    assert stopped.pk not in WorkerHeartbeat.objects.values_list("pk", flat=True)


@pytest.mark.django_db
def test_rescue_stale_jobs_says_what_it_waits_for_and_what_it_left(
    make_document, settings
):
    # Run just after a worker was killed it rescued nothing and said only "Rescued
    # 0 jobs"; run later, it sat silent for a third of the threshold first.
    settings.QUEUE_HEARTBEAT_INTERVAL, settings.QUEUE_STALE_WORKER_SECONDS = 0.1, 0.6
    for name in ("fresh", "silent"):
        WorkerHeartbeat.objects.create(worker_id=name, status="busy")
        QueueItem.objects.create(
            document=make_document(name=f"{name}.txt"),
            status=Status.PROCESSING,
            claimed_by=name,
            attempts=1,
        )
    QueueItem.objects.filter(claimed_by="silent").update(started_at=DbNow(-3600))
    WorkerHeartbeat.objects.filter(worker_id="fresh").update(
        last_heartbeat=DbNow(3600)  # heard from (a clock an hour ahead: it stays so)
    )
    WorkerHeartbeat.objects.filter(worker_id="silent").update(
        last_heartbeat=DbNow(-3600)
    )
    out, err = io.StringIO(), io.StringIO()
    call_command("rescue_stale_jobs", stdout=out, stderr=err)
    assert err.getvalue() == (
        "Waiting for 1 silent worker holding jobs: a live one beats again within "
        "a third of 0.6 s.\n"
    )
    assert out.getvalue().splitlines() == [
        "Rescued 1 job of dead workers and 0 jobs stuck over 30 minutes.",
        "1 job is still processing: its worker was heard from, or took it, within "
        "the last 0.6 s. A worker killed since is taken for dead once silent that "
        "long: run this again then.",
    ]
    quiet = io.StringIO()
    call_command("rescue_stale_jobs", verbosity=0, stdout=quiet, stderr=quiet)
    assert quiet.getvalue() == ""
