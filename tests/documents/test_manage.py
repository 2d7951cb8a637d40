"""People manage their documents: delete, bulk actions, ZIP download, filters, title
and tags; and the words the pages use (formats, encrypted files, pause)."""

from __future__ import annotations

import io
import zipfile
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from documents.manage_views import MAX_BULK
from documents.models import Document, Tag
from documents.services import document_delete
from jobqueue.models import ErrorType, QueueControl, QueueItem, Status
from jobqueue.services import QueueManager
from tests.conftest import may_delete_documents

pytestmark = pytest.mark.django_db

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


@pytest.fixture
def viewer(django_user_model):
    """Staff who may look at everything but steer nothing."""
    return django_user_model.objects.create_user("viewer", is_staff=True)


def names(response) -> list[str]:
    return [d.original_filename for d in response.context["page"]]


def stored(document: Document) -> Path:
    return Path(document.file.path)


# --- delete -------------------------------------------------------------------------


def test_delete_asks_first_then_removes_file_text_and_jobs(
    user_client, make_document, django_capture_on_commit_callbacks
):
    doc = make_document(name="secret.txt")
    QueueManager().enqueue(doc.pk)
    path = stored(doc)
    url = reverse("documents:delete", args=[doc.pk])
    page = user_client.get(url)
    assert page.status_code == 200
    assert b"cannot be undone" in page.content and b"secret.txt" in page.content
    # The tab and the history say what is about to go.
    assert "<title>Delete “secret.txt”? · Documents</title>" in page.content.decode()
    assert Document.objects.filter(pk=doc.pk).exists()
    with django_capture_on_commit_callbacks(execute=True):
        response = user_client.post(url)
    assert response["Location"] == reverse("documents:list")
    assert not Document.objects.filter(pk=doc.pk).exists()
    assert not QueueItem.objects.filter(document_id=doc.pk).exists()
    assert not path.exists()
    first = user_client.get(reverse("documents:list")).content.decode()
    assert "“secret.txt” was deleted." in first
    again = user_client.get(reverse("documents:list")).content.decode()
    assert "was deleted" not in again  # shown once, then gone


def test_delete_keeps_the_file_when_the_transaction_rolls_back(make_document):
    doc = make_document()
    pk, path = doc.pk, stored(doc)
    with pytest.raises(RuntimeError), transaction.atomic():
        document_delete(document=doc)
        raise RuntimeError("the surrounding work failed")
    assert path.exists() and Document.objects.filter(pk=pk).exists()


def test_only_the_owner_or_staff_who_may_delete_documents_may_delete(
    client, make_document, other_user, viewer, staff_user
):
    doc = make_document()
    url = reverse("documents:delete", args=[doc.pk])
    client.force_login(other_user)
    assert client.post(url).status_code == 404
    # View-only staff, and an operator: steering the queue is not the right to
    # destroy people's files (the admin asks for the delete permission too).
    for refused_to in (viewer, staff_user):
        client.force_login(refused_to)
        refused = client.post(url)
        assert refused.status_code == 403
        # The reason, on a page of the site: not a bare "403 Forbidden".
        assert "staff allowed to delete documents" in refused.content.decode()
    assert Document.objects.filter(pk=doc.pk).exists()
    client.force_login(may_delete_documents(staff_user))
    assert client.post(url).status_code == 302
    assert not Document.objects.filter(pk=doc.pk).exists()


def test_the_detail_page_offers_delete_and_edit_to_whom_may(
    client, user, make_document, viewer, staff_user
):
    doc = make_document()
    delete, edit = f"/documents/{doc.pk}/delete/", f"/documents/{doc.pk}/edit/"
    client.force_login(user)
    body = client.get(doc.get_absolute_url()).content.decode()
    assert delete in body and edit in body
    client.force_login(staff_user)  # an operator may neither delete nor label
    body = client.get(doc.get_absolute_url()).content.decode()
    assert delete not in body and edit not in body
    client.force_login(may_delete_documents(staff_user))
    body = client.get(doc.get_absolute_url()).content.decode()
    assert delete in body and edit not in body
    client.force_login(viewer)
    body = client.get(doc.get_absolute_url()).content.decode()
    assert delete not in body and edit not in body


# --- bulk actions ---------------------------------------------------------------------


