"""Files on a storage with no local paths (S3 and the like, shared by many worker
hosts): the processes that read them get a copy, removed once read. A stored file
gone missing, on either kind of storage, is said so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.core.files.storage import storages

from documents import local_files
from documents.local_files import MISSING
from jobqueue.models import ErrorType, QueueItem, Status
from jobqueue.services import QueueManager
from jobqueue.worker import process_document_queue
from tests.conftest import REPO_ROOT
from tests.documents.remote_storage import RemoteStorage
from tests.files import pdf_bytes


def drain_on_remote_storage(child_env: dict[str, str], **env: str) -> None:
    """``process_queue --once`` in a process of its own, on a storage with no local
    paths (tests/documents/remote_storage)."""
    done = subprocess.run(
        [sys.executable, "manage.py", "process_queue", "--once"],
        cwd=REPO_ROOT,
        env={
            **child_env,
            "DJANGO_SETTINGS_MODULE": "tests.documents.remote_storage",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture
def copies(tmp_path, monkeypatch):
    monkeypatch.setattr(local_files, "COPIES", tmp_path / "copies")
    return tmp_path / "copies"


@pytest.mark.django_db
def test_a_file_without_a_local_path_is_read_from_a_copy(make_document, copies):
    document = make_document(b"stored words\n", name="a.txt")
    document.file.storage = RemoteStorage(location=document.file.storage.location)
    path, copy = local_files.local_path(document.file)
    assert copy and path.startswith(str(copies)) and path.endswith(".txt")
    assert Path(path).read_bytes() == b"stored words\n"
    local_files.remove_copy(path)
    assert not list(copies.iterdir())
    # A file system's own path is used as it is.
    document.file.storage = storages["default"]
    assert local_files.local_path(document.file) == (document.file.path, False)


@pytest.mark.django_db(transaction=True)
def test_a_worker_extracts_from_a_storage_with_no_local_paths(
    make_document, child_env, tmp_path
):
    text = make_document(b"words from the bucket\n", name="a.txt")
    pdf = make_document(pdf_bytes("a page from the bucket"), "b.pdf", "application/pdf")
    for document in (text, pdf):
        QueueManager().enqueue(document.pk)
    drain_on_remote_storage(child_env, TMPDIR=str(tmp_path))
    # Each job read a copy (its extraction's, its thumbnail's), and removed it.
    assert (tmp_path / "docqueue-copies").is_dir()
    assert not list((tmp_path / "docqueue-copies").iterdir())
    for document, words in ((text, "words from the bucket"), (pdf, "from the bucket")):
        document.refresh_from_db()
        assert document.status == Status.COMPLETED, document.error_message
        assert words in document.text


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("storage", ["file system", "no local paths"])
def test_a_stored_file_gone_missing_is_said_so(make_document, child_env, storage):
    """Not "FileNotFoundError: … 'the file'": what is missing, and what to do. It
    is retried all the same (a share's mount may be back)."""
    document = make_document(b"words\n", name="gone.txt")
    Path(document.file.path).unlink()
    job = QueueManager().enqueue(document.pk)
    if storage == "file system":  # the extraction's child finds it missing
        process_document_queue(limit=1)
    else:  # the worker, copying it for the child
        drain_on_remote_storage(child_env)
    item = QueueItem.objects.get(pk=job)
    assert (item.status, item.error_type) == (Status.RETRY_PENDING, ErrorType.UNKNOWN)
    assert item.error_message == MISSING
