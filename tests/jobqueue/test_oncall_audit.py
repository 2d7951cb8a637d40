"""What the operator paged at 3 a.m. sees: a database outage said once (not a
traceback a second), a backlog's age that counts what is due (a retry waiting for a
busy worker; not a task scheduled for tomorrow), a forgotten pause visible where
operators land and alertable, and alert rules in the README that match /metrics."""

from __future__ import annotations

import logging
import re
import socket
import time
from datetime import timedelta

import pytest
import yaml
from django.db import connection, connections
from django.urls import reverse
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from jobqueue.models import (
    ExtractionMetric,
    Operation,
    QueueControl,
    QueueItem,
    Status,
    WorkerHeartbeat,
)
from jobqueue.monitoring import paused_for
from jobqueue.services import QueueManager
from jobqueue.sql import db_now
from jobqueue.wakeup import Wakeup
from ops import probes
from tests import conftest
from tests.conftest import REPO_ROOT, wait_for, worker_log
from tests.db_faults import TcpProxy, hold_sqlite_write_lock

DASHBOARD = reverse("admin:jobqueue_dashboard")


def scrape(client) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of /metrics."""
    response = client.get("/metrics")
    assert response.status_code == 200
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.content.decode())
        for s in family.samples
    }


@pytest.fixture
def metrics_public(settings):
    settings.METRICS_TOKEN = ""
    settings.METRICS_PUBLIC = True


def unreachable(settings_dict: dict, monkeypatch) -> None:
    """Point a connection's settings at a database that is not there: a port
    nothing listens on (PostgreSQL: connection refused), a folder that does not
    exist (SQLite: unable to open the file)."""
    if settings_dict["ENGINE"].endswith("sqlite3"):
        monkeypatch.setitem(settings_dict, "NAME", "/nonexistent-oncall/db.sqlite3")
        return
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    monkeypatch.setitem(settings_dict, "HOST", "127.0.0.1")
    monkeypatch.setitem(settings_dict, "PORT", str(port))


# --- Incident: the database goes away ------------------------------------------------


def test_the_wakeup_watcher_says_once_that_the_database_is_away(monkeypatch, caplog):
    """The watch reconnects every second while the database is away. It logged an
    ERROR with a full traceback each time (PostgreSQL: the refused connection was
    psycopg's own error, not taken for a database fault): 60 tracebacks a minute
    per worker process, burying the worker's one line about the outage."""
    unreachable(connections.settings["default"], monkeypatch)
    wakeup = Wakeup()

    def said() -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.name == "jobqueue.wakeup"]

    with caplog.at_level(logging.DEBUG, logger="jobqueue.wakeup"):
        wakeup.start()
        try:
            # Three attempts at least, however slow the host: not a fixed sleep.
            wait_for(lambda: len(said()) >= 3, 30)
        finally:
            wakeup.stop()
    records = said()
    loud = [r for r in records if r.levelno >= logging.WARNING]
    assert len(records) >= 3, records  # it did keep trying
    assert len(loud) == 1, [r.getMessage() for r in loud]
    if connection.vendor == "postgresql":
        # A database fault: a warning without a traceback, not an ERROR.
        assert loud[0].levelno == logging.WARNING and loud[0].exc_info is None
        assert "lost the database" in loud[0].getMessage()


OUTAGE_SECONDS = 8.0


