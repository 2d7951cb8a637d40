"""Sixth audit, as an attacker: request bodies and headers built to turn a refusal
into a server error (JSON nested past the recursion limit, a page number past
int()'s digits, a Content-Length that is a digit only to ``isdigit()``), and ZIP
downloads whose entry names a hostile file name or the archive's own note could
take over."""

from __future__ import annotations

import asyncio
import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from documents.models import Document
from documents.tokens import create_token
from tests.conftest import run_async

pytestmark = pytest.mark.django_db

# A few hundred KiB, far under any body limit, and past Python's recursion limit.
DEEP_JSON = "[" * 100_000


@pytest.fixture
def token_client(user) -> Client:
    _, key = create_token(user)
    return Client(HTTP_AUTHORIZATION=f"Token {key}")


def assert_json_error(response, status: int) -> dict:
    assert response.status_code == status, response.content[:300]
    body = response.json()
    assert set(body["error"]) == {"code", "message", "fields"}
    return body


@pytest.mark.parametrize("method", ["post", "patch"])
def test_json_nested_past_the_recursion_limit_is_a_400_not_a_server_error(
    token_client, make_document, method
):
    document = make_document()
    path = f"/api/documents/{document.pk}/"
    if method == "post":
        path += "reprocess/"
    response = getattr(token_client, method)(
        path, DEEP_JSON, content_type="application/json"
    )
    body = assert_json_error(response, 400)
    assert "deep" in body["error"]["message"]
    document.refresh_from_db()
    assert document.title == ""


@pytest.mark.parametrize("enforce_csrf", [False, True])
def test_the_same_body_from_a_session_is_refused_too(user, make_document, enforce_csrf):
    """Through a session the CSRF check reads the body first (DRF's request.POST):
    a 400 or the CSRF 403, never a 500."""
    document = make_document()
    client = Client(enforce_csrf_checks=enforce_csrf)
    client.force_login(user)
    response = client.patch(
        f"/api/documents/{document.pk}/", DEEP_JSON, content_type="application/json"
    )
    assert_json_error(response, 403 if enforce_csrf else 400)


def test_json_bodies_the_api_takes_still_work(token_client, make_document):
    document = make_document()
    response = token_client.patch(
        f"/api/documents/{document.pk}/",
        json.dumps({"title": "Mine", "tags": ["a"]}),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["title"] == "Mine"
    response = token_client.post(
        f"/api/documents/{document.pk}/reprocess/",
        json.dumps({"priority": 0}),
        content_type="application/json",
    )
    assert response.status_code == 202, response.content


def test_a_search_page_number_past_ints_digits_is_a_404_not_a_server_error(
    token_client, make_document
):
    make_document(content=b"hello searchable world\n")
    response = token_client.get("/api/documents/", {"q": "hello", "page": "9" * 5000})
    body = assert_json_error(response, 404)
    assert body["error"]["code"] == "not_found"


@pytest.mark.parametrize("declared", ["\u00b2", "\u00b3\u00b9", "9" * 5000])
@pytest.mark.parametrize(
    "path", ["/documents/upload/", "/api/documents/", "/accounts/login/"]
)
def test_a_content_length_that_is_no_number_is_not_a_server_error(
    user_client, path, declared
):
    """runserver passes such a header on (gunicorn refuses it itself); Django reads
    it as no body. Nothing may be kept, and the answer is no 500."""
    response = user_client.post(
        path,
        {"file": SimpleUploadedFile("a.txt", b"hello there\n")},
        CONTENT_LENGTH=declared,
    )
    assert response.status_code < 500, response.content[:300]
    if declared.isascii():  # a length of 5,000 digits is over every limit
        assert response.status_code == 413
    assert not Document.objects.exists()


def zip_names(response) -> list[str]:
    assert response.status_code == 200, response.content[:300]
    data = b"".join(response.streaming_content)
    return zipfile.ZipFile(io.BytesIO(data)).namelist()


def test_a_document_named_like_the_archives_note_does_not_take_its_name(
    user_client, make_document
):
    kept = make_document(content=b"mine\n", name="MISSING.txt")
    gone = make_document(content=b"gone\n", name="gone.txt")
    gone.file.delete(save=False)
    names = zip_names(
        user_client.post(
            "/documents/bulk/", {"action": "download", "id": [kept.pk, gone.pk]}
        )
    )
    # One entry per name: the document is renamed, the note keeps its own.
    assert len(names) == len(set(names)) == 2
    assert sorted(names) == ["MISSING (2).txt", "MISSING.txt"]


@pytest.mark.parametrize(
    ("stored", "entry"),
    [
        ("C:report.txt", "C_report.txt"),
        ('a"b|c?.txt', "a_b_c_.txt"),
        ("..\\..\\evil.txt", "evil.txt"),
        ("../../evil.txt", "evil.txt"),
    ],
)
def test_zip_entries_never_name_a_drive_a_folder_or_a_wildcard(
    user_client, make_document, stored, entry
):
    """Names stored before today's cleaning, or by another path than the upload
    form, are cleaned again as they enter the archive."""
    document = make_document(content=b"x\n")
    Document.objects.filter(pk=document.pk).update(original_filename=stored)
    names = zip_names(
        user_client.post(
            "/documents/bulk/", {"action": "download", "id": [document.pk]}
        )
    )
    assert names == [entry]


# --- Bodies under an ASGI server ------------------------------------------------------


def asgi_request(method: str, path: str, headers: list, chunks) -> tuple[list, int]:
    """Run one request through the project's ASGI application; the messages it
    sent and how many body chunks it read."""
    from config.asgi import application

    sent: list[dict] = []
    read = 0

    ended = False

    async def receive() -> dict:
        nonlocal read, ended
        if ended:  # the client waits for the answer (Django cancels this)
            await asyncio.sleep(3600)
        read += 1
        chunk = next(chunks, None)
        if chunk is None:
            ended = True
            return {"type": "http.request", "body": b"", "more_body": False}
        return {"type": "http.request", "body": chunk, "more_body": True}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), *headers],
        "client": ("127.0.0.1", 40000),
        "server": ("testserver", 80),
    }
    run_async(application(scope, receive, send))
    return sent, read


