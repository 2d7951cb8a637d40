"""HTTP as a Django user expects it: HEAD wherever GET, the upload API refusing
fields it does not know, and expired API tokens as the README says."""

from __future__ import annotations

from datetime import UTC, timedelta

import pytest
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from knox.models import AuthToken

from documents.models import Document
from documents.tokens import create_token
from jobqueue.models import Status
from tests import test_access as access
from tests.files import pdf_bytes

world = access.world  # the access matrix's document, job and users of each role

# What a HEAD must answer as its GET does (its body aside).
SAME_HEADERS = (
    "Allow",
    "Cache-Control",
    "Content-Disposition",
    "Content-Type",
    "Location",
)
API_URL = "/api/documents/"
TOKENS_URL = reverse("api_tokens")


def body(response) -> bytes:
    """The body, read (a file's stream is closed once read)."""
    if response.streaming:
        return b"".join(response.streaming_content)
    return response.content


def head_problems(client: Client, path: str, **headers: str) -> list[str]:
    """How HEAD differs from GET at ``path``, besides sending no body."""
    got = client.get(path, headers=headers)
    head = client.head(path, headers=headers)
    body(got)
    where = f"HEAD {path}"
    if head.status_code != got.status_code:
        return [f"{where}: {head.status_code}, GET {got.status_code}"]
    problems = [
        f"{where}: {name} {head.get(name)!r}, GET {got.get(name)!r}"
        for name in SAME_HEADERS
        if head.get(name) != got.get(name)
    ]
    if body(head):
        problems.append(f"{where}: a body")
    return problems


# --- HEAD wherever GET -----------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("key", list(access.MATRIX))
def test_every_address_that_takes_get_takes_head(world, key):
    """Every route of the URLconf (the access matrix has a row for each, and a new
    route without one fails there), for every role: HEAD answers as GET."""
    problems = []
    for path in dict.fromkeys(case.path(world) for case in access.MATRIX[key]):
        for role in access.ROLES:
            client = access.client_for(world, role)
            problems += [f"{p} as {role}" for p in head_problems(client, path)]
    assert not problems, "\n".join(problems)


@pytest.mark.django_db
def test_the_machines_endpoints_take_head(client, settings):
    settings.METRICS_TOKEN = "m" * 40
    bearer = {"Authorization": "Bearer " + "m" * 40}
    for path in ("/healthz", "/readyz", "/metrics"):
        assert not head_problems(client, path, **bearer)
    assert client.head("/metrics", headers=bearer).status_code == 200
    assert client.head("/metrics").status_code == 401  # the token is still asked
    # A probe is read, never written: another method is refused, as on every page.
    for path in ("/healthz", "/readyz", "/metrics"):
        refused = client.post(path, headers=bearer)
        assert refused.status_code == 405 and refused["Allow"] == "GET, HEAD"


@pytest.mark.django_db
def test_a_drawn_thumbnail_and_page_answer_head(user_client, make_document):
    document = make_document(pdf_bytes(pages=1), "one.pdf", "application/pdf")
    name = document.file.storage.save(
        f"pages/{document.pk}/thumbnail.png", ContentFile(b"\x89PNG\r\n\x1a\n")
    )
    Document.objects.filter(pk=document.pk).update(
        status=Status.COMPLETED, page_count=1, thumbnail=name
    )
    for path in (
        reverse("documents:thumbnail", args=[document.pk]),
        reverse("documents:page", args=[document.pk, 1]),
        reverse("documents:text", args=[document.pk]),
    ):
        head = user_client.head(path)
        assert head.status_code == 200, path
        assert not head_problems(user_client, path)
    assert head["Content-Disposition"] == 'attachment; filename="one.txt"'


# --- The upload API refuses fields it does not know ------------------------------------


@pytest.fixture
def api(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def text_file(content: bytes = b"hello api\n") -> SimpleUploadedFile:
    return SimpleUploadedFile("a.txt", content, content_type="text/plain")


@pytest.mark.django_db
def test_what_the_upload_takes_still_works(api, user):
    assert api.post(API_URL, {"file": text_file()}).status_code == 202
    again = {"file": text_file(), "priority": "0", "allow_duplicates": "true"}
    assert api.post(API_URL, again).status_code == 202
    # A session's form carries its CSRF token: it is no field.
    response = api.post(
        API_URL, {"file": text_file(b"x\n"), "csrfmiddlewaretoken": "t"}
    )
    assert response.status_code == 202
    assert Document.objects.filter(owner=user).count() == 3
    # The upload form (one file or many) is another door, which takes its fields.
    response = api.post(
        reverse("documents:upload"), {"file": [text_file(b"y\n"), text_file(b"z\n")]}
    )
    assert response.status_code == 302
    assert Document.objects.filter(owner=user).count() == 5


# --- Expired API tokens, as the README says --------------------------------------------


@pytest.mark.django_db
def test_an_expired_token_is_listed_until_it_is_sent_then_it_is_gone(user_client, user):
    """README: listed as expired until a script sends it; that request is told when
    it expired, and the token is deleted (knox), so the page lists it no more."""
    token, key = create_token(user, expires_in_days=30)
    expired = timezone.now() - timedelta(days=1)
    AuthToken.objects.filter(pk=token.pk).update(expiry=expired)
    page = user_client.get(TOKENS_URL).content.decode()
    assert f"<code>{token.token_key[:8]}…</code>" in page
    assert "expired <time" in page

    script = Client(headers={"Authorization": f"Token {key}"})
    refused = script.get(API_URL)
    assert refused.status_code == 401
    when = expired.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    assert refused.json()["error"]["message"].startswith(
        f"This token expired on {when}"
    )
    assert not AuthToken.objects.filter(user=user).exists()
    assert token.token_key[:8] not in user_client.get(TOKENS_URL).content.decode()
    # Said once: the key is now one the site does not know.
    again = script.get(API_URL).json()["error"]["message"]
    assert "expired" not in again
