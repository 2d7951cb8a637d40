"""Twelfth audit, from outside with every role: an expired API token keeps its
"expired on" answer whatever the person's other scripts send, the cron and metrics
tokens must be two secrets, and staff without queue permissions (a role the access
matrix lacks) steer nothing of the queue."""

from __future__ import annotations

from datetime import UTC, timedelta

import pytest
from django.contrib.auth.models import Permission
from django.core import checks
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone
from knox.models import AuthToken

from documents.tokens import UNKNOWN_KEY, create_token
from jobqueue.admin import QueueItemAdmin
from jobqueue.models import QueueControl, QueueItem, Status

API_URL = "/api/documents/"


def expire(token: AuthToken) -> str:
    """Make ``token`` a day past its expiry; the time its refusal must name."""
    when = timezone.now() - timedelta(days=1)
    AuthToken.objects.filter(pk=token.pk).update(expiry=when)
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


@pytest.mark.django_db
def test_another_scripts_token_does_not_erase_an_expired_one(user):
    """Knox deleted every expired token of a person whenever any of their tokens
    was used: the expired script was then told "Invalid token." (not when it
    expired) and the tokens page lost the row the README promises."""
    old, old_key = create_token(user, expires_in_days=30)
    when = expire(old)
    _, live_key = create_token(user)
    assert Client().get(API_URL, HTTP_AUTHORIZATION=f"Token {live_key}").status_code
    assert AuthToken.objects.filter(pk=old.pk).exists()  # still listed, as expired

    refused = Client().get(API_URL, HTTP_AUTHORIZATION=f"Bearer {old_key}")
    assert refused.status_code == 401
    assert refused.json()["error"]["message"].startswith(
        f"This token expired on {when}"
    )
    assert not AuthToken.objects.filter(pk=old.pk).exists()  # gone once sent
    again = Client().get(API_URL, HTTP_AUTHORIZATION=f"Token {old_key}")
    assert again.json()["error"]["message"] == UNKNOWN_KEY


@pytest.mark.django_db
def test_an_expired_token_lets_nobody_in_and_a_live_one_still_works(user, other_user):
    """The sweep left out changes nothing of who gets in."""
    mine, key = create_token(user, expires_in_days=1)
    expire(mine)
    _, others = create_token(other_user, expires_in_days=1)
    assert Client().get(API_URL, HTTP_AUTHORIZATION=f"Token {key}").status_code == 401
    assert (
        Client().get(API_URL, HTTP_AUTHORIZATION=f"Token {others}").status_code == 200
    )


def deploy_warnings() -> list[str]:
    return [
        message.id
        for message in checks.run_checks(include_deployment_checks=True)
        if message.id and message.id.startswith("ops.")
    ]


SECRET = "s" * 40


@pytest.mark.parametrize(
    ("cron", "metrics", "warned"),
    [
        (SECRET, SECRET, True),
        (SECRET, "m" * 40, False),
        ("", "", False),
        (SECRET, "", False),
    ],
)
def test_check_deploy_warns_of_one_token_for_cron_and_metrics(
    settings, cron, metrics, warned
):
    """The metrics token sits in Prometheus' configuration and goes out on every
    scrape; the same value also started processing through the cron endpoint."""
    settings.CRON_TOKEN, settings.METRICS_TOKEN = cron, metrics
    assert ("ops.W002" in deploy_warnings()) is warned


# --- Staff without queue permissions: the role the access matrix does not have -------


@pytest.fixture
def documents_staff(django_user_model):
    """Staff with every permission on documents and none on the queue: not an
    operator, so they may delete documents but never steer the queue."""
    staff = django_user_model.objects.create_user("clerk", is_staff=True)
    staff.user_permissions.set(
        Permission.objects.filter(content_type__app_label="documents")
    )
    return staff


QUEUE_ACTIONS = QueueItemAdmin.actions


