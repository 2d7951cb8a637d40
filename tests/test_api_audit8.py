"""The API as a script meets it (audit 8): every answer of a whole session — upload,
status, list and its filters, reprocess, PATCH, DELETE and their refusals — is what
the OpenAPI schema at /api/schema/ says for that status code; a filter given twice, a
hostile value quoted in a message, a reprocess at the active-job limit, and OPTIONS."""

from __future__ import annotations

import json

import jsonschema
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from documents.models import Document
from documents.tokens import create_token
from jobqueue.models import QueueItem, Status
from tests.documents.test_api_errors import assert_error

pytestmark = pytest.mark.django_db

API_URL = "/api/documents/"


def script(user, scheme: str = "Token") -> Client:
    """A client that authenticates as scripts do: a key in the Authorization header."""
    _, key = create_token(user)
    return Client(HTTP_AUTHORIZATION=f"{scheme} {key}")


def text_file(content: bytes, name: str = "report.txt") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="text/plain")


def _json_schema(node: object) -> object:
    """OpenAPI 3.0's schema objects as JSON Schema: ``nullable`` as a null type,
    references into ``definitions``."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _json_schema(value) for key, value in node.items()}
    if "$ref" in node:
        node["$ref"] = "#/definitions/" + node["$ref"].rsplit("/", 1)[-1]
    if node.pop("nullable", False):
        if "type" in node:
            node["type"] = [node["type"], "null"]
        else:
            node = {"anyOf": [node, {"type": "null"}]}
    return node


@pytest.fixture
def schema() -> dict:
    response = Client().get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    return json.loads(response.content)


def conforms(schema: dict, template: str, method: str, response) -> None:
    """The answer is documented for its status code: its headers, and its body valid
    against the schema given for it (or no body where none is)."""
    operation = schema["paths"][template][method]
    documented = operation["responses"].get(str(response.status_code))
    assert documented, f"{method} {template}: {response.status_code} undocumented"
    for header in documented.get("headers", {}):
        assert response.has_header(header), (method, template, header)
    content = documented.get("content")
    if not content:
        assert not response.content, (method, template, response.content[:100])
        return
    media_type = response["Content-Type"].split(";")[0]
    assert media_type in content, (method, template, media_type)
    body_schema = _json_schema(content[media_type]["schema"])
    body_schema["definitions"] = _json_schema(schema["components"]["schemas"])
    jsonschema.validate(json.loads(response.content), body_schema)


@pytest.mark.parametrize("scheme", ["Token", "Bearer"])
def test_a_scripts_session_answers_as_the_schema_says(
    schema, user, other_user, settings, scheme
):
    settings.USER_MAX_ACTIVE_JOBS = 2
    api = script(user, scheme)
    item = "/api/documents/{id}/"

    upload = api.post(
        API_URL, {"file": text_file(b"first words\n", "r\u00e9sum\u00e9.txt")}
    )
    conforms(schema, API_URL, "post", upload)
    assert upload.status_code == 202
    created = upload.json()
    assert (
        created["status"] == "pending" and created["filename"] == "r\u00e9sum\u00e9.txt"
    )
    assert created["status_url"].endswith(upload["Location"])
    url = upload["Location"]

    refusals = [
        api.post(API_URL, {"file": text_file(b"first words\n")}),  # 409 duplicate
        api.post(API_URL, {"file": text_file(b"")}),  # 400 empty
        api.post(API_URL, {"file": text_file(b"x\n"), "priority": 5}),  # 403
        api.post(API_URL, {"file": "text"}),  # 400, no file
        api.post(API_URL, b"{}", content_type="application/json"),  # 415
    ]
    assert [r.status_code for r in refusals] == [409, 400, 403, 400, 415]
    for refused in refusals:
        conforms(schema, API_URL, "post", refused)
    api.post(API_URL, {"file": text_file(b"second\n", "b.txt")})
    over = api.post(API_URL, {"file": text_file(b"third\n", "c.txt")})
    assert over.status_code == 429 and int(over["Retry-After"]) > 0
    conforms(schema, API_URL, "post", over)

    for query in (
        {},
        {"status": "PENDING", "type": "txt"},
        {"q": "words"},
        {"status": "done"},
        {"page": "0"},
        {"page": "7"},
    ):
        conforms(schema, API_URL, "get", api.get(API_URL, query))

    detail = api.get(url)
    conforms(schema, item, "get", detail)
    assert {"status", "error_type", "error_message", "page_count", "text"} <= set(
        detail.json()
    )
    conforms(schema, item, "get", api.get(url, HTTP_IF_NONE_MATCH=detail["ETag"]))
    conforms(schema, item, "get", script(other_user).get(url))  # 404, not theirs

    patched = api.patch(url, {"tags": ["a"]}, content_type="application/json")
    conforms(schema, item, "patch", patched)
    conforms(
        schema,
        item,
        "patch",
        api.patch(url, {"status": "done"}, content_type="application/json"),
    )

    again = api.post(url + "reprocess/")
    conforms(schema, "/api/documents/{id}/reprocess/", "post", again)
    assert again.status_code == 202

    gone = api.delete(url)
    conforms(schema, item, "delete", gone)
    assert gone.status_code == 204
    conforms(schema, item, "delete", api.delete(url))  # 404 now


@pytest.mark.parametrize("name", ["status", "type", "q", "page", "page_size"])
def test_a_filter_given_twice_is_refused_not_half_read(user, make_document, name):
    # DRF read the last of ?status=pending&status=failed: a script asking for both
    # got the failed ones only, as if no document were waiting.
    make_document()
    values = {
        "status": ["pending", "failed"],
        "type": ["pdf", "txt"],
        "q": ["hello", "world"],
        "page": ["1", "2"],
        "page_size": ["5", "10"],
    }[name]
    error = assert_error(script(user).get(API_URL, {name: values}), 400, "invalid")
    assert list(error["fields"]) == [name]
    assert f"?{name}= once" in error["message"]


def test_a_filters_value_is_quoted_short_and_without_bidi_controls(user):
    api = script(user)
    error = assert_error(api.get(API_URL, {"status": "x" * 3000}), 400, "invalid")
    assert len(error["message"]) < 200 and "…" in error["message"]
    # U+202E would show "‮fdp.exe" reversed around the quote in a terminal.
    error = assert_error(api.get(API_URL, {"type": "a\u202efdp"}), 400, "invalid")
    assert "\u202e" not in error["message"] and "a\\u202efdp" in error["message"]


def test_reprocess_at_the_active_job_limit_adds_nothing_so_is_not_refused(
    user, settings, make_document
):
    settings.USER_MAX_ACTIVE_JOBS = 1
    api = script(user)
    pk = api.post(API_URL, {"file": text_file(b"waiting\n")}).json()["id"]
    # The waiting extraction reads it anew: nothing is added, so no 429 (it was).
    answer = api.post(f"{API_URL}{pk}/reprocess/")
    assert answer.status_code == 202, answer.content[:300]
    assert QueueItem.objects.active().count() == 1
    # Running: 409 says so, where the limit answered 429 "wait for some to finish".
    QueueItem.objects.filter(document_id=pk).update(status=Status.PROCESSING)
    Document.objects.filter(pk=pk).update(status=Status.PROCESSING)
    assert_error(api.post(f"{API_URL}{pk}/reprocess/"), 409, "already_queued")
    # A finished document would add a job: over the limit, 429 with Retry-After.
    finished = make_document(content=b"done\n", name="done.txt")
    Document.objects.filter(pk=finished.pk).update(status=Status.FAILED)
    refused = api.post(f"{API_URL}{finished.pk}/reprocess/")
    assert_error(refused, 429, "too_many_active_jobs")
    assert int(refused["Retry-After"]) > 0
    assert QueueItem.objects.active().count() == 1


def test_options_say_what_each_body_takes(user, make_document):
    api = script(user)
    pk = make_document().pk
    upload = api.options(API_URL).json()["actions"]["POST"]
    assert upload["file"]["required"] is True and not upload["file"]["read_only"]
    assert {"priority", "allow_duplicates"} <= set(upload)
    assert "status" not in upload  # the answer's fields, not the request's
    patch = api.options(f"{API_URL}{pk}/").json()["actions"]["PATCH"]
    assert set(patch) == {"title", "tags"}
    reprocess = api.options(f"{API_URL}{pk}/reprocess/").json()["actions"]["POST"]
    assert set(reprocess) == {"priority"}
    assert assert_error(Client().options(API_URL), 401, "not_authenticated")
