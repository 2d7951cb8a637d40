"""The API's errors say, in the product's words, what happened and what to do: not
DRF's stock English ("Invalid page.", "Request was throttled."), and a 404 that is not
about a document does not say "no such document" (documents/api_errors.py)."""

from __future__ import annotations

import pytest
import yaml
from django.http import Http404
from django.test import Client, RequestFactory
from rest_framework.request import Request

from documents.api_errors import exception_handler
from documents.models import Document
from tests.documents.test_api_errors import assert_error, text_file

pytestmark = pytest.mark.django_db

API_URL = "/api/documents/"
SCHEMA_URL = "/api/schema/"
# DRF's own English, which no answer may carry any more.
STOCK = (
    "Invalid page",
    "throttled",
    "Expected available",
    "not allowed.",
    "JSON parse error",
    "This field",
    "Expected a list",
    "CSRF Failed",
    "Could not satisfy",
    "no such document",
)


def assert_worded(error: dict) -> str:
    """One sentence of ours, none of DRF's stock English."""
    message = error["message"]
    for stock in STOCK:
        assert stock not in message, message
        for messages in error["fields"].values():
            assert all(stock not in m for m in messages), messages
    return message


@pytest.fixture
def api(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def patch(client: Client, url: str, body: object, **extra) -> object:
    return client.patch(url, body, content_type="application/json", **extra)


# 1. The schema's ?format= and the handler's 404 message.


@pytest.mark.parametrize("form", ["xml", "openapi", "csv"])
def test_the_schema_in_a_format_it_has_not_is_406_not_a_missing_document(client, form):
    error = assert_error(
        client.get(SCHEMA_URL, {"format": form}), 406, "not_acceptable"
    )
    message = assert_worded(error)
    assert f"“{form}”" in message and "YAML" in message and "JSON" in message


def test_the_schema_still_answers_yaml_and_json(client):
    default = client.get(SCHEMA_URL)
    assert default.status_code == 200
    assert default["Content-Type"].startswith("application/vnd.oai.openapi")
    assert yaml.safe_load(default.content)["openapi"].startswith("3.")
    for response in (
        client.get(SCHEMA_URL, {"format": "json"}),
        client.get(SCHEMA_URL, HTTP_ACCEPT="application/json"),
    ):
        assert response.status_code == 200
        assert "json" in response["Content-Type"]
        assert response.json()["openapi"].startswith("3.")
    assert client.get(SCHEMA_URL, {"format": "yaml"}).status_code == 200


def test_the_docs_in_a_format_they_have_not_is_406(client):
    error = assert_error(
        client.get("/api/docs/", {"format": "xml"}), 406, "not_acceptable"
    )
    assert "“xml”" in assert_worded(error)
    assert client.get("/api/docs/").status_code == 200


def test_a_404_not_about_a_document_does_not_say_no_such_document():
    # Django's Http404 reaches the handler from any view (get_object_or_404, DRF).
    request = Request(RequestFactory().get("/api/somewhere/"))
    response = exception_handler(
        Http404("No Thing matches the given query."), {"request": request}
    )
    assert response.status_code == 404
    error = response.data["error"]
    assert error["code"] == "not_found"
    assert "document" not in error["message"]
    assert "/api/somewhere/" in error["message"] and "matches" not in error["message"]


# 2. Pages.


def test_a_page_past_the_last_says_how_many_there_are(api, make_document):
    for _ in range(3):
        make_document()
    error = assert_error(
        api.get(API_URL, {"page": 99, "page_size": 2}), 404, "not_found"
    )
    message = assert_worded(error)
    assert "page 99" in message and "2 pages" in message
    # One page (or none at all): it says so, in the singular.
    error = assert_error(api.get(API_URL, {"page": 2}), 404, "not_found")
    assert "page 2" in assert_worded(error) and "only page 1" in error["message"]


@pytest.mark.parametrize("page", ["abc", "0", "-1", "1.5", "²"])
def test_a_page_that_is_not_a_number_from_1_is_400(api, make_document, page):
    make_document()
    for query in ({"page": page}, {"q": "hello", "page": page}):
        error = assert_error(api.get(API_URL, query), 400, "invalid")
        assert list(error["fields"]) == ["page"]
        assert "?page=" in assert_worded(error)
    assert api.get(API_URL, {"page": "last"}).status_code == 200  # DRF's, kept


def test_a_page_number_too_long_for_int_is_past_the_last(api, make_document):
    make_document()
    for query in ({"page": "9" * 5000}, {"q": "hello", "page": "9" * 5000}):
        error = assert_error(api.get(API_URL, query), 404, "not_found")
        assert "There is no page 999" in assert_worded(error)
        assert len(error["message"]) < 200


def test_a_search_page_past_the_last_is_404_in_words(api, make_document):
    make_document()
    error = assert_error(api.get(API_URL, {"q": "hello", "page": 5}), 404, "not_found")
    assert "page 5" in assert_worded(error)


# Throttles, methods, bodies.


def test_over_the_upload_rate_says_when_to_try_again(api, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"user": "100/minute", "uploads": "1/minute"},
    }
    assert api.post(API_URL, {"file": text_file()}).status_code == 202
    response = api.post(API_URL, {"file": text_file("b.txt", b"other\n")})
    error = assert_error(response, 429, "throttled")
    wait = int(response["Retry-After"])
    assert f"try again in {wait} seconds" in assert_worded(error)


