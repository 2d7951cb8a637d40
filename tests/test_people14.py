"""The people's pages from outside (audit 14), as found in a real browser against a
running server: a form sent after its session ended (a log-out in another tab, an
expired session) was turned away to the log-in page, which said nothing of it, so
the person could not tell that the files they had chosen, or the title they had
typed, were not kept; a list or a document's page left open on a document deleted in
another tab went on showing it waiting (the list kept its box ticked, and both kept
asking about it); the log-in page never said where a forgotten password goes."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from config.middleware import UnsentFormMiddleware
from documents.models import Document
from tests.browser.conftest import browser, login, page  # noqa: F401 - fixtures

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


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_upload_after_logging_out_in_another_tab_is_said_not_kept(
    page,  # noqa: F811 - the fixture
    live_server,
    user,
    tmp_path,
):
    from playwright.sync_api import expect

    chosen = tmp_path / "تقرير ٢٠٢٠ 报告.txt"
    chosen.write_text("minutes of the meeting\n", encoding="utf-8")
    login(page, live_server, "alice", "alice-password-1")
    page.goto(f"{live_server.url}/documents/upload/")
    page.set_input_files("input[type=file]", str(chosen))
    other = page.context.new_page()
    other.goto(f"{live_server.url}/documents/")
    other.get_by_role("button", name="Log out").click()
    other.wait_for_url(f"{live_server.url}{LOGIN_URL}")
    page.locator(".upload-form").get_by_role("button", name="Upload").click()
    page.wait_for_url(re.compile(re.escape(f"{LOGIN_URL}?next=")))
    expect(page.get_by_role("status")).to_contain_text(NOT_KEPT)
    assert not Document.objects.exists()
    # Logged in again, the upload page is there to send the files again.
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("alice-password-1")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/documents/upload/")
    expect(page.get_by_text(NOT_KEPT)).to_have_count(0)


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


# --- A page left open on a document deleted meanwhile says so -----------------------


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_pages_left_open_on_a_document_deleted_in_another_tab_say_so(
    page,  # noqa: F811 - the fixture
    live_server,
    user,
    make_document,
):
    """The list went on showing the deleted document as waiting (and asking about
    it every second and a half, for as long as the tab stayed open), its box still
    ticked for the next action; its own page said "Pending" and "This page updates
    by itself" for ever."""
    from playwright.sync_api import expect

    gone = make_document(name="قائمة ٢٠٢٠.txt", content=b"to be deleted\n")
    kept = make_document(name="kept.txt", content=b"still here\n")
    login(page, live_server, "alice", "alice-password-1")
    page.goto(f"{live_server.url}/documents/{gone.pk}/")
    listed = page.context.new_page()
    listed.goto(f"{live_server.url}/documents/")
    box = listed.get_by_label(f"Select {gone}")
    box.check()
    expect(listed.get_by_text("1 document selected")).to_be_visible()
    other = page.context.new_page()
    other.goto(f"{live_server.url}/documents/{gone.pk}/delete/")
    other.locator("main").get_by_role("button", name="Delete").click()
    other.wait_for_url(f"{live_server.url}/documents/")

    row = listed.locator(f'tr[data-document-id="{gone.pk}"]')
    expect(row.locator("[data-badge]")).to_have_text("Not found")
    expect(box).to_be_disabled()
    expect(box).not_to_be_checked()
    expect(listed.get_by_text("Select documents to act on them.")).to_be_visible()
    expect(listed.locator("[data-announcer]")).to_have_text(f"{gone}: Not found.")
    # The other row goes on as before.
    other_row = listed.locator(f'tr[data-document-id="{kept.pk}"]')
    expect(other_row.locator("[data-badge]")).to_have_text("Pending")

    panel = page.locator("[data-live-document]")
    expect(panel.locator("[data-badge]")).to_have_text("Not found", timeout=30_000)
    expect(panel).to_contain_text("It was deleted (in another tab")
    expect(page.get_by_text("This page updates by itself")).to_have_count(0)


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
