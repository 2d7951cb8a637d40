"""Audit 12 of the people's pages, in a browser: a wrong password on the API tokens
page puts the keyboard back on the password; staff who follow another person's tag
and then filter by name keep the tag."""

from __future__ import annotations

import pytest

from documents.models import Tag
from tests.browser.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_wrong_password_on_the_tokens_page_takes_the_focus(page, live_server, user):
    from playwright.sync_api import expect

    login(page, live_server, "alice", "alice-password-1")
    page.goto(f"{live_server.url}/accounts/tokens/")
    page.get_by_label("Expires after").select_option("30")
    page.get_by_label("Your password").fill("not it")
    page.get_by_role("button", name="Make a token").click()
    password = page.get_by_label("Your password")
    expect(password).to_be_focused()
    # Its error is its description, read out with it.
    expect(password).to_have_accessible_description("That is not your password.")
    expect(page.get_by_label("Expires after")).to_have_value("30")
    # Typed straight away, the right one makes the token.
    page.keyboard.type("alice-password-1")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Your new token")).to_be_visible()


def test_staff_filtering_by_name_keep_the_tag_they_followed(
    page, live_server, user, make_document, staff_user
):
    from playwright.sync_api import expect

    for name in ("minutes-may.txt", "minutes-june.txt", "minutes-july.txt"):
        make_document(name=name, content=name.encode())
    tag = Tag.objects.create(owner=user, name="board")
    for document in user.documents.filter(original_filename__contains="-j"):
        document.tags.add(tag)
    login(page, live_server, "operator", "operator-password-1")
    page.goto(f"{live_server.url}/documents/")
    page.locator("a.tag", has_text="board").first.click()
    names = page.locator("a.documents__name")
    expect(names).to_have_count(2)
    page.get_by_label("Name or title").fill("june")
    page.get_by_role("button", name="Filter").click()
    expect(names).to_have_text(["minutes-june.txt"])
    expect(page.get_by_label("Tag")).to_have_value("board")


def test_choosing_new_files_clears_the_last_uploads_refusal(
    page, live_server, user, tmp_path
):
    from playwright.sync_api import expect

    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    fine = tmp_path / "fine.txt"
    fine.write_text("A short note.\n")
    login(page, live_server, "alice", "alice-password-1")
    page.goto(f"{live_server.url}/documents/upload/")
    page.set_input_files("input[type=file]", str(empty))
    page.get_by_role("button", name="Upload").click()
    refusal = page.locator("#upload-errors")
    expect(refusal).to_contain_text("“empty.txt” is empty")
    files = page.get_by_label("Choose files")
    expect(files).to_have_attribute("aria-invalid", "true")
    # Other files chosen: the refusal of the last ones is no longer what they are.
    files.set_input_files(str(fine))
    expect(refusal).to_have_count(0)
    expect(files).not_to_have_attribute("aria-invalid", "true")
    expect(files).to_have_attribute("aria-describedby", "upload-rules")
    page.get_by_role("button", name="Upload").click()
    expect(page.get_by_text("“fine.txt” was uploaded")).to_be_visible()
