"""For machines: /healthz, /readyz, /metrics (scraped and parsed), settings checks,
and JSON logs from a real worker."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from jobqueue.models import ExtractionMetric, QueueItem, Status, WorkerHeartbeat
from ops.checks import check_enumerated_settings
from tests.conftest import REPO_ROOT

METRICS_TOKEN = "metrics-" + "t" * 32
# A pod's IP, as a kubelet or Prometheus sends it: not in ALLOWED_HOSTS.
POD_HOST = {"HTTP_HOST": "10.1.2.3:8000"}


def scrape(client: Client) -> dict[str, dict]:
    """{family name: {(sample name, labels as a sorted tuple): value}}."""
    response = client.get(
        "/metrics", HTTP_AUTHORIZATION=f"Bearer {METRICS_TOKEN}", **POD_HOST
    )
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    return {
        family.name: {
            (s.name, tuple(sorted(s.labels.items()))): s.value for s in family.samples
        }
        for family in text_string_to_metric_families(response.content.decode())
    }


@pytest.fixture
def metrics_token(settings) -> str:
    settings.METRICS_TOKEN = METRICS_TOKEN
    return METRICS_TOKEN


# --- Probes --------------------------------------------------------------------------


def test_healthz_answers_without_the_database_for_any_host(client):
    # No django_db mark: any query would fail this test.
    response = client.get("/healthz", **POD_HOST)
    assert (response.status_code, response.json()) == (200, {"status": "ok"})


@pytest.mark.django_db
def test_readyz_wants_a_live_worker(client, caplog):
    response = client.get("/readyz", **POD_HOST)
    assert response.status_code == 503
    # An answer, not an error: no "Service Unavailable" at ERROR for each probe.
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    body = response.json()
    assert body["status"] == "not ready"
    assert body["checks"]["database"] == "ok"
    assert body["checks"]["migrations"] == "ok"
    assert "process_queue" in body["checks"]["workers"]

    WorkerHeartbeat.objects.create(worker_id="host:1:w1")
    response = client.get("/readyz/")
    assert response.status_code == 200
    assert response.json()["checks"] == dict.fromkeys(
        ["database", "migrations", "workers", "ocr"], "ok"
    )

    # A worker that stopped, or whose heartbeat is old, is not a live one.
    WorkerHeartbeat.objects.update(status=WorkerHeartbeat.State.STOPPED)
    assert client.get("/readyz").status_code == 503


@pytest.mark.django_db
def test_readyz_wants_ocr_data_unless_ocr_is_off(client, settings):
    WorkerHeartbeat.objects.create(worker_id="host:1:w1")
    settings.OCR_LANGUAGES = "eng+xyz"  # a language whose data is not installed
    response = client.get("/readyz")
    assert response.status_code == 503
    assert "xyz" in response.json()["checks"]["ocr"]
    settings.OCR_MODE = "never"
    assert client.get("/readyz").status_code == 200


@pytest.mark.django_db
def test_readyz_sees_an_unapplied_migration(client):
    WorkerHeartbeat.objects.create(worker_id="host:1:w1")
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM django_migrations WHERE app = 'jobqueue' AND name = "
            "(SELECT MAX(name) FROM django_migrations WHERE app = 'jobqueue')"
        )
    response = client.get("/readyz")
    assert response.status_code == 503
    assert "1 migrations not applied" in response.json()["checks"]["migrations"]


# --- Metrics -------------------------------------------------------------------------


@pytest.mark.django_db
def test_metrics_need_the_token_or_an_explicit_public_setting(client, settings):
    # Neither: not served, whatever the method.
    assert client.get("/metrics").status_code == 404
    assert client.post("/metrics").status_code == 404
    settings.METRICS_PUBLIC = True
    assert client.get("/metrics", **POD_HOST).status_code == 200
    settings.METRICS_TOKEN = METRICS_TOKEN  # a token wins over "public"
    for header in ({}, {"HTTP_AUTHORIZATION": "Bearer wrong"}):
        for method in (client.get, client.post):
            response = method("/metrics", **header)
            assert response.status_code == 401
            assert response["WWW-Authenticate"].startswith("Bearer")
    assert (
        client.post(
            "/metrics", HTTP_AUTHORIZATION=f"Bearer {METRICS_TOKEN}"
        ).status_code
        == 405
    )


@pytest.mark.django_db
def test_metrics_report_the_queue(client, metrics_token, make_document):
    old = timezone.now() - timedelta(minutes=10)
    for status in (Status.PENDING, Status.PENDING, Status.FAILED):
        QueueItem.objects.create(document=make_document(), status=status)
    QueueItem.objects.filter(status=Status.PENDING).update(created_at=old)
    QueueItem.objects.create(
        document=make_document(), status=Status.PROCESSING, operation="reprocess"
    )
    for outcome, error_type, ms in [
        ("completed", "", 50),
        ("completed", "", 3_000),
        ("failed", "corruption", 700),
        ("retry", "timeout", None),
    ]:
        ExtractionMetric.objects.create(
            outcome=outcome, error_type=error_type, extraction_time_ms=ms
        )
    WorkerHeartbeat.objects.create(worker_id="a")
    WorkerHeartbeat.objects.create(worker_id="b", last_heartbeat=old)

    metrics = scrape(client)
    jobs = metrics["docqueue_jobs"]
    assert jobs["docqueue_jobs", (("operation", "extract"), ("status", "pending"))] == 2
    assert jobs["docqueue_jobs", (("operation", "extract"), ("status", "failed"))] == 1
    assert (
        jobs["docqueue_jobs", (("operation", "reprocess"), ("status", "processing"))]
        == 1
    )
    assert (
        jobs["docqueue_jobs", (("operation", "extract"), ("status", "cancelled"))] == 0
    )

    attempts = metrics["docqueue_attempts"]
    total = "docqueue_attempts_total"
    assert attempts[total, (("error_type", ""), ("outcome", "completed"))] == 2
    assert attempts[total, (("error_type", "corruption"), ("outcome", "failed"))] == 1
    assert attempts[total, (("error_type", "timeout"), ("outcome", "retry"))] == 1

    seconds = metrics["docqueue_extraction_seconds"]
    bucket = "docqueue_extraction_seconds_bucket"
    assert seconds[bucket, (("le", "0.1"),)] == 1
    assert seconds[bucket, (("le", "1.0"),)] == 2
    assert seconds[bucket, (("le", "5.0"),)] == 3
    assert seconds[bucket, (("le", "+Inf"),)] == 3
    assert seconds["docqueue_extraction_seconds_count", ()] == 3
    assert seconds["docqueue_extraction_seconds_sum", ()] == pytest.approx(3.75)

    workers = metrics["docqueue_workers"]
    assert workers["docqueue_workers", (("state", "alive"),)] == 1
    assert workers["docqueue_workers", (("state", "stale"),)] == 1
    oldest = metrics["docqueue_oldest_pending_seconds"]
    assert 9 * 60 < oldest["docqueue_oldest_pending_seconds", ()] < 60 * 60
    assert metrics["docqueue_paused"]["docqueue_paused", ()] == 0


@pytest.mark.django_db
def test_a_scrape_costs_the_same_queries_however_big_the_queue(
    client, metrics_token, make_document
):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            scrape(client)
        return len(captured)

    document = make_document()
    small = queries()
    QueueItem.objects.bulk_create(
        QueueItem(document=document, status=Status.COMPLETED) for _ in range(300)
    )
    ExtractionMetric.objects.bulk_create(
        ExtractionMetric(outcome="completed", extraction_time_ms=n) for n in range(300)
    )
    assert queries() == small


# --- Settings checks and logs --------------------------------------------------------


def test_enumerated_settings_are_checked(settings):
    assert check_enumerated_settings() == []
    settings.PDF_ENGINE, settings.LOG_FORMAT = "ghostscript", "xml"
    errors = {e.obj: e for e in check_enumerated_settings()}
    assert set(errors) == {"PDF_ENGINE", "LOG_FORMAT"}
    assert "auto, pdfium, pdfplumber" in errors["PDF_ENGINE"].hint
    assert "plain, json" in errors["LOG_FORMAT"].hint


@pytest.mark.django_db
def test_a_bad_setting_stops_a_command_at_start_up(child_env):
    result = subprocess.run(
        [sys.executable, "manage.py", "process_queue", "--once"],
        cwd=REPO_ROOT,
        env={**child_env, "PDF_ENGINE": "fastest"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "PDF_ENGINE is 'fastest'" in result.stderr
    assert "auto, pdfium, pdfplumber" in result.stderr


@pytest.mark.django_db
def test_a_command_runs_with_the_collector_on_and_start_up_frozen(child_env):
    # manage.py turns the collector off for Django's start-up only.
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-v0",
            "-c",
            "import gc; print(gc.isenabled(), gc.get_freeze_count() > 10_000)",
        ],
        cwd=REPO_ROOT,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.split() == ["True", "True"], result.stderr


@pytest.mark.django_db(transaction=True)
def test_json_logs_have_one_object_per_line_with_the_job(
    child_env, make_document, queue
):
    job_id = queue.enqueue(make_document(b"some words\n").pk)
    result = subprocess.run(
        [sys.executable, "manage.py", "process_queue", "--once", "--workers", "1"],
        cwd=REPO_ROOT,
        env={**child_env, "LOG_FORMAT": "json"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stderr.splitlines() if line]
    events = {r["event"]: r for r in records if "event" in r}
    assert set(events) == {"job_started", "job_completed"}
    for record in events.values():
        assert record["job_id"] == job_id
        assert {"time", "level", "logger", "message", "worker_id"} <= set(record)
    assert QueueItem.objects.get(pk=job_id).status == Status.COMPLETED
