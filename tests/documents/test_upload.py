"""Uploading and reprocessing: the form, the JSON API, and every kind of bad input."""

from __future__ import annotations

import hashlib
import io
import re
from pathlib import Path
from urllib.parse import quote

import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from django.utils.html import conditional_escape, escape

from documents.models import Document
from jobqueue.models import ErrorType, Operation, QueueItem, Status
from jobqueue.services import DocumentQueueService, QueueManager
from tests.conftest import grant_operator
from tests.corpus import require_corpus, requires_corpus
from tests.files import docx_bytes, pdf_bytes

pytestmark = pytest.mark.django_db

UPLOAD_URL = "/documents/upload/"
API_URL = "/api/documents/"
PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
TEXT = "text/plain"
STORED_NAME = re.compile(r"documents/[0-9a-f]{32}(\.[a-z]+)?")


# --- Fixtures and helpers -------------------------------------------------------


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):
    """The users of conftest need no slow hashing here."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def psd_bytes() -> bytes:
    """An image format we do not read (a Photoshop file's header)."""
    return b"8BPS\x00\x01" + b"\x00" * 64


def upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, "application/octet-stream")


def good_files() -> list[tuple[str, bytes, str]]:
    return [
        ("report.pdf", pdf_bytes(pages=2), PDF),
        ("minutes.docx", docx_bytes(), DOCX),
        ("notes.txt", "Grüße aus dem Büro\n".encode(), TEXT),
    ]


def multipart(files: list[tuple[str, bytes]], **fields: str) -> dict[str, bytes | str]:
    """A multipart body sent as is: the test client would strip hostile names."""
    boundary = "docqueue-test-boundary-7d9f"
    body = b""
    for key, value in fields.items():
        body += (
            f"--{boundary}\r\nContent-Disposition: form-data; "
            f'name="{key}"\r\n\r\n{value}\r\n'
        ).encode()
    for name, content in files:
        # RFC 2231 encoding carries any character, control characters included.
        body += (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                f"filename*=UTF-8''{quote(name, safe='')}\r\n"
                "Content-Type: application/octet-stream\r\n\r\n"
            ).encode()
            + content
            + b"\r\n"
        )
    body += f"--{boundary}--\r\n".encode()
    return {
        "data": body,
        "content_type": f"multipart/form-data; boundary={boundary}",
    }


def stored_files(media_root: Path) -> list[Path]:
    return (
        [p for p in media_root.rglob("*") if p.is_file()] if media_root.exists() else []
    )


def assert_nothing_left(media_root: Path) -> None:
    assert stored_files(media_root) == []
    assert not Document.objects.exists()
    assert not QueueItem.objects.exists()


def page_shows(response, message: str) -> bool:
    """The message is on the page as rendered (escaped, unless it is safe HTML)."""
    return conditional_escape(message) in response.content.decode()


