"""A person's own API tokens page: make one, use it, see it listed, revoke it."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from knox.models import AuthToken
from knox.settings import CONSTANTS

from documents.token_views import MAX_TOKENS_PER_PERSON
from documents.tokens import create_token

pytestmark = pytest.mark.django_db
URL = reverse("api_tokens")


def make(client, expires_days="90"):
    # The password of tests/conftest.py's user: making a token asks for it.
    data = {"action": "create", "expires_days": expires_days}
    response = client.post(URL, {**data, "password": "alice-password-1"})
    assert response.status_code == 200
    key = re.search(r'id="new-key"[^>]*value="([^"]+)"', response.content.decode())
    return response, key and key[1]


def api_status(key: str) -> int:
    return (
        Client()
        .get("/api/documents/", headers={"authorization": f"Bearer {key}"})
        .status_code
    )


def test_a_person_makes_a_token_that_works_and_is_shown_once(user_client, user):
    response, key = make(user_client)
    assert key and api_status(key) == 200
    token = AuthToken.objects.get(user=user)
    assert token.token_key == key[: len(token.token_key)]
    assert timedelta(days=89) < token.expiry - timezone.now() <= timedelta(days=90)
    # Kept from every cache, and never again on the page.
    assert "no-store" in response["Cache-Control"]
    listing = user_client.get(URL).content.decode()
    assert key not in listing and token.token_key[:8] in listing


def test_a_token_that_never_expires(user_client, user):
    make(user_client, expires_days="")
    assert AuthToken.objects.get(user=user).expiry is None


def test_an_expiry_not_offered_is_refused(user_client, user):
    response = user_client.post(
        URL,
        {"action": "create", "expires_days": "9999", "password": "alice-password-1"},
    )
    assert "Select a valid choice" in response.content.decode()
    assert not AuthToken.objects.filter(user=user).exists()


def test_a_person_sees_and_revokes_only_their_own(user_client, user, other_user):
    _, mine = make(user_client)
    theirs, their_key = create_token(other_user)
    page = user_client.get(URL).content.decode()
    assert theirs.token_key[:8] not in page

    for confirm in ("", "yes"):
        response = user_client.post(
            URL, {"action": "revoke", "token": theirs.token_key, "confirm": confirm}
        )
        assert response.status_code == 302
    assert api_status(their_key) == 200  # untouched

    own = AuthToken.objects.get(user=user)
    user_client.post(
        URL, {"action": "revoke", "token": own.token_key, "confirm": "yes"}
    )
    assert api_status(mine) == 401


def test_revoke_all_leaves_other_peoples_tokens(user_client, user, other_user):
    keys = [make(user_client)[1] for _ in range(2)]
    _, their_key = create_token(other_user)
    response = user_client.post(
        URL, {"action": "revoke_all", "confirm": "yes"}, follow=True
    )
    assert "2 tokens were revoked." in response.content.decode()
    assert [api_status(key) for key in keys] == [401, 401]
    assert api_status(their_key) == 200


def confirmed_by_its_page(client, data: dict, page: str | None = None) -> str:
    """Post ``data`` as the list's button does (or take the ``page`` it answered),
    then what the page asking first posts; returns that page."""
    if page is None:
        asked = client.post(URL, data)
        assert asked.status_code == 200
        page = asked.content.decode()
    form = re.search(r'<form method="post" action="([^"]+)".*?</form>', page, re.S)
    fields: dict[str, list[str]] = {}
    for name, value in re.findall(r'name="(\w+)" value="([^"]*)"', form[0]):
        fields.setdefault(name, []).append(value)
    fields.pop("csrfmiddlewaretoken")
    assert form[1] == URL
    assert client.post(URL, fields).status_code == 302
    return page


def test_a_revoke_asks_first_and_then_revokes_that_token_only(user_client, user):
    keys = [make(user_client)[1] for _ in range(2)]
    first = AuthToken.objects.get(token_key=keys[0][: CONSTANTS.TOKEN_KEY_LENGTH])
    # The button alone revokes nothing: scripts would be shut out by a slip.
    page = confirmed_by_its_page(
        user_client, {"action": "revoke", "token": first.token_key}
    )
    assert "Revoke this token?" in page and first.token_key[:8] in page
    assert keys[1][:8] not in page
    assert [api_status(key) for key in keys] == [401, 200]


def test_revoke_all_asks_first_naming_each(user_client, user):
    keys = [make(user_client)[1] for _ in range(2)]
    asked = user_client.post(URL, {"action": "revoke_all"}).content.decode()
    # One made in another tab meanwhile was not listed: it stays.
    _, later = create_token(user)
    page = confirmed_by_its_page(user_client, {"action": "revoke_all"}, asked)
    assert "Revoke all 2 of your tokens?" in page
    assert all(key[:8] in page for key in keys)
    assert [api_status(key) for key in keys] == [401, 401]
    assert api_status(later) == 200


def test_nothing_to_revoke_is_said_without_asking(user_client, user):
    response = user_client.post(URL, {"action": "revoke_all"}, follow=True)
    assert "You have no tokens: nothing revoked." in response.content.decode()


def test_a_person_may_hold_only_so_many(user_client, user):
    for _ in range(MAX_TOKENS_PER_PERSON):
        create_token(user)
    response, key = make(user_client)
    assert key is None
    assert "the most one person may have" in response.content.decode()
    assert AuthToken.objects.filter(user=user).count() == MAX_TOKENS_PER_PERSON


def test_the_page_is_linked_from_every_page_and_after_a_password_change(user_client):
    assert URL in user_client.get(reverse("documents:list")).content.decode()
    done = user_client.get(reverse("password_change_done")).content.decode()
    assert URL in done and "still work" in done
