"""People's pages through the test client: layout, upload, list, detail, status,
reprocess and download, and who may see what."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.staticfiles import finders
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from documents.extractors.formats import accepted_labels
from documents.models import Document
from documents.views import PAGE_SIZE
from jobqueue.models import ErrorType, Operation, QueueItem, Status

PDF_BYTES = b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n"


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def many_documents(make_document, user):
    """PAGE_SIZE + 5 documents, one minute apart, the newest last-created."""
    now = timezone.now()
    docs = []
    for i in range(PAGE_SIZE + 5):
        doc = make_document(content=b"x" * (i + 1), name=f"doc-{i:02d}.txt")
        Document.objects.filter(pk=doc.pk).update(
            created_at=now - timedelta(minutes=PAGE_SIZE + 5 - i)
        )
        docs.append(doc)
    return docs


def row_names(response) -> list[str]:
    return [d.original_filename for d in response.context["page"]]


# --- layout ---------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url", ["/documents/", "/documents/upload/", "/documents/search/", "/documents/1/"]
)
def test_pages_need_login(client, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")


@pytest.mark.django_db
def test_layout_has_navigation_search_and_post_logout(user_client):
    body = user_client.get(reverse("documents:list")).content.decode()
    assert 'href="/documents/upload/"' in body
    assert 'href="/documents/search/"' in body
    assert 'role="search"' in body
    assert re.search(r'<form[^>]*method="post"[^>]*action="/accounts/logout/"', body)
    assert "csrfmiddlewaretoken" in body
    assert 'href="/static/css/app.css"' in body
    assert 'src="/static/js/app.js"' in body
    assert 'aria-current="page"' in body
    assert "/admin/" not in body


@pytest.mark.django_db
def test_staff_get_an_admin_link(client, staff_user):
    client.force_login(staff_user)
    assert b'href="/admin/"' in client.get(reverse("documents:list")).content


def test_static_files_are_our_own():
    assert finders.find("css/app.css")
    assert finders.find("js/app.js")


@pytest.mark.django_db
def test_login_page_and_logout(client, user):
    body = client.get(reverse("login")).content.decode()
    assert '<label for="id_username">' in body
    assert 'autocomplete="current-password"' in body
    response = client.post(
        reverse("login"), {"username": "alice", "password": "wrong"}, follow=True
    )
    assert b'role="alert"' in response.content
    response = client.post(
        reverse("login"), {"username": "alice", "password": "alice-password-1"}
    )
    assert response["Location"] == reverse("documents:list")
    assert client.get(reverse("logout")).status_code == 405
    assert client.post(reverse("logout")).status_code == 302
    assert client.get(reverse("documents:list")).status_code == 302


@pytest.mark.django_db
def test_messages_are_shown_with_roles(user_client):
    files = [SimpleUploadedFile("empty.txt", b"")]
    files.append(SimpleUploadedFile("fine.txt", b"fine words\n"))
    response = user_client.post(
        reverse("documents:upload"), {"file": files}, follow=True
    )
    body = response.content.decode()
    assert re.search(
        r'role="alert"><div><p>1 file was not uploaded:</p><ul><li>“empty.txt” is empty',
        body,
    )
    assert re.search(r'role="status">“fine.txt” was uploaded', body)


@pytest.mark.django_db
def test_twelve_files_uploaded_make_one_message(user_client):
    files = [SimpleUploadedFile(f"f{i}.txt", b"words %d\n" % i) for i in range(12)]
    response = user_client.post(
        reverse("documents:upload"), {"file": files}, follow=True
    )
    shown = [str(m) for m in response.context["messages"]]
    assert shown == ["12 files were uploaded and are pending."]
    # Read once, gone: the next page has no leftover messages.
    assert b"were uploaded" not in user_client.get(reverse("documents:list")).content


@pytest.mark.django_db
def test_eight_refused_files_make_one_message_naming_each(user_client):
    # One message a file would pass the five the page shows: later ones were lost.
    files = [SimpleUploadedFile(f"e{i}.txt", b"") for i in range(8)]
    files.append(SimpleUploadedFile("ok.txt", b"fine\n"))
    response = user_client.post(
        reverse("documents:upload"), {"file": files}, follow=True
    )
    body = response.content.decode()
    assert body.count('class="message message--') == 2
    assert "“ok.txt” was uploaded" in body
    assert "8 files were not uploaded:" in body and "more." not in body
    for i in range(8):
        assert f"<li>“e{i}.txt” is empty (0 bytes).</li>" in body
    assert b"is empty" not in user_client.get(reverse("documents:list")).content


# --- upload -----------------------------------------------------------------------


@pytest.mark.django_db
def test_upload_page_states_limits_and_types(user_client, settings):
    settings.MAX_UPLOAD_MB = 7
    body = user_client.get(reverse("documents:upload")).content.decode()
    assert "up to 7 MB" in body
    assert f"Accepted: {accepted_labels()}." in body
    assert re.search(r'<input type="file" name="file" id="id_file" multiple', body)
    assert 'data-max-bytes="7340032"' in body
    assert '<label for="id_file"' in body


@pytest.mark.django_db
def test_upload_several_files_each_gets_its_own_result(user_client, user):
    files = [
        SimpleUploadedFile("one.txt", b"first file\n"),
        SimpleUploadedFile("two.pdf", PDF_BYTES),
        SimpleUploadedFile("fake.pdf", b"plain words, not a pdf\n"),
    ]
    response = user_client.post(reverse("documents:upload"), {"file": files})
    assert response["Location"] == reverse("documents:list")
    assert sorted(user.documents.values_list("original_filename", flat=True)) == [
        "one.txt",
        "two.pdf",
    ]
    messages = [str(m) for m in response.wsgi_request._messages]
    assert any("fake.pdf" in m and "named like a PDF" in m for m in messages)
    assert "2 files were uploaded and are pending." in messages


@pytest.mark.django_db
def test_upload_one_file_goes_to_its_page(user_client, user):
    response = user_client.post(
        reverse("documents:upload"), {"file": SimpleUploadedFile("a.txt", b"hi\n")}
    )
    assert response["Location"] == user.documents.get().get_absolute_url()


@pytest.mark.django_db
def test_upload_nothing_acceptable_shows_every_reason(user_client, user):
    files = [SimpleUploadedFile("e.txt", b""), SimpleUploadedFile("b.pdf", b"\x89PNG")]
    response = user_client.post(reverse("documents:upload"), {"file": files})
    assert response.status_code == 400
    body = response.content.decode()
    assert "Nothing was uploaded" in body
    assert "“e.txt” is empty" in body
    assert "“b.pdf”" in body
    assert not user.documents.exists()


# --- list --------------------------------------------------------------------------


@pytest.mark.django_db
def test_list_is_newest_first_and_paginated(user_client, many_documents):
    response = user_client.get(reverse("documents:list"))
    assert response.status_code == 200
    names = row_names(response)
    assert len(names) == PAGE_SIZE
    assert names[0] == many_documents[-1].original_filename
    assert b"Page 1 of 2" in response.content
    assert b'rel="next" href="?page=2"' in response.content
    page2 = user_client.get(reverse("documents:list"), {"page": 2})
    assert row_names(page2)[-1] == "doc-00.txt"
    assert len(row_names(page2)) == 5


@pytest.mark.django_db
@pytest.mark.parametrize("page", ["999", "0", "-1", "abc", "9" * 40])
def test_list_survives_odd_page_numbers(user_client, many_documents, page):
    assert user_client.get(reverse("documents:list"), {"page": page}).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("sort", "first"),
    [
        ("name", "doc-00.txt"),
        ("-name", "doc-29.txt"),
        ("size", "doc-00.txt"),
        ("-size", "doc-29.txt"),
        ("date", "doc-00.txt"),
        ("-date", "doc-29.txt"),
        ("bogus", "doc-29.txt"),
    ],
)
def test_list_sorts(user_client, many_documents, sort, first):
    response = user_client.get(reverse("documents:list"), {"sort": sort})
    assert row_names(response)[0] == first


@pytest.mark.django_db
def test_list_sort_headers_toggle_and_keep_the_filter(user_client, many_documents):
    body = user_client.get(
        reverse("documents:list"), {"sort": "name", "status": "pending", "page": 2}
    ).content.decode()
    assert (
        '<th scope="col" aria-sort="ascending"><a href="?sort=-name&amp;status=pending">'
        in body
    )
    assert '<a href="?sort=-size&amp;status=pending">' in body


@pytest.mark.django_db
def test_list_filters_by_status_with_counts(user_client, make_document):
    done = make_document(name="done.txt")
    failed = make_document(name="failed.txt")
    make_document(name="waiting.txt")
    Document.objects.filter(pk=done.pk).update(status=Status.COMPLETED)
    Document.objects.filter(pk=failed.pk).update(status=Status.FAILED)
    response = user_client.get(reverse("documents:list"), {"status": "failed"})
    assert row_names(response) == ["failed.txt"]
    counts = {s: n for s, _label, n in response.context["statuses"]}
    assert counts["failed"] == 1 and counts["pending"] == 1
    assert response.context["total"] == 3
    assert "badge--failed" in response.content.decode()
    response = user_client.get(reverse("documents:list"), {"status": "nonsense"})
    assert len(row_names(response)) == 3


@pytest.mark.django_db
def test_list_refreshes_itself_without_javascript_only_while_active(
    user_client, make_document
):
    doc = make_document()
    body = user_client.get(reverse("documents:list")).content.decode()
    assert '<noscript><meta http-equiv="refresh"' in body
    assert "data-active" in body
    Document.objects.filter(pk=doc.pk).update(status=Status.COMPLETED)
    body = user_client.get(reverse("documents:list")).content.decode()
    assert 'http-equiv="refresh"' not in body


@pytest.mark.django_db
def test_list_shows_only_own_documents_but_staff_see_all(
    client, make_document, user, other_user, staff_user
):
    make_document(name="alice.txt")
    make_document(name="bob.txt", owner=other_user)
    client.force_login(other_user)
    assert row_names(client.get(reverse("documents:list"))) == ["bob.txt"]
    client.force_login(staff_user)
    response = client.get(reverse("documents:list"))
    assert set(row_names(response)) == {"alice.txt", "bob.txt"}
    assert b"Owner" in response.content


@pytest.mark.django_db
def test_empty_list_invites_an_upload(user_client):
    body = user_client.get(reverse("documents:list")).content.decode()
    assert "No documents yet" in body


# --- detail ------------------------------------------------------------------------


@pytest.mark.django_db
def test_detail_shows_metadata_text_and_actions(user_client, make_document):
    doc = make_document(name="report.txt")
    Document.objects.filter(pk=doc.pk).update(
        status=Status.COMPLETED,
        text="Quarterly <numbers> & results",
        page_count=3,
        confidence=0.87,
        extractor="text",
    )
    response = user_client.get(doc.get_absolute_url())
    body = response.content.decode()
    assert '<h1 class="break-words">report.txt</h1>' in body
    assert "Quarterly &lt;numbers&gt; &amp; results" in body
    assert "<dd>3</dd>" in body and "87%" in body
    assert f'action="/documents/{doc.pk}/reprocess/"' in body
    assert f'href="/documents/{doc.pk}/download/"' in body
    assert 'role="status" aria-live="polite"' in body
    assert 'http-equiv="refresh"' not in body
    assert "data-active" not in body


@pytest.mark.django_db
@pytest.mark.parametrize(
    "status", [Status.PENDING, Status.PROCESSING, Status.RETRY_PENDING]
)
def test_detail_of_an_unfinished_document_updates_itself(
    user_client, make_document, status
):
    doc = make_document()
    Document.objects.filter(pk=doc.pk).update(status=status)
    body = user_client.get(doc.get_absolute_url()).content.decode()
    assert '<noscript><meta http-equiv="refresh" content="3"></noscript>' in body
    assert f'data-status-url="/documents/{doc.pk}/status/" data-active' in body
    assert "refresh now" in body


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("error_type", "words"),
    [
        (ErrorType.CORRUPTION, "damaged or password-protected"),
        (ErrorType.TIMEOUT, "took too long"),
        (ErrorType.UNSUPPORTED, "Files of these kinds are read: PDF, "),
        (ErrorType.EXTRACTOR_MISSING, "not available on the server"),
        (ErrorType.UNKNOWN, "Something unexpected"),
        ("something-new", "Something unexpected"),
    ],
)
def test_detail_explains_errors_in_plain_words(
    user_client, make_document, error_type, words
):
    doc = make_document()
    Document.objects.filter(pk=doc.pk).update(
        status=Status.FAILED,
        error_type=error_type,
        error_message="PdfReadError: xref <broken>",
    )
    body = user_client.get(doc.get_absolute_url()).content.decode()
    assert "What went wrong" in body
    assert words in body
    assert "PdfReadError: xref &lt;broken&gt;" in body


@pytest.mark.django_db
def test_detail_of_a_completed_document_without_text(user_client, make_document):
    doc = make_document()
    Document.objects.filter(pk=doc.pk).update(
        status=Status.COMPLETED,
        extraction_note="No text layer: this PDF looks like a scan.",
    )
    body = user_client.get(doc.get_absolute_url()).content.decode()
    assert "No text was found" in body
    assert "No text layer" in body


@pytest.mark.django_db
def test_detail_says_when_its_text_is_from_an_earlier_reading(
    user_client, make_document
):
    """A reprocess that runs, or failed, leaves the last good text in place: shown,
    but not as if it were the latest reading's."""
    doc = make_document()
    rows = Document.objects.filter(pk=doc.pk)
    rows.update(text="Old words", processed_at=timezone.now(), status=Status.FAILED)
    body = user_client.get(doc.get_absolute_url()).content.decode()
    assert "Old words" in body
    assert "This text is from an earlier reading, on " in body
    assert "the latest one did not complete." in body
    rows.update(status=Status.PROCESSING)
    body = user_client.get(doc.get_absolute_url()).content.decode()
    assert "the document is being read again." in body
    rows.update(status=Status.COMPLETED)
    body = user_client.get(doc.get_absolute_url()).content.decode()
    assert "This text is from" not in body