def messages_of(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


@pytest.fixture
def api_token(user) -> str:
    out = io.StringIO()
    call_command("create_api_token", user.username, stdout=out)
    return out.getvalue().strip()


@pytest.fixture
def token_client(api_token) -> Client:
    """A script's client: token auth, and CSRF checks on as in production."""
    return Client(
        enforce_csrf_checks=True, headers={"authorization": f"Token {api_token}"}
    )


# --- The upload form ------------------------------------------------------------


def test_upload_form_is_shown_to_a_logged_in_user(user_client):
    response = user_client.get(UPLOAD_URL)
    assert response.status_code == 200
    assert b'name="file"' in response.content
    assert b"multipart/form-data" in response.content


def test_one_file_is_stored_queued_and_shown(user_client, user, media_root):
    content = pdf_bytes(pages=3)
    response = user_client.post(
        UPLOAD_URL, {"file": upload("Report 2024.pdf", content)}
    )
    document = Document.objects.get()
    assert response.status_code == 302
    assert response.url == f"/documents/{document.pk}/"
    assert document.owner == user
    assert document.original_filename == "Report 2024.pdf"
    assert (document.mime_type, document.size) == (PDF, len(content))
    assert document.sha256 == hashlib.sha256(content).hexdigest()
    assert document.status == Status.PENDING
    # Stored under a random name, never the uploaded one.
    assert STORED_NAME.fullmatch(document.file.name)
    assert (media_root / document.file.name).read_bytes() == content
    item = QueueItem.objects.get()
    assert (item.document, item.operation, item.status, item.attempts) == (
        document,
        Operation.EXTRACT,
        Status.PENDING,
        0,
    )
    assert any("Report 2024.pdf" in m for m in messages_of(response))
    assert user_client.get(response.url).status_code == 200


def test_many_files_in_one_upload_each_get_a_document_and_a_job(
    user_client, media_root
):
    files = good_files()
    response = user_client.post(
        UPLOAD_URL, {"file": [upload(name, content) for name, content, _ in files]}
    )
    assert response.status_code == 302
    assert response.url == "/documents/"
    documents = {d.original_filename: d for d in Document.objects.all()}
    assert {name: documents[name].mime_type for name, _, _ in files} == {
        name: mime for name, _, mime in files
    }
    assert QueueItem.objects.filter(status=Status.PENDING).count() == 3
    assert len(stored_files(media_root)) == 3
    followed = user_client.get(response.url)
    for name, _, _ in files:
        assert name in followed.content.decode()


def test_mixed_upload_keeps_the_good_file_and_reports_the_bad_one(
    user_client, media_root
):
    response = user_client.post(
        UPLOAD_URL,
        {
            "file": [
                upload("good.txt", b"plain words\n"),
                upload("picture.pdf", psd_bytes()),
            ]
        },
        follow=True,
    )
    assert response.status_code == 200
    document = Document.objects.get()
    assert document.original_filename == "good.txt"
    assert QueueItem.objects.get().document == document
    assert len(stored_files(media_root)) == 1
    shown = [str(m) for m in response.context["messages"]]
    assert any("picture.pdf" in m and "not a file we can read" in m for m in shown)
    assert any("good.txt" in m and "pending" in m for m in shown)
    for message in shown:
        assert page_shows(response, message)


def test_an_empty_file_does_not_sink_the_good_ones_beside_it(user_client, media_root):
    response = user_client.post(
        UPLOAD_URL,
        {"file": [upload("empty.txt", b""), upload("good.docx", docx_bytes())]},
    )
    assert response.status_code == 302
    assert Document.objects.get().original_filename == "good.docx"
    assert len(stored_files(media_root)) == 1
    assert any("empty.txt" in m and "is empty" in m for m in messages_of(response))


def test_every_refused_file_of_a_batch_is_named_with_its_reason(
    user_client, media_root
):
    # Beside a kept file: more refusals than the page shows messages (five).
    refused = {
        "e1.txt": "is empty",
        "e2.txt": "is empty",
        "l.doc": "not a file we can read",
        "l.xls": "not a file we can read",
        "l.ppt": "not a file we can read",
        "m.docx": "named like a Word (DOCX)",
        "<img src=x onerror=alert(1)>.txt": "is empty",
    }
    contents = {"l.doc": b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504)}
    contents |= {"l.xls": contents["l.doc"], "l.ppt": contents["l.doc"]}
    contents["m.docx"] = pdf_bytes()
    files = [upload("good.txt", b"plain words\n")]
    files += [upload(name, contents.get(name, b"")) for name in refused]
    response = user_client.post(UPLOAD_URL, {"file": files}, follow=True)
    assert Document.objects.get().original_filename == "good.txt"
    [kept, refusals] = response.context["messages"]
    assert "good.txt" in str(kept)
    assert str(refusals).startswith("<div><p>7 files were not uploaded:</p>")
    reasons = re.findall(r"<li>(.*?)</li>", str(refusals))
    assert len(reasons) == 7
    for (name, phrase), reason in zip(refused.items(), reasons, strict=True):
        assert escape(name) in reason and phrase in reason
    page = response.content.decode()
    assert str(refusals) in page and "more." not in page
    assert "<img src=x" not in page
    assert escape("<img src=x onerror=alert(1)>.txt") in page


def test_twenty_files_with_nineteen_refused_show_each_reason(user_client, media_root):
    files = [upload("good.txt", b"plain words\n")]
    files += [upload(f"empty-{i:02}.txt", b"") for i in range(19)]
    response = user_client.post(UPLOAD_URL, {"file": files}, follow=True)
    [_kept, refusals] = response.context["messages"]
    assert "19 files were not uploaded" in str(refusals)
    page = response.content.decode()
    for i in range(19):
        assert f"<li>“empty-{i:02}.txt” is empty (0 bytes).</li>" in page


@pytest.mark.parametrize(
    ("name", "content", "phrase"),
    [
        ("empty.pdf", b"", "is empty"),
        ("picture.pdf", psd_bytes(), "not a file we can read"),
        (
            "letter.pdf",
            b"Dear reader, this is plain text.\n",
            "named like a PDF file but is a Plain text file.",
        ),
        ("report.docx", pdf_bytes(), "named like a Word (DOCX)"),
        ("notes.txt", pdf_bytes(), "named like a Plain text"),
        ("design.psd", psd_bytes(), "not a file we can read"),
        ("archive.zip", b"PK\x03\x04" + b"\x00" * 100, "not a file we can read"),
        ("tool.exe", b"MZ\x90\x00\x03\x00\x00\x00" + bytes(range(256)), "not a file"),
        ("song.mp3", b"ID3\x04\x00\x00\x00\x00\x00\x00" + bytes(range(256)), "not a"),
    ],
    ids=[
        "empty",
        "psd-named-pdf",
        "text-named-pdf",
        "pdf-named-docx",
        "pdf-named-txt",
        "psd",
        "zip",
        "exe",
        "mp3",
    ],
)
def test_bad_file_is_refused_on_the_form_with_a_reason(
    user_client, media_root, name, content, phrase
):
    response = user_client.post(UPLOAD_URL, {"file": upload(name, content)})
    assert response.status_code == 400
    [error] = response.context["form"].errors["file"]
    assert name in error and phrase in error
    assert page_shows(response, error)
    assert_nothing_left(media_root)


