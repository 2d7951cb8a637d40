"""Uploads at the edges of what a request carries: files whose names have nothing
usable in them, and bodies that declare more than can be accepted."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.test import Client

from documents.middleware import MB, max_api_body_bytes, max_body_bytes
from documents.models import Document
from documents.uploads import FILE_AS_TEXT
from tests.documents.test_upload import (
    API_URL,
    PDF,
    STORED_NAME,
    TEXT,
    UPLOAD_URL,
    assert_nothing_left,
    multipart,
    page_shows,
)
from tests.files import pdf_bytes

pytestmark = pytest.mark.django_db

# Names Django's parser drops once it has sanitised them, and names that keep
# nothing once ours has: each is still a file its sender chose to send.
UNUSABLE_NAMES = [
    "/",
    "..",
    ".",
    "///",
    "\\",
    "dir/",
    "&#47;",
    "\x07\x1b\x7f",
    "...",
    " . ",
    "  .txt",  # an extension alone: no name left to show
]


@pytest.fixture
def token_client(user) -> Client:
    """A script's client: token auth, and CSRF checks on as in production."""
    out = io.StringIO()
    call_command("create_api_token", user.username, stdout=out)
    return Client(
        enforce_csrf_checks=True,
        headers={"authorization": f"Token {out.getvalue().strip()}"},
    )


# --- Files whose names have nothing usable ------------------------------------------


@pytest.mark.parametrize("name", UNUSABLE_NAMES, ids=range(len(UNUSABLE_NAMES)))
def test_the_form_keeps_a_file_whose_name_is_unusable_under_a_name_of_ours(
    user_client, name
):
    response = user_client.post(UPLOAD_URL, **multipart([(name, b"Some words.\n")]))
    assert response.status_code == 302
    document = Document.objects.get()
    assert (document.original_filename, document.mime_type) == ("upload.txt", TEXT)
    assert STORED_NAME.fullmatch(document.file.name)
    assert document.file.name.endswith(".txt")


@pytest.mark.parametrize("name", UNUSABLE_NAMES, ids=range(len(UNUSABLE_NAMES)))
def test_the_api_keeps_a_file_whose_name_is_unusable_under_a_name_of_ours(
    token_client, name
):
    response = token_client.post(API_URL, **multipart([(name, pdf_bytes())]))
    assert response.status_code == 202
    assert response.json()["filename"] == "upload.pdf"
    assert Document.objects.get().mime_type == PDF


def test_the_api_with_a_session_keeps_it_too(user_client):
    # A session's body is parsed by the middleware, a token's by DRF: both keep it.
    response = user_client.post(API_URL, **multipart([("..", b"Some words.\n")]))
    assert response.status_code == 202
    assert response.json()["filename"] == "upload.txt"


def test_a_nameless_file_beside_named_ones_is_kept_with_them(user_client):
    files = [("a.txt", b"First.\n"), ("/", b"Second.\n"), ("b.txt", b"Third.\n")]
    response = user_client.post(UPLOAD_URL, **multipart(files))
    assert response.status_code == 302
    names = sorted(Document.objects.values_list("original_filename", flat=True))
    assert names == ["a.txt", "b.txt", "upload.txt"]


def test_a_nameless_file_that_is_refused_is_refused_for_its_content(
    user_client, media_root
):
    response = user_client.post(UPLOAD_URL, **multipart([("..", b"")]))
    assert response.status_code == 400
    [error] = response.context["form"].errors["file"]
    assert error == "“upload” is empty (0 bytes)."
    assert_nothing_left(media_root)


