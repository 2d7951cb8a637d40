"""Thirteenth outside-in pass, in a browser: the product run as README says (``make
run``) and looked at on a phone and a tablet, as a person and as an operator."""

from __future__ import annotations

import pytest

from documents.models import Tag
from tests.browser.conftest import login
from tests.conftest import grant_operator

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


# --- The admin's index on a phone ---------------------------------------------------

OPERATOR_PASSWORD = "operator-password-13"


@pytest.fixture
def operator(django_user_model):
    user = django_user_model.objects.create_user(
        "operator13", password=OPERATOR_PASSWORD
    )
    return grant_operator(user)


@pytest.mark.parametrize("width", [360, 768])
def test_the_queue_console_on_the_admin_index_fits_a_narrow_screen(
    page,
    live_server,
    operator,
    width,
):
    """The console's rows took dashboard.css's rule for a model's "View" link (a
    cell that never wraps): its description ran 150 px off a phone's screen, over
    the recent actions at 768 px, and squeezed "Dashboard" to a letter a line."""
    page.set_viewport_size({"width": width, "height": 800})
    page.goto(f"{live_server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", operator.username)
    page.fill("#id_password", OPERATOR_PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"{live_server.url}/admin/")
    console = page.locator("#queue-console")
    assert console.evaluate("c => c.scrollWidth <= c.clientWidth"), "runs off"
    assert page.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )
    link = console.get_by_role("link", name="Dashboard", exact=True)
    assert link.bounding_box()["height"] < 2 * link.evaluate(
        "a => parseFloat(getComputedStyle(a).lineHeight)"
    ), "the link is broken over several lines"


# --- A long file name on the edit page --------------------------------------------


def test_the_edit_page_of_a_long_unbroken_name_fits_a_phone(
    page,
    live_server,
    make_document,
):
    """Only the breadcrumbs' last crumb wrapped; the edit page links the document's
    name as a middle one, and a 200-letter name ran 1,400 px off a phone's screen."""
    document = make_document(name="a" * 200 + ".txt")
    page.set_viewport_size({"width": 360, "height": 800})
    login(page, live_server, "alice", "alice-password-1")
    page.goto(f"{live_server.url}/documents/{document.pk}/edit/")
    assert page.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )


# --- A long tag on a phone -----------------------------------------------------------


def test_a_tag_of_fifty_letters_stays_on_a_phone_screen(
    page,
    live_server,
    user,
    make_document,
):
    """A tag may be 50 characters; one without a space, in its chip that never
    wrapped, pushed the document's page 175 px past a phone's screen, and made
    the list's row scroll sideways."""
    document = make_document(name="report.txt")
    document.tags.add(Tag.objects.create(owner=user, name="G" * 50))
    page.set_viewport_size({"width": 360, "height": 800})
    login(page, live_server, "alice", "alice-password-1")
    page.goto(f"{live_server.url}/documents/{document.pk}/")
    assert page.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )
    page.goto(f"{live_server.url}/documents/")
    assert page.locator(".table-wrap").evaluate(
        "t => t.scrollWidth <= t.clientWidth"
    ), "the list scrolls sideways"


# --- Long file names at upload, on a phone ------------------------------------------

# Names as scanners and people make them: long, joined by underscores, no space.
LONG_NAMES = (
    "Quarterly_Financial_Report_FY2026_Q3_Final_v2_signed.docx",  # really text
    "Scanned_Invoice_2026-11-28_ACME_Corporation_00045123.txt",
)


def test_long_file_names_at_upload_stay_on_a_phone_screen(
    page,
    live_server,
    user,
):
    """The chosen files' list and the messages after the upload (kept, refused)
    did not wrap a name without a space: the page scrolled sideways, the reason of
    a refusal off the screen."""
    page.set_viewport_size({"width": 360, "height": 800})
    login(page, live_server, "alice", "alice-password-1")
    page.goto(f"{live_server.url}/documents/upload/")
    page.set_input_files(
        "input[type=file]",
        [
            {"name": name, "mimeType": "text/plain", "buffer": b"words\n"}
            for name in LONG_NAMES
        ],
    )
    fits = (
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )
    assert page.evaluate(fits), "the chosen files' list runs off the screen"
    page.locator("main button[type=submit]").click()
    page.wait_for_url(f"{live_server.url}/documents/")
    assert page.locator(".message--error").count() == 1  # the .docx that is text
    assert page.evaluate(fits), "the messages run off the screen"