def test_file_over_the_size_limit_is_refused(user_client, settings, media_root):
    settings.MAX_UPLOAD_MB = 1
    content = b"a" * (1024 * 1024 + 512 * 1024)
    response = user_client.post(UPLOAD_URL, {"file": upload("big.txt", content)})
    # Refused while it streams in (documents.middleware): its full size is never read.
    assert response.status_code == 413
    [error] = response.context["errors"]
    assert "“big.txt” is over the 1.0 MB limit" in error
    assert page_shows(response, error)
    assert_nothing_left(media_root)


def test_file_at_the_size_limit_is_accepted(user_client, settings):
    settings.MAX_UPLOAD_MB = 1
    response = user_client.post(
        UPLOAD_URL, {"file": upload("exact.txt", b"a" * (1024 * 1024))}
    )
    assert response.status_code == 302
    assert Document.objects.get().size == 1024 * 1024


def test_too_many_files_at_once_are_refused(user_client, settings, media_root):
    settings.MAX_UPLOAD_FILES = 2
    files = [upload(f"n{i}.txt", b"words\n") for i in range(3)]
    response = user_client.post(UPLOAD_URL, {"file": files})
    assert response.status_code == 400
    [error] = response.context["errors"]
    assert "At most 2 files at once" in error
    assert page_shows(response, error)
    assert_nothing_left(media_root)


def test_21_files_get_a_form_error_never_a_debug_traceback(
    user_client, settings, media_root
):
    # It was Django's own TooManyFilesSent: a bare 400, with a traceback under DEBUG.
    settings.DEBUG = True
    files = [upload(f"n{i}.txt", f"words {i}\n".encode()) for i in range(21)]
    response = user_client.post(UPLOAD_URL, {"file": files})
    assert response.status_code == 400
    # Under the form's "Nothing was uploaded:", not said twice.
    assert response.context["errors"] == ["At most 20 files at once, please."]
    assert response.content.decode().count("Nothing was uploaded") == 1
    assert b"Traceback" not in response.content
    assert_nothing_left(media_root)


def test_api_refuses_too_many_files_with_a_json_error(token_client, media_root):
    files = [upload(f"n{i}.txt", f"words {i}\n".encode()) for i in range(21)]
    response = token_client.post(API_URL, {"file": files})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "too_many_files"
    assert_nothing_left(media_root)


def test_posting_without_a_file_is_refused(user_client, media_root):
    # A browser always sends the CSRF field along (checks are off for user_client).
    response = user_client.post(UPLOAD_URL, {"csrfmiddlewaretoken": "x"})
    assert response.status_code == 400
    assert response.context["form"].errors["file"]
    assert_nothing_left(media_root)


def test_posting_nothing_at_all_is_refused(user_client, media_root):
    response = user_client.post(UPLOAD_URL, {})
    assert response.status_code == 400
    assert response.context["form"].errors["file"]


def test_all_bad_files_are_each_reported(user_client, media_root):
    response = user_client.post(
        UPLOAD_URL,
        {"file": [upload("a.pdf", b""), upload("b.pdf", psd_bytes())]},
    )
    assert response.status_code == 400
    errors = response.context["form"].errors["file"]
    assert len(errors) == 2
    assert "a.pdf" in errors[0] and "b.pdf" in errors[1]
    assert_nothing_left(media_root)


# --- Hostile file names ---------------------------------------------------------

HOSTILE_NAMES = [
    "../../etc/passwd",
    "..\\..\\windows\\win.ini",
    "/etc/cron.d/evil.txt",
    "bell\x07escape\x1b[31mred\r\nnewline\x00nul.txt",
    "<script>alert(1)</script>.txt",
    "x" * 500 + ".txt",
    "\u202etxt.exe",
    "....",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=range(len(HOSTILE_NAMES)))
