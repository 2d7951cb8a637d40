"""The product from outside (audit 10): small faults left by audit 9. The API, sent
more files than the upload form takes, answered the form's "At most 20 files at once"
although it takes one; the cron endpoint and ``/metrics`` refused a right token after
two spaces (RFC 9110: one or more); ``?page=last`` with a search was a 400 that named
only "a page number", and the schema typed ``page`` as an integer; a search over 500
characters was refused in DRF's words; the schema's PATCH body stated none of the
title's and tags' limits."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from documents.models import Document
from documents.tokens import create_token
from tests.documents.test_api_errors import assert_error

pytestmark = pytest.mark.django_db

API_URL = "/api/documents/"
CRON_URL = "/queue/cron/"
ONE_FILE = "Send exactly one file in the field “file”."


def script(user) -> Client:
    """A client as a script is: a key in the Authorization header."""
    _, key = create_token(user)
    return Client(HTTP_AUTHORIZATION=f"Token {key}")


def text_files(count: int) -> list[SimpleUploadedFile]:
    return [
        SimpleUploadedFile(f"n{n}.txt", f"words {n}\n".encode(), "text/plain")
        for n in range(count)
    ]


# --- More files than MAX_UPLOAD_FILES on the API ----------------------------------


def test_more_files_than_the_form_takes_on_the_api_says_to_send_one(
    user, user_client, settings
):
    settings.MAX_UPLOAD_FILES = 3
    # Two to three files: the serializer's answer.
    error = assert_error(
        script(user).post(API_URL, {"file": text_files(2)}), 400, "invalid"
    )
    assert error["fields"] == {"file": [ONE_FILE]}
    # Four: refused while the body streams, by a token (DRF renders the refusal) and
    # by a session (the middleware does). Was "At most 3 files at once, please."
    for client in (script(user), user_client):
        error = assert_error(
            client.post(API_URL, {"file": text_files(4)}), 400, "too_many_files"
        )
        assert error["message"] == (
            "Send exactly one file in the field “file”: the API takes one file at "
            "a time. Nothing was uploaded."
        )
    assert not Document.objects.exists()


def test_the_upload_form_keeps_its_own_words_for_too_many_files(user_client, settings):
    settings.MAX_UPLOAD_FILES = 3
    response = user_client.post("/documents/upload/", {"file": text_files(4)})
    assert response.status_code == 400
    assert response.context["errors"] == ["At most 3 files at once, please."]


# --- Bearer tokens after more than one space -------------------------------------


TOKEN = "c" * 40


@pytest.mark.django_db(transaction=True)  # a cron run closes its connection
@pytest.mark.parametrize("header", [f"Bearer  {TOKEN}", f"bearer \t {TOKEN}"])
def test_the_cron_endpoint_takes_its_token_after_any_spaces(settings, header):
    settings.CRON_TOKEN = TOKEN
    response = Client().post(CRON_URL, HTTP_AUTHORIZATION=header)
    # Was 403 "That cron token is not valid."
    assert response.status_code == 200, response.content
    assert response.json() == {
        "processed": 0,
        "completed": 0,
        "failed": 0,
        "paused": False,
    }


@pytest.mark.parametrize(
    ("header", "status", "code"),
    [
        (f"Bearer  {'d' * 40}", 403, "permission_denied"),
        (f"Bearer  {TOKEN}x", 403, "permission_denied"),
        (f"Bearer  {TOKEN[:-1]}", 403, "permission_denied"),
        (f"Bearer  {TOKEN} {TOKEN}", 403, "permission_denied"),
        ("Bearer   ", 401, "not_authenticated"),
        ("Bearer", 401, "not_authenticated"),
        (f"Token  {TOKEN}", 401, "not_authenticated"),
        (f"Bearer{TOKEN}", 401, "not_authenticated"),
        ("", 401, "not_authenticated"),
    ],
)
def test_the_cron_endpoint_still_refuses_a_wrong_token(settings, header, status, code):
    settings.CRON_TOKEN = TOKEN
    response = Client().post(CRON_URL, HTTP_AUTHORIZATION=header)
    assert assert_error(response, status, code)


METRICS_TOKEN = "m" * 40


@pytest.mark.parametrize("gap", ["  ", "\t"])
def test_metrics_take_their_token_after_any_spaces(settings, gap):
    settings.METRICS_TOKEN = METRICS_TOKEN
    response = Client().get(
        "/metrics", HTTP_AUTHORIZATION=f"Bearer{gap}{METRICS_TOKEN}"
    )
    # Was 401 "Send Authorization: Bearer <METRICS_TOKEN>."
    assert response.status_code == 200, response.content
    assert b"# TYPE" in response.content


@pytest.mark.parametrize(
    "header",
    [
        f"Bearer  {'n' * 40}",
        f"Bearer  {METRICS_TOKEN}x",
        "Bearer  ",
        f"Basic  {METRICS_TOKEN}",
        "",
    ],
)
def test_metrics_still_refuse_a_wrong_token(settings, header):
    settings.METRICS_TOKEN = METRICS_TOKEN
    response = Client().get("/metrics", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'


# --- ?page=last with a search ----------------------------------------------------


def test_the_last_page_of_a_search_is_refused_saying_why(user, make_document):
    make_document(b"alpha words\n")
    api = script(user)
    # The list has a last page: it is counted.
    assert api.get(API_URL, {"page": "last"}).status_code == 200
    error = assert_error(
        api.get(API_URL, {"q": "alpha", "page": "last"}), 400, "invalid"
    )
    # Was "?page= takes a page number, 1 or more, not “last”.", which the schema's
    # description of page (a number or last) contradicted.
    assert error["fields"] == {
        "page": [
            "?page=last is not taken with a search (?q=): a search does not count "
            "its results, so it has no known last page; follow each page's “next” "
            "from page 1."
        ]
    }
    assert api.get(API_URL, {"q": "alpha", "page": "1"}).status_code == 200


def schema(client: Client) -> dict:
    response = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    return response.json()


def test_the_schema_says_page_takes_a_number_or_last(client):
    parameters = schema(client)["paths"][API_URL]["get"]["parameters"]
    [page] = [p for p in parameters if p["name"] == "page"]
    # Was {"type": "integer"}, while the description offered `last`.
    assert page["schema"] == {
        "oneOf": [
            {"type": "integer", "minimum": 1},
            {"type": "string", "enum": ["last"]},
        ]
    }
    assert "not with ?q=" in page["description"]


# --- ?q= over 500 characters -----------------------------------------------------


def test_a_search_too_long_says_how_long_it_may_be(user):
    error = assert_error(script(user).get(API_URL, {"q": "a" * 501}), 400, "invalid")
    # Was DRF's "Ensure this field has no more than 500 characters."
    message = "Search for at most 500 characters: shorten ?q= and ask again."
    assert error["fields"] == {"q": [message]}
    assert error["message"] == message


# --- The PATCH body's limits in the schema ---------------------------------------


def test_the_schema_states_the_title_and_tags_limits(client):
    body = schema(client)["components"]["schemas"]["PatchedDetailsRequest"]
    title, tags = body["properties"]["title"], body["properties"]["tags"]
    assert title["maxLength"] == 255
    assert "255 characters" in title["description"]
    assert tags["maxItems"] == 20
    assert tags["items"]["maxLength"] == 50
    assert "at most 20 tags of 50 characters" in tags["description"]


def test_what_a_patch_accepts_is_unchanged(user, make_document):
    """The limits are the page's form's, on the tags as kept: stated in the schema,
    not checked again on the names as sent."""
    document = make_document(b"words\n")
    api = script(user)
    url = f"{API_URL}{document.pk}/"
    # 26 names that are 2 tags once one of each name is kept; a tag of 50 characters
    # once its inner spaces collapse.
    tags = ["Alpha", "alpha"] * 12 + ["b" * 20 + " " * 40 + "c" * 29] * 2
    response = api.patch(url, {"tags": tags}, content_type="application/json")
    assert response.status_code == 200, response.content
    assert sorted(response.json()["tags"]) == ["Alpha", "b" * 20 + " " + "c" * 29]
    response = api.patch(url, {"title": "t" * 255}, content_type="application/json")
    assert response.json()["title"] == "t" * 255
    error = assert_error(
        api.patch(url, {"title": "t" * 256}, content_type="application/json"),
        400,
        "invalid",
    )
    # The form's words, as before.
    assert error["fields"] == {
        "title": ["Ensure this value has at most 255 characters (it has 256)."]
    }
