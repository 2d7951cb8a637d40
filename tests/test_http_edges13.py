"""HTTP edge cases found by reviews: a file name in Latin-1 (old clients), the
connection after a 413 answered before the body, and a bad Host on the endpoints
that scripts call."""

from __future__ import annotations

import json
import os
import signal
import socket
from collections.abc import Iterator

import pytest
from django.test import Client

from documents.models import Document
from tests import test_web_server as web
from tests.test_web_server import token  # noqa: F401 - a fixture

PORTS = range(18850, 18900)  # this module's own range: never shared with others
BOUNDARY = "edges13"
# How some old clients send "résumé.txt": the name's bytes in Latin-1, not UTF-8.
LATIN1_NAME = b"r\xe9sum\xe9.txt"


@pytest.fixture
def server(child_env, tmp_path, monkeypatch) -> Iterator[web.Server]:
    """gunicorn as ``make run`` starts it (tests/test_web_server.py), on our ports."""
    monkeypatch.setattr(web, "PORTS", PORTS)
    server = web.launch(child_env, tmp_path)
    try:
        yield server
    finally:
        os.killpg(server.proc.pid, signal.SIGKILL)
        server.proc.wait(10)


def file_part(raw_name: bytes) -> bytes:
    return (
        f"--{BOUNDARY}\r\n".encode()
        + b'Content-Disposition: form-data; name="file"; filename="'
        + raw_name
        + b'"\r\nContent-Type: text/plain\r\n\r\nA CV, in plain text.\r\n'
        + f"--{BOUNDARY}--\r\n".encode()
    )


def read_until_closed(sock: socket.socket) -> bytes:
    raw = b""
    while chunk := sock.recv(65536):
        raw += chunk
    return raw


# --- A file name in Latin-1 ---------------------------------------------------------


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_latin1_file_name_on_the_api_is_read_not_dropped(server, token):  # noqa: F811
    """Django's parser drops a part header that is not UTF-8, and with it the
    part: the API answered "Send the document as a file", as if none was sent."""
    body = file_part(LATIN1_NAME)
    head = web.upload_head("/api/documents/", len(body), BOUNDARY, f"Token {token}")
    with socket.create_connection(("127.0.0.1", server.port), 15) as sock:
        sock.sendall(head + body)
        status, response = web.read_response(sock)
    assert status == 202, response
    assert json.loads(response)["filename"] == "résumé.txt"


@pytest.mark.django_db
def test_a_latin1_file_name_on_the_upload_form_is_read_not_dropped(user_client):
    response = user_client.generic(
        "POST",
        "/documents/upload/",
        file_part(LATIN1_NAME),
        content_type=f"multipart/form-data; boundary={BOUNDARY}",
    )
    assert response.status_code == 302, response.content.decode()
    [document] = Document.objects.all()
    assert document.original_filename == "résumé.txt"


@pytest.mark.django_db
def test_a_utf8_file_name_and_a_latin1_field_stay_as_they_were(user_client):
    """Only a header line that is not UTF-8 is read as Latin-1: a UTF-8 name is
    unchanged, and so is a field's value (its bytes are the body's, not a header)."""
    body = file_part("résumé-ü.txt".encode()).replace(
        f"--{BOUNDARY}--".encode(),
        f"--{BOUNDARY}\r\n".encode()
        + b'Content-Disposition: form-data; name="note"\r\n\r\nd\xe9j\xe0\r\n'
        + f"--{BOUNDARY}--".encode(),
    )
    response = user_client.generic(
        "POST",
        "/documents/upload/",
        body,
        content_type=f"multipart/form-data; boundary={BOUNDARY}",
    )
    assert response.status_code == 302, response.content.decode()
    [document] = Document.objects.all()
    assert document.original_filename == "résumé-ü.txt"


# --- The connection after a 413 ---------------------------------------------------


def refused_head(key: str, chunked: bool = False) -> bytes:
    """An upload to the API declaring 20 MB (its limit here: 1 MB + 1 MB), or sent
    chunked, without a length (411)."""
    if chunked:
        return (
            "POST /api/documents/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Token {key}\r\nTransfer-Encoding: chunked\r\n"
            f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n\r\n"
        ).encode()
    return web.upload_head("/api/documents/", 20 * web.MB, BOUNDARY, f"Token {key}")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("chunked", "status"), [(False, b"413"), (True, b"411")])
def test_a_body_refused_before_it_is_read_closes_the_connection(
    server,
    token,  # noqa: F811
    chunked,
    status,
):
    """The 413 said "Connection: keep-alive": gunicorn then spent a thread reading
    (and throwing away) the body it had just refused, until its drain gave up."""
    with socket.create_connection(("127.0.0.1", server.port), 15) as sock:
        sock.sendall(refused_head(token, chunked))
        raw = read_until_closed(sock)  # closed by the server, nothing more sent
    head = raw.partition(b"\r\n\r\n")[0].lower()
    assert head.startswith(b"http/1.1 " + status)
    assert b"\r\nconnection: close" in head


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_unread_body_of_a_413_is_never_read_as_a_request(server, token):  # noqa: F811
    """What follows a refused head is its body, whatever it looks like: a request
    inside it is not answered (it would pass the checks the refused one met)."""
    smuggled = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port), 15) as sock:
        sock.sendall(refused_head(token) + smuggled)
        raw = read_until_closed(sock)
    assert raw.startswith(b"HTTP/1.1 413 ")
    assert raw.count(b"HTTP/1.1 ") == 1, raw


# --- A Host header the site does not serve ----------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/queue/cron/"),
        ("post", "/queue/cron"),  # crontab lines without the slash work too
        ("get", "/api/documents/"),
        ("post", "/api/documents/"),
    ],
)
def test_a_bad_host_on_the_endpoints_for_scripts_is_a_json_error(
    settings, method, path
):
    """The cron endpoint answered the site's HTML page; the API, JSON saying only
    "The request could not be understood."."""
    settings.CRON_TOKEN = "cron-token"
    client = Client(HTTP_HOST="evil.example")
    response = getattr(client, method)(
        path, headers={"Authorization": "Bearer cron-token"}
    )
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == "disallowed_host"
    assert "“evil.example”" in error["message"]


@pytest.mark.django_db
def test_a_bad_host_on_the_site_is_still_its_page():
    response = Client(HTTP_HOST="evil.example").get("/documents/upload/")
    assert response.status_code == 400
    assert "<title>Bad request · Documents</title>" in response.content.decode()


@pytest.mark.django_db
def test_a_cron_run_that_fails_on_our_side_is_a_json_error(settings, monkeypatch):
    """A failure inside the cron endpoint was the site's HTML 500 page."""
    from jobqueue import views

    def broken(**_):
        raise RuntimeError("the drain broke")

    monkeypatch.setattr(views, "process_document_queue", broken)
    settings.CRON_TOKEN = "cron-token"
    response = Client(raise_request_exception=False).post(
        "/queue/cron/", headers={"Authorization": "Bearer cron-token"}
    )
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "server_error"
    # The site's pages keep theirs.
    from django.test import RequestFactory

    from config.middleware import server_error

    page = server_error(RequestFactory().get("/documents/"))
    assert page["Content-Type"].startswith("text/html")
