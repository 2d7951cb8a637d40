"""Every API error, from every endpoint, has one JSON shape (documents/api_errors.py)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from documents.models import Document
from documents.tokens import create_token
from jobqueue.models import Operation, QueueItem
from jobqueue.services import QueueManager

pytestmark = pytest.mark.django_db

API_URL = "/api/documents/"


def assert_error(response, status: int, code: str) -> dict:
    """The response is ``status`` with ``{"error": {code, message, fields}}``."""
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert list(body) == ["error"]
    error = body["error"]
    assert set(error) == {"code", "message", "fields"}
    assert error["code"] == code
    assert isinstance(error["message"], str) and error["message"].strip()
    assert "Traceback" not in error["message"] and "matches the given" not in str(body)
    assert isinstance(error["fields"], dict)
    return error


def text_file(name: str = "a.txt", content: bytes = b"words\n") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="text/plain")


@pytest.fixture
def api(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def endpoints(pk: int) -> list[tuple[str, str]]:
    return [
        ("get", API_URL),
        ("post", API_URL),
        ("get", f"{API_URL}{pk}/"),
        ("post", f"{API_URL}{pk}/reprocess/"),
    ]


def test_anonymous_calls_get_401_in_the_shape(client, make_document):
    for method, url in endpoints(make_document().pk):
        response = getattr(client, method)(url)
        assert_error(response, 401, "not_authenticated")


def test_a_401_says_where_to_make_a_key(client, user):
    message = client.get("/api/documents/").json()["error"]["message"]
    path = reverse("api_tokens")
    assert path in message
    client.force_login(user)
    assert client.get(path).status_code == 200


def test_unknown_ids_and_urls_are_json_404s(api, make_document, other_user):
    theirs = make_document(owner=other_user)
    for method, url in [
        ("get", f"{API_URL}999999/"),
        ("get", f"{API_URL}{theirs.pk}/"),
        ("post", f"{API_URL}{theirs.pk}/reprocess/"),
        ("get", f"{API_URL}abc/"),
        ("post", f"{API_URL}abc/reprocess/"),
        ("get", "/api/nothing-here/"),
        ("delete", "/api/"),
    ]:
        assert_error(getattr(api, method)(url), 404, "not_found")
    assert not QueueItem.objects.exists()


def test_urls_without_the_trailing_slash_are_served(api, make_document):
    created = api.post(API_URL.rstrip("/"), {"file": text_file()})
    assert created.status_code == 202
    pk = created.json()["id"]
    assert api.get(f"{API_URL}{pk}").json()["id"] == pk
    assert api.get(API_URL.rstrip("/")).status_code == 200
    # A document whose first extraction is over (none was queued for this one).
    pk = make_document().pk
    assert api.post(f"{API_URL}{pk}/reprocess").status_code == 202
    while QueueManager().claim("w1").operation != Operation.REPROCESS:
        pass  # the upload's extraction first, then the reprocess runs
    response = api.post(f"{API_URL}{pk}/reprocess")
    assert_error(response, 409, "already_queued")


def test_wrong_method_is_405(api, make_document):
    pk = make_document().pk
    for method, url in [
        ("put", API_URL),
        ("put", f"{API_URL}{pk}/"),
        ("get", f"{API_URL}{pk}/reprocess/"),
    ]:
        assert_error(getattr(api, method)(url), 405, "method_not_allowed")


def test_unsupported_body_is_415_and_malformed_json_400(api, make_document):
    response = api.post(API_URL, "<file/>", content_type="application/xml")
    assert_error(response, 415, "unsupported_media_type")
    # Reprocessing reads JSON (an upload only multipart: tests/documents/test_api_audit).
    url = f"{API_URL}{make_document().pk}/reprocess/"
    response = api.post(url, "{not json", content_type="application/json")
    assert_error(response, 400, "parse_error")


def test_a_body_over_the_memory_limit_is_413_not_400(api, settings, make_document):
    # Django refuses it as a suspicious request: "could not be understood".
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = '{"title": "' + "x" * 2000 + '"}'
    url = f"{API_URL}{make_document().pk}/"
    response = api.patch(url, body, content_type="application/json")
    error = assert_error(response, 413, "too_large")
    assert "1000" in error["message"] or "KB" in error["message"]


def test_invalid_fields_are_listed_by_name(api):
    error = assert_error(api.post(API_URL, {}), 400, "invalid")
    assert list(error["fields"]) == ["file"]
    assert error["message"] == error["fields"]["file"][0]

    response = api.post(API_URL, {"file": text_file(), "priority": "urgent"})
    error = assert_error(response, 400, "invalid")
    assert error["fields"] == {"priority": ["Priority must be a whole number."]}

    response = api.post(API_URL, {"file": text_file("empty.txt", b"")})
    error = assert_error(response, 400, "invalid")
    assert "empty" in error["fields"]["file"][0]
    assert not Document.objects.exists()


def test_forbidden_priority_is_403(api):
    response = api.post(API_URL, {"file": text_file(), "priority": "5"})
    error = assert_error(response, 403, "permission_denied")
    assert "operators" in error["message"]


def test_session_post_without_csrf_is_403(user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    error = assert_error(
        client.post(API_URL, {"file": text_file()}), 403, "permission_denied"
    )
    assert "CSRF" in error["message"]
    # An address that is no endpoint changes nothing: 404, also for a script with a
    # token (it was told to mind its CSRF token).
    assert_error(client.post("/api/no-such-thing/"), 404, "not_found")


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_a_write_to_an_address_that_is_no_endpoint_is_404(user, method):
    # A script with a token and a typo in its path was told to mind its CSRF token.
    client = Client(enforce_csrf_checks=True)
    key = create_token(user)[1]
    response = getattr(client, method)(
        "/api/documents/abc/", HTTP_AUTHORIZATION=f"Token {key}"
    )
    assert_error(response, 404, "not_found")


def test_duplicate_upload_is_409(api):
    assert api.post(API_URL, {"file": text_file()}).status_code == 202
    error = assert_error(api.post(API_URL, {"file": text_file()}), 409, "duplicate")
    assert "allow_duplicates" in error["message"]


def test_rate_and_active_job_limits_are_429(api, settings):
    settings.USER_MAX_ACTIVE_JOBS = 0
    response = api.post(API_URL, {"file": text_file()})
    assert_error(response, 429, "too_many_active_jobs")
    assert int(response["Retry-After"]) > 0  # as the rate limit's 429 says

    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"user": "2/minute", "uploads": "2/minute"},
    }
    api.get(API_URL)
    api.get(API_URL)
    response = assert_error(api.get(API_URL), 429, "throttled")
    assert int(api.get(API_URL)["Retry-After"]) > 0
    assert "seconds" in response["message"]


def test_anonymous_callers_cannot_leave_the_rate_by_naming_another_address(
    client, settings
):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"user": "2/minute", "uploads": "2/minute"},
    }
    schema = "/api/schema/"
    for address in ("203.0.113.1", "203.0.113.2"):
        assert client.get(schema, HTTP_X_FORWARDED_FOR=address).status_code == 200
    response = client.get(schema, HTTP_X_FORWARDED_FOR="203.0.113.3")
    # In the API's error shape, as JSON, though the schema itself is YAML.
    assert_error(response, 429, "throttled")


def test_a_server_error_is_json_without_internals(user, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("secret internals")

    monkeypatch.setattr("documents.serializers.check_upload", explode)
    client = Client(raise_request_exception=False)
    client.force_login(user)
    error = assert_error(
        client.post(API_URL, {"file": text_file()}), 500, "server_error"
    )
    assert "secret" not in error["message"]
    # Outside the API, Django's own page.
    assert client.get("/no-such-page/")["Content-Type"].startswith("text/html")
