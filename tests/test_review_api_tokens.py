"""Review of the API tokens page, as an attacker holding someone's session (a
computer left unlocked, a stolen cookie) and as a script racing itself."""

from __future__ import annotations

import re
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django.views.debug import ExceptionReporter
from knox.models import AuthToken

from documents import token_views
from documents.token_views import MAX_TOKENS_PER_PERSON
from documents.tokens import create_token

URL = reverse("api_tokens")
PASSWORD = "alice-password-1"


def make(client: Client, password: str | None = PASSWORD):
    data = {"action": "create", "expires_days": "90"}
    if password is not None:
        data["password"] = password
    return client.post(URL, data)


@pytest.mark.django_db
@pytest.mark.parametrize("password", [None, "", "not-her-password"])
def test_a_borrowed_session_cannot_make_a_token_without_the_password(
    user_client, user, password
):
    # A token outlives the session: it keeps working after the owner logs out
    # and changes the password, so making one asks for the password, as GitHub's
    # sudo mode does.
    response = make(user_client, password)
    assert response.status_code == 200
    assert 'id="new-key"' not in response.content.decode()
    assert not AuthToken.objects.filter(user=user).exists()


@pytest.mark.django_db
def test_the_password_cannot_be_guessed_on_the_tokens_page(settings, user_client):
    for n in range(settings.AXES_FAILURE_LIMIT - 1):
        assert make(user_client, f"guess-{n}").status_code == 200
    assert make(user_client, "guess-last").status_code == 429
    # Locked out: the right password makes nothing either.
    assert make(user_client, PASSWORD).status_code == 429
    assert not AuthToken.objects.exists()


@pytest.mark.django_db
def test_the_owner_makes_a_token_with_the_password(user_client, user):
    response = make(user_client)
    assert 'id="new-key"' in response.content.decode()
    assert AuthToken.objects.filter(user=user).count() == 1
    # Never filled in again: the browser keeps no password in the page.
    assert PASSWORD not in response.content.decode()


@pytest.mark.django_db
def test_expired_tokens_do_not_count_against_the_limit_and_say_so(user_client, user):
    for _ in range(MAX_TOKENS_PER_PERSON):
        create_token(user, expires_in_days=30)
    AuthToken.objects.filter(user=user).update(
        expiry=timezone.now() - timedelta(days=1)
    )
    page = user_client.get(URL).content.decode()
    assert "expired" in page
    response = make(user_client)
    assert 'id="new-key"' in response.content.decode()


@pytest.mark.django_db(transaction=True)
def test_two_requests_at_once_cannot_pass_the_limit(user, monkeypatch):
    for _ in range(MAX_TOKENS_PER_PERSON - 1):
        create_token(user)
    made = token_views.create_token
    second: list[threading.Thread] = []

    def make_in_another_request() -> None:
        try:
            client = Client()
            client.force_login(user)
            make(client)
        finally:
            connection.close()

    def racing(*args, **kwargs):
        # Between this request's count and its token, another request comes.
        if not second:
            second.append(threading.Thread(target=make_in_another_request))
            second[0].start()
            second[0].join(timeout=3)  # it waits for this one, when it must
        return made(*args, **kwargs)

    monkeypatch.setattr(token_views, "create_token", racing)
    client = Client()
    client.force_login(user)
    make(client)
    second[0].join()
    assert AuthToken.objects.filter(user=user).count() == MAX_TOKENS_PER_PERSON


@pytest.mark.django_db
def test_a_hostile_token_to_revoke_finds_nothing(user_client, user):
    # PostgreSQL refuses NUL in any string: an unchecked one was a server error.
    for hostile in ("\x00", "a" * 10_000):
        response = user_client.post(
            URL, {"action": "revoke", "token": hostile}, follow=True
        )
        assert response.status_code == 200
        assert "nothing revoked" in response.content.decode()


@pytest.mark.django_db
def test_an_error_report_names_neither_the_new_key_nor_the_password(
    user_client, monkeypatch
):
    # A failure after the token is made (rendering its page) is reported with the
    # view's variables and the posted fields: to the log, by e-mail to the admins.
    made: list[str] = []
    within_limit = token_views.token_within_limit

    def recorded(*args, **kwargs):
        made.append(within_limit(*args, **kwargs))
        return made[-1]

    def broken(*args, **kwargs):
        raise RuntimeError("the page could not be drawn")

    monkeypatch.setattr(token_views, "token_within_limit", recorded)
    monkeypatch.setattr(token_views, "render", broken)
    with pytest.raises(RuntimeError) as raised:
        make(user_client)
    # The report from the view down (the test's own frames hold the key too).
    view = raised.tb
    while view.tb_frame.f_code.co_name != "api_tokens":
        view = view.tb_next
    request = view.tb_frame.f_locals["request"]
    reporter = ExceptionReporter(request, raised.type, raised.value, view)
    # The text goes to the log and the mail; the page (DEBUG, or the mail's HTML
    # part) shows each frame's variables too.
    report = reporter.get_traceback_text() + reporter.get_traceback_html()
    assert made[0] and made[0] not in report
    assert PASSWORD not in report


@pytest.mark.django_db
def test_the_new_key_has_the_focus_and_its_label(user_client):
    # The page is drawn anew after "Make a token": a live region present from the
    # start is not read out, so the key takes the focus, and its label is read.
    page = make(user_client).content.decode()
    field = re.search(r"<input[^>]*id=\"new-key\"[^>]*>", page)[0]
    assert "autofocus" in field
    assert '<label for="new-key">' in page