def test_hostile_file_name_is_neutralised_and_stored_under_a_random_name(
    user_client, media_root, tmp_path, name
):
    response = user_client.post(UPLOAD_URL, **multipart([(name, b"harmless text\n")]))
    assert response.status_code == 302
    document = Document.objects.get()
    shown = document.original_filename
    assert shown and len(shown) <= 255
    assert "/" not in shown and "\\" not in shown
    assert not any(ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0 for ch in shown)
    assert shown not in {".", ".."}
    assert STORED_NAME.fullmatch(document.file.name)
    # Nothing was written anywhere but the media folder's documents/.
    assert stored_files(media_root) == [media_root / document.file.name]
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == stored_files(media_root)
    detail = user_client.get(f"/documents/{document.pk}/")
    assert detail.status_code == 200
    assert b"<script>alert(1)</script>" not in detail.content


def test_long_file_name_is_shortened_but_keeps_its_extension(user_client):
    user_client.post(UPLOAD_URL, **multipart([("y" * 500 + ".pdf", pdf_bytes())]))
    document = Document.objects.get()
    assert len(document.original_filename) <= 200
    assert document.original_filename.endswith(".pdf")
    assert document.file.name.endswith(".pdf")


@pytest.mark.parametrize("name", HOSTILE_NAMES[:6], ids=range(6))
def test_hostile_name_on_a_bad_file_gets_a_clean_message(user_client, media_root, name):
    response = user_client.post(UPLOAD_URL, **multipart([(name, b"")]))
    assert response.status_code == 400
    [error] = response.context["form"].errors["file"]
    assert "is empty" in error
    assert "/" not in error.split("”")[0]
    assert not any(ord(ch) < 32 for ch in error)
    assert b"<script>" not in response.content
    assert_nothing_left(media_root)


# --- Access and CSRF on pages ---------------------------------------------------


def test_anonymous_user_is_sent_to_the_login_page(client, media_root):
    response = client.get(UPLOAD_URL)
    assert response.status_code == 302
    assert response.url.startswith("/accounts/login/?next=/documents/upload/")
    response = client.post(UPLOAD_URL, {"file": upload("a.txt", b"words\n")})
    assert response.status_code == 302
    assert response.url.startswith("/accounts/login/")
    assert_nothing_left(media_root)


def test_anonymous_user_cannot_see_reprocess_or_download_a_document(
    client, make_document
):
    document = make_document()
    for method, url in [
        ("get", f"/documents/{document.pk}/"),
        ("get", f"/documents/{document.pk}/status/"),
        ("get", f"/documents/{document.pk}/download/"),
        ("post", f"/documents/{document.pk}/reprocess/"),
    ]:
        response = getattr(client, method)(url)
        assert response.status_code == 302, url
        assert response.url.startswith("/accounts/login/"), url
    assert not QueueItem.objects.exists()


def test_another_users_document_answers_404_on_every_page(
    client, other_user, make_document
):
    document = make_document()
    client.force_login(other_user)
    for method, url in [
        ("get", f"/documents/{document.pk}/"),
        ("get", f"/documents/{document.pk}/status/"),
        ("get", f"/documents/{document.pk}/download/"),
        ("post", f"/documents/{document.pk}/reprocess/"),
    ]:
        assert getattr(client, method)(url).status_code == 404, url
    assert not QueueItem.objects.exists()
    assert document.original_filename not in client.get("/documents/").content.decode()


def test_staff_see_and_reprocess_everyones_documents(client, staff_user, make_document):
    document = make_document(content=b"owner's words\n")
    client.force_login(staff_user)
    assert client.get(f"/documents/{document.pk}/").status_code == 200
    assert client.get(f"/documents/{document.pk}/status/").json()["id"] == document.pk
    download = client.get(f"/documents/{document.pk}/download/")
    assert b"".join(download.streaming_content) == b"owner's words\n"
    assert document.original_filename in client.get("/documents/").content.decode()
    response = client.post(f"/documents/{document.pk}/reprocess/")
    assert response.status_code == 302
    assert QueueItem.objects.get().operation == Operation.REPROCESS


def test_reprocess_from_the_page_queues_the_document_again(user_client, make_document):
    document = make_document()
    response = user_client.post(f"/documents/{document.pk}/reprocess/")
    assert response.status_code == 302
    assert response.url == f"/documents/{document.pk}/"
    item = QueueItem.objects.get()
    assert (item.operation, item.status) == (Operation.REPROCESS, Status.PENDING)
    document.refresh_from_db()
    assert document.status == Status.PENDING
    again = user_client.post(f"/documents/{document.pk}/reprocess/")
    assert again.status_code == 302
    assert QueueItem.objects.count() == 1
    assert any("already queued" in m for m in messages_of(again))


def test_reprocess_page_takes_post_only(user_client, make_document):
    document = make_document()
    assert user_client.get(f"/documents/{document.pk}/reprocess/").status_code == 405
    assert not QueueItem.objects.exists()


