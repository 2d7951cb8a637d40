"""Eighth audit, from the outside: methods a page should not answer (TRACE and
OPTIONS got a person's whole page or file, as a GET does), ZIP entries named like a
Windows device, a file made to be slow holding everyone's page drawing, and the
redirects and session changes around logging in and out."""

from __future__ import annotations

import io
import time
import zipfile
from collections import deque

import pytest
from django.contrib.auth import SESSION_KEY
from django.test import Client
from django.urls import reverse

from documents import pages
from documents.models import Document
from jobqueue.models import Status
from tests.files import pdf_bytes

pytestmark = pytest.mark.django_db

PASSWORD = "Correct-horse-8!"


# --- Methods ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "allowed"),
    [
        ("documents:list", "GET, HEAD"),
        ("documents:upload", "GET, HEAD, POST"),
        ("documents:detail", "GET, HEAD"),
        ("documents:download", "GET, HEAD"),
        ("documents:edit", "GET, HEAD, POST"),
        ("documents:delete", "GET, HEAD, POST"),
    ],
)
@pytest.mark.parametrize("method", ["TRACE", "OPTIONS"])
def test_trace_and_options_get_no_page_and_no_file(
    user_client, make_document, name, allowed, method
):
    document = make_document(content=b"private words\n")
    args = [] if name in {"documents:list", "documents:upload"} else [document.pk]
    url = reverse(name, args=args)
    response = user_client.generic(method, url)
    assert response.status_code == 405
    assert response["Allow"] == allowed
    assert b"private words" not in b"".join(
        getattr(response, "streaming_content", [response.content])
    )
    # What the pages are for still works.
    assert user_client.get(url).status_code == 200
    assert user_client.head(url).status_code == 200


def test_a_crafted_post_to_the_list_or_a_document_page_is_refused(
    user_client, make_document
):
    document = make_document()
    for url in ("/documents/", f"/documents/{document.pk}/"):
        assert user_client.post(url).status_code == 405
    download = user_client.post(f"/documents/{document.pk}/download/")
    assert download.status_code == 405
    assert not hasattr(download, "streaming_content")


# --- ZIP entries -----------------------------------------------------------------------


def zip_names(response) -> list[str]:
    assert response.status_code == 200, response.content[:300]
    data = b"".join(response.streaming_content)
    return zipfile.ZipFile(io.BytesIO(data)).namelist()


@pytest.mark.parametrize(
    ("stored", "entry"),
    [
        ("CON.txt", "_CON.txt"),
        ("nul.tar.txt", "_nul.tar.txt"),
        ("com1", "_com1"),
        ("LPT9.pdf", "_LPT9.pdf"),
        ("aux .txt", "_aux .txt"),
        ("Conout$.txt", "_Conout$.txt"),
        # Names that only look like one are left alone.
        ("console.txt", "console.txt"),
        ("com10.txt", "com10.txt"),
        ("icon.txt", "icon.txt"),
    ],
)
def test_zip_entries_never_name_a_windows_device(
    user_client, make_document, stored, entry
):
    """Unzipping "CON.txt" on Windows fails, or writes to the console instead."""
    document = make_document(content=b"x\n")
    Document.objects.filter(pk=document.pk).update(original_filename=stored)
    response = user_client.post(
        "/documents/bulk/", {"action": "download", "id": [document.pk]}
    )
    assert zip_names(response) == [entry]


def test_a_renamed_device_entry_still_gets_a_name_of_its_own(
    user_client, make_document
):
    first = make_document(content=b"1\n", name="CON.txt")
    second = make_document(content=b"2\n", name="_CON.txt")
    response = user_client.post(
        "/documents/bulk/", {"action": "download", "id": [first.pk, second.pk]}
    )
    assert sorted(zip_names(response)) == ["_CON (2).txt", "_CON.txt"]


# --- Pages that take too long to draw --------------------------------------------------


@pytest.fixture
def no_slow_renders():
    pages._slow_renders.clear()
    yield
    pages._slow_renders.clear()


def completed_pdf(make_document, owner=None) -> Document:
    document = make_document(
        pdf_bytes(pages=5), name="slow.pdf", mime_type="application/pdf", owner=owner
    )
    Document.objects.filter(pk=document.pk).update(
        status=Status.COMPLETED, page_count=5
    )
    return document


