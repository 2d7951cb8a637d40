"""The product from outside (audit 12), as a script meets it through a running server.
A PATCH or a reprocess racing the same script's DELETE of the document answered a
server error (the update matched no row; the queue said "There is no document");
a reprocess's 202 had no ``Location``, where the upload's has; the list answered every
document to a parameter it does not take (``?stauts=failed``, ``?tag=``), as if it
were the list asked for; and a file name too long for a multipart part's headers
was blamed on a missing boundary."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import OperationalError
from django.test import Client

from documents import api, services
from documents.models import Document
from documents.services import document_delete
from documents.tokens import create_token
from jobqueue.models import QueueItem
from tests.documents.test_api_errors import assert_error

pytestmark = pytest.mark.django_db

API_URL = "/api/documents/"


def script(user) -> Client:
    """A client as a script is: a key in the Authorization header."""
    _, key = create_token(user)
    return Client(HTTP_AUTHORIZATION=f"Token {key}")


def uploaded(api_client: Client, content: bytes = b"some words\n") -> int:
    upload = SimpleUploadedFile("note.txt", content, content_type="text/plain")
    response = api_client.post(API_URL, {"file": upload})
    assert response.status_code == 202
    return response.json()["id"]


# --- A change racing a DELETE of the same document ---------------------------------


# Committed as a server commits each request: the queue's insert of a job for a
# document deleted meanwhile fails at its commit (a foreign key), as it does there.
RACE = pytest.mark.django_db(transaction=True)


def deleted_first(monkeypatch, name: str) -> None:
    """``documents.api.<name>`` runs just after another request deleted the
    document: the moment a script's DELETE sent beside it lands."""
    original = getattr(api, name)

    def racing(*, document: Document, **kwargs):
        document_delete(document=Document.objects.get(pk=document.pk))
        return original(document=document, **kwargs)

    monkeypatch.setattr(api, name, racing)


@RACE
def test_a_patch_of_a_document_deleted_meanwhile_is_404(user, monkeypatch):
    client = script(user)
    pk = uploaded(client)
    deleted_first(monkeypatch, "document_update_details")
    # It was a 500: "Save with update_fields did not affect any rows."
    response = client.patch(
        f"{API_URL}{pk}/",
        {"title": "Q3", "tags": ["x"]},
        content_type="application/json",
    )
    error = assert_error(response, 404, "not_found")
    assert error["message"] == (
        f"There is no document {pk}, or it is not one you may see."
    )
    assert not Document.objects.exists()


@RACE
def test_a_reprocess_of_a_document_deleted_meanwhile_is_404(user, monkeypatch):
    client = script(user)
    pk = uploaded(client)
    QueueItem.objects.update(status="completed")
    Document.objects.update(status="completed")
    deleted_first(monkeypatch, "document_reprocess")
    # It was a 500: the queue's ValueError "There is no document N."
    response = client.post(f"{API_URL}{pk}/reprocess/")
    assert_error(response, 404, "not_found")
    assert not QueueItem.objects.exists()


@RACE
def test_a_reprocess_whose_document_is_deleted_once_queued_is_404(user, monkeypatch):
    client = script(user)
    pk = uploaded(client)
    QueueItem.objects.update(status="completed")
    Document.objects.update(status="completed")

    class DeletedOnceQueued(services.DocumentQueueService):
        def enqueue(self, document_id, operation, priority=0):
            job = super().enqueue(document_id, operation, priority)
            document_delete(document=Document.objects.get(pk=document_id))
            return job

    monkeypatch.setattr(services, "DocumentQueueService", DeletedOnceQueued)
    # It was a 500: the document's refresh found no row.
    assert_error(client.post(f"{API_URL}{pk}/reprocess/"), 404, "not_found")


def test_another_failure_of_a_change_is_still_a_server_error(user, monkeypatch):
    """Only a document that is gone turns into a 404: a bug is not hidden."""
    client = script(user)
    pk = uploaded(client)

    def broken(**kwargs):
        raise ValueError("a bug")

    monkeypatch.setattr(api, "document_update_details", broken)
    client.raise_request_exception = False
    response = client.patch(
        f"{API_URL}{pk}/", {"title": "Q3"}, content_type="application/json"
    )
    assert response.status_code == 500
    assert Document.objects.filter(pk=pk).exists()