def test_a_method_the_address_does_not_take_names_those_it_does(api, make_document):
    response = api.delete(API_URL)
    error = assert_error(response, 405, "method_not_allowed")
    assert response["Allow"] == "GET, POST, HEAD, OPTIONS"
    assert assert_worded(error) == (
        "This address does not take DELETE requests; it takes GET, POST, HEAD or "
        "OPTIONS."
    )
    url = f"{API_URL}{make_document().pk}/reprocess/"
    error = assert_error(api.get(url), 405, "method_not_allowed")
    assert "it takes POST or OPTIONS" in assert_worded(error)


def test_a_body_that_is_not_json_says_where_and_what_to_send(api, make_document):
    url = f"{API_URL}{make_document().pk}/"
    error = assert_error(patch(api, url, "notjson"), 400, "parse_error")
    message = assert_worded(error)
    assert "not valid JSON" in message and "line 1, column 1" in message
    assert "Content-Type: application/json" in message


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"title": None}, "title", "text"),
        ({"title": ["a"]}, "title", "text"),
        ({"tags": "x"}, "tags", "a list of names"),
        ({"tags": None}, "tags", "a list of names"),
        ({"tags": [None]}, "tags", "name"),
        ({"tags": [""]}, "tags", "empty"),
    ],
)
def test_a_field_of_the_wrong_kind_is_named_in_words(
    api, make_document, body, field, words
):
    document = make_document()
    error = assert_error(patch(api, f"{API_URL}{document.pk}/", body), 400, "invalid")
    assert list(error["fields"]) == [field]
    message = assert_worded(error)
    assert message == error["fields"][field][0]
    assert words in message and message[0].isupper() and message.endswith(".")


@pytest.mark.parametrize(
    ("body", "kind"),
    [("null", "null"), ("[1]", "a list"), ('"x"', "a string"), ("5", "a number")],
)
def test_a_json_body_that_is_no_object_says_what_to_send(
    api, make_document, body, kind
):
    url = f"{API_URL}{make_document().pk}/"
    error = assert_error(patch(api, url, body), 400, "invalid")
    assert assert_worded(error) == (
        f"Send the fields as a JSON object or a form, not {kind}."
    )


def test_a_field_that_cannot_be_patched_is_refused_by_name(api, make_document):
    document = make_document()
    url = f"{API_URL}{document.pk}/"
    for name, value in [("status", "completed"), ("text", "x"), ("id", 7)]:
        error = assert_error(patch(api, url, {name: value}), 400, "invalid")
        assert list(error["fields"]) == [name]
        message = assert_worded(error)
        assert f"“{name}”" in message and "title and tags" in message
    error = assert_error(patch(api, url, {"colour": "red"}), 400, "invalid")
    assert list(error["fields"]) == ["colour"]
    assert "title and tags" in assert_worded(error)
    # Nothing is changed when a part of the request is refused, not even the title.
    response = patch(api, url, {"title": "New", "status": "completed"})
    error = assert_error(response, 400, "invalid")
    assert list(error["fields"]) == ["status"]
    document.refresh_from_db()
    assert (document.title, document.status) == ("", "pending")
    # What may be patched still is; a session form's CSRF field is no field.
    response = api.patch(
        url, "title=Kept&csrfmiddlewaretoken=x", "application/x-www-form-urlencoded"
    )
    assert response.status_code == 200 and response.json()["title"] == "Kept"


def test_a_reprocess_with_an_unknown_field_is_refused(api, make_document):
    url = f"{API_URL}{make_document().pk}/reprocess/"
    error = assert_error(
        api.post(url, {"priorty": 5}, content_type="application/json"), 400, "invalid"
    )
    assert list(error["fields"]) == ["priorty"] and "priority" in error["message"]


def test_an_upload_with_extra_fields_is_kept_all_the_same(api):
    """Only a PATCH or a reprocess, which would answer success and change nothing,
    refuses a field it does not know: an upload does what it was asked."""
    response = api.post(API_URL, {"file": text_file(), "title": "x", "note": "y"})
    assert response.status_code == 202, response.content


# Headers: CSRF and Accept.


def test_a_session_post_without_csrf_says_how_to_send_it(user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    error = assert_error(
        client.post(API_URL, {"file": text_file()}), 403, "permission_denied"
    )
    message = assert_worded(error)
    assert "X-CSRFToken" in message and "csrftoken" in message
    # Django's reason, then what to do.
    assert message.startswith("The CSRF check failed (CSRF cookie not set): ")
    assert "Authorization: Token" in message
    assert not Document.objects.exists()


def test_an_accept_header_other_than_json_is_406_saying_json(api, make_document):
    for url in (API_URL, f"{API_URL}{make_document().pk}/"):
        response = api.get(url, HTTP_ACCEPT="application/xml")
        error = assert_error(response, 406, "not_acceptable")
        assert "application/json" in assert_worded(error)
    error = assert_error(
        Client().get(SCHEMA_URL, HTTP_ACCEPT="application/xml"), 406, "not_acceptable"
    )
    assert "application/yaml" in assert_worded(error)
