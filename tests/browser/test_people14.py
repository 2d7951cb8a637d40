"""The people's pages from outside (audit 14), in a real browser against a running
server: a form sent after a log-out in another tab says on the log-in page that it
was not kept; a page left open on a document deleted in another tab says so and
stops asking about it."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from documents.models import Document
from tests.browser.conftest import login

LOGIN_URL = reverse("login")
NOT_KEPT = "so what you sent was not kept: log in, then send it again."


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_upload_after_logging_out_in_another_tab_is_said_not_kept(
    page,
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


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_pages_left_open_on_a_document_deleted_in_another_tab_say_so(
    page,
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
