"""The API as a script author meets it: what an outside audit found (DESIGN.md,
"Contracts"), each answer clear and in the API's error shape."""

from __future__ import annotations

import pytest
import yaml
from django.core.management import call_command
from django.test import Client

from documents.models import Document
from jobqueue.models import Status
from tests.documents.test_api_errors import assert_error, text_file

pytestmark = pytest.mark.django_db

API_URL = "/api/documents/"


@pytest.fixture
def api(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


# --- Uploads -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ('{"file": "aGVsbG8=", "priority": 0}', "application/json"),
        ("file=hello", "application/x-www-form-urlencoded"),  # curl --data-binary
    ],
)
def test_an_upload_in_a_body_that_cannot_carry_a_file_is_415_saying_how(
    api, body, content_type
):
    # It used to be 400 "No file was submitted.", as if the field were misspelt.
    error = assert_error(
        api.post(API_URL, body, content_type=content_type),
        415,
        "unsupported_media_type",
    )
    assert "multipart/form-data" in error["message"] and "-F file=@" in error["message"]
    assert not Document.objects.exists()


@pytest.mark.parametrize("field", ["file2", "files", "document"])
def test_a_file_in_another_field_is_refused_not_dropped(api, field):
    # With "file" beside it, the other file was silently left out (202).
    for data in (
        {"file": text_file("a.txt"), field: text_file("b.txt", b"other\n")},
        {field: text_file("b.txt", b"other\n")},
    ):
        error = assert_error(api.post(API_URL, data), 400, "invalid")
        assert f"“{field}”" in error["fields"]["file"][0]
    assert not Document.objects.exists()


# --- The list's filters and pages ------------------------------------------------------


def test_status_is_taken_in_any_case_and_a_wrong_one_lists_the_states(
    api, make_document
):
    failed = make_document(name="a.txt")
    make_document(name="b.txt")
    Document.objects.filter(pk=failed.pk).update(status=Status.FAILED)
    response = api.get(API_URL, {"status": "FAILED"})  # as ?type=PDF is taken
    assert response.status_code == 200
    assert [d["id"] for d in response.json()["results"]] == [failed.pk]
    error = assert_error(api.get(API_URL, {"status": "done"}), 400, "invalid")
    assert "“done”" in error["message"]
    assert all(state in error["message"] for state in Status.values)


def test_type_takes_a_file_extension(api, make_document):
    text = make_document(name="a.txt")
    for value in ("txt", ".txt", "TXT"):
        response = api.get(API_URL, {"type": value})
        assert response.status_code == 200, response.content[:300]
        assert [d["id"] for d in response.json()["results"]] == [text.pk]


def test_a_blank_search_lists_everything_as_an_empty_one_does(api, make_document):
    document = make_document()
    for q in ("", "   "):
        response = api.get(API_URL, {"q": q})
        assert response.status_code == 200, response.content[:300]
        assert response.json()["count"] == 1
        assert [d["id"] for d in response.json()["results"]] == [document.pk]


# --- Authentication and addresses ----------------------------------------------------


def test_a_401_says_how_to_authenticate(client):
    for extra in ({}, {"HTTP_AUTHORIZATION": "Basic YTpi"}):
        response = client.get(API_URL, **extra)
        error = assert_error(response, 401, "not_authenticated")
        assert "Token <key>" in error["message"] and "Bearer" in error["message"]
        assert response["WWW-Authenticate"]


def test_the_docs_and_schema_without_their_slash_are_found(client, api):
    # The API's catch-all answered these with a JSON 404 saying "see /api/docs/".
    for path in ("/api/docs", "/api/schema"):
        response = client.get(path, {"x": "1"})
        assert response.status_code == 301
        assert response["Location"] == f"{path}/?x=1"
    assert client.get("/api/docs", follow=True).status_code == 200
    # What is no endpoint with its slash either is still a 404; a POST is never
    # redirected (its body would be lost).
    assert_error(api.get("/api/nothing"), 404, "not_found")
    assert_error(api.get(f"{API_URL}abc"), 404, "not_found")
    assert_error(api.post("/api/docs"), 404, "not_found")


# --- The schema says what the endpoints answer ----------------------------------------


def test_the_schema_lists_the_answers_to_a_body(tmp_path):
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    schema = yaml.safe_load(out.read_text())
    paths = schema["paths"]
    upload = paths["/api/documents/"]["post"]["responses"]
    assert {"202", "400", "409", "411", "413", "415", "503", "507"} <= set(upload)
    for operation in (
        paths["/api/documents/{id}/"]["patch"],
        paths["/api/documents/{id}/reprocess/"]["post"],
    ):
        assert {"411", "413", "415"} <= set(operation["responses"])
    shown = paths["/api/documents/{id}/"]["get"]["responses"]
    assert "406" in shown and "415" not in shown
    [page_size] = [
        p
        for p in paths["/api/documents/"]["get"]["parameters"]
        if p["name"] == "page_size"
    ]
    assert "100" in page_size["description"]
    # The model holds 0..1 (ExtractionResult checks it); the schema said 0-100.
    confidence = schema["components"]["schemas"]["Document"]["properties"]["confidence"]
    assert "0 to 1" in confidence["description"]
    # Every format read, from its declaration; it said "PDF, DOCX or plain text".
    upload_file = schema["components"]["schemas"]["UploadRequest"]["properties"]["file"]
    assert "PNG image" in upload_file["description"]


def test_a_format_other_than_json_is_406_not_a_missing_document(api, make_document):
    # DRF answered 404, which the API words "no such document": it is there.
    pk = make_document().pk
    for url in (API_URL, f"{API_URL}{pk}/", f"{API_URL}{pk}/reprocess/"):
        method = api.post if url.endswith("reprocess/") else api.get
        error = assert_error(method(f"{url}?format=csv"), 406, "not_acceptable")
        assert "“csv”" in error["message"] and "JSON" in error["message"]
    assert api.get(f"{API_URL}{pk}/", {"format": "json"}).json()["id"] == pk
