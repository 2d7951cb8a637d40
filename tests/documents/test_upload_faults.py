"""Uploads leave no debris: a full disk, a database error or a duplicate refuses the file
with its reason, and the file, its row and its job exist together or not at all."""

from __future__ import annotations

import errno
import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.files.storage import FileSystemStorage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from documents.models import Document
from jobqueue.models import QueueItem, Status

pytestmark = pytest.mark.django_db

UPLOAD_URL = "/documents/upload/"
API_URL = "/api/documents/"


class DiskFullStorage(FileSystemStorage):
    """Writes the first chunk of the ``fail_on``-th file saved, then runs out of space,
    as a disk does: a partial file stays on disk and the write raises ENOSPC."""

    fail_on = 1
    saves = 0

    def _save(self, name, content):
        type(self).saves += 1
        if type(self).saves == self.fail_on:
            content = _ChunksThenFull(content)
        return super()._save(name, content)


class _ChunksThenFull:
    def __init__(self, content) -> None:
        self.content = content

    def chunks(self) -> Iterator[bytes]:
        yield next(iter(self.content.chunks(chunk_size=8)))
        raise OSError(errno.ENOSPC, "No space left on device")


@pytest.fixture
def disk_full(settings):
    """The default storage fills up on the given save (the first by default)."""

    def fill_on(nth: int = 1) -> None:
        DiskFullStorage.fail_on, DiskFullStorage.saves = nth, 0
        settings.STORAGES = {
            **settings.STORAGES,
            "default": {"BACKEND": f"{__name__}.DiskFullStorage"},
        }

    return fill_on