def test_upload_form_enforces_csrf(user, media_root):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    refused = client.post(UPLOAD_URL, {"file": upload("a.txt", b"words\n")})
    assert refused.status_code == 403
    assert_nothing_left(media_root)

    client.get(UPLOAD_URL)
    token = client.cookies["csrftoken"].value
    accepted = client.post(
        UPLOAD_URL,
        {"file": upload("a.txt", b"words\n"), "csrfmiddlewaretoken": token},
    )
    assert accepted.status_code == 302
    assert Document.objects.count() == 1


def test_reprocess_page_enforces_csrf(user, make_document):
    document = make_document()
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post(f"/documents/{document.pk}/reprocess/").status_code == 403
    assert not QueueItem.objects.exists()


# --- The JSON API ---------------------------------------------------------------


def test_api_upload_answers_202_with_the_status_url(token_client, user, media_root):
    grant_operator(user)  # only operators may set a priority
    content = pdf_bytes()
    response = token_client.post(
        API_URL, {"file": upload("scan.pdf", content), "priority": "7"}
    )
    assert response.status_code == 202
    body = response.json()
    document = Document.objects.get()
    assert body["id"] == document.pk
    assert body["status"] == "pending"
    assert body["status_url"] == f"http://testserver/api/documents/{document.pk}/"
    assert response["Location"] == f"/api/documents/{document.pk}/"
    assert document.owner == user
    assert (document.original_filename, document.mime_type) == ("scan.pdf", PDF)
    assert (media_root / document.file.name).read_bytes() == content
    item = QueueItem.objects.get()
    assert (item.document, item.priority, item.status) == (document, 7, Status.PENDING)


@pytest.mark.parametrize(("name", "content", "mime"), good_files())
def test_api_accepts_each_supported_type(token_client, name, content, mime):
    response = token_client.post(API_URL, {"file": upload(name, content)})
    assert response.status_code == 202
    assert Document.objects.get(pk=response.json()["id"]).mime_type == mime


def test_api_status_shows_progress_then_the_result(token_client, queue):
    response = token_client.post(API_URL, {"file": upload("a.txt", b"some words\n")})
    status_url = response.json()["status_url"]
    body = token_client.get(status_url).json()
    assert (body["status"], body["error_type"], body["error_message"]) == (
        "pending",
        None,
        None,
    )
    assert body["page_count"] is None
    assert body["text"] == ""

    job = queue.claim("w1")
    assert token_client.get(status_url).json()["status"] == "processing"
    Document.objects.filter(pk=job.document_id).update(text="some words", page_count=1)
    queue.complete(job.pk, extraction_time_ms=3)
    body = token_client.get(status_url).json()
    assert (body["status"], body["text"], body["page_count"]) == (
        "completed",
        "some words",
        1,
    )


def test_api_status_shows_why_a_document_failed(token_client, queue):
    response = token_client.post(API_URL, {"file": upload("a.pdf", pdf_bytes())})
    job = queue.claim("w1")
    queue.failed(job.pk, "The file is damaged: no pages.", ErrorType.CORRUPTION)
    body = token_client.get(response.json()["status_url"]).json()
    assert (body["status"], body["error_type"], body["error_message"]) == (
        "failed",
        "corruption",
        "The file is damaged: no pages.",
    )


def test_api_reprocess_answers_202_again_while_queued_and_409_while_running(
    token_client, user, queue
):
    grant_operator(user)  # only operators may set a priority
    document_id = token_client.post(
        API_URL, {"file": upload("a.txt", b"words\n")}
    ).json()["id"]
    job = queue.claim("w1")
    queue.complete(job.pk)
    url = f"/api/documents/{document_id}/reprocess/"
    response = token_client.post(url, {"priority": "3"})
    assert response.status_code == 202
    assert response.json()["status"] == "pending"
    item = QueueItem.objects.get(operation=Operation.REPROCESS)
    assert (item.status, item.priority) == (Status.PENDING, 3)
    # The waiting job will read it anew: nothing more to queue.
    again = token_client.post(url)
    assert again.status_code == 202
    assert again.json()["status"] == "pending"
    assert QueueItem.objects.filter(operation=Operation.REPROCESS).count() == 1
    queue.claim("w1")
    running = token_client.post(url)
    assert running.status_code == 409
    assert running.json()["error"]["code"] == "already_queued"
    assert QueueItem.objects.filter(operation=Operation.REPROCESS).count() == 1


def _first_extraction(queue: QueueManager, state: str) -> None:
    """Leave the upload's extract job pending, processing or waiting for a retry."""
    if state != Status.PENDING:
        job = queue.claim("w1")
        if state == Status.RETRY_PENDING:
            queue.failed(job.pk, "The worker timed out.", ErrorType.TIMEOUT)
    assert QueueItem.objects.get().status == state


