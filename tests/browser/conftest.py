"""Headless Chromium (Debian's package) driven by Playwright, against live_server."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    if CHROMIUM is None:
        if os.environ.get("CI") == "true":
            pytest.fail("Chromium is required in CI (apt-get install chromium).")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    # Playwright's sync API runs an event loop; Django must allow ORM calls beside it.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser, request, tmp_path_factory) -> Iterator[object]:
    """A fresh page; a screenshot is saved to a temporary folder if the test fails."""
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        folder = Path(tmp_path_factory.mktemp("screenshots"))
        shot = folder / f"{request.node.name}.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"Screenshot of the failure: {shot}")  # noqa: T201
    context.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


def login(page, live_server, username: str, password: str) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_load_state()
