"""One owner's documents edited and deleted at once, by real threads on their own
connections: on PostgreSQL a request dropped a tag that another was linking (a
foreign-key error, a 500), and an edit beside a delete deadlocked; an edit or a
reprocess of a document deleted meanwhile failed as a server error. And a
duplicate's refusal dates the first upload in the site's time zone."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.utils import timezone

from documents import manage_views, views
from documents.models import Document, Tag
from documents.services import (
    DuplicateUpload,
    document_create,
    document_delete,
    document_reprocess,
    document_update_details,
)
from documents.uploads import check_upload

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 6


def _at_once(*calls) -> list[BaseException]:
    """Run ``calls`` in threads released together; the errors they raised."""
    barrier = threading.Barrier(len(calls))
    errors: list[BaseException] = []

    def run(call) -> None:
        try:
            barrier.wait()
            call()
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return errors


def _edit(document: Document, *tags: str):
    fresh = Document.objects.get(pk=document.pk)
    return lambda: document_update_details(
        document=fresh, title=fresh.title, tag_names=list(tags)
    )


def test_a_tag_moved_between_the_owners_documents_at_once(make_document):
    """Each round one document gives up its tag as the other takes it: the first
    edit's look for unused tags found the tag before the second's link was
    committed, and dropped it under it."""
    first, second = (make_document(content=n, name="d.txt") for n in (b"1", b"2"))
    for round_ in range(ROUNDS * 3):
        document_update_details(document=first, title="", tag_names=[f"t{round_}"])
        document_update_details(document=second, title="", tag_names=[])
        errors = _at_once(
            _edit(first, f"u{round_}"),
            _edit(second, f"t{round_}"),
        )
        assert errors == []
        assert list(first.tags.values_list("name", flat=True)) == [f"u{round_}"]
        assert list(second.tags.values_list("name", flat=True)) == [f"t{round_}"]
        assert not Tag.objects.filter(documents=None).exists()


def test_an_edit_beside_a_delete_of_the_owners_documents(make_document):
    for round_ in range(ROUNDS):
        kept = make_document(content=f"kept {round_}".encode(), name="kept.txt")
        gone = make_document(content=f"gone {round_}".encode(), name="gone.txt")
        document_update_details(document=gone, title="", tag_names=[f"old-{round_}"])
        edit_kept = _edit(kept, f"old-{round_}", f"new-{round_}")
        edit_gone = _edit(gone, f"late-{round_}")
        errors = _at_once(
            edit_kept, lambda gone=gone: document_delete(document=gone), edit_gone
        )
        # The edit of the deleted document may come first (and be deleted with it)
        # or after (and hear that it is gone): nothing else may fail.
        assert all(isinstance(e, Document.DoesNotExist) for e in errors), errors
        assert not Document.objects.filter(pk=gone.pk).exists()
        assert set(kept.tags.values_list("name", flat=True)) == {
            f"old-{round_}",
            f"new-{round_}",
        }
        assert not Tag.objects.filter(documents=None).exists()


def test_a_deleted_document_is_not_there_to_change(make_document):
    document = make_document()
    stale = Document.objects.get(pk=document.pk)
    document_delete(document=document)
    with pytest.raises(Document.DoesNotExist):
        document_update_details(document=stale, title="A title", tag_names=["x"])
    with pytest.raises(Document.DoesNotExist):
        document_reprocess(document=stale)
    assert not Tag.objects.exists()


def _deleted_first(monkeypatch, module, name: str) -> None:
    """``module.<name>`` runs just after another request deleted the document."""
    original = getattr(module, name)

    def racing(*, document: Document, **kwargs):
        document_delete(document=Document.objects.get(pk=document.pk))
        return original(document=document, **kwargs)

    monkeypatch.setattr(module, name, racing)


def test_the_pages_changing_a_document_deleted_meanwhile_say_404(
    user_client, make_document, monkeypatch
):
    """It was a 500 on the document's page (reprocess) and its edit page."""
    document = make_document()
    _deleted_first(monkeypatch, views, "document_reprocess")
    response = user_client.post(f"/documents/{document.pk}/reprocess/")
    assert response.status_code == 404

    document = make_document(content=b"another")
    _deleted_first(monkeypatch, manage_views, "document_update_details")
    response = user_client.post(
        f"/documents/{document.pk}/edit/", {"title": "Q3", "tags": "x"}
    )
    assert response.status_code == 404
    assert not Document.objects.exists()


def test_a_bulk_reprocess_counts_only_what_it_queued(
    user_client, make_document, monkeypatch
):
    kept, gone = make_document(), make_document(content=b"gone")
    original = manage_views.document_reprocess

    def racing(*, document: Document, **kwargs):
        if document.pk == gone.pk:
            document_delete(document=Document.objects.get(pk=gone.pk))
        return original(document=document, **kwargs)

    monkeypatch.setattr(manage_views, "document_reprocess", racing)
    response = user_client.post(
        "/documents/bulk/",
        {"action": "reprocess", "id": [kept.pk, gone.pk]},
        follow=True,
    )
    assert response.status_code == 200
    said = [str(m) for m in response.context["messages"]]
    assert said == ["1 document was queued for reprocessing."], said


def test_a_duplicate_is_dated_in_the_sites_time_zone(user, settings):
    """The refusal named the day in UTC: a document shown as uploaded on the 28th
    at 00:30 in Paris was "on 2026-11-27"."""
    # A zone whose date is not UTC's now: UTC+14 from 10:00 UTC, UTC-12 before 12:00.
    hour = datetime.now(UTC).hour
    settings.TIME_ZONE = "Pacific/Kiritimati" if hour >= 11 else "Etc/GMT+12"
    first = document_create(
        owner=user, upload=check_upload(SimpleUploadedFile("a.txt", b"same words"))
    )
    assert timezone.localtime(first.created_at).date() != first.created_at.date()
    with pytest.raises(DuplicateUpload) as refused:
        document_create(
            owner=user, upload=check_upload(SimpleUploadedFile("b.txt", b"same words"))
        )
    day = timezone.localtime(first.created_at).date().isoformat()
    assert f"on {day}:" in str(refused.value)