@pytest.mark.parametrize(
    "state, code",
    [(Status.PENDING, 202), (Status.PROCESSING, 409), (Status.RETRY_PENDING, 202)],
)
def test_api_reprocess_leaves_the_first_extraction_to_read_the_document(
    token_client, queue, state, code
):
    """Waiting, the first extraction will read the document: 202, nothing more
    queued; running, 409."""
    document_id = token_client.post(
        API_URL, {"file": upload("a.txt", b"words\n")}
    ).json()["id"]
    _first_extraction(queue, state)
    url = f"/api/documents/{document_id}/reprocess/"
    response = token_client.post(url)
    assert response.status_code == code
    if code == 409:
        error = response.json()["error"]
        assert error["code"] == "already_queued"
        assert "a.txt" in error["message"]
    else:
        assert response.json()["status"] == state
    assert not QueueItem.objects.filter(operation=Operation.REPROCESS).exists()
    # Once the first extraction is over, the document may be reprocessed.
    QueueItem.objects.filter(status=Status.RETRY_PENDING).update(
        status=Status.PENDING, next_retry_at=None
    )
    job = QueueItem.objects.get()
    if job.status == Status.PENDING:
        job = queue.claim("w2")
    queue.complete(job.pk)
    assert token_client.post(url).status_code == 202


def test_reprocess_from_the_page_waits_for_the_first_extraction(user_client, queue):
    user_client.post(UPLOAD_URL, {"file": upload("a.txt", b"words\n")})
    document = Document.objects.get()
    response = user_client.post(f"/documents/{document.pk}/reprocess/")
    assert response.status_code == 302
    assert QueueItem.objects.get().operation == Operation.EXTRACT
    assert "“a.txt” is already queued" in messages_of(response)[-1]


def test_api_lists_only_your_documents(token_client, make_document, other_user):
    mine = make_document(name="mine.txt")
    make_document(name="theirs.txt", owner=other_user)
    response = token_client.get(API_URL)
    assert response.status_code == 200
    assert [d["id"] for d in response.json()["results"]] == [mine.pk]
    assert "text" not in response.json()["results"][0]


def test_create_api_token_prints_a_new_key_each_time(user, api_token):
    out = io.StringIO()
    call_command("create_api_token", user.username, stdout=out)
    assert out.getvalue().strip() != api_token
    assert re.fullmatch(r"[0-9a-f]{64}", api_token)


@pytest.mark.parametrize(
    ("name", "content", "phrase"),
    [
        ("empty.txt", b"", "is empty"),
        ("picture.pdf", psd_bytes(), "not a file we can read"),
        ("letter.pdf", b"Just text.\n", "named like a PDF"),
        ("report.docx", pdf_bytes(), "named like a Word (DOCX)"),
        ("design.psd", psd_bytes(), "not a file we can read"),
    ],
    ids=["empty", "psd-named-pdf", "text-named-pdf", "pdf-named-docx", "psd"],
)
def test_api_refuses_bad_files_with_a_json_error(
    token_client, media_root, name, content, phrase
):
    response = token_client.post(API_URL, {"file": upload(name, content)})
    assert response.status_code == 400
    error = response.json()["error"]["message"]
    assert name in error and phrase in error
    assert_nothing_left(media_root)


def test_api_refuses_a_file_over_the_size_limit(token_client, settings, media_root):
    settings.MAX_UPLOAD_MB = 1
    response = token_client.post(
        API_URL, {"file": upload("big.pdf", b"%PDF-1.4\n" + b"0" * (1536 * 1024))}
    )
    assert response.status_code == 413
    error = response.json()["error"]
    assert error["code"] == "too_large"
    assert "“big.pdf” is over the 1.0 MB limit" in error["message"]
    assert_nothing_left(media_root)


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"file": [upload("a.txt", b"one\n"), upload("b.txt", b"two\n")]},
        {"file": upload("a.txt", b"one\n"), "priority": "urgent"},
        {"file": upload("a.txt", b"one\n"), "priority": "1000"},
    ],
    ids=["no-file", "two-files", "priority-not-a-number", "priority-out-of-range"],
)
def test_api_refuses_malformed_requests_with_a_json_error(
    token_client, media_root, data
):
    response = token_client.post(API_URL, data)
    assert response.status_code == 400
    assert response.json()["error"]["message"]
    assert_nothing_left(media_root)


@pytest.mark.parametrize("name", HOSTILE_NAMES[:7], ids=range(7))
def test_api_neutralises_hostile_file_names(token_client, media_root, name):
    response = token_client.post(API_URL, **multipart([(name, b"harmless\n")]))
    assert response.status_code == 202
    shown = response.json()["filename"]
    assert "/" not in shown and "\\" not in shown
    assert not any(ord(ch) < 32 for ch in shown)
    assert len(stored_files(media_root)) == 1
    assert STORED_NAME.fullmatch(Document.objects.get().file.name)


