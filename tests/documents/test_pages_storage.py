"""A document's rendered pages and thumbnail (``pages/<id>/``) go with it, folder and
all, whichever way it is deleted; on a storage whose folders are only the start of
names, its files go and nothing else is touched."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage, InMemoryStorage
from django.urls import reverse

from documents.models import Document
from documents.pages import (
    cache_folder,
    forget_pages,
    remove_empty_folder,
    store_thumbnail,
)
from documents.services import document_delete, document_delete_many
from tests.documents.remote_storage import RemoteStorage

pytestmark = pytest.mark.django_db


def with_pages(document: Document) -> Path:
    """Give the document a thumbnail and a drawn page; the folder they are in."""
    store_thumbnail(document, b"\x89PNG thumbnail")
    name = f"{cache_folder(document)}/{document.sha256[:16]}-1-1000.png"
    document.file.storage.save(name, ContentFile(b"\x89PNG page"))
    folder = Path(document.file.storage.path(cache_folder(document)))
    assert len(list(folder.iterdir())) == 2
    return folder


def delete_page(client, document):
    return client.post(reverse("documents:delete", args=[document.pk]))


def bulk_delete(client, document):
    return client.post(
        reverse("documents:bulk"),
        {"action": "delete", "id": [document.pk], "confirm": "yes"},
    )


def api_delete(client, document):
    return client.delete(f"/api/documents/{document.pk}/")


def admin_delete(client, document):
    url = reverse("admin:documents_document_delete", args=[document.pk])
    return client.post(url, {"post": "yes"})


def admin_delete_selected(client, document):
    return client.post(
        reverse("admin:documents_document_changelist"),
        {"action": "delete_selected", "_selected_action": [document.pk], "post": "yes"},
    )


@pytest.mark.parametrize(
    ("delete", "as_admin"),
    [
        (delete_page, False),
        (bulk_delete, False),
        (api_delete, False),
        (admin_delete, True),
        (admin_delete_selected, True),
    ],
)
def test_every_delete_removes_the_pages_folder(
    delete,
    as_admin,
    user_client,
    admin_client,
    make_document,
    media_root,
    django_capture_on_commit_callbacks,
):
    document, neighbour = make_document(name="gone.txt"), make_document(name="kept.txt")
    folder, kept = with_pages(document), with_pages(neighbour)
    with django_capture_on_commit_callbacks(execute=True):
        response = delete(admin_client if as_admin else user_client, document)
    assert response.status_code in (204, 302), response.content
    assert not Document.objects.filter(pk=document.pk).exists()
    assert not folder.exists()
    assert (media_root / "pages").is_dir()  # every document's: not removed
    assert len(list(kept.iterdir())) == 2


def test_deleting_a_person_removes_their_files_and_pages(
    admin_client, user, other_user, make_document, django_capture_on_commit_callbacks
):
    theirs, kept = make_document(), make_document(owner=other_user)
    folder, stored = with_pages(theirs), Path(theirs.file.path)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:auth_user_delete", args=[user.pk]), {"post": "yes"}
        )
    assert response.status_code == 302
    assert list(Document.objects.all()) == [kept]
    assert not folder.exists() and not stored.exists()
    assert Path(kept.file.path).exists()


def test_the_pages_folder_goes_on_a_storage_without_local_paths(
    make_document, media_root, django_capture_on_commit_callbacks
):
    document = make_document()
    folder = with_pages(document)
    document.file.storage = RemoteStorage(location=media_root)
    with pytest.raises(NotImplementedError):
        document.file.path  # noqa: B018 - the storage has no paths for us
    with django_capture_on_commit_callbacks(execute=True):
        document_delete(document=document)
    assert not folder.exists()
    assert not Path(media_root, document.file.name).exists()


def test_a_storage_whose_folders_are_names_keeps_what_it_holds():
    storage = InMemoryStorage()
    document = Document(pk=7, sha256="0" * 64)
    document.file.storage = storage
    store_thumbnail(document, b"\x89PNG thumbnail")
    forget_pages(document)
    assert storage.listdir("pages/7") == ([], [])
    # There, deleting a folder's name deletes what is in it: only a file system's
    # folder is removed, and only when it is empty.
    storage.save("pages/7/late.png", ContentFile(b"\x89PNG"))
    assert not remove_empty_folder(storage, "pages/7")
    assert storage.exists("pages/7/late.png")


def test_a_folder_with_a_page_drawn_meanwhile_stays(make_document):
    document = make_document()
    folder = with_pages(document)
    assert not remove_empty_folder(document.file.storage, cache_folder(document))
    assert len(list(folder.iterdir())) == 2
    forget_pages(document)
    assert not folder.exists()


def test_pages_that_cannot_be_removed_keep_no_other_file_from_going(
    make_document, monkeypatch, caplog, django_capture_on_commit_callbacks
):
    first, second = make_document(name="a.txt"), make_document(name="b.txt")
    with_pages(first)
    folder = with_pages(second)
    storage = first.file.storage
    delete = FileSystemStorage.delete

    def refuse_the_first_pages(self, name: str) -> None:
        if name.startswith(f"{cache_folder(first)}/"):
            raise PermissionError(13, "Permission denied", name)
        delete(self, name)

    monkeypatch.setattr(FileSystemStorage, "delete", refuse_the_first_pages)
    with django_capture_on_commit_callbacks(execute=True):
        document_delete_many(documents=[first, second])
    assert not Document.objects.exists()
    assert not storage.exists(first.file.name) and not storage.exists(second.file.name)
    assert not folder.exists()
    assert f"Could not remove the pages of document {first.pk}" in caplog.text


def test_a_file_that_cannot_be_removed_after_a_delete_is_logged_as_such(
    make_document, monkeypatch, caplog, django_capture_on_commit_callbacks
):
    """The log named every such file one left "after a failed upload", which sent
    whoever read it looking for an upload that never failed."""
    document = make_document()
    name = document.file.name
    delete = FileSystemStorage.delete

    def refuse_the_file(self, stored: str) -> None:
        if stored == name:
            raise PermissionError(13, "Permission denied", stored)
        delete(self, stored)

    monkeypatch.setattr(FileSystemStorage, "delete", refuse_the_file)
    with django_capture_on_commit_callbacks(execute=True):
        document_delete(document=document)
    assert not Document.objects.exists()
    assert f"Could not remove the stored file {name}" in caplog.text
    assert "failed upload" not in caplog.text
