"""What scripts and operators' tools read: ``process_queue --once --json`` and its exit
code, log timestamps in both formats, and the document API's ETag for polling."""

from __future__ import annotations

import copy
import json
import logging
import logging.config
import os
import re
import subprocess
import sys
import time
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from documents.extractors.base import ExtractionResult
from documents.models import Document
from documents.services import document_store_result
from jobqueue.management.commands.process_queue import EXIT_JOBS_FAILED
from jobqueue.models import QueueControl, Status
from tests.conftest import REPO_ROOT
from tests.documents.test_text_not_loaded import full_text_reads

# --- process_queue --once: --json and --exit-code ------------------------------------


def run_once(*flags: str) -> dict:
    out = StringIO()
    call_command("process_queue", "--once", *flags, stdout=out, stderr=StringIO())
    [line] = out.getvalue().splitlines()  # one object, nothing else on stdout
    return json.loads(line)


def a_failing_and_a_good_job(make_document, queue) -> None:
    legacy = make_document(b"\xd0\xcf\x11\xe0 old", "old.doc", "application/msword")
    queue.enqueue(legacy.pk)  # unsupported: fails at once, not retried
    queue.enqueue(make_document(b"fine words\n", "fine.txt").pk)


@pytest.mark.django_db(transaction=True)
def test_once_json_prints_the_counts_as_one_object(make_document, queue):
    a_failing_and_a_good_job(make_document, queue)
    assert run_once("--json") == {
        "processed": 2,
        "completed": 1,
        "failed": 1,
        "paused": False,
    }
    # Nothing due: still one object, zeros.
    assert run_once("--json") == {
        "processed": 0,
        "completed": 0,
        "failed": 0,
        "paused": False,
    }


@pytest.mark.django_db(transaction=True)
def test_once_json_says_when_an_operator_has_paused_processing(make_document, queue):
    job = queue.enqueue(make_document().pk)
    QueueControl.set_paused(True, by="operator")
    assert run_once("--json") == {
        "processed": 0,
        "completed": 0,
        "failed": 0,
        "paused": True,
    }
    assert queue.get_job(job).status == Status.PENDING


@pytest.mark.django_db(transaction=True)
def test_exit_code_tells_a_run_with_a_failed_job(make_document, queue):
    a_failing_and_a_good_job(make_document, queue)
    out = StringIO()
    with pytest.raises(CommandError, match="1 of 2 jobs failed") as raised:
        call_command("process_queue", "--once", "--json", "--exit-code", stdout=out)
    assert raised.value.returncode == EXIT_JOBS_FAILED
    assert json.loads(out.getvalue())["failed"] == 1
    # Every job completed: no error.
    queue.enqueue(make_document(b"more words\n", "more.txt").pk)
    assert run_once("--json", "--exit-code")["completed"] == 1