@pytest.mark.django_db
def test_detail_of_someone_elses_document_is_404(client, make_document, other_user):
    doc = make_document()
    client.force_login(other_user)
    assert client.get(doc.get_absolute_url()).status_code == 404


@pytest.mark.django_db
def test_staff_see_any_document(client, make_document, staff_user):
    doc = make_document()
    client.force_login(staff_user)
    response = client.get(doc.get_absolute_url())
    assert response.status_code == 200
    assert b"<dt>Owner</dt><dd>alice</dd>" in response.content


# --- status JSON --------------------------------------------------------------------


@pytest.mark.django_db
def test_status_json(user_client, make_document):
    doc = make_document()
    Document.objects.filter(pk=doc.pk).update(
        status=Status.RETRY_PENDING, error_type=ErrorType.TIMEOUT, error_message="slow"
    )
    data = user_client.get(reverse("documents:status", args=[doc.pk])).json()
    assert data["id"] == doc.pk
    assert data["status"] == "retry_pending"
    assert data["status_label"] == "Retry pending"
    assert data["active"] is True
    assert data["error_type"] == "timeout"
    assert "took too long" in data["error_help"]
    Document.objects.filter(pk=doc.pk).update(status=Status.COMPLETED, error_type="")
    data = user_client.get(reverse("documents:status", args=[doc.pk])).json()
    assert data["active"] is False and data["error_help"] is None