@pytest.mark.django_db
def test_staff_without_queue_permissions_cannot_steer_the_queue(
    documents_staff, other_user, make_document
):
    document = make_document(owner=other_user)
    failed = QueueItem.objects.create(
        document=document, status=Status.FAILED, error_type="timeout"
    )
    waiting = QueueItem.objects.create(
        document=make_document(b"waits\n", owner=other_user), status=Status.PENDING
    )

    def state() -> list:
        return [
            list(QueueItem.objects.order_by("pk").values_list("status", "priority")),
            QueueControl.is_paused(),
        ]

    before = state()
    client = Client()
    client.force_login(documents_staff)
    base = "/admin/jobqueue/queueitem/"
    for action in QUEUE_ACTIONS:
        crafted = {"action": action, "_selected_action": [failed.pk, waiting.pk]}
        assert client.post(base, {**crafted, "post": "yes"}).status_code == 403
    for url, data in (
        (f"{base}{failed.pk}/retry/", {"anyway": "1"}),
        (f"{base}{waiting.pk}/cancel/", {}),
        (f"{base}dashboard/pause/", {"paused": "1"}),
        (f"{base}clear-old/", {"days": "0", "confirm": "yes"}),
    ):
        assert client.post(url, data).status_code == 403, url
    # The documents' admin is theirs, but queueing work is an operator's action.
    client.post(
        "/admin/documents/document/",
        {"action": "reprocess", "_selected_action": [document.pk], "index": 0},
    )
    assert client.post(f"/documents/{document.pk}/reprocess/").status_code == 403
    api = Client(HTTP_AUTHORIZATION=f"Token {create_token(documents_staff)[1]}")
    assert api.post(f"/api/documents/{document.pk}/reprocess/").status_code == 403
    upload = {"file": SimpleUploadedFile("p.txt", b"jump\n"), "priority": "5"}
    assert api.post(API_URL, upload).status_code == 403
    assert state() == before


# --- A NUL in a header: a 400, not PostgreSQL's refusal as a 500 ------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "header"),
    [
        # django-axes stores a log-in's User-Agent and Accept, failed or not.
        ("/accounts/login/", "HTTP_USER_AGENT"),
        ("/accounts/login/", "HTTP_ACCEPT"),
        ("/admin/login/", "HTTP_USER_AGENT"),
        # An API key's first characters are looked up.
        (API_URL, "HTTP_AUTHORIZATION"),
    ],
)
@pytest.mark.parametrize("password", ["wrong-password", "alice-password-1"])
def test_a_nul_in_a_header_is_a_bad_request(user, url, header, password):
    """gunicorn refuses such a header itself; runserver and other servers passed it
    on, and PostgreSQL refused it where it was stored or looked up (a 500)."""
    value = "Token abc\x00def" if header == "HTTP_AUTHORIZATION" else "a\x00b"
    client = Client(raise_request_exception=False)
    form = {"username": "alice", "password": password}
    response = client.post(url, form, **{header: value})
    assert response.status_code == 400
    if url.startswith("/api/"):
        assert response.json()["error"]["message"].startswith("A header of the")
    else:
        assert "A header of the request contains a NUL" in response.content.decode()
        assert response["X-Frame-Options"] == "DENY"


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/accounts/login/", "/documents/", API_URL, "/admin/"])
def test_a_cookie_spelling_a_nul_is_ignored_not_a_server_error(user, url):
    """``"\\000"`` in a quoted cookie value is printable, so gunicorn lets it
    through, and Python's cookie parser makes a NUL of it: as the session key,
    PostgreSQL refused it (a 500 for anyone, on every page)."""
    cookie = 'sessionid="abcdefgh\\000ijklmnop"; csrftoken="\\000"'
    response = Client(raise_request_exception=False, HTTP_COOKIE=cookie).get(url)
    assert response.status_code in (200, 302, 401)
    # A real session next to it still counts.
    client = Client()
    client.force_login(user)
    session = client.cookies["sessionid"].value
    both = f'sessionid={session}; other="\\000"'
    seen = Client(HTTP_COOKIE=both).get("/documents/")
    assert seen.status_code == 200
