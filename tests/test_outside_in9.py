"""The product from outside (audit 9): what a script, a browser and cron were answered
that the contracts did not promise. Twenty tags of 50 characters (the documented
most) were refused on the API and on the document's page for the length of the one
line the page's form joins them into; too many tags on the API were refused for that
line's length too, not for their number. A NUL in a page's address answered a line of
plain text, not the site's page; an ``allow_duplicates`` that is no boolean and a body
of too many fields answered words that named neither."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from documents.models import Document
from documents.tokens import create_token
from tests.documents.test_api_errors import assert_error

pytestmark = pytest.mark.django_db

API_URL = "/api/documents/"


def script(user) -> Client:
    """A client as a script is: a key in the Authorization header."""
    _, key = create_token(user)
    return Client(HTTP_AUTHORIZATION=f"Token {key}")


def longest_tags() -> list[str]:
    """Twenty distinct tags of 50 characters: as many, as long, as the rules allow."""
    return [f"tag {number:02d} ".ljust(50, "x") for number in range(20)]


def test_twenty_tags_of_fifty_characters_are_kept_on_the_api(user, make_document):
    document = make_document(b"words\n")
    response = script(user).patch(
        f"{API_URL}{document.pk}/",
        {"tags": longest_tags()},
        content_type="application/json",
    )
    # Was 400: "Ensure this value has at most 1000 characters (it has 1038)."
    assert response.status_code == 200, response.content
    assert sorted(response.json()["tags"]) == sorted(longest_tags())
    assert sorted(document.tags.values_list("name", flat=True)) == longest_tags()


def test_too_many_tags_on_the_api_are_refused_for_their_number(user, make_document):
    document = make_document(b"words\n")
    tags = [f"tag number {number}".ljust(40, "x") for number in range(30)]
    response = script(user).patch(
        f"{API_URL}{document.pk}/", {"tags": tags}, content_type="application/json"
    )
    error = assert_error(response, 400, "invalid")
    # Was: "Ensure this value has at most 1000 characters (it has 1228)."
    assert error["fields"] == {"tags": ["At most 20 tags, please."]}
    assert not document.tags.exists()


def test_a_tag_is_measured_with_its_spaces_collapsed_as_it_is_kept(user, make_document):
    """Spaces inside a tag are collapsed when it is kept: 20 tags padded with spaces
    inside are 20 short tags, not a line too long for the form."""
    document = make_document(b"words\n")
    tags = [f"tag{' ' * 60}{number}" for number in range(20)]
    response = script(user).patch(
        f"{API_URL}{document.pk}/", {"tags": tags}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    assert sorted(response.json()["tags"]) == sorted(f"tag {n}" for n in range(20))


def test_a_tag_too_long_on_the_api_is_named(user, make_document):
    document = make_document(b"words\n")
    tags = ["short", "y" * 51]
    response = script(user).patch(
        f"{API_URL}{document.pk}/", {"tags": tags}, content_type="application/json"
    )
    error = assert_error(response, 400, "invalid")
    assert error["fields"] == {"tags": [f"“{'y' * 50}…” is longer than 50 characters."]}


def test_twenty_tags_of_fifty_characters_are_kept_on_the_page(
    user_client, make_document
):
    document = make_document(b"words\n")
    url = f"/documents/{document.pk}/edit/"
    response = user_client.post(
        url, {"title": "Report", "tags": ", ".join(longest_tags())}
    )
    assert response.status_code == 302, response.content.decode()[-2000:]
    assert sorted(document.tags.values_list("name", flat=True)) == longest_tags()
    # And the page shows them back within its field's length.
    page = user_client.get(url).content.decode()
    assert ", ".join(sorted(longest_tags())) in page


def test_a_nul_in_a_pages_address_is_the_sites_bad_request_page(user_client):
    response = user_client.get("/documents/?q=a%00b")
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert "<title>Bad request · Documents</title>" in page
    assert "The address contains a NUL character" in page
    assert "Nothing was changed: go back and try again." in page
    # Every page carries the site's Content-Security-Policy, and may not be framed.
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert response["X-Frame-Options"] == "DENY"


def test_a_nul_in_the_cron_address_is_a_json_400(settings):
    settings.CRON_TOKEN = "t" * 40
    response = Client().post(
        "/queue/cron/?x=%00", HTTP_AUTHORIZATION=f"Bearer {settings.CRON_TOKEN}"
    )
    assert assert_error(response, 400, "bad_request")


def test_allow_duplicates_that_is_no_boolean_says_what_it_takes(user):
    upload = SimpleUploadedFile("a.txt", b"words\n", content_type="text/plain")
    response = script(user).post(API_URL, {"file": upload, "allow_duplicates": "maybe"})
    error = assert_error(response, 400, "invalid")
    # Was DRF's "Must be a valid boolean."
    assert error["fields"]["allow_duplicates"] == [
        "allow_duplicates takes true or false (also 1 or 0, yes or no, on or off)."
    ]
    assert not Document.objects.exists()


def test_a_body_of_too_many_fields_says_so_on_the_api(user, make_document, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 10
    document = make_document(b"words\n")
    body = "&".join(f"field{number}=1" for number in range(11))
    response = script(user).patch(
        f"{API_URL}{document.pk}/",
        body,
        content_type="application/x-www-form-urlencoded",
    )
    error = assert_error(response, 400, "too_many_fields")
    # Was "The request could not be understood."
    assert error["message"] == (
        "The body has more than 10 fields: send only the fields the endpoint takes."
    )


def test_a_name_filter_longer_than_its_field_still_filters_the_list(
    user_client, make_document
):
    """A name filter over 200 characters was dropped as invalid: the list showed
    every document under an empty box, as if nothing had been asked for."""
    make_document(b"words\n", name="alpha.txt")
    titled = make_document(b"other words\n", name="beta.txt")
    titled.title = "t" * 250
    titled.save()
    response = user_client.get("/documents/", {"q": "z" * 250})
    assert response.status_code == 200
    page = response.content.decode()
    assert "alpha.txt" not in page
    assert "No documents match these filters." in page
    # A long title is still found by its first 200 characters, shown in the box.
    response = user_client.get("/documents/", {"q": "t" * 250})
    page = response.content.decode()
    assert "alpha.txt" not in page and "beta.txt" in page
    assert f'name="q" value="{"t" * 200}" maxlength="200"' in page


def test_a_field_sent_twice_is_refused_not_half_read(user, make_document, staff_user):
    """``priority=5&priority=-5`` was read as -5, the other dropped unsaid, where the
    list refuses a filter given twice."""
    api = script(staff_user)
    upload = SimpleUploadedFile("a.txt", b"words\n", content_type="text/plain")
    response = api.post(API_URL, {"file": upload, "priority": ["5", "-5"]})
    error = assert_error(response, 400, "invalid")
    assert error["fields"] == {"priority": ["Send “priority” once, not 2 times."]}
    assert not Document.objects.exists()

    document = make_document(b"words\n")
    response = api.post(f"{API_URL}{document.pk}/reprocess/", {"priority": ["1", "2"]})
    assert assert_error(response, 400, "invalid")["fields"] == {
        "priority": ["Send “priority” once, not 2 times."]
    }
    response = script(user).patch(
        f"{API_URL}{document.pk}/",
        "title=one&title=two",
        content_type="application/x-www-form-urlencoded",
    )
    assert assert_error(response, 400, "invalid")["fields"] == {
        "title": ["Send “title” once, not 2 times."]
    }
    document.refresh_from_db()
    assert document.title == ""
    # Tags are a list: a form sends each once.
    response = script(user).patch(
        f"{API_URL}{document.pk}/",
        "tags=a&tags=b",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 200
    assert sorted(response.json()["tags"]) == ["a", "b"]
    # In JSON too: the parser kept the last of two "title"s, unsaid.
    response = script(user).patch(
        f"{API_URL}{document.pk}/",
        '{"title": "one", "title": "two", "tags": ["a"]}',
        content_type="application/json",
    )
    assert assert_error(response, 400, "invalid")["fields"] == {
        "title": ["Send “title” once, not 2 times."]
    }
    document.refresh_from_db()
    assert document.title == ""