@pytest.mark.django_db(transaction=True)
def test_from_a_shell_the_exit_code_and_stdout_are_for_scripts(
    make_document, queue, child_env
):
    a_failing_and_a_good_job(make_document, queue)
    result = subprocess.run(
        [sys.executable, "manage.py", "process_queue", "--once", "--json"]
        + ["--exit-code"],
        cwd=REPO_ROOT,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == EXIT_JOBS_FAILED, result.stderr
    assert json.loads(result.stdout) == {
        "processed": 2,
        "completed": 1,
        "failed": 1,
        "paused": False,
    }
    assert "1 of 2 jobs failed" in result.stderr


@pytest.mark.django_db
@pytest.mark.parametrize("flag", ["--json", "--exit-code"])
def test_json_and_exit_code_are_refused_without_once(flag):
    with pytest.raises(CommandError, match="only with --once"):
        call_command("process_queue", flag)


# --- Log timestamps -------------------------------------------------------------------

# 2025-01-31 14:05:09.042 UTC; 19:35:09 in Kolkata (+05:30), a zone without DST.
CREATED = 1738332309.042
STAMP = "2025-01-31T14:05:09.042Z"
ISO_UTC = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"


def configured_formatter(name: str) -> logging.Formatter:
    """The formatter ``name`` exactly as LOGGING makes it for the console handler."""
    configurator = logging.config.DictConfigurator(copy.deepcopy(settings.LOGGING))
    return configurator.configure_formatter(configurator.config["formatters"][name])


def a_record() -> logging.LogRecord:
    record = logging.makeLogRecord(
        {"name": "jobqueue", "levelno": logging.WARNING, "levelname": "WARNING"}
        | {"msg": "job %s done", "args": (7,)}
    )
    record.created, record.msecs = CREATED, 42.0
    return record


@pytest.fixture
def far_from_utc():
    """The process in a zone far from UTC, as a host (or TIME_ZONE) may put it."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Kolkata"
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


def test_plain_logs_stamp_records_in_utc_iso_8601(far_from_utc):
    line = configured_formatter("plain").format(a_record())
    assert line == f"{STAMP} WARNING jobqueue job 7 done"


def test_json_logs_stamp_records_in_utc_iso_8601(far_from_utc):
    line = configured_formatter("json").format(a_record())
    assert json.loads(line) == {
        "time": STAMP,
        "level": "WARNING",
        "logger": "jobqueue",
        "message": "job 7 done",
    }


@pytest.mark.parametrize("log_format", ["plain", "json"])
def test_a_command_logs_with_the_zone_in_each_format(child_env, log_format):
    # The whole path: settings, Django's logging set-up, the console handler.
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c"]
        + ["import logging; logging.getLogger('jobqueue').warning('hello')"],
        cwd=REPO_ROOT,
        env={**child_env, "LOG_FORMAT": log_format, "TIME_ZONE": "Asia/Kolkata"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    [line] = [line for line in result.stderr.splitlines() if "hello" in line]
    if log_format == "json":
        assert re.fullmatch(ISO_UTC, json.loads(line)["time"]), line
    else:
        assert re.fullmatch(ISO_UTC + " WARNING jobqueue hello", line), line


def run_command(child_env: dict[str, str], *args: str, **env: str) -> str:
    """A command in a process of its own: its stderr, where the log goes."""
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO_ROOT,
        env={**child_env, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stderr


@pytest.mark.django_db(transaction=True)
def test_log_level_rules_the_queue_log_unless_v_says_otherwise(child_env):
    """LOG_LEVEL=WARNING silenced every logger but the workers' own, which -v set to
    INFO whatever it said; -v0 left the pause's INFO line in a cron mail."""
    once = ("process_queue", "--once")
    assert "Started 1 worker" in run_command(child_env, *once)
    assert "Started 1 worker" not in run_command(child_env, *once, LOG_LEVEL="WARNING")
    # Asked for with -v2: the queue's lines, down to DEBUG, whatever LOG_LEVEL says.
    assert "Started 1 worker" in run_command(
        child_env, *once, "-v2", LOG_LEVEL="WARNING"
    )
    assert run_command(child_env, "pause_queue", "-v0") == ""
    assert run_command(child_env, "resume_queue", "-v0") == ""
    assert "Queue paused by" in run_command(child_env, "pause_queue")


# --- The API's ETag: polling a document's status -------------------------------------

API_URL = "/api/documents/"


def url(document: Document) -> str:
    return f"{API_URL}{document.pk}/"


@pytest.fixture
def api(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def store_text(document: Document, text: str) -> None:
    """What a worker does with a result: the text, then the status, together."""
    result = ExtractionResult(text=text, page_count=1, confidence=1.0, extractor="t")
    document_store_result(document_id=document.pk, result=result)


@pytest.mark.django_db
def test_the_detail_sends_an_etag_and_asks_caches_to_revalidate(api, make_document):
    document = make_document()
    response = api.get(url(document))
    assert response.status_code == 200
    assert re.fullmatch(r'W/"[0-9a-f]{32}"', response["ETag"])
    cache_control = {d.strip() for d in response["Cache-Control"].split(",")}
    assert cache_control == {"private", "no-cache"}
    # The same document, the same tag.
    assert api.get(url(document))["ETag"] == response["ETag"]


@pytest.mark.django_db
def test_an_unchanged_document_answers_304_without_reading_its_text(api, make_document):
    document = make_document()
    store_text(document, "needle " + "x" * 100_000)
    etag = api.get(url(document))["ETag"]
    for sent in (etag, f'"other", {etag}', "*"):
        with CaptureQueriesContext(connection) as captured:
            response = api.get(url(document), HTTP_IF_NONE_MATCH=sent)
        assert response.status_code == 304, sent
        assert response.content == b""
        assert response["ETag"] == etag
        assert full_text_reads(captured.captured_queries) == []


@pytest.mark.django_db
def test_the_etag_changes_with_the_status_and_with_the_text(api, make_document, queue):
    document = make_document()
    first = api.get(url(document))
    queue.enqueue(document.pk)  # the status (and updated_at) change with the job
    queued = api.get(url(document), HTTP_IF_NONE_MATCH=first["ETag"])
    assert queued.status_code == 200
    assert queued.json()["status"] == Status.PENDING
    assert queued["ETag"] != first["ETag"]
    store_text(document, "the words at last")
    done = api.get(url(document), HTTP_IF_NONE_MATCH=queued["ETag"])
    assert done.status_code == 200
    assert done.json()["text"] == "the words at last"
    assert done["ETag"] not in (first["ETag"], queued["ETag"])
    again = api.get(url(document), HTTP_IF_NONE_MATCH=done["ETag"])
    assert again.status_code == 304


@pytest.mark.django_db
def test_the_etag_changes_with_title_and_tags(api, make_document):
    document = make_document()
    before = api.get(url(document))["ETag"]
    patched = api.patch(
        url(document), {"tags": ["urgent"]}, content_type="application/json"
    )
    assert patched.status_code == 200
    after = api.get(url(document), HTTP_IF_NONE_MATCH=before)
    assert after.status_code == 200
    assert after.json()["tags"] == ["urgent"]


@pytest.mark.django_db
def test_if_match_on_another_version_is_a_json_412(api, make_document):
    document = make_document()
    etag = api.get(url(document))["ETag"]
    response = api.get(url(document), HTTP_IF_MATCH='"not-this-one"')
    assert response.status_code == 412
    assert response.json()["error"]["code"] == "precondition_failed"
    # A weak tag never matches If-Match (RFC 9110: strong comparison).
    assert api.get(url(document), HTTP_IF_MATCH="*").status_code == 200
    assert api.get(url(document), HTTP_IF_MATCH=etag).status_code == 412


@pytest.mark.django_db
def test_a_tag_opens_no_door(api, make_document, other_user, user):
    mine = make_document()
    etag = api.get(url(mine))["ETag"]
    theirs = make_document(owner=other_user)
    # Someone else's document is not found, whatever the tag; no login, no answer.
    for sent in ("*", etag):
        response = api.get(url(theirs), HTTP_IF_NONE_MATCH=sent)
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"
        anonymous = Client().get(url(mine), HTTP_IF_NONE_MATCH=sent)
        assert anonymous.status_code in (401, 403)
        assert "ETag" not in anonymous


@pytest.mark.django_db
def test_the_list_is_as_before(api, make_document):
    make_document()
    response = api.get(API_URL, HTTP_IF_NONE_MATCH="*")
    assert response.status_code == 200
    assert response.json()["count"] == 1
    assert "ETag" not in response


@pytest.mark.django_db(transaction=True)
def test_a_script_polls_until_done_with_if_none_match(api, make_document, queue):
    document = make_document(b"polled words\n", "polled.txt")
    queue.enqueue(document.pk)
    pending = api.get(url(document))
    assert pending.json()["status"] == Status.PENDING
    assert api.get(url(document), HTTP_IF_NONE_MATCH=pending["ETag"]).status_code == 304
    run_once("--json")
    done = api.get(url(document), HTTP_IF_NONE_MATCH=pending["ETag"])
    assert done.status_code == 200
    assert (done.json()["status"], done.json()["text"]) == (
        "completed",
        "polled words\n",
    )
    assert api.get(url(document), HTTP_IF_NONE_MATCH=done["ETag"]).status_code == 304


@pytest.mark.django_db
def test_the_schema_tells_of_the_etag_and_the_304(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    detail = schema["paths"]["/api/documents/{id}/"]["get"]
    assert "If-None-Match" in {p["name"] for p in detail["parameters"]}
    assert "304" in detail["responses"]
    assert "ETag" in detail["responses"]["200"]["headers"]
