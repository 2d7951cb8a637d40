"""The people's pages from outside (audit 14; what needs a browser is in
tests/browser/test_people14.py): a form sent after its session ended (a log-out in
another tab, an expired session) was turned away to the log-in page, which said
nothing of it, so the person could not tell that the files they had chosen, or the
title they had typed, were not kept; the log-in page never said where a forgotten
password goes; a search of no word said to check the spelling."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from config.middleware import UnsentFormMiddleware
from documents.models import Document

LOGIN_URL = reverse("login")
NOT_KEPT = "so what you sent was not kept: log in, then send it again."


def logged_out_elsewhere(user) -> Client:
    """A browser whose session was ended meanwhile: logged in, then out (as from
    another tab, which shares the cookies), the form's page still open."""
    client = Client()
    client.force_login(user)
    client.post(reverse("logout"))
    return client


# --- A form sent after a log-out says on the log-in page that it was not kept -------


@pytest.mark.django_db
def test_an_upload_sent_after_a_log_out_is_said_not_kept(user):
    client = logged_out_elsewhere(user)
    upload = SimpleUploadedFile("minutes.txt", b"minutes of the meeting\n")
    response = client.post(reverse("documents:upload"), {"file": upload}, follow=True)
    assert response.redirect_chain[-1][0].startswith(f"{LOGIN_URL}?next=")
    body = response.content.decode()
    assert NOT_KEPT in body
    assert not Document.objects.exists()
    # Said once: logging in then does not say it again.
    response = client.post(
        response.redirect_chain[-1][0],
        {"username": "alice", "password": "alice-password-1"},
        follow=True,
    )
    assert response.redirect_chain[-1][0] == reverse("documents:upload")
    assert NOT_KEPT not in response.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("form", ["edit", "reprocess", "bulk", "tokens", "password"])
def test_every_form_sent_after_a_log_out_is_said_not_kept(user, make_document, form):
    document = make_document()
    url, data = {
        "edit": (reverse("documents:edit", args=[document.pk]), {"title": "New"}),
        "reprocess": (reverse("documents:reprocess", args=[document.pk]), {}),
        "bulk": (reverse("documents:bulk"), {"id": document.pk, "action": "delete"}),
        "tokens": (reverse("api_tokens"), {"action": "create", "password": "x"}),
        "password": (reverse("password_change"), {"old_password": "x"}),
    }[form]
    response = logged_out_elsewhere(user).post(url, data, follow=True)
    assert response.redirect_chain[-1][0].startswith(f"{LOGIN_URL}?next=")
    assert NOT_KEPT in response.content.decode()
    document.refresh_from_db()
    assert document.title == ""


@pytest.mark.django_db
def test_a_page_opened_logged_out_or_a_log_out_says_nothing_of_a_form(user):
    client = Client()
    response = client.get(reverse("documents:upload"), follow=True)
    assert response.redirect_chain[-1][0].startswith(f"{LOGIN_URL}?next=")
    assert NOT_KEPT not in response.content.decode()
    client.force_login(user)
    response = client.post(reverse("logout"), follow=True)
    assert response.redirect_chain[-1][0] == LOGIN_URL
    assert NOT_KEPT not in response.content.decode()
    # A wrong password on the log-in page is not a form turned away either.
    response = client.post(LOGIN_URL, {"username": "alice", "password": "nope"})
    assert NOT_KEPT not in response.content.decode()
    assert NOT_KEPT in UnsentFormMiddleware.MESSAGE


# --- The log-in page says where a forgotten password goes --------------------------


@pytest.mark.django_db
def test_the_log_in_page_says_who_sets_a_forgotten_password(client, user):
    """The site has no reset by e-mail (an administrator sets a forgotten password,
    as the README says), but only the lock-out page, reached after five wrong
    tries, said so."""
    for response in (
        client.get(LOGIN_URL),
        client.post(LOGIN_URL, {"username": "alice", "password": "forgotten"}),
    ):
        assert "Forgotten your password? Ask an administrator" in (
            response.content.decode()
        )


# --- A search with no word in it says so, rather than that nothing matched ---------


@pytest.mark.django_db
@pytest.mark.parametrize("query", ["🎉", "!!!", "-🎉"])
def test_a_search_for_no_word_says_nothing_was_looked_for(user_client, user, query):
    """Emoji and symbols are not indexed: the page said "No results" and to check
    the spelling, while the party's documents have "🎉" in their title and text."""
    Document.objects.create(
        owner=user,
        original_filename="party.txt",
        title="Party 🎉",
        file="documents/party.txt",
        mime_type="text/plain",
        size=9,
        sha256="0" * 64,
        status="completed",
        text="party 🎉 time",
    )
    notice = f"Search looks for words of letters or digits; “{query}” was left out."
    body = user_client.get(reverse("documents:search"), {"q": query}).content.decode()
    assert f'id="search-notice">{notice}</p>' in body
    assert user_client.get("/api/documents/", {"q": query}).json()["notice"] == notice
    # A word beside the emoji is looked for, as before, and nothing more is said.
    response = user_client.get(reverse("documents:search"), {"q": f"party {query}"})
    assert 'id="search-notice"' not in response.content.decode()
    assert [hit.document.title for hit in response.context["hits"]] == ["Party 🎉"]
