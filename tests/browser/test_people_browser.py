"""A person in a real browser: log in, upload, watch the status change live while real
workers run, search, open a hit. Chromium headless against live_server."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.browser.conftest import login
from tests.conftest import worker_log
from tests.corpus import CORPUS_DIR, corpus_available

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

WORKER_ARGS = ("--workers", "1", "--poll-interval", "0.2")
PASSWORD = "alice-password-1"
# (corpus file, a word of its text that no other sample contains)
CORPUS_FILES = [
    ("txt/sample-english.bom.txt", "monetary"),
    ("pdf/multicolumn.pdf", "Brussels"),
]


@pytest.fixture
def two_files(tmp_path: Path) -> list[tuple[Path, str]]:
    """Two uploadable files and a word to search for in each: corpus files if present."""
    if corpus_available():
        files = []
        for rel, word in CORPUS_FILES:
            target = tmp_path / Path(rel).name
            shutil.copyfile(CORPUS_DIR / rel, target)
            files.append((target, word))
        return files
    first = tmp_path / "harbour-notes.txt"
    first.write_text("Minutes of the harbour committee: the lighthouse needs paint.\n")
    second = tmp_path / "garden-plan.txt"
    second.write_text("Plant tulips along the fence; the greenhouse stays closed.\n")
    return [(first, "lighthouse"), (second, "greenhouse")]


def mark_page(page) -> None:
    """Leave a flag in the window: it survives only if the page is never reloaded."""
    page.evaluate("window.__notReloaded = true")


def assert_not_reloaded(page) -> None:
    assert page.evaluate("window.__notReloaded === true"), "the page was reloaded"


def wait_or_explain(expectation, proc) -> None:
    """Run a Playwright expectation; on failure show what the worker said."""
    try:
        expectation()
    except AssertionError as error:
        raise AssertionError(
            f"{error}\n--- worker log ---\n{worker_log(proc)}"
        ) from None


def test_upload_two_watch_them_complete_then_search_and_open(
    page, live_server, user, start_worker, two_files
):
    from playwright.sync_api import expect

    login(page, live_server, "alice", PASSWORD)
    expect(page.get_by_role("heading", name="My documents")).to_be_visible()

    page.get_by_role("link", name="Upload", exact=True).click()
    expect(page.get_by_text("Accepted:")).to_be_visible()
    page.set_input_files("input[type=file]", [str(path) for path, _ in two_files])
    expect(page.locator("[data-file-list] li")).to_have_count(2)
    page.get_by_role("button", name="Upload").click()

    page.wait_for_url(re.compile(r"/documents/$"))
    expect(page.get_by_role("status").filter(has_text="uploaded")).to_have_text(
        re.compile("2 files were uploaded and are pending.")
    )
    for path, _word in two_files:
        badge = page.locator(f'tr[data-document-name="{path.name}"] [data-badge]')
        expect(badge).to_have_text("Pending")

    mark_page(page)
    worker = start_worker(*WORKER_ARGS)
    for path, _word in two_files:
        badge = page.locator(f'tr[data-document-name="{path.name}"] [data-badge]')
        wait_or_explain(
            lambda badge=badge: expect(badge).to_have_text("Completed", timeout=90_000),
            worker,
        )
    assert_not_reloaded(page)

    target, word = two_files[1]
    page.get_by_role("searchbox", name="Search documents").fill(word)
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/documents/search/\?q="))
    hit = page.locator(".hit").first
    expect(hit.locator(".hit__title")).to_have_text(target.name)
    expect(hit.locator("mark").first).to_have_text(re.compile(word, re.IGNORECASE))
    expect(page.locator(".hit")).to_have_count(1)

    hit.locator(".hit__title").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(target.name)
    expect(page.locator("[data-live-document] [data-badge]")).to_have_text("Completed")
    expect(page.locator(".document-text")).to_contain_text(word)


def test_document_page_shows_the_text_when_done_without_reloading(
    page, live_server, user, start_worker, two_files
):
    from playwright.sync_api import expect

    path, word = two_files[0]
    login(page, live_server, "alice", PASSWORD)
    page.goto(f"{live_server.url}/documents/upload/")
    page.set_input_files("input[type=file]", str(path))
    page.get_by_role("button", name="Upload").click()

    page.wait_for_url(re.compile(r"/documents/\d+/$"))
    badge = page.locator("[data-live-document] [data-badge]")
    expect(badge).to_have_text("Pending")
    expect(page.get_by_text("The text will appear here")).to_be_visible()
    mark_page(page)

    worker = start_worker(*WORKER_ARGS)
    wait_or_explain(
        lambda: expect(badge).to_have_text("Completed", timeout=90_000), worker
    )
    expect(page.locator(".document-text")).to_contain_text(word)
    expect(page.get_by_text("This page updates by itself")).to_have_count(0)
    assert_not_reloaded(page)

    with page.expect_download() as download:
        page.get_by_role("link", name="Download original").click()
    assert download.value.suggested_filename == path.name


def test_without_javascript_the_page_refreshes_itself(
    browser, live_server, user, start_worker, two_files
):
    from playwright.sync_api import expect

    path, word = two_files[0]
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        login(page, live_server, "alice", PASSWORD)
        page.goto(f"{live_server.url}/documents/upload/")
        page.set_input_files("input[type=file]", str(path))
        page.get_by_role("button", name="Upload").click()
        page.wait_for_url(re.compile(r"/documents/\d+/$"))
        expect(page.get_by_role("link", name="refresh now")).to_be_visible()

        worker = start_worker(*WORKER_ARGS)
        badge = page.locator("[data-live-document] [data-badge]")
        wait_or_explain(
            lambda: expect(badge).to_have_text("Completed", timeout=90_000), worker
        )
        expect(page.locator(".document-text")).to_contain_text(word)
    finally:
        context.close()


def test_a_file_over_the_limit_is_named_before_anything_is_sent(
    page, live_server, user, settings, tmp_path
):
    """The server refuses the whole request for one oversized file: the page says
    so when the files are chosen, and keeps the form instead of sending them."""
    from playwright.sync_api import expect

    from documents.models import Document

    settings.MAX_UPLOAD_MB = 1
    fine = tmp_path / "fine.txt"
    fine.write_text("A short note.\n")
    big = tmp_path / "big.txt"
    big.write_bytes(b"a" * (2 * 1024 * 1024))
    login(page, live_server, "alice", PASSWORD)
    page.goto(f"{live_server.url}/documents/upload/")
    page.set_input_files("input[type=file]", [str(fine), str(big)])
    blocked = page.locator("[data-upload-blocked]")
    expect(blocked).to_contain_text("“big.txt” is over the limit of 1.0 MB")
    expect(page.locator("[data-file-list]")).not_to_contain_text("it will be refused")
    mark_page(page)

    page.get_by_role("button", name="Upload").click()
    expect(blocked).to_be_focused()
    assert_not_reloaded(page)
    assert not Document.objects.exists()

    page.set_input_files("input[type=file]", [str(fine)])
    expect(blocked).to_be_hidden()
    page.get_by_role("button", name="Upload").click()
    page.wait_for_url(re.compile(r"/documents/\d+/$"))