@pytest.mark.django_db(transaction=True)
def test_idle_worker_threads_say_once_that_the_database_is_away(
    start_worker, queue, make_document
):
    """Each idle thread's claim fails and is tried again every 2 s at most: it
    logged a WARNING at each try, a line per thread every 2 s for the whole outage.
    PostgreSQL: the server's connections cut and refused (a restart); SQLite: the
    write lock held past the busy timeout."""
    flags = ["--workers", "2", "--poll-interval", "0.1", "--heartbeat-interval", "1"]
    env = {"QUEUE_STALE_WORKER_SECONDS": "30", "SQLITE_BUSY_TIMEOUT": "1"}
    proxy = None
    if connection.vendor == "postgresql":
        proxy = TcpProxy(connection.settings_dict.get("PORT") or 5432).start()
        env["DATABASE_URL"] = proxy.url(conftest.test_database_url())
    try:
        proc = start_worker(*flags, env=env)
        wait_for(lambda: "Started 2 workers" in worker_log(proc), 30)
        time.sleep(1)
        if proxy is not None:
            proxy.cut()
            time.sleep(OUTAGE_SECONDS)
            proxy.restore()
        else:
            hold_sqlite_write_lock(connection.settings_dict["NAME"], OUTAGE_SECONDS)
        wait_for(lambda: "Database reachable again" in worker_log(proc), 30)
        job = queue.enqueue(make_document().pk)
        wait_for(lambda: QueueItem.objects.get(pk=job).status == Status.COMPLETED, 30)
        # Read before the proxy closes: closing it cuts the worker's connections
        # again, a second outage the threads rightly report.
        log = worker_log(proc)
    finally:
        if proxy is not None:
            proxy.close()
    unavailable = re.findall(r"\[([^\]]+)\] database unavailable", log)
    assert unavailable, log  # the threads did meet the outage
    assert len(unavailable) == len(set(unavailable)) <= 2, log
    assert "Traceback" not in log, log