def test_bulk_reprocess_queues_each_selected_document_once(user_client, make_document):
    docs = [make_document(name=f"{i}.txt") for i in range(3)]
    QueueManager().enqueue(docs[0].pk)  # its first extraction is still waiting
    ids = [d.pk for d in docs]
    response = user_client.post(
        reverse("documents:bulk"),
        {"action": "reprocess", "id": ids, "next": "?status=pending"},
    )
    assert response["Location"] == "/documents/?status=pending"
    reprocessed = QueueItem.objects.filter(operation="reprocess")
    assert sorted(reprocessed.values_list("document", flat=True)) == ids[1:]
    shown = [str(m) for m in user_client.get("/documents/").context["messages"]]
    assert shown[-1] == (
        "2 documents were queued for reprocessing. Skipped, as it is already "
        "waiting to be processed or being processed: “0.txt”."
    )
    user_client.post(reverse("documents:bulk"), {"action": "reprocess", "id": ids})
    shown = [str(m) for m in user_client.get("/documents/").context["messages"]]
    assert shown[-1] == (
        "0 documents were queued for reprocessing. Skipped, as they are already "
        "waiting to be processed or being processed: “0.txt”, “1.txt”, “2.txt”."
    )
    assert QueueItem.objects.count() == 3


def test_bulk_goes_back_to_the_list_whatever_next_holds(user_client, make_document):
    # A line end would make the redirect's Location header invalid: a server error.
    doc = make_document(name="a.txt")
    response = user_client.post(
        reverse("documents:bulk"),
        {"action": "reprocess", "id": [doc.pk], "next": "?page=2\r\nX-Injected: 1"},
    )
    assert (response.status_code, response["Location"]) == (302, "/documents/")


def test_bulk_delete_confirms_then_deletes_only_the_persons_own(
    client, user, other_user, make_document, django_capture_on_commit_callbacks
):
    mine = [make_document(name=f"mine-{i}.txt") for i in range(2)]
    theirs = make_document(name="theirs.txt", owner=other_user)
    ids = [d.pk for d in [*mine, theirs]]
    client.force_login(user)
    page = client.post(reverse("documents:bulk"), {"action": "delete", "id": ids})
    assert page.status_code == 200
    body = page.content.decode()
    assert "Delete 2 documents?" in body and "theirs.txt" not in body
    assert "<title>Delete 2 documents? · Documents</title>" in body
    assert Document.objects.count() == 3
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("documents:bulk"), {"action": "delete", "id": ids, "confirm": "yes"}
        )
    assert list(Document.objects.values_list("original_filename", flat=True)) == [
        "theirs.txt"
    ]
    assert not any(stored(d).exists() for d in mine)


def test_an_operator_bulk_deletes_only_their_own_documents(
    client, staff_user, other_user, make_document
):
    mine, theirs = make_document(owner=staff_user), make_document(owner=other_user)
    client.force_login(staff_user)
    response = client.post(
        reverse("documents:bulk"),
        {"action": "delete", "id": [mine.pk, theirs.pk], "confirm": "yes"},
        follow=True,
    )
    body = response.content.decode()
    assert "1 selected document was left alone" in body
    assert "staff allowed to delete documents may delete it." in body
    assert list(Document.objects.values_list("pk", flat=True)) == [theirs.pk]


@pytest.mark.parametrize("action", ["delete", "reprocess"])
def test_bulk_on_documents_one_may_not_change_says_why(
    client, user, other_user, make_document, viewer, action
):
    """No "Delete 0 documents?" page, no silent "0 queued"."""
    mine, theirs = make_document(), make_document(owner=other_user)
    client.force_login(viewer)
    response = client.post(
        reverse("documents:bulk"),
        {"action": action, "id": [mine.pk, theirs.pk]},
        follow=True,
    )
    body = response.content.decode()
    who = "a queue operator" if action == "reprocess" else "staff allowed to delete"
    assert "Nothing was done: only a document" in body
    assert f"owner or {who}" in body and f"may {action} it." in body
    client.force_login(user)
    response = client.post(
        reverse("documents:bulk"),
        {"action": action, "id": [mine.pk, theirs.pk], "confirm": "yes"},
        follow=True,
    )
    # Another person's document, which this one may not see, is not found: its
    # id must not tell that it exists.
    assert "1 selected document was not found" in response.content.decode()
    assert Document.objects.filter(pk=theirs.pk).exists()
    assert not QueueItem.objects.filter(document=theirs).exists()


@pytest.mark.parametrize(
    "data",
    [{"action": "delete"}, {"action": "explode", "id": ["1"]}, {"id": ["1"]}],
)
def test_bulk_without_a_selection_or_action_says_so(user_client, data):
    response = user_client.post(reverse("documents:bulk"), data, follow=True)
    assert "Select one or more documents" in response.content.decode()


