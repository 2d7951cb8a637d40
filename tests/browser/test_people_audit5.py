"""Fifth audit of the people's pages, in a real browser: right-to-left lines of a
document's text read from the right, and the list announces every change it shows."""

from __future__ import annotations

import pytest

from documents.models import Document
from jobqueue.models import QueueItem, Status
from tests.browser.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "alice-password-1"


def test_right_to_left_lines_start_at_the_right(page, live_server, user, make_document):
    text = "שלום עולם מה שלום כולם?\nAn English line.\n"
    document = make_document(text.encode())
    Document.objects.filter(pk=document.pk).update(status=Status.COMPLETED, text=text)
    login(page, live_server, "alice", PASSWORD)
    page.goto(f"{live_server.url}{document.get_absolute_url()}")
    edges = page.evaluate(
        """() => {
          const pre = document.querySelector(".document-text");
          const box = pre.getBoundingClientRect();
          const line = (start, end) => {
            const range = document.createRange();
            range.setStart(pre.firstChild, start);
            range.setEnd(pre.firstChild, end);
            return range.getBoundingClientRect();
          };
          const hebrew = line(0, 4), english = line(24, 26);
          return {rightGap: box.right - hebrew.right, leftGap: english.left - box.left};
        }"""
    )
    # Within the padding of its own side (1rem), not across the page.
    assert edges["rightGap"] < 40, edges
    assert edges["leftGap"] < 40, edges


def test_the_list_announces_every_document_that_changed(
    page, live_server, user, make_document
):
    from playwright.sync_api import expect

    first, second = make_document(name="first.txt"), make_document(name="second.txt")
    for document in (first, second):
        QueueItem.objects.create(document=document, status=Status.PENDING)
    login(page, live_server, "alice", PASSWORD)
    page.goto(f"{live_server.url}/documents/")
    expect(page.locator("[data-badge]").first).to_have_text("Pending")
    QueueItem.objects.update(status=Status.COMPLETED)
    Document.objects.update(status=Status.COMPLETED)
    announcer = page.locator("[data-announcer]")
    expect(announcer).to_contain_text("first.txt: Completed")
    expect(announcer).to_contain_text("second.txt: Completed")


def test_back_on_the_upload_page_it_is_ready_to_send_again(page, live_server, user):
    from playwright.sync_api import expect

    login(page, live_server, "alice", PASSWORD)
    page.goto(f"{live_server.url}/documents/upload/")
    button = page.get_by_role("button", name="Upload", exact=True)
    # What the page was when left: sent (its button disabled), and files the
    # browser put back in the input without a change event.
    page.evaluate(
        """() => {
          const form = document.querySelector("[data-upload-form]");
          form.dispatchEvent(new Event("submit", {cancelable: true}));
          const files = new DataTransfer();
          files.items.add(new File(["some words"], "restored.txt"));
          form.querySelector("input[type=file]").files = files.files;
        }"""
    )
    expect(page.get_by_role("button", name="Uploading…")).to_be_disabled()
    page.evaluate(
        "window.dispatchEvent(new PageTransitionEvent('pageshow', {persisted: true}))"
    )
    expect(button).to_be_enabled()
    expect(page.locator("[data-file-list]")).to_contain_text("restored.txt")
