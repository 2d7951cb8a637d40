"""Content-Security-Policy without inline scripts (our pages and the admin's), and
login throttling with a clear lock-out message (django-axes)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.test import Client

from jobqueue.models import QueueItem, Status

pytestmark = pytest.mark.django_db

PASSWORD = "alice-password-1"


class InlineScriptFinder(HTMLParser):
    """Collects what a script-src without 'unsafe-inline' would block."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        names = dict(attrs)
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"<{tag} {name}=…>")
            if name in {"href", "src", "action"} and (
                value or ""
            ).strip().lower().startswith("javascript:"):
                self.found.append(f"<{tag} {name}=javascript:…>")
        if tag == "script" and "src" not in names:
            kind = (names.get("type") or "").lower()
            # JSON data blocks are not executed; anything else inline is.
            self._in_script = kind not in {"application/json", "application/ld+json"}

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.found.append(f"inline script: {data.strip()[:60]}")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False


def inline_scripts(html: str) -> list[str]:
    finder = InlineScriptFinder()
    finder.feed(html)
    return finder.found


@pytest.fixture
def pages(user, make_document, django_user_model):
    document = make_document()
    job = QueueItem.objects.create(document=document, status=Status.FAILED)
    root = django_user_model.objects.create_superuser("root")
    people = [
        "/accounts/login/",
        "/documents/",
        "/documents/upload/",
        "/documents/search/?q=hello",
        f"/documents/{document.pk}/",
    ]
    admin = [
        "/admin/",
        "/admin/documents/document/",
        f"/admin/documents/document/{document.pk}/change/",
        "/admin/jobqueue/queueitem/",
        f"/admin/jobqueue/queueitem/{job.pk}/change/",
        "/admin/jobqueue/queueitem/dashboard/",
        "/admin/jobqueue/queueitem/clear-old/",
        "/admin/jobqueue/workerheartbeat/",
        "/admin/jobqueue/extractionmetric/",
        "/admin/knox/authtoken/add/",
        "/admin/auth/user/",
        f"/admin/auth/user/{user.pk}/change/",
        "/admin/auth/user/add/",
        "/admin/axes/accessattempt/",
    ]
    return user, root, people, admin


def test_every_page_sends_a_csp_without_unsafe_inline_scripts(pages):
    user, root, people, admin = pages
    for person, urls in ((user, people), (root, admin)):
        client = Client()
        client.force_login(person)
        for url in urls:
            response = client.get(url)
            assert response.status_code == 200, url
            policy = response["Content-Security-Policy"]
            script_src = re.search(r"script-src ([^;]*)", policy)[1]
            assert script_src == "'self'", (url, policy)
            assert "frame-ancestors 'none'" in policy
            assert not inline_scripts(response.content.decode()), url
    for url in ("/api/documents/", "/admin/login/"):
        policy = Client().get(url)["Content-Security-Policy"]
        assert re.search(r"script-src ([^;]*)", policy)[1] == "'self'", (url, policy)


def test_the_finder_finds_inline_scripts():
    html = (
        '<script>alert(1)</script><a href="javascript:x()">x</a>'
        '<button onclick="y()">y</button><script src="/s.js"></script>'
        '<script type="application/json">{"a": 1}</script>'
    )
    assert len(inline_scripts(html)) == 3


def login(client: Client, username: str, password: str, url: str = "/accounts/login/"):
    return client.post(url, {"username": username, "password": password})


def test_logins_are_locked_out_after_repeated_failures(settings, user, other_user):
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert login(client, "alice", "wrong").status_code == 200
    response = login(client, "alice", "wrong")
    assert response.status_code == 429
    body = response.content.decode()
    assert "Too many failed log-ins" in body
    assert "locked for 15 minutes" in body
    assert response["Retry-After"] == "900"  # when to try again, as every 429 says
    # Locked: even the right password is refused, on the site and in the admin.
    assert login(client, "alice", PASSWORD).status_code == 429
    assert login(client, "alice", PASSWORD, "/admin/login/").status_code == 429
    assert "_auth_user_id" not in client.session
    # Someone else from the same address can still log in.
    assert login(Client(), "bob", "bob-password-1").status_code == 302


def test_a_successful_login_resets_the_count(settings, user):
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        login(client, "alice", "wrong")
    assert login(client, "alice", PASSWORD).status_code == 302
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert login(Client(), "alice", "wrong").status_code == 200


def test_a_401_from_the_api_names_both_token_schemes(client):
    # Clients built for OAuth-style keys look for "Bearer" in the challenge.
    response = client.get("/api/documents/")
    assert response.status_code == 401
    challenges = re.findall(r"(?:^|,\s*)(\w+) realm=", response["WWW-Authenticate"])
    assert challenges == ["Token", "Bearer"]