def test_bulk_is_bounded_and_post_only(user_client):
    ids = [str(i) for i in range(1, MAX_BULK + 2)]
    response = user_client.post(
        reverse("documents:bulk"), {"action": "reprocess", "id": ids}, follow=True
    )
    assert f"At most {MAX_BULK} documents" in response.content.decode()
    assert user_client.get(reverse("documents:bulk")).status_code == 405


def test_zip_download_streams_the_persons_own_files(
    client, staff_user, user, make_document
):  # staff_user: an operator, who sees everyone's documents
    a = make_document(b"first", name="same.txt", owner=staff_user)
    b = make_document(b"second", name="same.txt", owner=staff_user)
    other = make_document(b"not yours", name="other.txt", owner=user)
    client.force_login(staff_user)  # staff see everyone's, but download only theirs
    response = client.post(
        reverse("documents:bulk"),
        {"action": "download", "id": [a.pk, b.pk, other.pk]},
    )
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"].startswith(
        'attachment; filename="documents-'
    )
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert archive.testzip() is None
    contents = {n: archive.read(n) for n in archive.namelist()}
    assert contents == {"same.txt": b"first", "same (2).txt": b"second"}
    # Dated when uploaded, to the ZIP format's two seconds, not 1980-01-01.
    uploaded = timezone.localtime(a.created_at).replace(microsecond=0)
    dated = datetime(*archive.getinfo("same.txt").date_time, tzinfo=uploaded.tzinfo)
    assert timedelta(0) <= uploaded - dated < timedelta(seconds=2)
    assert archive.getinfo("same.txt").compress_type == zipfile.ZIP_DEFLATED


def test_zip_download_names_files_that_are_gone(user_client, make_document):
    kept = make_document(b"kept", name="kept.txt")
    gone = make_document(b"gone", name="gone.txt")
    stored(gone).unlink()
    response = user_client.post(
        reverse("documents:bulk"), {"action": "download", "id": [kept.pk, gone.pk]}
    )
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert sorted(archive.namelist()) == ["MISSING.txt", "kept.txt"]
    assert "gone.txt" in archive.read("MISSING.txt").decode()


def test_zip_download_refuses_more_than_the_size_bound(
    user_client, make_document, monkeypatch
):
    monkeypatch.setattr("documents.manage_views.ZIP_MAX_BYTES", 5)
    doc = make_document(b"more than five bytes")
    response = user_client.post(
        reverse("documents:bulk"), {"action": "download", "id": [doc.pk]}, follow=True
    )
    assert "a download holds at most" in response.content.decode()


def test_zip_download_of_only_someone_elses_documents_says_so(
    client, other_user, staff_user, make_document
):
    doc = make_document()
    client.force_login(staff_user)  # sees it, yet downloads only their own
    response = client.post(
        reverse("documents:bulk"), {"action": "download", "id": [doc.pk]}, follow=True
    )
    assert "Only your own documents can be downloaded." in response.content.decode()
    assert response.get("Content-Type", "").startswith("text/html")
    client.force_login(other_user)  # for whom it is not there at all
    response = client.post(
        reverse("documents:bulk"), {"action": "download", "id": [doc.pk]}, follow=True
    )
    assert "1 selected document was not found" in response.content.decode()


def test_the_list_has_a_selection_form(user_client, make_document):
    doc = make_document()
    body = user_client.get(reverse("documents:list")).content.decode()
    assert 'action="/documents/bulk/"' in body
    assert f'name="id" value="{doc.pk}"' in body
    for action in ("reprocess", "download", "delete"):
        assert f'name="action" value="{action}"' in body


# --- filters -------------------------------------------------------------------------


