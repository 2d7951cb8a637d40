"""An outside contract audit (the seventh), as an operator configures and runs it and a
script drives it: database and folder settings that stop the start with a sentence,
an expired API token that says so, and a first user's name checked as its field."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from knox.models import AuthToken

from documents.tokens import UNKNOWN_KEY, create_token
from tests.conftest import REPO_ROOT


def check(**env: str) -> subprocess.CompletedProcess:
    """``manage.py check`` in a process started with ``env`` added."""
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO_ROOT,
        env={**os.environ, "DEBUG": "1", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


# --- DATABASE_URL: a sentence, never a KeyError or a password on stderr ----------------


@pytest.mark.parametrize(
    ("url", "sentence"),
    [
        # An uncommented "DATABASE_URL=" and a typo stopped the start with a
        # KeyError: 'ENGINE' traceback.
        ("", "DATABASE_URL (environment or .env): not a database URL: use PostgreSQL"),
        ("db.sqlite3", "not a database URL: use PostgreSQL (postgres://"),
        # django-environ's warning printed the whole config, password included.
        ("postgress://alice:hunter2@db/docs", "“postgress://…” is not a database"),
        # Django started, then failed on a missing driver; the queue has no SQL for it.
        ("mysql://alice:hunter2@db/docs", "“mysql://…” is not a database the queue"),
        # Each process would open its own: the workers never saw an upload.
        ("sqlite://", "the SQLite file “:memory:” is not an absolute path"),
        ("sqlite:///db.sqlite3", "the SQLite file “db.sqlite3” is not an absolute"),
    ],
)
def test_a_database_url_the_queue_cannot_use_stops_the_start(url, sentence):
    result = check(DATABASE_URL=url)
    assert result.returncode == 1
    assert sentence in result.stderr
    assert "Traceback" not in result.stderr
    assert "hunter2" not in result.stderr + result.stdout


# --- MEDIA_ROOT and STATIC_ROOT: absolute folders --------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [("MEDIA_ROOT", ""), ("MEDIA_ROOT", "files"), ("STATIC_ROOT", " ")],
)
def test_an_empty_or_relative_folder_stops_the_start(name, value):
    # "MEDIA_ROOT=" (.env.example's line uncommented) was the working folder: in the
    # project folder, uploads went into the app's own documents/ package, and
    # check_storage (hourly, from cron) removed its source files as orphans.
    result = check(**{name: value})
    assert result.returncode == 1
    assert f"Error: {name} (environment or .env): “{value.strip()}” is not an " in (
        result.stderr
    )
    assert "absolute path" in result.stderr


def test_absolute_settings_still_start(tmp_path):
    result = check(
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        MEDIA_ROOT=str(tmp_path / "media"),
        STATIC_ROOT=str(tmp_path / "static"),
    )
    assert result.returncode == 0, result.stderr


# --- An expired API token says so -------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("scheme", ["Token", "Bearer"])
def test_an_expired_token_says_it_expired_and_when(user, scheme):
    token, key = create_token(user, expires_in_days=30)
    expired = timezone.now() - timedelta(days=2)
    AuthToken.objects.filter(pk=token.pk).update(expiry=expired)
    response = Client().get("/api/documents/", HTTP_AUTHORIZATION=f"{scheme} {key}")
    assert response.status_code == 401
    error = response.json()["error"]
    # It said "Invalid token.", as for a key mistyped.
    assert error["code"] == "authentication_failed"
    assert error["message"] == (
        f"This token expired on {expired.astimezone(UTC):%Y-%m-%d %H:%M} UTC: make "
        "a new one on your API tokens page, /accounts/tokens/."
    )
    assert response["WWW-Authenticate"].startswith("Token")


@pytest.mark.django_db
def test_a_wrong_key_is_still_only_invalid(user):
    token, key = create_token(user, expires_in_days=30)
    AuthToken.objects.filter(pk=token.pk).update(
        expiry=timezone.now() - timedelta(days=2)
    )
    # The same prefix (the part the tokens page lists), another key: no date for it.
    wrong = key[:15] + ("0" if key[15] != "0" else "1") + key[16:]
    for sent in (wrong, "not-hex-at-all", key[:15]):
        response = Client().get("/api/documents/", HTTP_AUTHORIZATION=f"Token {sent}")
        assert response.status_code == 401
        assert response.json()["error"]["message"] == UNKNOWN_KEY
    fresh = create_token(user)[1]
    assert (
        Client().get("/api/documents/", HTTP_AUTHORIZATION=f"Token {fresh}").status_code
        == 200
    )


# --- ensure_first_user: a name too long for the users table ------------------------------


@pytest.mark.django_db
def test_ensure_first_user_refuses_a_name_longer_than_the_field(settings, tmp_path):
    # SQLite stored 151 characters in a 150-character column; PostgreSQL's refusal
    # was a traceback.
    settings.VAR_DIR = tmp_path
    name = "u" * 151
    with pytest.raises(CommandError, match="at most 150 characters") as refused:
        call_command("ensure_first_user", "--username", name, stdout=StringIO())
    assert refused.value.returncode == 1
    assert not get_user_model().objects.exists()
    assert not (tmp_path / "first-user.txt").exists()
    call_command("ensure_first_user", "--username", "u" * 150, stdout=StringIO())
    assert get_user_model().objects.get().username == "u" * 150


# --- A multipart body without its boundary: what to do, on every path --------------------

NO_BOUNDARY = (
    "The multipart body could not be read (invalid boundary in multipart: None): let "
    "your HTTP client write the Content-Type header with its boundary, as curl -F "
    "file=@report.pdf does, rather than setting it by hand."
)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/api/documents/"),
        ("post", "/api/documents/{pk}/reprocess/"),
        ("patch", "/api/documents/{pk}/"),
    ],
)
def test_a_token_s_multipart_body_without_a_boundary_says_how_to_send_it(
    user, make_document, method, path
):
    # A script that sets "Content-Type: multipart/form-data" by hand: DRF said
    # "Multipart form parse error - Invalid boundary in multipart: None".
    key = create_token(user)[1]
    address = path.format(pk=make_document().pk)
    response = getattr(Client(), method)(
        address,
        b"garbage",
        content_type="multipart/form-data",
        HTTP_AUTHORIZATION=f"Token {key}",
    )
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "parse_error",
        "message": NO_BOUNDARY,
        "fields": {},
    }


@pytest.mark.django_db
def test_a_session_s_multipart_body_without_a_boundary_says_the_same(user):
    # Parsed by the upload limits' middleware first: "The request could not be
    # understood."
    client = Client()
    client.force_login(user)
    response = client.post(
        "/api/documents/", b"garbage", content_type="multipart/form-data"
    )
    assert response.status_code == 400
    assert response.json()["error"]["message"] == NO_BOUNDARY


@pytest.mark.django_db
def test_a_bad_request_on_the_site_is_a_page_of_the_site(user):
    client = Client()
    client.force_login(user)
    response = client.post(
        "/documents/upload/", b"garbage", content_type="multipart/form-data"
    )
    # Django's bare "Bad Request (400)" with an empty paragraph, where every other
    # error has the site's page.
    assert response.status_code == 400
    page = response.content.decode()
    assert "<title>Bad request · Documents</title>" in page
    assert "Nothing was changed: go back and try again." in page
    # Rendered without the request (a bad Host too), so it needs nothing of it.
    response = Client(HTTP_HOST="evil.example").get("/documents/")
    assert response.status_code == 400
    assert "<title>Bad request · Documents</title>" in response.content.decode()