@pytest.mark.django_db
def test_status_json_of_someone_elses_document_is_404(
    client, make_document, other_user
):
    doc = make_document()
    client.force_login(other_user)
    assert client.get(reverse("documents:status", args=[doc.pk])).status_code == 404


@pytest.mark.django_db
def test_statuses_json_only_reports_own_documents(client, make_document, other_user):
    mine = make_document(owner=other_user)
    theirs = make_document()
    client.force_login(other_user)
    response = client.get(
        reverse("documents:statuses"),
        {"id": [mine.pk, theirs.pk, "junk", "-3", "²", "9" * 40]},
    )
    assert response.status_code == 200
    assert [d["id"] for d in response.json()["documents"]] == [mine.pk]


# --- reprocess ---------------------------------------------------------------------


@pytest.mark.django_db
def test_reprocess_queues_the_document_once(user_client, make_document):
    doc = make_document()
    url = reverse("documents:reprocess", args=[doc.pk])
    assert user_client.get(url).status_code == 405
    response = user_client.post(url, follow=True)
    assert response.redirect_chain[-1][0] == doc.get_absolute_url()
    assert b"was queued for reprocessing" in response.content
    assert (
        QueueItem.objects.filter(document=doc, operation=Operation.REPROCESS).count()
        == 1
    )
    response = user_client.post(url, follow=True)
    assert b"already queued" in response.content
    assert (
        QueueItem.objects.filter(document=doc, operation=Operation.REPROCESS).count()
        == 1
    )


