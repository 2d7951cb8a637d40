"""API tokens: stored hashed, shown once (command and admin), listed by prefix only,
revocable, optional expiry; ``Token <key>`` and ``Bearer <key>`` both accepted; old
plain-text DRF tokens are hashed by the migration and keep working."""

from __future__ import annotations

import io
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.utils import timezone
from knox.models import AuthToken

from documents.tokens import create_token

pytestmark = pytest.mark.django_db
API = "/api/documents/"


def command(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("create_api_token", *args, stdout=out, stderr=err)
    return out.getvalue().strip(), err.getvalue()


def get(header: str) -> int:
    return Client(headers={"authorization": header}).get(API).status_code


def test_keys_are_stored_hashed_and_shown_once(user):
    key, notice = command(user.username)
    assert "cannot be shown again" in notice
    token = AuthToken.objects.get()
    assert key not in {token.digest, token.token_key}
    assert key.startswith(token.token_key)
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM knox_authtoken")
        assert not any(key in str(value) for row in cursor.fetchall() for value in row)
    assert get(f"Token {key}") == 200


@pytest.mark.parametrize("scheme", ["Token", "Bearer", "token", "bearer", "BEARER"])
def test_token_and_bearer_are_both_accepted(user, scheme):
    key = create_token(user)[1]
    assert get(f"{scheme} {key}") == 200


@pytest.mark.parametrize(
    "header",
    [
        "Bearer",
        "Bearer ",
        "Token a b",
        "Bearer " + "0" * 64,
        "Bearer \xff\xfe",
        "Token é",
    ],
)
def test_bad_token_headers_are_401(user, header):
    create_token(user)
    assert get(header) == 401


def test_tokens_are_revocable_and_may_expire(user):
    old = create_token(user)[1]
    new, notice = command(user.username, "--reset", "--expires-days", "7")
    assert "Revoked 1" in notice and "expires" in notice
    assert get(f"Token {old}") == 401
    assert get(f"Bearer {new}") == 200
    AuthToken.objects.update(expiry=timezone.now() - timedelta(seconds=1))
    assert get(f"Bearer {new}") == 401
    assert not AuthToken.objects.exists()


@pytest.mark.parametrize("days", ["0", "-1", "abc", "99999999"])
def test_command_refuses_bad_expiry(user, days):
    with pytest.raises(CommandError):
        command(user.username, "--expires-days", days)
    assert not AuthToken.objects.exists()


def test_admin_shows_the_key_once_and_lists_prefixes_only(admin_client, user):
    response = admin_client.post(
        "/admin/knox/authtoken/add/", {"user": user.pk, "expiry": ""}, follow=True
    )
    assert response.status_code == 200
    token = AuthToken.objects.get()
    (message,) = [str(m) for m in response.context["messages"] if "key" in str(m)]
    key = message.split(": ")[1].split(" ")[0]
    assert key.startswith(token.token_key) and len(key) == 64
    assert get(f"Token {key}") == 200
    listing = admin_client.get("/admin/knox/authtoken/").content.decode()
    assert f"{token.token_key}…" in listing
    assert key not in listing
    assert key not in admin_client.get("/admin/knox/authtoken/").content.decode()
    # Revoking is deleting.
    admin_client.post(
        "/admin/knox/authtoken/",
        {"action": "delete_selected", "_selected_action": [token.pk], "post": "yes"},
    )
    assert get(f"Token {key}") == 401


def test_old_plain_text_tokens_are_hashed_and_keep_working(user):
    migration = __import__(
        "documents.migrations.0003_hash_api_tokens", fromlist=["hash_old_tokens"]
    )
    old_key = "0123456789abcdef0123456789abcdef01234567"
    with connection.cursor() as cursor:
        # SQLite's schema editor refuses to open inside the test's transaction; the
        # migration only needs its connection and execute().
        editor = SimpleNamespace(connection=connection, execute=cursor.execute)
        editor.execute(
            "CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, "
            "created timestamp, user_id integer)"
        )
        editor.execute(
            "INSERT INTO authtoken_token VALUES (%s, NULL, %s)", [old_key, user.pk]
        )
        migration.hash_old_tokens(apps, editor)
    assert "authtoken_token" not in connection.introspection.table_names()
    assert get(f"Token {old_key}") == 200
    assert get(f"Bearer {old_key}") == 200
