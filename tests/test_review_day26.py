"""Review of day 26's changes (review14): the defects found, each shown failing
without its fix."""

from __future__ import annotations

import unicodedata

import pytest
from django.contrib.sessions.models import Session
from django.test import Client
from django.urls import reverse

from config.middleware import UnsentFormMiddleware
from documents.models import Tag
from documents.tokens import create_token

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(user) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {create_token(user)[1]}")


def _tag(api: Client, document, names: list[str]):
    return api.patch(
        f"/api/documents/{document.pk}/",
        {"tags": names},
        content_type="application/json",
    )


def test_a_tag_the_database_folds_to_one_already_kept_is_that_tag(api, make_document):
    """PostgreSQL's LOWER (the unique constraint's) folds "İ" to "i", Python's
    casefold to "i̇": "istanbul" beside "İstanbul" missed the kept tag in Python,
    and its INSERT broke the constraint (a 500)."""
    first, second = make_document(), make_document()
    assert _tag(api, first, ["İstanbul"]).status_code == 200
    response = _tag(api, second, ["istanbul"])
    assert response.status_code == 200, response.content
    assert second.tags.count() == 1


def test_a_tag_kept_decomposed_before_is_the_tag_sent_composed(api, make_document):
    """A tag kept before names were composed (NFC) is still the tag: "Café" sent
    composed made a second tag beside the decomposed one, looking the same."""
    first, second = make_document(), make_document()
    decomposed = unicodedata.normalize("NFD", "Café")
    tag = Tag.objects.create(owner=first.owner, name=decomposed)
    first.tags.add(tag)
    response = _tag(api, second, ["Café"])
    assert response.status_code == 200, response.content
    assert list(Tag.objects.values_list("pk", flat=True)) == [tag.pk]


def test_two_tags_the_database_folds_to_one_in_one_request_are_one(api, make_document):
    """Both new, in one request: the second is the tag the first just made."""
    document = make_document()
    response = _tag(api, document, ["İzmir", "izmir"])
    assert response.status_code == 200, response.content
    assert len(response.json()["tags"]) == document.tags.count()


def test_a_form_sent_without_a_session_writes_no_session(user):
    """The log-in page says that a form sent logged out was not kept, without
    keeping anything: each anonymous POST (anyone's script, with a CSRF cookie it
    can always get) wrote a session row, for two weeks, to hold the message."""
    client = Client(enforce_csrf_checks=True)
    client.get(reverse("login"))
    token = client.cookies["csrftoken"].value
    response = client.post(
        reverse("documents:upload"), {"csrfmiddlewaretoken": token}, follow=True
    )
    assert response.redirect_chain[-1][0].startswith(f"{reverse('login')}?next=")
    assert UnsentFormMiddleware.MESSAGE in response.content.decode()
    assert not Session.objects.exists()
    assert "sessionid" not in client.cookies