def test_api_refuses_anonymous_requests_with_401(client, make_document, media_root):
    document = make_document()
    for method, url in [
        ("get", API_URL),
        ("post", API_URL),
        ("get", f"/api/documents/{document.pk}/"),
        ("post", f"/api/documents/{document.pk}/reprocess/"),
    ]:
        response = getattr(client, method)(url)
        assert response.status_code == 401, url
        assert response.json()["error"]["message"], url
        assert response["WWW-Authenticate"].startswith("Token"), url
    assert not QueueItem.objects.exists()


def test_api_refuses_a_wrong_token(make_document):
    client = Client(headers={"authorization": "Token " + "0" * 40})
    response = client.get(API_URL)
    assert response.status_code == 401
    assert response.json()["error"]["message"]


def test_api_answers_404_for_another_users_document(
    make_document, other_user, token_client
):
    theirs = make_document(owner=other_user)
    for method, url in [
        ("get", f"/api/documents/{theirs.pk}/"),
        ("post", f"/api/documents/{theirs.pk}/reprocess/"),
    ]:
        response = getattr(token_client, method)(url)
        assert response.status_code == 404, url
        assert response.json()["error"]["message"], url
    assert not QueueItem.objects.exists()


def test_api_lets_staff_see_and_reprocess_any_document(
    make_document, staff_user, other_user
):
    theirs = make_document(owner=other_user)
    client = Client()
    client.force_login(staff_user)
    assert client.get(f"/api/documents/{theirs.pk}/").json()["id"] == theirs.pk
    assert theirs.pk in [d["id"] for d in client.get(API_URL).json()["results"]]
    assert client.post(f"/api/documents/{theirs.pk}/reprocess/").status_code == 202


def test_api_session_post_needs_a_csrf_token(user, media_root):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    refused = client.post(API_URL, {"file": upload("a.txt", b"words\n")})
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["error"]["message"]
    assert_nothing_left(media_root)

    client.get(UPLOAD_URL)
    token = client.cookies["csrftoken"].value
    accepted = client.post(
        API_URL,
        {"file": upload("a.txt", b"words\n")},
        headers={"x-csrftoken": token},
    )
    assert accepted.status_code == 202


def test_api_session_reprocess_needs_a_csrf_token(user, make_document):
    document = make_document()
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post(f"/api/documents/{document.pk}/reprocess/")
    assert response.status_code == 403
    assert not QueueItem.objects.exists()


def test_api_token_posts_need_no_csrf_token(token_client, make_document):
    # token_client enforces CSRF checks, and sends no CSRF cookie or header.
    response = token_client.post(API_URL, {"file": upload("a.txt", b"words\n")})
    assert response.status_code == 202
    document = make_document()
    assert (
        token_client.post(f"/api/documents/{document.pk}/reprocess/").status_code == 202
    )


# --- One transaction: document and first job -----------------------------------


@pytest.fixture
def enqueue_that_fails(monkeypatch):
    """The queue item is written, then the transaction fails."""
    real_enqueue = DocumentQueueService.enqueue

    def enqueue(self, document_id, operation, priority=0):
        real_enqueue(self, document_id, operation, priority)
        assert QueueItem.objects.filter(document_id=document_id).exists()
        raise RuntimeError("the database connection dropped")

    monkeypatch.setattr(DocumentQueueService, "enqueue", enqueue)


@pytest.mark.django_db(transaction=True)
def test_failed_enqueue_on_the_form_leaves_no_document_job_or_file(
    user_client, media_root, enqueue_that_fails
):
    with pytest.raises(RuntimeError):
        user_client.post(UPLOAD_URL, {"file": upload("a.pdf", pdf_bytes())})
    assert_nothing_left(media_root)


@pytest.mark.django_db(transaction=True)
def test_failed_enqueue_on_the_api_leaves_no_document_job_or_file(
    token_client, media_root, enqueue_that_fails
):
    with pytest.raises(RuntimeError):
        token_client.post(API_URL, {"file": upload("a.txt", b"words\n")})
    assert_nothing_left(media_root)


@pytest.mark.django_db(transaction=True)
def test_upload_commits_the_document_and_its_job_together(user_client):
    user_client.post(UPLOAD_URL, {"file": upload("a.txt", b"words\n")})
    # Committed: visible to a worker, which claims it from its own transaction.
    job = QueueManager().claim("w1")
    assert job.document == Document.objects.get()


# --- Real documents from the shared corpus -------------------------------------