def endless(size: int):
    while True:
        yield b"x" * size


def test_under_asgi_a_body_declared_too_large_is_refused_unread(settings):
    settings.MAX_UPLOAD_MB, settings.MAX_UPLOAD_FILES = 1, 1
    sent, read = asgi_request(
        "POST",
        "/accounts/login/",
        [(b"content-length", str(50 * 1024 * 1024).encode())],
        endless(65536),
    )
    assert sent[0]["status"] == 413 and read == 0
    assert b"Nothing was uploaded" in sent[1]["body"]


def test_under_asgi_a_body_streaming_past_any_limit_is_cut_off(settings):
    """No length declared (chunked): Django would spool all of it to disk before
    any middleware ran; it stops reading just past the largest body allowed."""
    settings.MAX_UPLOAD_MB, settings.MAX_UPLOAD_FILES = 1, 1
    chunk = 256 * 1024
    sent, read = asgi_request("POST", "/accounts/login/", [], endless(chunk))
    limit_chunks = (2 * 1024 * 1024) // chunk  # 1 file of 1 MB + 1 MB of form
    assert read <= limit_chunks + 2
    assert not any(m.get("status") == 200 for m in sent)


def test_under_asgi_requests_within_the_limits_go_through():
    sent, _ = asgi_request("GET", "/healthz", [], iter(()))
    assert sent[0]["status"] == 200


# --- Names that would run when a download is opened ------------------------------


def test_a_download_never_carries_a_name_that_runs_when_opened(
    client, staff_user, user, make_document
):
    """Uploads are checked by content: text named notes.bat is kept as text. Handed
    out as notes.bat (to its owner, or to staff), opening it would run it."""
    script = make_document(b"del /q *\n", name="notes.bat", owner=staff_user)
    log = make_document(b"started\n", name="server.log", owner=staff_user)
    client.force_login(staff_user)
    for document, expected in ((script, "notes.bat.txt"), (log, "server.log")):
        response = client.get(reverse("documents:download", args=[document.pk]))
        assert response.status_code == 200
        assert f'filename="{expected}"' in response["Content-Disposition"]
    response = client.post(
        reverse("documents:bulk"), {"action": "download", "id": [script.pk, log.pk]}
    )
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert sorted(archive.namelist()) == ["notes.bat.txt", "server.log"]


def test_check_deploy_warns_of_a_short_ops_token():
    from tests.test_access import manage

    with pytest.MonkeyPatch.context() as env:
        env.setenv("CRON_TOKEN", "cron123")
        env.setenv("METRICS_TOKEN", "m" * 40)
        result = manage("check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 1
    assert "ops.W001" in result.stderr and "CRON_TOKEN is 7 characters" in result.stderr
    assert "METRICS_TOKEN" not in result.stderr


def test_what_a_logged_in_person_is_answered_is_not_for_shared_caches(
    client, user, make_document
):
    document = make_document()
    client.force_login(user)
    for path in (
        reverse("documents:list"),
        reverse("documents:detail", args=[document.pk]),
        reverse("documents:download", args=[document.pk]),
        f"/api/documents/{document.pk}/",
    ):
        response = client.get(path)
        assert response.status_code == 200, path
        assert "private" in response["Cache-Control"], path
        # Nor kept by the browser (Back after logging out, on a shared computer);
        # the API's answer is revalidated instead (its ETag).
        if not path.startswith("/api/"):
            assert "no-store" in response["Cache-Control"], path


def test_a_token_clients_answers_are_private_too(token_client, make_document):
    document = make_document()
    response = token_client.get(f"/api/documents/{document.pk}/")
    assert response.status_code == 200
    assert "private" in response["Cache-Control"]