# --- Where to poll after a reprocess ---------------------------------------------


def test_a_reprocess_says_where_to_poll_as_an_upload_does(user):
    client = script(user)
    pk = uploaded(client)
    response = client.post(f"{API_URL}{pk}/reprocess/")
    assert response.status_code == 202
    # There was no Location: a client following it (as for the upload) had nowhere.
    assert response["Location"] == f"{API_URL}{pk}/"
    assert response.json()["status_url"].endswith(response["Location"])
    schema = json.loads(Client().get("/api/schema/", {"format": "json"}).content)
    answer = schema["paths"]["/api/documents/{id}/reprocess/"]["post"]["responses"]
    assert "Location" in answer["202"]["headers"]


# --- Parameters the list does not take ----------------------------------------------


@pytest.mark.parametrize(
    "query", [{"stauts": "failed"}, {"tag": "invoices"}, {"ordering": "-created_at"}]
)
def test_a_parameter_the_list_does_not_take_is_refused_by_name(user, query):
    client = script(user)
    uploaded(client)
    [(name, value)] = query.items()
    # It answered every document, as if they were the ones asked for.
    error = assert_error(client.get(API_URL, query), 400, "invalid")
    assert error["fields"] == {
        name: [
            f"The list takes no ?{name}=: it takes ?status=, ?type=, ?q=, ?page= "
            "and ?page_size=."
        ]
    }
    assert error["message"] == error["fields"][name][0]


def test_the_list_still_takes_each_of_its_parameters(user):
    client = script(user)
    pk = uploaded(client)
    query = {"status": "pending", "type": "txt", "page": "1", "page_size": "5"}
    response = client.get(API_URL, {**query, "format": "json"})
    assert response.status_code == 200
    assert [d["id"] for d in response.json()["results"]] == [pk]
    assert client.get(API_URL, {"q": "words"}).status_code == 200


# --- A file name too long for a part's headers ---------------------------------------


def test_a_file_name_too_long_for_the_parts_headers_says_so(user):
    name = "x" * 2000 + ".txt"
    body = (
        f'--B\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
        "Content-Type: text/plain\r\n\r\nhello\r\n--B--\r\n"
    ).encode()
    response = script(user).generic(
        "POST", API_URL, body, content_type="multipart/form-data; boundary=B"
    )
    error = assert_error(response, 400, "parse_error")
    # It said to let the client write the Content-Type with its boundary.
    assert error["message"] == (
        "A part of the multipart body has headers over 1,024 bytes, most likely "
        "for a very long file name: send the file under a shorter name."
    )
    assert not Document.objects.exists()


# --- When to send again an upload the database refused ----------------------------


def test_an_upload_the_database_refused_says_when_to_try_again(user, monkeypatch):
    def refused(self, document_id, operation, priority=0):
        raise OperationalError("database is locked")

    monkeypatch.setattr(services.DocumentQueueService, "enqueue", refused)
    upload = SimpleUploadedFile("note.txt", b"words\n", content_type="text/plain")
    response = script(user).post(API_URL, {"file": upload})
    error = assert_error(response, 503, "not_stored")
    assert "the database did not accept it" in error["message"]
    # There was none: HTTP clients' retries (urllib3's) wait for it on a 503.
    assert response["Retry-After"] == "5"
    assert not Document.objects.exists()
    schema = json.loads(Client().get("/api/schema/", {"format": "json"}).content)
    answer = schema["paths"]["/api/documents/"]["post"]["responses"]["503"]
    assert "Retry-After" in answer["headers"]


# --- A JSON body that begins with a byte order mark --------------------------------


def test_a_json_body_with_a_utf8_byte_order_mark_is_read(user):
    client = script(user)
    pk = uploaded(client)
    body = '\ufeff{"title": "Q3 report"}'.encode()  # Windows PowerShell's "UTF8"
    # It was a 400: "unexpected UTF-8 BOM (decode using utf-8-sig)".
    response = client.patch(f"{API_URL}{pk}/", body, content_type="application/json")
    assert response.status_code == 200, response.content
    assert response.json()["title"] == "Q3 report"
    # Anywhere else, it is not JSON's (a mark inside the text stays an error).
    response = client.patch(
        f"{API_URL}{pk}/",
        b' \xef\xbb\xbf{"title": "x"}',
        content_type="application/json",
    )
    assert_error(response, 400, "parse_error")