def test_list_filters_by_type_date_tag_and_name(user_client, user, make_document):
    pdf = make_document(name="report.pdf", mime_type="application/pdf")
    docx = make_document(name="letter.docx", mime_type=DOCX)
    old = make_document(name="old.txt")
    Document.objects.filter(pk=old.pk).update(
        created_at=timezone.now() - timedelta(days=40)
    )
    tag = Tag.objects.create(owner=user, name="Taxes")
    docx.tags.add(tag)
    Document.objects.filter(pk=pdf.pk).update(title="Annual figures")
    url = reverse("documents:list")

    response = user_client.get(url, {"type": "application/pdf"})
    assert names(response) == ["report.pdf"]
    # Named as the API names it: its key, or an extension.
    for named in ("pdf", "PDF", ".pdf"):
        assert names(user_client.get(url, {"type": named})) == ["report.pdf"]
    assert names(user_client.get(url, {"type": "docx"})) == ["letter.docx"]
    since = (timezone.localdate() - timedelta(days=7)).isoformat()
    assert set(names(user_client.get(url, {"since": since}))) == {
        "report.pdf",
        "letter.docx",
    }
    until = (timezone.localdate() - timedelta(days=30)).isoformat()
    assert names(user_client.get(url, {"until": until})) == ["old.txt"]
    assert names(user_client.get(url, {"tag": "taxes"})) == ["letter.docx"]
    assert names(user_client.get(url, {"q": "annual"})) == ["report.pdf"]
    assert names(user_client.get(url, {"q": "LETTER"})) == ["letter.docx"]
    # Filters combine; a value that does not parse is ignored, never an error.
    assert names(user_client.get(url, {"type": DOCX, "tag": "Taxes"})) == [
        "letter.docx"
    ]
    assert len(names(user_client.get(url, {"since": "yesterday-ish"}))) == 3
    empty = user_client.get(url, {"type": "application/pdf", "tag": "Taxes"})
    assert "No documents match these filters" in empty.content.decode()


def test_status_counts_follow_the_other_filters(user_client, make_document):
    make_document(name="a.pdf", mime_type="application/pdf")
    done = make_document(name="b.txt")
    Document.objects.filter(pk=done.pk).update(status=Status.COMPLETED)
    response = user_client.get(reverse("documents:list"), {"type": "text/plain"})
    counts = {s: n for s, _label, n in response.context["statuses"]}
    assert counts["completed"] == 1 and counts["pending"] == 0


def test_people_see_format_names_not_mime_strings(user_client, make_document):
    doc = make_document(name="letter.docx", mime_type=DOCX)
    for url in (reverse("documents:list"), doc.get_absolute_url()):
        body = user_client.get(url).content.decode()
        assert "Word (DOCX)" in body
        assert "application/vnd" not in body.replace(f'value="{DOCX}"', "")


# --- title and tags -------------------------------------------------------------------


def test_owner_sets_a_title_and_tags(user_client, user, other_user, make_document):
    doc = make_document(name="scan0001.pdf", mime_type="application/pdf")
    Tag.objects.create(owner=other_user, name="taxes")  # someone else's tag
    url = reverse("documents:edit", args=[doc.pk])
    assert user_client.get(url).status_code == 200
    response = user_client.post(
        url, {"title": "  Tax   return 2025 ", "tags": "Taxes, 2025, taxes,, home "}
    )
    assert response["Location"] == doc.get_absolute_url()
    doc.refresh_from_db()
    assert doc.title == "Tax return 2025"
    assert [t.name for t in doc.tags.all()] == ["2025", "home", "Taxes"]
    assert all(t.owner == user for t in doc.tags.all())
    body = user_client.get(doc.get_absolute_url()).content.decode()
    assert '<h1 class="break-words">Tax return 2025</h1>' in body
    assert "scan0001.pdf" in body
    listed = user_client.get(reverse("documents:list")).content.decode()
    assert "Tax return 2025" in listed and ">home</a>" in listed

    user_client.post(url, {"title": "", "tags": "home"})
    doc.refresh_from_db()
    assert str(doc) == "scan0001.pdf"
    assert list(Tag.objects.filter(owner=user).values_list("name", flat=True)) == [
        "home"
    ]


def test_tags_are_bounded(user_client, make_document):
    doc = make_document()
    url = reverse("documents:edit", args=[doc.pk])
    many = ", ".join(f"t{i}" for i in range(21))
    assert "At most 20 tags" in user_client.post(url, {"tags": many}).content.decode()
    long = "x" * 51
    assert "longer than 50" in user_client.post(url, {"tags": long}).content.decode()
    assert not doc.tags.exists()


def test_only_the_owner_edits(client, make_document, other_user, staff_user):
    doc = make_document()
    url = reverse("documents:edit", args=[doc.pk])
    for someone in (other_user, staff_user):
        client.force_login(someone)
        assert client.post(url, {"title": "mine now"}).status_code == 404
    doc.refresh_from_db()
    assert doc.title == ""


# --- words for what happened -----------------------------------------------------------


def failed(doc: Document, error_type: str, message: str) -> Document:
    Document.objects.filter(pk=doc.pk).update(
        status=Status.FAILED, error_type=error_type, error_message=message
    )
    return doc


