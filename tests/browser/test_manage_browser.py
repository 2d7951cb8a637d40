"""A person manages documents in a real browser (list live status, bulk actions,
delete), and an operator reads the console on a phone. Chromium headless against
live_server. ``SCREENSHOT_DIR=docs/images`` saves the README's pictures."""

from __future__ import annotations

import io
import os
import re
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from documents.models import Document, Tag
from documents.pages import store_thumbnail
from documents.services import document_reprocess
from documents.thumbnails import thumbnail_in_child
from jobqueue.models import ErrorType, ExtractionMetric, QueueItem, Status
from jobqueue.services import QueueManager
from tests.browser.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "alice-password-1"
LETTER = (
    "Minutes of the harbour committee\n\nPresent: the chair, the treasurer and four "
    "members.\n\nThe committee agreed to repaint the north pier before the summer "
    "and to ask the council for a second mooring buoy."
)


@pytest.fixture
def screenshot_dir(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def completed(document: Document) -> Document:
    Document.objects.filter(pk=document.pk).update(status=Status.COMPLETED)
    return document


def no_horizontal_overflow(page) -> bool:
    return page.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )


def test_list_badges_follow_changes_made_elsewhere(
    page, live_server, user, make_document
):
    """Nothing is moving when the page loads; a reprocess from another tab and its
    run still show up without a reload."""
    from playwright.sync_api import expect

    doc = completed(make_document(name="settled.txt"))
    login(page, live_server, "alice", PASSWORD)
    badge = page.locator(f'tr[data-document-id="{doc.pk}"] [data-badge]')
    expect(badge).to_have_text("Completed")
    page.evaluate("window.__notReloaded = true")

    document_reprocess(document=doc)
    expect(badge).to_have_text("Pending", timeout=25_000)
    queue = QueueManager()
    job = queue.claim("browser-test")
    queue.complete(job.pk)
    expect(badge).to_have_text("Completed", timeout=10_000)
    assert page.evaluate("window.__notReloaded === true")


def test_a_failure_elsewhere_shows_its_reason_on_the_list(
    page, live_server, user, make_document
):
    from playwright.sync_api import expect

    doc = make_document(name="scan.pdf")
    login(page, live_server, "alice", PASSWORD)
    row = page.locator(f'tr[data-document-id="{doc.pk}"]')
    expect(row.locator("[data-badge]")).to_have_text("Pending")
    expect(row.locator("[data-error-label]")).to_be_hidden()

    Document.objects.filter(pk=doc.pk).update(
        status=Status.FAILED,
        error_type=ErrorType.CORRUPTION,
        error_message="The file is damaged",
    )
    expect(row.locator("[data-badge]")).to_have_text("Failed", timeout=10_000)
    expect(row.locator("[data-error-label]")).to_have_text("Corrupt file")


def test_select_download_reprocess_and_delete_several(
    page, live_server, user, make_document, screenshot_dir
):
    from playwright.sync_api import expect

    docs = [
        completed(make_document(f"text {i}".encode(), name=f"note-{i}.txt"))
        for i in range(3)
    ]
    Document.objects.filter(pk=docs[0].pk).update(title="Harbour minutes")
    docs[0].tags.add(Tag.objects.create(owner=user, name="harbour"))
    for doc in docs[:2]:  # drawn as a worker would; the third is still a type card
        png = thumbnail_in_child(doc.file.path, doc.mime_type, str(doc), LETTER)
        Document.objects.filter(pk=doc.pk).update(thumbnail=store_thumbnail(doc, png))
    login(page, live_server, "alice", PASSWORD)
    page.set_viewport_size({"width": 1100, "height": 700})
    pictures = page.locator("[data-thumbnail] img")
    expect(pictures).to_have_count(2)
    for n in range(2):
        page.wait_for_function(
            "img => img.complete && img.naturalWidth > 0",
            arg=pictures.nth(n).element_handle(),
        )
    page.screenshot(path=str(screenshot_dir / "documents-list.png"))

    counter = page.locator("[data-selected-count]")
    expect(page.get_by_role("button", name="Reprocess")).to_be_disabled()
    page.get_by_label("Select all on this page").check()
    expect(counter).to_have_text("3 documents selected")
    page.get_by_label("Select note-2.txt").uncheck()
    expect(counter).to_have_text("2 documents selected")

    with page.expect_download() as download:
        page.get_by_role("button", name="Download as ZIP").click()
    archive = zipfile.ZipFile(io.BytesIO(Path(download.value.path()).read_bytes()))
    assert sorted(archive.namelist()) == ["note-0.txt", "note-1.txt"]

    page.get_by_role("button", name="Reprocess").click()
    expect(page.get_by_role("status").filter(has_text="queued")).to_contain_text(
        "2 documents were queued for reprocessing."
    )
    assert QueueItem.objects.filter(operation="reprocess").count() == 2

    page.get_by_label("Select Harbour minutes").check()
    page.get_by_label("Select note-1.txt").check()
    page.get_by_role("button", name="Delete…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Delete 2 documents?")
    page.get_by_role("button", name="Delete 2").click()
    page.wait_for_url(re.compile(r"/documents/"))
    expect(page.get_by_role("status").filter(has_text="deleted")).to_have_text(
        re.compile("2 documents were deleted.")
    )
    expect(page.locator("tr[data-document-id]")).to_have_count(1)
    assert list(Document.objects.values_list("original_filename", flat=True)) == [
        "note-2.txt"
    ]