@pytest.fixture
def database_refuses_jobs() -> Iterator[None]:
    """The database itself refuses the queue item's INSERT, after the document's."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "CREATE FUNCTION refuse_job() RETURNS trigger LANGUAGE plpgsql AS $$ "
                "BEGIN RAISE EXCEPTION 'could not extend file' USING ERRCODE = "
                "'disk_full'; END $$"
            )
            cursor.execute(
                "CREATE TRIGGER refuse_job BEFORE INSERT ON extraction_queue "
                "FOR EACH ROW EXECUTE FUNCTION refuse_job()"
            )
        else:
            cursor.execute(
                "CREATE TRIGGER refuse_job BEFORE INSERT ON extraction_queue "
                "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
            )
    yield  # the test's transaction rolls the trigger back


@pytest.fixture
def token_client(client, user):
    from documents.tokens import create_token

    client.defaults["HTTP_AUTHORIZATION"] = f"Token {create_token(user)[1]}"
    return client


def text_file(name: str, words: str = "some words\n") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, words.encode(), "text/plain")


def stored_files(media_root: Path) -> list[Path]:
    return [p for p in media_root.rglob("*") if p.is_file()]


def assert_consistent(media_root: Path) -> None:
    """Every file has its row, every row its file and its one pending job."""
    rows = {d.file.name: d for d in Document.objects.all()}
    assert {str(p.relative_to(media_root)) for p in stored_files(media_root)} == set(
        rows
    )
    for document in rows.values():
        assert document.queue_items.get().status == Status.PENDING


# --- Disk full ------------------------------------------------------------------


def test_full_disk_refuses_the_form_upload_with_a_clear_error(
    user_client, media_root, disk_full
):
    disk_full()
    response = user_client.post(UPLOAD_URL, {"file": text_file("a.txt")})
    assert response.status_code == 507
    [error] = response.context["form"].errors["file"]
    assert "“a.txt” was not kept: the server's storage is full" in error
    assert b"storage is full" in response.content
    assert stored_files(media_root) == []
    assert not Document.objects.exists() and not QueueItem.objects.exists()


def test_full_disk_answers_507_with_a_json_error_on_the_api(
    token_client, media_root, disk_full
):
    disk_full()
    response = token_client.post(API_URL, {"file": text_file("a.txt")})
    assert response.status_code == 507
    assert "storage is full" in str(response.json()["error"]["message"])
    assert stored_files(media_root) == []
    assert not Document.objects.exists() and not QueueItem.objects.exists()


def test_the_fifth_of_ten_files_on_a_full_disk_is_refused_and_the_rest_kept(
    user_client, media_root, disk_full
):
    disk_full(5)
    files = [text_file(f"n{i}.txt", f"file number {i}\n") for i in range(1, 11)]
    response = user_client.post(UPLOAD_URL, {"file": files}, follow=True)
    assert response.status_code == 200
    kept = set(Document.objects.values_list("original_filename", flat=True))
    assert kept == {f"n{i}.txt" for i in range(1, 11)} - {"n5.txt"}
    assert_consistent(media_root)
    shown = [str(m) for m in response.context["messages"]]
    assert any("“n5.txt” was not kept" in m and "storage is full" in m for m in shown)
    assert "9 files were uploaded and are pending." in shown


# --- The database fails mid-create --------------------------------------------------


def test_a_database_error_mid_create_leaves_no_file_row_or_job(
    user_client, media_root, database_refuses_jobs
):
    response = user_client.post(UPLOAD_URL, {"file": text_file("a.txt")})
    assert response.status_code == 503
    [error] = response.context["form"].errors["file"]
    assert "“a.txt” was not kept: the database did not accept it" in error
    assert "extend" not in error and "full" not in error  # no engine internals
    assert stored_files(media_root) == []
    assert not Document.objects.exists() and not QueueItem.objects.exists()


def test_a_database_error_on_the_api_answers_503_and_leaves_nothing(
    token_client, media_root, database_refuses_jobs
):
    response = token_client.post(API_URL, {"file": text_file("a.txt")})
    assert response.status_code == 503
    assert "database did not accept it" in str(response.json()["error"]["message"])
    assert stored_files(media_root) == []
    assert not Document.objects.exists() and not QueueItem.objects.exists()


# --- Duplicates --------------------------------------------------------------------


def test_a_duplicate_on_the_form_is_refused_with_a_link_to_the_first(
    user_client, media_root
):
    user_client.post(UPLOAD_URL, {"file": text_file("first.txt", "same words\n")})
    first = Document.objects.get()
    response = user_client.post(
        UPLOAD_URL, {"file": text_file("again.txt", "same words\n")}
    )
    assert response.status_code == 409
    [error] = response.context["form"].errors["file"]
    assert "“again.txt” is already uploaded, as “first.txt”" in error
    assert f'<a href="/documents/{first.pk}/">Open it</a>' in response.content.decode()
    assert Document.objects.count() == 1
    assert_consistent(media_root)


def test_a_duplicate_among_new_files_is_reported_and_the_others_kept(
    user_client, media_root
):
    user_client.post(UPLOAD_URL, {"file": text_file("first.txt", "same words\n")})
    response = user_client.post(
        UPLOAD_URL,
        {
            "file": [
                text_file("new.txt", "new words\n"),
                text_file("b.txt", "same words\n"),
            ]
        },
        follow=True,
    )
    assert response.status_code == 200
    assert Document.objects.count() == 2
    assert "“b.txt” is already uploaded" in response.content.decode()
    assert_consistent(media_root)


def test_a_duplicate_is_kept_when_asked_to(user_client, media_root):
    for _ in range(2):
        response = user_client.post(
            UPLOAD_URL,
            {"file": text_file("a.txt", "same words\n"), "allow_duplicates": "on"},
        )
        assert response.status_code == 302
    assert Document.objects.count() == 2
    assert_consistent(media_root)


def test_another_users_identical_file_is_not_a_duplicate(
    user_client, other_user, make_document
):
    make_document(content=b"same words\n", owner=other_user)
    Document.objects.update(sha256=hashlib.sha256(b"same words\n").hexdigest())
    response = user_client.post(
        UPLOAD_URL, {"file": text_file("a.txt", "same words\n")}
    )
    assert response.status_code == 302


def test_a_duplicate_on_the_api_answers_409_unless_allowed(token_client, media_root):
    first = token_client.post(API_URL, {"file": text_file("a.txt")}).json()
    response = token_client.post(API_URL, {"file": text_file("b.txt")})
    assert response.status_code == 409
    assert f"/api/documents/{first['id']}/" in str(response.json()["error"]["message"])
    response = token_client.post(
        API_URL, {"file": text_file("b.txt"), "allow_duplicates": "true"}
    )
    assert response.status_code == 202
    bad = token_client.post(
        API_URL, {"file": text_file("c.txt"), "allow_duplicates": "maybe"}
    )
    assert bad.status_code == 400
    assert Document.objects.count() == 2
    assert_consistent(media_root)


# --- Refused bodies leave no temporary file -------------------------------------

BOUNDARY = "docqueue-faults-boundary"


def file_part(name: str, content: bytes, *, base64: bool = False) -> bytes:
    encoding = "Content-Transfer-Encoding: base64\r\n" if base64 else ""
    return (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; '
        f'filename="{name}"\r\nContent-Type: text/plain\r\n{encoding}\r\n'
    ).encode() + content


def whole_file(name: str, content: bytes) -> bytes:
    return file_part(name, content) + b"\r\n"


# Each body spools its (second) file to disk, then is refused mid-file.
REFUSED_BODIES = {
    # The second file passes MAX_UPLOAD_MB (1 MB here) while it streams in.
    "too-large": (
        whole_file("a.txt", b"a" * 1000) + file_part("big.txt", b"b" * (2 << 20)),
        413,
        "too_large",
    ),
    # The body ends inside the second file: the client went away.
    "cut-off": (
        whole_file("a.txt", b"a" * 1000) + file_part("cut.txt", b"c" * 300_000),
        400,
        "incomplete",
    ),
    # A third file when two are allowed.
    "too-many-files": (
        whole_file("a.txt", b"a" * 1000)
        + whole_file("b.txt", b"b" * 1000)
        + whole_file("c.txt", b"c" * 1000),
        400,
        "too_many_files",
    ),
    # An error raised by Django's parser, not by our limits: base64 cut short.
    "malformed": (
        whole_file("a.txt", b"a" * 1000)
        + file_part("b64.txt", b"QUJD" * 1000 + b"Q", base64=True)
        + b"\r\n",
        400,
        None,
    ),
}


@pytest.fixture
def upload_tmp(settings, tmp_path) -> Path:
    """Django spools every uploaded file (none is kept in memory) to this folder."""
    settings.FILE_UPLOAD_TEMP_DIR = tmp_path / "upload-tmp"
    settings.FILE_UPLOAD_TEMP_DIR.mkdir()
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 0
    settings.MAX_UPLOAD_MB = 1
    settings.MAX_UPLOAD_FILES = 2
    return settings.FILE_UPLOAD_TEMP_DIR


@pytest.mark.parametrize("url", [UPLOAD_URL, API_URL], ids=["form", "api"])
@pytest.mark.parametrize("kind", REFUSED_BODIES)
def test_a_refused_upload_leaves_no_temporary_file(
    user, client, token_client, upload_tmp, media_root, url, kind
):
    body, status, code = REFUSED_BODIES[kind]
    if url == UPLOAD_URL:
        client.defaults.pop("HTTP_AUTHORIZATION", None)
        client.force_login(user)
    response = client.post(
        url, body, content_type=f"multipart/form-data; boundary={BOUNDARY}"
    )
    assert response.status_code == status
    if url == API_URL and code:
        assert response.json()["error"]["code"] == code
    # Gone at once: the response (and so the request and its upload handlers)
    # is still alive here, so nothing was left for the garbage collector.
    assert list(upload_tmp.iterdir()) == []
    assert not Document.objects.exists() and not stored_files(media_root)


def test_an_accepted_upload_through_temporary_files_is_kept_whole(
    token_client, upload_tmp, media_root
):
    body = whole_file("a.txt", b"words " * 1000) + f"--{BOUNDARY}--\r\n".encode()
    response = token_client.post(
        API_URL, body, content_type=f"multipart/form-data; boundary={BOUNDARY}"
    )
    assert response.status_code == 202
    assert Document.objects.get().file.read() == b"words " * 1000