# --- Titles and tags that would reorder what they are shown in ------------------------


def test_a_title_and_tags_are_kept_without_bidi_overrides_or_controls(user):
    client = script(user)
    pk = uploaded(client)
    # U+202E shows "\u202efdp.exe" as "exe.pdf": the file name is kept without it, and
    # the title is shown where the file name was (and quoted in the API's messages).
    response = client.patch(
        f"{API_URL}{pk}/",
        {
            "title": "invoice\u202efdp.exe",
            "tags": ["\u2066x\u2069", "a\x07b", "\u202d"],
        },
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    assert (response.json()["title"], response.json()["tags"]) == (
        "invoicefdp.exe",
        ["ab", "x"],
    )
    # Letters that join or separate (Persian's U+200C) and accents stay.
    title = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645 cafe\u0301"
    response = client.patch(
        f"{API_URL}{pk}/", {"title": title}, content_type="application/json"
    )
    assert response.json()["title"] == title


def test_the_page_keeps_a_title_without_bidi_overrides_too(user, user_client):
    pk = uploaded(script(user))
    response = user_client.post(
        f"/documents/{pk}/edit/", {"title": "\u202eQ3 \u202c report", "tags": "\u202ex"}
    )
    assert response.status_code == 302
    document = Document.objects.get(pk=pk)
    assert document.title == "Q3 report"
    assert [tag.name for tag in document.tags.all()] == ["x"]


# --- The schema's error types ---------------------------------------------------------


def test_the_schema_lists_the_error_types_a_document_may_have():
    schema = json.loads(Client().get("/api/schema/", {"format": "json"}).content)
    components = schema["components"]["schemas"]
    field = components["Document"]["properties"]["error_type"]
    # It was any string: a client generated from the schema could not switch on it.
    kinds = [components[ref["$ref"].rsplit("/", 1)[-1]] for ref in field["oneOf"]]
    assert {value for kind in kinds for value in kind["enum"]} == {
        "timeout",
        "corruption",
        "extractor_missing",
        "unsupported",
        "unknown",
        None,
    }
    assert field["nullable"] and field["readOnly"]


# --- The original file, for a script ------------------------------------------------


def test_a_script_downloads_the_file_it_uploaded(user, other_user, staff_user):
    client = script(user)
    content = "r\u00e9sum\u00e9 words\n".encode()
    upload = SimpleUploadedFile("r\u00e9sum\u00e9.txt", content, "text/plain")
    pk = client.post(API_URL, {"file": upload}).json()["id"]
    url = f"{API_URL}{pk}/file/"
    # The site's download sent a token to the HTML login page (302): no way back.
    for answer in (client.get(url), client.get(url, HTTP_ACCEPT="text/plain")):
        assert answer.status_code == 200
        assert b"".join(answer.streaming_content) == content
        assert answer["Content-Type"] == "text/plain"
        assert answer["Content-Disposition"] == (
            "attachment; filename*=utf-8''r%C3%A9sum%C3%A9.txt"
        )
        assert answer["Content-Security-Policy"] == "sandbox; default-src 'none'"
    assert client.get(url.rstrip("/")).status_code == 200
    assert script(staff_user).get(url).status_code == 200
    error = assert_error(script(other_user).get(url), 404, "not_found")
    assert error["message"] == (
        f"There is no document {pk}, or it is not one you may see."
    )
    assert_error(Client().get(url), 401, "not_authenticated")
    assert_error(client.post(url), 405, "method_not_allowed")


def test_a_file_missing_from_storage_is_a_404_saying_so(user):
    client = script(user)
    pk = uploaded(client)
    document = Document.objects.get(pk=pk)
    document.file.storage.delete(document.file.name)
    error = assert_error(client.get(f"{API_URL}{pk}/file/"), 404, "not_found")
    assert error["message"] == (
        f"The file of document {pk} is missing from the server's storage: tell an "
        "operator (manage.py check_storage lists such documents)."
    )


def test_the_schema_describes_the_file_download():
    schema = json.loads(Client().get("/api/schema/", {"format": "json"}).content)
    answer = schema["paths"]["/api/documents/{id}/file/"]["get"]["responses"]["200"]
    assert answer["content"] == {
        "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
    }