def test_delete_one_from_its_page(page, live_server, user, make_document):
    from playwright.sync_api import expect

    doc = completed(make_document(name="old-invoice.txt"))
    stored = Path(doc.file.path)
    login(page, live_server, "alice", PASSWORD)
    page.goto(f"{live_server.url}{doc.get_absolute_url()}")
    page.get_by_role("link", name="Delete…").click()
    expect(page.get_by_text("This cannot be undone.")).to_be_visible()
    page.get_by_role("button", name="Delete", exact=True).click()
    page.wait_for_url(f"{live_server.url}/documents/")
    expect(page.get_by_text("“old-invoice.txt” was deleted.")).to_be_visible()
    expect(page.get_by_text("No documents yet.")).to_be_visible()
    assert not stored.exists()


def test_operator_console_fits_a_phone_and_a_laptop(
    page, live_server, admin_user, make_document, screenshot_dir, tmp_path
):
    from playwright.sync_api import expect

    for i in range(6):
        doc = make_document(name=f"quarterly-report-for-the-harbour-board-{i}.pdf")
        QueueItem.objects.create(
            document=doc,
            status=(Status.FAILED, Status.PENDING, Status.COMPLETED)[i % 3],
            attempts=1,
            error_type=ErrorType.CORRUPTION if i % 3 == 0 else "",
            error_message="The file is damaged: no cross-reference table"
            if i % 3 == 0
            else "",
            claimed_by="worker-host-1:4242:ab12cd:w1",
        )
    # Some history, so the charts have something to show.
    now, item = timezone.now(), QueueItem.objects.first()
    for minute in range(0, 55, 3):
        for outcome in ("completed",) * (minute % 4 + 1) + ("failed",) * (minute % 2):
            ExtractionMetric.objects.create(
                job=item,
                document=item.document,
                outcome=outcome,
                extraction_time_ms=120,
                created_at=now - timedelta(minutes=minute),
            )
    page.goto(f"{live_server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", "password")
    page.click("input[type=submit]")
    page.wait_for_url(f"{live_server.url}/admin/")

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/admin/jobqueue/queueitem/dashboard/")
    expect(page.locator("h1")).to_have_text("Queue dashboard")
    assert no_horizontal_overflow(page)
    page.screenshot(path=str(tmp_path / "dashboard-phone.png"), full_page=True)

    page.set_viewport_size({"width": 1280, "height": 800})
    page.screenshot(path=str(screenshot_dir / "dashboard.png"))
    page.goto(f"{live_server.url}/admin/jobqueue/queueitem/")
    results = page.locator("#changelist .results")
    assert results.evaluate("r => r.scrollWidth <= r.clientWidth"), "columns clipped"
    assert no_horizontal_overflow(page)


def test_page_viewer_turns_pages(page, live_server, user, make_document):
    from playwright.sync_api import expect

    from tests.files import pdf_bytes

    doc = make_document(pdf_bytes(pages=2), name="two.pdf", mime_type="application/pdf")
    Document.objects.filter(pk=doc.pk).update(status=Status.COMPLETED, page_count=2)
    login(page, live_server, "alice", PASSWORD)
    page.goto(f"{live_server.url}{doc.get_absolute_url()}")
    image = page.get_by_role("img", name="Page 1 of two.pdf")
    expect(image).to_be_visible()
    page.wait_for_function(
        "img => img.complete && img.naturalWidth === 1000", arg=image.element_handle()
    )
    page.get_by_role("link", name="Next page →").click()
    expect(page.locator("[data-viewer-position]")).to_have_text("Page 2 of 2")
    second = page.get_by_role("img", name="Page 2 of two.pdf")
    page.wait_for_function(
        "img => img.complete && img.naturalWidth === 1000", arg=second.element_handle()
    )
    expect(page.get_by_role("link", name="Next page →")).to_have_count(0)


def test_list_counts_and_thumbnails_follow_a_real_worker(
    page, live_server, user, make_document, start_worker
):
    """The status chips' counts change with the badges, and the first page's picture
    appears once a worker has drawn it, without a reload."""
    from playwright.sync_api import expect

    from tests.files import pdf_bytes

    doc = make_document(pdf_bytes(), name="report.pdf", mime_type="application/pdf")
    QueueManager().enqueue(doc.pk)
    login(page, live_server, "alice", PASSWORD)
    chips = page.locator("#status-filters")
    expect(chips).to_contain_text("Pending 1")
    page.evaluate("window.__notReloaded = true")
    start_worker("--workers", "1", "--poll-interval", "0.2", env={"THUMBNAILS": "1"})
    expect(chips).to_contain_text("Completed 1", timeout=30_000)
    expect(chips).not_to_contain_text("Pending")
    picture = page.locator(f'tr[data-document-id="{doc.pk}"] [data-thumbnail] img')
    expect(picture).to_have_count(1, timeout=30_000)
    page.wait_for_function(
        "img => img.complete && img.naturalWidth > 0", arg=picture.element_handle()
    )
    assert page.evaluate("window.__notReloaded === true")