@pytest.mark.django_db
def test_reprocess_of_someone_elses_document_is_404(client, make_document, other_user):
    doc = make_document()
    client.force_login(other_user)
    assert client.post(reverse("documents:reprocess", args=[doc.pk])).status_code == 404
    assert not QueueItem.objects.filter(document=doc).exists()


# --- download and private files --------------------------------------------------


@pytest.mark.django_db
def test_owner_downloads_the_original(user_client, make_document):
    doc = make_document(content=b"original bytes\n", name="my notes.txt")
    response = user_client.get(reverse("documents:download", args=[doc.pk]))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"original bytes\n"
    assert response["Content-Disposition"].startswith("attachment;")
    assert "my notes.txt" in response["Content-Disposition"]


@pytest.mark.django_db
def test_download_is_404_for_another_person_and_allowed_for_staff(
    client, make_document, other_user, staff_user
):
    doc = make_document()
    url = reverse("documents:download", args=[doc.pk])
    client.force_login(other_user)
    assert client.get(url).status_code == 404
    client.force_login(staff_user)
    assert client.get(url).status_code == 200


@pytest.mark.django_db
def test_download_of_a_missing_file_is_404(user_client, make_document):
    doc = make_document()
    doc.file.delete(save=False)
    assert (
        user_client.get(reverse("documents:download", args=[doc.pk])).status_code == 404
    )


@pytest.mark.django_db
def test_uploaded_files_are_not_served_by_url(user_client, make_document):
    doc = make_document()
    for prefix in ("/media/", "/", "/static/"):
        assert user_client.get(prefix + doc.file.name).status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("asked", ["0", "-1"])
def test_a_page_number_under_one_is_the_first_page(user_client, many_documents, asked):
    """Django's get_page answered the last page for ?page=0: far from what a link
    counting from 0 meant. Past the last is still the last."""
    response = user_client.get(f"/documents/?page={asked}")
    assert response.context["page"].number == 1
    assert row_names(response)[0] == many_documents[-1].original_filename
    assert user_client.get("/documents/?page=99").context["page"].number == 2