REAL_FILES = [
    ("pdf/multicolumn.pdf", PDF),
    ("pdf/nics-background-checks-2015-11.pdf", PDF),
    ("docx/example.docx", DOCX),
    ("docx/docx-tables.docx", DOCX),
    ("txt/UDHR_first_article_all.txt", TEXT),
    ("txt/fake-text-utf-16.txt", TEXT),
    ("txt/iso-8859-1_ude_1.txt", TEXT),
]
# Files the upload itself must refuse: what their bytes are contradicts the name.
REFUSED_BROKEN = [
    ("broken/empty.pdf", "is empty"),
    ("broken/zero-byte.docx", "is empty"),
    ("broken/png-renamed.pdf", "named like a PDF"),
    ("broken/text-renamed.pdf", "named like a PDF"),
    ("broken/pdf-renamed.docx", "named like a Word (DOCX)"),
    ("broken/not-a-zip.docx", "named like a Word (DOCX)"),
    ("broken/qpdf-bad1.pdf", "named like a PDF"),
]
# Damaged inside but of the type they claim: accepted, and extraction decides.
ACCEPTED_BROKEN = [
    "broken/tracemonkey-truncated-half.pdf",
    "broken/handbook-truncated-half.docx",
    "broken/invalid.pdf",
]


def corpus_upload(rel_path: str) -> SimpleUploadedFile:
    path = require_corpus() / rel_path
    return upload(path.name, path.read_bytes())


@requires_corpus
def test_real_documents_upload_through_the_form_in_one_go(user_client, media_root):
    files = [corpus_upload(rel) for rel, _ in REAL_FILES]
    response = user_client.post(UPLOAD_URL, {"file": files})
    assert response.status_code == 302
    assert messages_of(response) and not any("not" in m for m in messages_of(response))
    types = dict(Document.objects.values_list("original_filename", "mime_type"))
    assert types == {Path(rel).name: mime for rel, mime in REAL_FILES}
    for document in Document.objects.all():
        original = (
            require_corpus()
            / next(
                rel
                for rel, _ in REAL_FILES
                if Path(rel).name == document.original_filename
            )
        ).read_bytes()
        assert (media_root / document.file.name).read_bytes() == original
        assert document.sha256 == hashlib.sha256(original).hexdigest()
    assert QueueItem.objects.filter(status=Status.PENDING).count() == len(REAL_FILES)


@requires_corpus
@pytest.mark.parametrize(
    ("rel_path", "mime"), REAL_FILES, ids=[r for r, _ in REAL_FILES]
)
def test_real_documents_upload_through_the_api(token_client, rel_path, mime):
    response = token_client.post(API_URL, {"file": corpus_upload(rel_path)})
    assert response.status_code == 202
    assert response.json()["status"] == "pending"
    assert response.json()["mime_type"] == mime


@requires_corpus
@pytest.mark.parametrize(
    ("rel_path", "phrase"), REFUSED_BROKEN, ids=[r for r, _ in REFUSED_BROKEN]
)
def test_broken_corpus_files_are_refused_on_the_form(
    user_client, media_root, rel_path, phrase
):
    response = user_client.post(UPLOAD_URL, {"file": corpus_upload(rel_path)})
    assert response.status_code == 400
    [error] = response.context["form"].errors["file"]
    assert Path(rel_path).name in error and phrase in error
    assert page_shows(response, error)
    assert_nothing_left(media_root)


@requires_corpus
@pytest.mark.parametrize(
    ("rel_path", "phrase"), REFUSED_BROKEN, ids=[r for r, _ in REFUSED_BROKEN]
)
def test_broken_corpus_files_are_refused_by_the_api(
    token_client, media_root, rel_path, phrase
):
    response = token_client.post(API_URL, {"file": corpus_upload(rel_path)})
    assert response.status_code == 400
    assert phrase in response.json()["error"]["message"]
    assert_nothing_left(media_root)


@requires_corpus
@pytest.mark.parametrize("rel_path", ACCEPTED_BROKEN)
def test_damaged_files_of_the_right_type_are_accepted_for_extraction_to_judge(
    token_client, rel_path
):
    response = token_client.post(API_URL, {"file": corpus_upload(rel_path)})
    assert response.status_code == 202
    assert QueueItem.objects.get().status == Status.PENDING


@requires_corpus
def test_mixed_real_upload_keeps_the_good_and_reports_the_broken(
    user_client, media_root
):
    response = user_client.post(
        UPLOAD_URL,
        {
            "file": [
                corpus_upload("pdf/multicolumn.pdf"),
                corpus_upload("broken/png-renamed.pdf"),
                corpus_upload("docx/example.docx"),
            ]
        },
    )
    assert response.status_code == 302
    assert set(Document.objects.values_list("original_filename", flat=True)) == {
        "multicolumn.pdf",
        "example.docx",
    }
    assert len(stored_files(media_root)) == 2
    assert any(
        "png-renamed.pdf" in m and "named like a PDF" in m
        for m in messages_of(response)
    )
