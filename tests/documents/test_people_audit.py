"""What a person meets on a normal day (outside audit): times that say their zone,
help and errors tied to their inputs, focus back on what to fix, plain words when
no file is chosen, a failed document that says why on the list, and no dead ends."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders
from django.core.files.uploadedfile import SimpleUploadedFile

from documents.models import Document
from jobqueue.models import ErrorType, Status

pytestmark = pytest.mark.django_db

UPLOAD_URL = "/documents/upload/"


def referenced_ids_missing(html: str) -> set[str]:
    """Ids named by aria-describedby / aria-labelledby that no element carries."""
    present = set(re.findall(r'\sid="([^"]+)"', html))
    named = re.findall(r'aria-(?:describedby|labelledby)="([^"]+)"', html)
    return {i for value in named for i in value.split()} - present


def failed(document: Document) -> Document:
    Document.objects.filter(pk=document.pk).update(
        status=Status.FAILED,
        error_type=ErrorType.CORRUPTION,
        error_message="The file is damaged: the PDF is incomplete",
    )
    return document


def test_times_on_the_list_and_a_document_say_their_zone(
    user_client, make_document, settings
):
    document = make_document()
    for zone, abbreviation in (("UTC", "UTC"), ("Europe/Paris", "CET")):
        settings.TIME_ZONE = zone
        Document.objects.filter(pk=document.pk).update(
            created_at="2026-01-15T12:00:00Z"
        )
        for url in ("/documents/", document.get_absolute_url()):
            html = user_client.get(url).content.decode()
            assert re.search(rf"15 Jan 2026, \d\d:00 {abbreviation}</time>", html), url


def test_the_staff_list_is_titled_like_its_heading(client, staff_user):
    client.force_login(staff_user)
    html = client.get("/documents/").content.decode()
    assert "<h1>All documents</h1>" in html
    assert "<title>All documents · Documents</title>" in html


def test_help_and_errors_are_tied_to_their_inputs(user_client, make_document):
    document = make_document()
    edit = f"/documents/{document.pk}/edit/"
    pages = [
        user_client.get(UPLOAD_URL),
        user_client.post(UPLOAD_URL, {}),
        user_client.get(edit),
        user_client.post(edit, {"title": "x" * 300, "tags": "a"}),
    ]
    for response in pages:
        assert referenced_ids_missing(response.content.decode()) == set()


def test_after_an_edit_error_the_wrong_field_has_focus(user_client, make_document):
    document = make_document()
    html = user_client.post(
        f"/documents/{document.pk}/edit/", {"title": "fine", "tags": "x" * 60}
    ).content.decode()
    tags = re.search(r"<input[^>]*name=\"tags\"[^>]*>", html).group(0)
    title = re.search(r"<input[^>]*name=\"title\"[^>]*>", html).group(0)
    assert "autofocus" in tags
    assert 'aria-invalid="true"' in tags
    assert "autofocus" not in title
    assert "is longer than 50 characters" in html


def test_after_an_upload_error_the_file_input_has_focus(user_client):
    html = user_client.post(
        UPLOAD_URL, {"file": SimpleUploadedFile("empty.txt", b"")}
    ).content.decode()
    file_input = re.search(r"<input type=\"file\"[^>]*>", html).group(0)
    assert "autofocus" in file_input
    assert 'aria-invalid="true"' in file_input
    fresh = user_client.get(UPLOAD_URL).content.decode()
    assert "autofocus" not in re.search(r"<input type=\"file\"[^>]*>", fresh).group(0)


def test_an_upload_without_a_file_says_to_choose_one(user_client):
    response = user_client.post(UPLOAD_URL, {})
    assert response.status_code == 400
    html = response.content.decode()
    assert "Choose one or more files to upload." in html
    assert "This field is required" not in html


def test_the_upload_rules_say_what_stops_the_whole_upload(user_client, settings):
    settings.MAX_UPLOAD_MB = 7
    settings.MAX_UPLOAD_FILES = 9
    html = user_client.get(UPLOAD_URL).content.decode()
    assert (
        "Only a file over 7 MB, or more than 9 files, stops the whole upload." in html
    )


def test_a_failed_document_says_why_on_the_list(user_client, make_document):
    broken = failed(make_document(name="broken.pdf"))
    fine = make_document(name="fine.txt", content=b"fine\n")
    html = user_client.get("/documents/").content.decode()
    row = re.search(rf'<tr data-document-id="{broken.pk}".*?</tr>', html, re.S)
    assert re.search(r"data-error-label>\s*Corrupt file\s*</span>", row.group(0))
    other = re.search(rf'<tr data-document-id="{fine.pk}".*?</tr>', html, re.S)
    assert re.search(r"data-error-label></span>", other.group(0))
    statuses = user_client.get(
        "/documents/status/", {"id": [broken.pk, fine.pk]}
    ).json()["documents"]
    labels = {d["id"]: d["error_label"] for d in statuses}
    assert labels == {broken.pk: "Corrupt file", fine.pk: None}


def test_the_list_reads_no_more_for_the_reasons(
    user_client, make_document, django_assert_max_num_queries
):
    for n in range(5):
        failed(make_document(name=f"broken-{n}.pdf", content=f"{n}".encode()))
    with django_assert_max_num_queries(15):
        assert user_client.get("/documents/").status_code == 200


def test_search_past_its_last_page_leads_back_to_the_first(user_client, make_document):
    html = user_client.get(
        "/documents/search/", {"q": "hello", "page": "7"}
    ).content.decode()
    assert "No more results" in html
    assert 'href="?q=hello">Back to the first page of results</a>' in html


def test_pages_name_an_icon_that_exists(user_client):
    html = user_client.get("/documents/").content.decode()
    icon = re.search(r'<link rel="icon" href="/static/([^"]+)"', html)
    assert icon and finders.find(icon.group(1))