def test_a_nameless_file_over_the_limit_is_stopped_while_it_streams_in(
    user_client, settings, media_root
):
    settings.MAX_UPLOAD_MB = 1
    content = b"a" * (MB + MB // 2)
    response = user_client.post(UPLOAD_URL, **multipart([("/", content)]))
    assert response.status_code == 413
    [error] = response.context["errors"]
    assert "“upload” is over the 1.0 MB limit" in error
    assert_nothing_left(media_root)


def test_a_file_with_an_empty_name_is_refused_saying_why(
    user_client, token_client, media_root
):
    # Django's parser takes it for a text field: its bytes are not a file any more.
    response = user_client.post(UPLOAD_URL, **multipart([("", b"Some words.\n")]))
    assert response.status_code == 400
    assert response.context["form"].errors["file"] == [FILE_AS_TEXT]
    assert page_shows(response, FILE_AS_TEXT)
    response = token_client.post(API_URL, **multipart([("", b"Some words.\n")]))
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["message"] == FILE_AS_TEXT and error["fields"] == {
        "file": [FILE_AS_TEXT]
    }
    assert_nothing_left(media_root)


def test_no_file_chosen_on_the_form_is_still_required(user_client, media_root):
    # What a browser sends when no file was chosen: an empty name and no bytes.
    response = user_client.post(UPLOAD_URL, **multipart([("", b"")]))
    assert response.status_code == 400
    assert response.context["form"].errors["file"] == [
        "Choose one or more files to upload."
    ]
    assert_nothing_left(media_root)


# --- Bodies that declare more than can be accepted ------------------------------------


class UnreadBody(io.RawIOBase):
    """A multipart body (one file) that fails the test if more than a few KB of it
    are read: the server must answer from its declared length alone."""

    ALLOWED = 4096
    HEAD = b'--b\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\n\r\n'

    def __init__(self) -> None:
        self.served = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.served >= self.ALLOWED:
            raise AssertionError("the body was read past its first few KB")
        size = min(len(buffer), self.ALLOWED - self.served)
        buffer[:size] = (self.HEAD[self.served :] + b"a" * size)[:size]
        self.served += size
        return size


def post_declaring(client: Client, path: str, length: int) -> tuple[object, UnreadBody]:
    """POST a multipart body that declares ``length`` bytes and sends almost none."""
    body = UnreadBody()
    response = client.generic(
        "POST",
        path,
        CONTENT_TYPE="multipart/form-data; boundary=b",
        CONTENT_LENGTH=str(length),
        **{"wsgi.input": body},
    )
    return response, body


@pytest.mark.parametrize("path", [API_URL, API_URL.rstrip("/")])
def test_an_api_upload_declaring_more_than_one_file_allows_is_refused_unread(
    token_client, settings, media_root, path
):
    settings.MAX_UPLOAD_MB = 1
    # Over what one file may take, though under a full upload form's limit.
    length = max_api_body_bytes() + 1
    assert length < max_body_bytes()
    response, body = post_declaring(token_client, path, length)
    assert response.status_code == 413
    error = response.json()["error"]
    assert error["code"] == "too_large" and error["fields"] == {}
    assert "the API takes one file of at most 1.0 MB" in error["message"]
    assert body.served == 0
    assert_nothing_left(media_root)


def test_an_api_upload_with_a_session_declaring_too_much_is_refused_unread(
    user_client, settings
):
    settings.MAX_UPLOAD_MB = 1
    response, body = post_declaring(user_client, API_URL, max_api_body_bytes() + 1)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"
    assert body.served == 0


def test_a_form_upload_declaring_more_than_the_form_takes_is_refused_unread(
    user_client, settings, media_root
):
    settings.MAX_UPLOAD_MB, settings.MAX_UPLOAD_FILES = 1, 2
    response, body = post_declaring(user_client, UPLOAD_URL, max_body_bytes() + 1)
    assert response.status_code == 413
    [error] = response.context["errors"]
    assert "the limit is 2 files of 1.0 MB each" in error
    assert page_shows(response, error)
    assert body.served == 0
    assert_nothing_left(media_root)


def test_the_form_still_takes_more_than_one_api_upload(user_client, settings):
    settings.MAX_UPLOAD_MB, settings.MAX_UPLOAD_FILES = 1, 3
    files = [(f"n{i}.txt", b"%d words\n" % i + b"a" * (MB - 100)) for i in range(3)]
    data = multipart(files)
    assert max_api_body_bytes() < len(data["data"]) <= max_body_bytes()
    response = user_client.post(UPLOAD_URL, **data)
    assert response.status_code == 302
    assert Document.objects.count() == 3


def test_an_api_upload_under_the_declared_limit_is_still_checked_as_it_streams(
    token_client, settings, media_root
):
    # Its length passes; its one file does not, and is stopped at the limit.
    settings.MAX_UPLOAD_MB = 1
    data = multipart([("big.txt", b"a" * (MB + MB // 2))])
    assert len(data["data"]) <= max_api_body_bytes()
    response = token_client.post(API_URL, **data)
    assert response.status_code == 413
    assert "“big.txt” is over the 1.0 MB limit" in response.json()["error"]["message"]
    assert_nothing_left(media_root)