def test_an_encrypted_pdf_is_called_encrypted_not_corrupt(user_client, make_document):
    doc = failed(
        make_document(name="locked.pdf", mime_type="application/pdf"),
        ErrorType.CORRUPTION,
        "This PDF is encrypted and needs a password; upload an unprotected copy.",
    )
    body = user_client.get(doc.get_absolute_url()).content.decode()
    assert "What went wrong: Encrypted" in body
    assert "protected by a password" in body
    assert "damaged" not in body
    status = user_client.get(reverse("documents:status", args=[doc.pk])).json()
    assert status["error_type"] == "corruption"
    assert "protected by a password" in status["error_help"]


@pytest.mark.parametrize(
    ("error_type", "offered"),
    [
        (ErrorType.TIMEOUT, True),
        (ErrorType.UNKNOWN, True),
        (ErrorType.EXTRACTOR_MISSING, True),
        (ErrorType.CORRUPTION, False),
        (ErrorType.UNSUPPORTED, False),
    ],
)
def test_try_again_is_offered_only_where_it_can_succeed(
    user_client, make_document, error_type, offered
):
    doc = failed(make_document(), error_type, "it went wrong")
    body = user_client.get(doc.get_absolute_url()).content.decode()
    assert ("Reprocess the document to try again" in body) is offered
    assert ("would fail the same way" in body) is not offered


def test_a_completed_document_without_text_does_not_tell_people_to_run_ocr(
    user_client, make_document
):
    doc = make_document()
    Document.objects.filter(pk=doc.pk).update(status=Status.COMPLETED)
    body = user_client.get(doc.get_absolute_url()).content.decode()
    assert "No text was found in this file." in body
    assert "OCR" not in body


def test_people_are_told_when_processing_is_paused(user_client, make_document):
    doc = make_document()
    pages = [
        reverse("documents:list"),
        reverse("documents:upload"),
        doc.get_absolute_url(),
    ]
    for url in pages:
        assert b"paused by an operator" not in user_client.get(url).content
    QueueControl.set_paused(True, by="op")
    for url in pages:
        assert b"Processing is paused by an operator" in user_client.get(url).content


def test_deleting_in_the_admin_removes_the_file_too(
    admin_client, make_document, django_capture_on_commit_callbacks
):
    one, two = make_document(name="one.txt"), make_document(name="two.txt")
    paths = [stored(one), stored(two)]
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(
            reverse("admin:documents_document_delete", args=[one.pk]), {"post": "yes"}
        )
        admin_client.post(
            reverse("admin:documents_document_changelist"),
            {"action": "delete_selected", "_selected_action": [two.pk], "post": "yes"},
        )
    assert not Document.objects.exists()
    assert not any(path.exists() for path in paths)


def test_search_finds_a_document_by_its_title_as_a_name_match(user):
    from documents.search import search_documents
    from documents.services import document_update_details

    plain = Document.objects.create(
        owner=user,
        original_filename="notes.txt",
        file="documents/notes.txt",
        mime_type="text/plain",
        size=1,
        sha256="0" * 64,
        status=Status.COMPLETED,
        text="The lighthouse keeper wrote about the lighthouse, the lighthouse.",
    )
    scan = Document.objects.create(
        owner=user,
        original_filename="scan0001.pdf",
        file="documents/scan0001.pdf",
        mime_type="application/pdf",
        size=1,
        sha256="1" * 64,
        status=Status.COMPLETED,
        text="Unrelated words.",
    )
    assert [h.document.pk for h in search_documents(user, "lighthouse")] == [plain.pk]
    document_update_details(document=scan, title="Lighthouse repairs", tag_names=[])
    # A title is a name: its match ranks above a text match, as a file name's does.
    hits = search_documents(user, "lighthouse")
    assert [h.document.pk for h in hits] == [scan.pk, plain.pk]
    document_update_details(document=scan, title="", tag_names=[])
    assert [h.document.pk for h in search_documents(user, "lighthouse")] == [plain.pk]


@pytest.mark.parametrize(
    ("sent", "back"), [("?", ""), ("?status=failed", "?status=failed"), ("", "")]
)
def test_a_bulk_action_goes_back_to_the_list_as_it_was(user_client, sent, back):
    response = user_client.post(reverse("documents:bulk"), {"next": sent})
    assert response.status_code == 302
    assert response["Location"] == reverse("documents:list") + back
