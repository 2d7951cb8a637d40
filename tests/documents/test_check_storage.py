"""check_storage: files without a document are removed (old enough ones), and so are
the pages of documents that are gone, with their folder; documents without a file are
reported and make the command fail."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import InMemoryStorage
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.documents.remote_storage import RemoteStorage

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("check_storage", *args, stdout=out)
    return out.getvalue()


def test_orphan_files_are_removed_but_recent_and_referenced_ones_spared(
    make_document, media_root
):
    two_hours_ago = time.time() - 7200
    referenced = Path(make_document().file.path)
    folder = media_root / "documents"
    old, young = folder / "old.txt", folder / "young.txt"
    old.write_bytes(b"left by an upload killed before its commit")
    young.write_bytes(b"an upload that may still be committing")
    for path in (referenced, old):
        os.utime(path, (two_hours_ago, two_hours_ago))
    assert run("--dry-run") == (
        "Would remove documents/old.txt\n"
        "Would remove 1 orphan files (42 bytes) (dry run).\n"
        "Every document has its stored file.\n"
    )
    assert old.exists()
    assert run() == (
        "Removed documents/old.txt\n"
        "Removed 1 orphan files (42 bytes).\n"
        "Every document has its stored file.\n"
    )
    assert not old.exists()
    assert young.exists() and referenced.exists()
    assert run("--older-than", "0").startswith("Removed documents/young.txt\n")
    assert referenced.exists()


def test_a_document_whose_file_is_missing_is_reported_and_fails_the_command(
    make_document, media_root
):
    kept = make_document(name="kept.txt")
    lost = make_document(name="lost.txt")
    Path(lost.file.path).unlink()
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 document without a stored file"):
        call_command("check_storage", stdout=out)
    assert f"Missing file of document {lost.pk} “lost.txt”: {lost.file.name}" in (
        out.getvalue()
    )
    assert str(kept.pk) not in out.getvalue().replace(lost.file.name, "")
    # Reported, never changed: the operator restores the file or deletes the row.
    lost.refresh_from_db()
    assert lost.file.name and Path(kept.file.path).exists()


def test_bad_arguments_are_refused():
    with pytest.raises(CommandError, match="use 0 or more"):
        run("--older-than", "-1")


def test_pages_of_documents_that_are_gone_are_removed_with_their_folder(
    make_document, media_root
):
    two_hours_ago = time.time() - 7200
    kept = make_document()
    pages = media_root / "pages"
    own, gone, emptied = pages / str(kept.pk), pages / "998", pages / "999"
    for folder in (own, gone, emptied):
        folder.mkdir(parents=True)
    for path in (own / "thumbnail.png", gone / "a-1-1000.png", gone / "thumbnail.png"):
        path.write_bytes(b"\x89PNG page")
        os.utime(path, (two_hours_ago, two_hours_ago))
    os.utime(make_document().file.path, (two_hours_ago, two_hours_ago))
    (pages / "stray.png").write_bytes(b"\x89PNG")  # young: spared
    report = (
        "{verb} pages/998/a-1-1000.png\n"
        "{verb} pages/998/thumbnail.png\n"
        "{verb} pages/998/\n"
        "{verb} pages/999/\n"
        "{verb} 2 orphan files (18 bytes) and 2 page folders{dry}.\n"
        "Every document has its stored file.\n"
    )
    assert run("--dry-run") == report.format(verb="Would remove", dry=" (dry run)")
    assert gone.is_dir() and emptied.is_dir()
    assert run() == report.format(verb="Removed", dry="")
    assert not gone.exists() and not emptied.exists()
    assert (own / "thumbnail.png").exists() and (pages / "stray.png").exists()
    assert run() == (
        "Removed 0 orphan files (0 bytes).\nEvery document has its stored file.\n"
    )


def test_a_gone_documents_folder_stays_while_a_page_in_it_is_young(media_root):
    folder = media_root / "pages" / "998"
    folder.mkdir(parents=True)
    (folder / "old.png").write_bytes(b"\x89PNG")
    (folder / "young.png").write_bytes(b"\x89PNG")
    two_hours_ago = time.time() - 7200
    os.utime(folder / "old.png", (two_hours_ago, two_hours_ago))
    assert run().startswith(
        "Removed pages/998/old.png\nRemoved 1 orphan files (4 bytes).\n"
    )
    assert sorted(path.name for path in folder.iterdir()) == ["young.png"]
    assert run("--older-than", "0").startswith(
        "Removed pages/998/young.png\nRemoved pages/998/\n"
        "Removed 1 orphan files (4 bytes) and 1 page folder.\n"
    )
    assert not folder.exists()


@pytest.mark.parametrize("backend", [RemoteStorage, InMemoryStorage])
def test_pages_of_gone_documents_go_on_other_storages(backend, settings, make_document):
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": f"{backend.__module__}.{backend.__qualname__}",
            "OPTIONS": {"location": settings.MEDIA_ROOT},
        },
    }
    document = make_document()
    storage = document.file.storage
    assert isinstance(storage, backend)
    for name in (f"pages/{document.pk}/thumbnail.png", "pages/998/thumbnail.png"):
        storage.save(name, ContentFile(b"\x89PNG"))
    out = run("--older-than", "0")
    assert "Removed pages/998/thumbnail.png\n" in out
    assert storage.exists(f"pages/{document.pk}/thumbnail.png")
    assert not storage.exists("pages/998/thumbnail.png")
    # A folder is removed only where one stays behind its files (a file system).
    removed = backend is RemoteStorage
    assert ("Removed pages/998/\n" in out) == removed
    assert ("998" in storage.listdir("pages")[0]) == (not removed)