@pytest.mark.django_db(transaction=True)
def test_readiness_logs_a_database_outage_once_and_its_end(
    client, settings, monkeypatch, caplog
):
    """A probe every few seconds logged a traceback at each one while the database
    was away; now the first failure is logged, the rest are quiet, and the return
    is said once."""
    settings.OCR_MODE = "never"
    # What earlier probes in this process left failing is not this test's outage.
    monkeypatch.setattr(probes, "_failing", set())
    WorkerHeartbeat.objects.create(worker_id="live")
    connection.close()
    with monkeypatch.context() as away, caplog.at_level(logging.DEBUG, "ops.probes"):
        unreachable(connection.settings_dict, away)
        for _ in range(4):
            response = client.get("/readyz")
            assert response.status_code == 503
            assert response.json()["checks"]["database"] == "failed (see the log)"
        connection.close()
    with caplog.at_level(logging.DEBUG, "ops.probes"):
        assert client.get("/readyz").status_code == 200
        assert client.get("/readyz").status_code == 200
    records = [r for r in caplog.records if r.name == "ops.probes"]
    errors = [r for r in records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is not None
    back = [r.getMessage() for r in records if r.levelno == logging.INFO]
    assert back == ["Readiness check database passes again"]


# --- Incident: the queue backs up ----------------------------------------------------


@pytest.mark.django_db
def test_oldest_waiting_job_counts_what_is_due_and_only_that(
    admin_client, client, metrics_public
):
    """A due retry waits as retry_pending until a busy worker claims it: the metric
    (pending only) read 0 through a backlog of them. A task scheduled for tomorrow
    waits for nothing: the dashboard (waiting since creation) read it as hours late."""
    now = db_now()
    task = QueueManager().enqueue_job(
        Operation.NOOP, payload={}, run_after=now + timedelta(days=1)
    )
    QueueItem.objects.filter(pk=task.pk).update(created_at=now - timedelta(hours=2))

    assert scrape(client)["docqueue_oldest_pending_seconds", ()] == 0
    assert admin_client.get(DASHBOARD).context["oldest_pending"] is None

    QueueItem.objects.create(
        operation=Operation.NOOP,
        status=Status.RETRY_PENDING,
        attempts=1,
        created_at=now - timedelta(hours=3),
        next_retry_at=now - timedelta(minutes=10),
    )
    age = scrape(client)["docqueue_oldest_pending_seconds", ()]
    assert 9 * 60 < age < 15 * 60
    assert admin_client.get(DASHBOARD).context["oldest_pending"] in {
        "10 min",
        "11 min",
    }


@pytest.mark.django_db
def test_completed_attempts_are_exported_before_the_first_completion(
    client, metrics_public
):
    """rate() of a series that does not exist is no result: an alert "work waits
    and nothing completes" never fired on a pool that never completed a job."""
    samples = scrape(client)
    key = ("docqueue_attempts_total", (("error_type", ""), ("outcome", "completed")))
    assert samples[key] == 0


# --- Incident: a pause forgotten after a deploy --------------------------------------


@pytest.mark.django_db
def test_a_forgotten_pause_is_said_where_operators_land_and_can_be_alerted_on(
    admin_client, client, metrics_public
):
    QueueControl.set_paused(True, by="deployer")
    QueueControl.objects.filter(pk=1).update(
        changed_at=db_now() - timedelta(hours=3, minutes=5)
    )
    index = admin_client.get(reverse("admin:index")).content.decode()
    assert 'id="queue-paused"' in index
    assert "Processing is paused by deployer for 3 h 5 min" in index
    items = admin_client.get(reverse("admin:jobqueue_queueitem_changelist"))
    assert "paused by deployer for 3 h 5 min" in items.content.decode()
    dashboard = admin_client.get(DASHBOARD).content.decode()
    assert "(3 h 5 min ago)" in dashboard
    samples = scrape(client)
    assert samples["docqueue_paused", ()] == 1
    assert 3 * 3600 < samples["docqueue_paused_seconds", ()] < 4 * 3600

    QueueControl.set_paused(False, by="deployer")
    assert (
        'id="queue-paused"'
        not in admin_client.get(reverse("admin:index")).content.decode()
    )
    assert scrape(client)["docqueue_paused_seconds", ()] == 0


@pytest.mark.django_db
def test_how_long_a_pause_has_lasted_is_read_on_the_databases_clock(monkeypatch):
    # The pause's time came from the host that paused, read against the database's:
    # a host an hour behind made a fresh pause an hour old (its alert fired at once).
    behind = timezone.now() - timedelta(hours=1)
    monkeypatch.setattr(timezone, "now", lambda: behind)
    QueueControl.set_paused(True, by="deployer")
    assert paused_for(QueueControl.current(), db_now()) < 60


# --- The README's alert rules ---------------------------------------------------------


def readme_alerts() -> list[dict]:
    text = (REPO_ROOT / "README.md").read_text()
    block = text.split("**Alerts.**", 1)[1].split("```yaml", 1)[1].split("```", 1)[0]
    return yaml.safe_load(block)["groups"][0]["rules"]


SELECTOR = re.compile(r"\b(docqueue_[a-z_]+)(?:\{([^}]*)\})?")


@pytest.mark.django_db
def test_the_readme_alerts_name_series_that_metrics_exports(
    client, metrics_public, make_document
):
    """Every docqueue series an alert rule selects, with its label values, is one
    /metrics answers: a misspelt name or label value makes an alert that never fires."""
    document = make_document()
    job = QueueItem.objects.create(document=document, status=Status.FAILED)
    ExtractionMetric.objects.create(job=job, outcome="failed", error_type="timeout")
    WorkerHeartbeat.objects.create(worker_id="live")
    samples = scrape(client)
    rules = readme_alerts()
    assert {r["alert"] for r in rules} >= {
        "DocqueueBacklog",
        "DocqueueNoProgress",
        "DocqueuePausedTooLong",
        "DocqueueWorkerLost",
    }
    checked = 0
    for rule in rules:
        for name, labels in SELECTOR.findall(rule["expr"]):
            wanted = dict(re.findall(r'(\w+)="([^"]*)"', labels))
            matching = [
                key
                for key in samples
                if key[0] == name and wanted.items() <= dict(key[1]).items()
            ]
            assert matching, f"{rule['alert']}: {name}{{{labels}}} is not exported"
            checked += 1
    assert checked >= 7
