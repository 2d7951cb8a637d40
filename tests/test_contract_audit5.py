"""An outside contract audit (the fifth): the API's preconditions on changes and its
schema, process_queue's exit status for bad options, and tokens for inactive users."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from documents.models import Document

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def url(document: Document) -> str:
    return f"/api/documents/{document.pk}/"


# --- If-Match on a change (RFC 9110: the server MUST check it first) ------------------


def test_a_patch_for_another_version_is_412_and_changes_nothing(api, make_document):
    document = make_document()
    response = api.patch(
        url(document),
        {"title": "Overwritten"},
        content_type="application/json",
        HTTP_IF_MATCH='"an-older-version"',
    )
    assert response.status_code == 412
    assert response.json()["error"]["code"] == "precondition_failed"
    document.refresh_from_db()
    assert document.title == ""
    # "*" (any version) lets it through, as it does a GET.
    response = api.patch(
        url(document),
        {"title": "Kept", "tags": ["a"]},
        content_type="application/json",
        HTTP_IF_MATCH="*",
    )
    assert response.status_code == 200
    assert (response.json()["title"], response.json()["tags"]) == ("Kept", ["a"])


def test_a_delete_for_another_version_is_412_and_keeps_the_document(api, make_document):
    document = make_document()
    etag = api.get(url(document))["ETag"]
    # The tag is weak: If-Match compares strongly, so even the current one fails.
    for sent in ('"an-older-version"', etag):
        response = api.delete(url(document), HTTP_IF_MATCH=sent)
        assert response.status_code == 412
        assert Document.objects.filter(pk=document.pk).exists()
    assert api.delete(url(document), HTTP_IF_MATCH="*").status_code == 204
    assert not Document.objects.filter(pk=document.pk).exists()


def test_the_schema_tells_of_if_match_and_the_headers_sent(client, api, make_document):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    detail = schema["paths"]["/api/documents/{id}/"]
    for method in ("get", "patch", "delete"):
        assert "If-Match" in {p["name"] for p in detail[method]["parameters"]}
        assert "412" in detail[method]["responses"], method
    upload = schema["paths"]["/api/documents/"]["post"]["responses"]
    assert "Location" in upload["202"]["headers"]
    assert "Retry-After" in upload["429"]["headers"]
    # As the real answers have them.
    document = make_document()
    assert api.get(url(document), HTTP_IF_MATCH='"x"').status_code == 412


# --- process_queue: bad options exit 2, as argparse's refusals do ---------------------


@pytest.mark.parametrize(
    "args",
    [
        ["--limit", "5"],
        ["--budget", "20"],
        ["--json"],
        ["--exit-code"],
        ["--heartbeat-interval", "90"],
    ],
)
def test_options_that_do_not_go_together_exit_2(args):
    with pytest.raises(CommandError) as refused:
        call_command("process_queue", *args, stdout=StringIO(), stderr=StringIO())
    assert refused.value.returncode == 2


# --- create_api_token ------------------------------------------------------------------


def test_no_token_is_made_for_an_inactive_user(user):
    user.is_active = False
    user.save(update_fields=["is_active"])
    out = StringIO()
    with pytest.raises(CommandError, match="inactive"):
        call_command("create_api_token", user.username, stdout=out, stderr=StringIO())
    assert out.getvalue() == ""  # no key that would be refused at every request
    assert user.auth_token_set.count() == 0
