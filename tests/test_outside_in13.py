"""Thirteenth outside-in pass: the product run as README says (``make run``), used
as an operator and a script would (its browser findings: tests/browser/)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from django.urls import reverse

from documents.admin import DocumentAdmin
from documents.models import Document
from tests import admin_actions
from tests.conftest import REPO_ROOT, grant_operator

# --- The log under make run (DEBUG=1) -------------------------------------------------


@pytest.mark.parametrize("log_format", ["plain", "json"])
def test_with_debug_on_a_request_warning_is_logged_once(child_env, log_format):
    """``make run`` writes DEBUG=1 into .env. Django's own console handler (its
    default logging, for DEBUG) stayed on the "django" logger beside ours: each
    "Not Found" or "Forbidden", and its traceback, came twice, once without a time,
    and with LOG_FORMAT=json as lines that are not JSON."""
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-v0", "-c"]
        + [
            "import logging; logging.getLogger('django.request').warning('Not Found: /x')"
        ],
        cwd=REPO_ROOT,
        env={**child_env, "DEBUG": "1", "LOG_FORMAT": log_format},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "Not Found: /x" in line]
    assert len(lines) == 1, result.stderr
    if log_format == "json":
        assert json.loads(lines[0])["logger"] == "django.request"


# --- The admin's pages name the site's icon ----------------------------------------


@pytest.fixture
def operator(django_user_model):
    return grant_operator(django_user_model.objects.create_user("operator13"))


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path",
    [
        "/admin/",
        "/admin/jobqueue/queueitem/",
        "/admin/jobqueue/queueitem/dashboard/",
        "/admin/jobqueue/workerheartbeat/",
    ],
)
def test_admin_pages_name_the_site_icon(client, operator, path):
    """Without a <link rel="icon">, a browser asks for /favicon.ico on every admin
    page: a 404 in its console and a "Not Found" warning in the log each time."""
    client.force_login(operator)
    response = client.get(path)
    assert response.status_code == 200
    assert '<link rel="icon" href="/static/img/favicon.svg"' in response.text


@pytest.mark.django_db
def test_the_admin_login_page_names_the_site_icon(client):
    response = client.get("/admin/login/")
    assert '<link rel="icon" href="/static/img/favicon.svg"' in response.text


# --- "Delete selected" on a large selection -----------------------------------------


@pytest.mark.django_db
def test_a_large_delete_answers_in_time_and_says_what_remains(
    admin_client, make_document, monkeypatch
):
    """All of a "select all" was deleted in one request: under make run, 110,000
    documents took 100 s, and behind the proxy README sets up (60 s) the operator
    got a 504 while the delete went on unseen. It now starts no batch after
    ``delete_seconds`` (0 here: one batch a request) and says the rest is there."""
    monkeypatch.setattr(DocumentAdmin, "delete_batch", 2)
    monkeypatch.setattr(DocumentAdmin, "delete_seconds", 0, raising=False)
    for n in range(5):
        make_document(name=f"old-{n}.txt")
    url = reverse("admin:documents_document_changelist")
    remaining = []
    for _ in range(3):
        response, _ = admin_actions.select_all(admin_client, url, Document)
        _, said = admin_actions.confirm(admin_client, response, url)
        remaining.append(Document.objects.count())
        if remaining[-1]:
            assert said[0] == "Successfully deleted 2 documents."
            assert said[1].startswith("The rest of the selection is still there")
        else:
            assert said == ["Successfully deleted 1 document."]
    assert remaining == [3, 1, 0]
