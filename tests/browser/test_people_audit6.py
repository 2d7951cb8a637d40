"""Sixth audit of the people's pages: a phone can search, sort and select all; a
long extraction's progress is shown without being read out at every poll; the paused
banner goes when processing resumes; a long PDF's viewer jumps to a page."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from documents.models import Document
from jobqueue.models import QueueControl, QueueItem, Status
from tests.browser.conftest import login

PASSWORD = "alice-password-1"
PHONE = {"width": 375, "height": 800}


def _overflow(page) -> int:
    """How many pixels the page is wider than the screen (0: no sideways scroll)."""
    return page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_phone_searches_sorts_and_selects_all_without_scrolling_sideways(
    page, live_server, user, make_document
):
    from playwright.sync_api import expect

    for name in ("b.txt", "a.txt"):
        make_document(name=name)
    page.set_viewport_size(PHONE)
    login(page, live_server, "alice", PASSWORD)
    page.goto(f"{live_server.url}/documents/search/?q=hello")
    assert _overflow(page) == 0
    page.goto(f"{live_server.url}/documents/")
    assert _overflow(page) == 0
    # The header row stays on the screen: select all, and sort by name.
    select_all = page.get_by_label("Select all on this page")
    assert select_all.bounding_box()["x"] >= 0
    select_all.check()
    expect(page.locator("[data-selected-count]")).to_have_text("2 documents selected")
    by_name = page.locator("thead").get_by_role("link", name="Name")
    assert by_name.bounding_box()["x"] >= 0
    by_name.click()
    expect(page.locator("a.documents__name").first).to_have_text("a.txt")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_progress_shows_but_only_a_change_of_status_is_announced(
    page, live_server, user, make_document
):
    from playwright.sync_api import expect

    document = make_document(name="scan.txt")
    Document.objects.filter(pk=document.pk).update(status=Status.PROCESSING)
    now = timezone.now()
    item = QueueItem.objects.create(
        document=document,
        status=Status.PROCESSING,
        started_at=now,
        progress_done=3,
        progress_total=10,
        progress_at=now,
    )
    login(page, live_server, "alice", PASSWORD)
    page.goto(f"{live_server.url}{document.get_absolute_url()}")
    progress = page.locator(".status-panel [data-progress]")
    expect(progress).to_have_text("3 of 10 pages read.")
    expect(page.locator(".status-panel")).not_to_contain_text("{")
    page.evaluate(
        """() => {
          window.liveChanges = 0;
          const live = document.querySelector(".status-panel [aria-live]");
          new MutationObserver((changes) => { window.liveChanges += changes.length; })
            .observe(live, {childList: true, subtree: true, characterData: true});
        }"""
    )
    QueueItem.objects.filter(pk=item.pk).update(progress_done=4)
    expect(progress).to_have_text("4 of 10 pages read.")
    page.wait_for_timeout(1600)  # one more poll, with nothing new
    live = page.locator(".status-panel [aria-live]")
    assert "pages read" not in live.inner_text()
    assert page.evaluate("window.liveChanges") == 0


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_when_processing_resumes_the_list_drops_the_paused_banner(
    page, live_server, user, make_document
):
    from playwright.sync_api import expect

    document = make_document(name="report.txt")
    Document.objects.filter(pk=document.pk).update(title="Quarterly report")
    QueueItem.objects.create(document=document, status=Status.PENDING)
    QueueControl.set_paused(True)
    login(page, live_server, "alice", PASSWORD)
    page.goto(f"{live_server.url}/documents/")
    banner = page.locator("[data-paused-banner]")
    expect(banner).to_have_count(1)
    QueueControl.set_paused(False)
    QueueItem.objects.update(status=Status.COMPLETED)
    Document.objects.update(status=Status.COMPLETED)
    # Announced by the name the row shows, and the banner goes with no reload.
    expect(page.locator("[data-announcer]")).to_have_text(
        "Quarterly report: Completed."
    )
    expect(banner).to_have_count(0)


@pytest.mark.django_db
def test_a_long_pdf_s_viewer_jumps_to_a_page(user_client, make_document):
    document = make_document(b"%PDF-1.4", name="long.pdf", mime_type="application/pdf")
    Document.objects.filter(pk=document.pk).update(
        status=Status.COMPLETED, page_count=352
    )
    body = user_client.get(f"{document.get_absolute_url()}?page=7").content.decode()
    assert 'action="#pages-heading"' in body
    assert (
        '<input id="viewer-go" type="number" name="page" min="1" max="352" value="7"'
        in body
    )


@pytest.mark.django_db
def test_a_long_query_does_not_make_a_long_page_title(user_client):
    response = user_client.get(reverse("documents:search"), {"q": "word " * 100})
    title = response.content.decode().split("<title>")[1].split("</title>")[0]
    assert len(title) < 100