def test_pages_that_keep_timing_out_stop_holding_the_drawing_for_everyone(
    user_client, make_document, other_user, monkeypatch, no_slow_renders
):
    """A file made to be slow, asked for page after page, held this web process's
    one drawing slot 20 s a request, and everyone's pages waited, then got 503."""
    slow = completed_pdf(make_document)
    drawn = []
    render = pages._render
    monkeypatch.setattr(pages, "_render", lambda *a: drawn.append(a) or render(*a))
    # A real child, killed at its deadline: no interpreter starts in a millisecond.
    monkeypatch.setattr(pages, "RENDER_TIMEOUT_SECONDS", 0.001)
    for number in range(1, pages.SLOW_RENDERS_ALLOWED + 1):
        response = user_client.get(reverse("documents:page", args=[slow.pk, number]))
        assert response.status_code == 404
    assert len(drawn) == pages.SLOW_RENDERS_ALLOWED
    refused = user_client.get(reverse("documents:page", args=[slow.pk, 5]))
    assert refused.status_code == 503
    assert int(refused["Retry-After"]) == pages.SLOW_RENDER_WINDOW_SECONDS
    assert "took too long" in refused.content.decode()
    assert len(drawn) == pages.SLOW_RENDERS_ALLOWED  # no child was started

    # Another person's pages are drawn as before.
    monkeypatch.setattr(pages, "RENDER_TIMEOUT_SECONDS", 20)
    theirs = completed_pdf(make_document, owner=other_user)
    other = Client()
    other.force_login(other_user)
    response = other.get(reverse("documents:page", args=[theirs.pk, 1]))
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"

    # Once the window has passed, the owner's pages are tried again.
    monkeypatch.setattr(pages, "SLOW_RENDER_WINDOW_SECONDS", 0)
    response = user_client.get(reverse("documents:page", args=[slow.pk, 5]))
    assert response.status_code == 200
    assert not pages._slow_renders


def test_a_page_already_drawn_is_shown_whatever_the_owners_budget(
    user_client, make_document, monkeypatch, no_slow_renders
):
    document = completed_pdf(make_document)
    url = reverse("documents:page", args=[document.pk, 1])
    assert user_client.get(url).status_code == 200
    pages._slow_renders[document.owner_id] = deque(
        [time.monotonic()] * pages.SLOW_RENDERS_ALLOWED
    )
    assert user_client.get(url).status_code == 200
    page_two = reverse("documents:page", args=[document.pk, 2])
    assert user_client.get(page_two).status_code == 503


# --- Redirects and sessions ------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    ["//evil.com", "/\\evil.com", "https:evil.com", "https://evil.com", "///evil.com"],
)
@pytest.mark.parametrize("logout", ["/accounts/logout/", "/admin/logout/"])
def test_logout_never_redirects_to_another_site(admin_user, logout, target):
    client = Client()
    for data, query in (({}, f"?next={target}"), ({"next": target}, "")):
        client.force_login(admin_user)
        response = client.post(f"{logout}{query}", data)
        assert response.status_code in (200, 302)
        assert "evil" not in response.get("Location", "")
        assert SESSION_KEY not in client.session


def test_logging_in_never_keeps_a_session_id_chosen_by_someone_else(user):
    user.set_password(PASSWORD)
    user.save()
    client = Client()
    client.get("/accounts/login/")
    planted = "plantedbyanattacker0123456789abc"
    client.cookies["sessionid"] = planted
    response = client.post(
        "/accounts/login/", {"username": user.username, "password": PASSWORD}
    )
    assert response.status_code == 302
    assert client.cookies["sessionid"].value != planted
    assert client.session[SESSION_KEY] == str(user.pk)


def test_a_password_change_rotates_the_session_and_ends_the_others(user):
    user.set_password(PASSWORD)
    user.save()
    here, elsewhere = Client(), Client()
    for client in (here, elsewhere):
        client.post(
            "/accounts/login/", {"username": user.username, "password": PASSWORD}
        )
    before = here.cookies["sessionid"].value
    response = here.post(
        "/accounts/password_change/",
        {
            "old_password": PASSWORD,
            "new_password1": "Another-horse-9!",
            "new_password2": "Another-horse-9!",
        },
    )
    assert response.status_code == 302
    assert here.cookies["sessionid"].value != before
    assert here.get("/documents/").status_code == 200
    # The stolen cookie and the other browser are logged out.
    assert elsewhere.get("/documents/").status_code == 302
    stolen = Client()
    stolen.cookies["sessionid"] = before
    assert stolen.get("/documents/").status_code == 302
