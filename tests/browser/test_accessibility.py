"""Accessibility audit of the people's pages, in a real browser: the keyboard's focus
survives live updates and dismissed messages; nothing scrolls sideways at 320 px."""

from __future__ import annotations

import pytest

from documents.models import Document
from jobqueue.models import QueueItem, Status
from tests.browser.conftest import login

PASSWORD = "alice-password-1"
FOCUSED = (
    "document.activeElement === document.body ? 'BODY' : "
    "document.activeElement.textContent.trim()"
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_live_update_leaves_the_focus_on_the_status_filter(
    page, live_server, user, make_document
):
    """2.4.3: the status chips were rewritten under the focus, which fell to the
    top of the page."""
    from playwright.sync_api import expect

    document = make_document(name="report.txt")
    QueueItem.objects.create(document=document, status=Status.PENDING)
    login(page, live_server, "alice", PASSWORD)
    page.goto(f"{live_server.url}/documents/")
    page.locator("#status-filters a").first.focus()
    Document.objects.update(status=Status.COMPLETED)
    QueueItem.objects.update(status=Status.COMPLETED)
    expect(page.locator("[data-announcer]")).to_have_text("report.txt: Completed.")
    expect(page.locator("#status-filters")).to_contain_text("Completed")
    assert " ".join(page.evaluate(FOCUSED).split()) == "All 1"


def test_dismissing_a_message_moves_the_focus_on_not_to_the_top(
    page, live_server, user
):
    """2.4.3: the dismissed message took its focused button with it."""
    login(page, live_server, "alice", PASSWORD)
    files = [("empty.txt", b""), ("fine.txt", b"fine words\n")]
    page.goto(f"{live_server.url}/documents/upload/")
    page.set_input_files(
        "input[type=file]",
        [
            {"name": name, "mimeType": "text/plain", "buffer": data}
            for name, data in files
        ],
    )
    page.locator("main button[type=submit]").click()
    page.wait_for_load_state()
    closes = page.locator(".messages .message__close")
    assert closes.count() == 2
    closes.first.focus()
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.className") == "message__close"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"


def test_the_header_fits_a_320_pixel_screen(page, live_server, user):
    """1.4.10: the header's search form was wider than a 320 px screen."""
    page.set_viewport_size({"width": 320, "height": 640})
    login(page, live_server, "alice", PASSWORD)
    page.goto(f"{live_server.url}/documents/upload/")
    assert (
        page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        == 0
    )
