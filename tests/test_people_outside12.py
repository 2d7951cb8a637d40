"""The people's pages from outside (audit 12), as found in a real browser against a
running server and worker. The API tokens page tied its field errors to no element
(the input's aria-describedby named an id nothing had) and left the focus at the
page's top; the lock-out page, also reached from the tokens and password pages by
someone logged in, spoke only of logging in and led nowhere; staff who followed
another person's tag link saw "Any" in the tag menu, and the next "Filter" dropped
the tag; staff's "All documents" were "My documents" in the menu and the document's
breadcrumb; a long file name made as long a page title; while processing was paused,
pages without JavaScript went on reloading themselves every few seconds, for nothing
that could change, throwing away what had been typed or ticked on them; a password change sent back
for its new password put the focus on the old one; the server error page told
someone whose upload had just failed that nothing they uploaded was lost."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from documents.models import Document, Tag
from jobqueue.models import QueueControl, Status

pytestmark = pytest.mark.django_db

TOKENS_URL = reverse("api_tokens")
LIST_URL = reverse("documents:list")


def html_element(body: str, pattern: str) -> str:
    """The first start tag matching ``pattern`` (a regular expression)."""
    found = re.search(rf"<{pattern}[^>]*>", body)
    assert found, pattern
    return found[0]


# --- The API tokens page: an error is tied to its field and takes the focus ---------


def test_a_wrong_password_on_the_tokens_page_is_tied_to_its_field(user_client):
    response = user_client.post(
        TOKENS_URL, {"action": "create", "expires_days": "30", "password": "nope"}
    )
    body = response.content.decode()
    field = html_element(body, r'input type="password" name="password"')
    described = re.search(r'aria-describedby="([^"]+)"', field)[1]
    # Every id it names is on the page: the error is read out with the field.
    for name in described.split():
        assert f'id="{name}"' in body, name
    assert re.search(
        rf'<span id="{described}" class="field-error"[^>]*>That is not your password',
        body,
    )
    # The keyboard lands on the field to fix; what was chosen is kept.
    assert "autofocus" in field
    assert '<option value="30" selected>' in body


def test_the_tokens_page_takes_no_focus_while_nothing_is_wrong(user_client):
    body = user_client.get(TOKENS_URL).content.decode()
    assert "autofocus" not in html_element(body, r'input type="password"')
    assert "autofocus" not in html_element(body, r'select name="expires_days"')


def test_a_password_change_sent_back_focuses_the_field_in_error(user_client):
    url = reverse("password_change")
    # Unsent, the old password takes the focus (Django's own), as before.
    body = user_client.get(url).content.decode()
    assert "autofocus" in html_element(
        body, r'input type="password" name="old_password"'
    )
    body = user_client.post(
        url,
        {
            "old_password": "alice-password-1",
            "new_password1": "a long new phrase 1",
            "new_password2": "a long new phrase 2",
        },
    ).content.decode()
    assert "didn’t match" in body
    assert "autofocus" not in html_element(
        body, r'input type="password" name="old_password"'
    )
    assert "autofocus" in html_element(
        body, r'input type="password" name="new_password2"'
    )


# --- The lock-out page says what counted, and where to go -------------------------


def test_a_person_locked_out_from_the_tokens_page_is_told_why_and_where_to_go(
    settings, user_client
):
    wrong = {"action": "create", "expires_days": "90", "password": "nope"}
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert user_client.post(TOKENS_URL, wrong).status_code == 200
    response = user_client.post(TOKENS_URL, wrong)
    assert response.status_code == 429
    body = response.content.decode()
    # They typed no log-in: the page names what they did.
    assert "making an API token counts too" in body
    assert "You are still logged in" in body
    assert f'<a href="{LIST_URL}">Back to my documents</a>' in body
    # And so it is: their documents stay open to them.
    assert user_client.get(LIST_URL).status_code == 200


def test_a_locked_out_log_in_leads_back_to_the_log_in_page(settings, user):
    client = Client()
    wrong = {"username": "alice", "password": "nope"}
    for _ in range(settings.AXES_FAILURE_LIMIT):
        response = client.post(reverse("login"), wrong)
    assert response.status_code == 429
    body = response.content.decode()
    assert f'<a href="{reverse("login")}">Back to the log-in page</a>' in body
    assert "You are still logged in" not in body


def test_the_server_error_page_does_not_say_an_upload_was_kept():
    from django.test import RequestFactory

    from config.middleware import server_error

    request = RequestFactory().post("/documents/upload/")
    body = server_error(request).content.decode()
    assert "Nothing you uploaded is lost" not in body
    assert "what you just sent may not have been done" in body


# --- The list's tag menu keeps the tag it is filtered by ---------------------------


def test_staff_following_another_persons_tag_keep_it_in_the_menu(
    client, make_document, user, staff_user
):
    document = make_document(name="minutes.txt")
    document.tags.add(Tag.objects.create(owner=user, name="Board & Co"))
    make_document(name="other.txt")
    Tag.objects.create(owner=staff_user, name="mine")
    client.force_login(staff_user)
    body = client.get(LIST_URL, {"tag": "Board & Co"}).content.decode()
    # The next "Filter" sends the tag again: the menu shows it chosen.
    assert "<option selected>Board &amp; Co</option>" in body
    assert "<option>mine</option>" in body
    assert ">minutes.txt</a>" in body and ">other.txt</a>" not in body


def test_a_person_filtered_by_a_tag_they_do_not_have_sees_it_chosen(user_client):
    body = user_client.get(LIST_URL, {"tag": "gone"}).content.decode()
    assert "<option selected>gone</option>" in body
    assert "No documents match these filters." in body


def test_a_persons_own_tag_is_chosen_once_in_any_case(user_client, user):
    Tag.objects.create(owner=user, name="Invoices")
    body = user_client.get(LIST_URL, {"tag": "invoices"}).content.decode()
    assert body.count("<option selected>") == 1
    assert "<option selected>Invoices</option>" in body
    assert "<option>invoices</option>" not in body


# --- Staff's documents are all documents, in the menu and the breadcrumb -----------


def test_staff_see_all_documents_named_so_in_the_menu_and_breadcrumb(
    client, make_document, staff_user
):
    document = make_document(name="alice.txt")
    client.force_login(staff_user)
    body = client.get(document.get_absolute_url()).content.decode()
    assert f'<a href="{LIST_URL}" aria-current="page">All documents</a>' in body
    assert f'<ol><li><a href="{LIST_URL}">All documents</a></li>' in body
    assert "My documents" not in body
    # Staff's own document's edit page too: its list is all documents.
    mine = make_document(name="operator.txt", owner=staff_user)
    body = client.get(reverse("documents:edit", args=[mine.pk])).content.decode()
    assert f'<ol><li><a href="{LIST_URL}">All documents</a></li>' in body
    assert "My documents" not in body


def test_a_person_still_sees_my_documents(user_client, make_document):
    document = make_document(name="alice.txt")
    body = user_client.get(document.get_absolute_url()).content.decode()
    assert f'<a href="{LIST_URL}" aria-current="page">My documents</a>' in body
    assert f'<ol><li><a href="{LIST_URL}">My documents</a></li>' in body


# --- A long name makes no long page title -----------------------------------------


def test_a_long_file_name_makes_a_short_page_title(user_client, make_document):
    document = make_document(name="L" * 200 + ".txt")
    for url in (
        document.get_absolute_url(),
        reverse("documents:edit", args=[document.pk]),
    ):
        body = user_client.get(url).content.decode()
        title = re.search(r"<title>(.*?)</title>", body, re.S)[1]
        assert len(title) < 90, title
        assert "L" * 59 + "…" in title
    # The page itself still names the whole file.
    body = user_client.get(document.get_absolute_url()).content.decode()
    assert Document.objects.get(pk=document.pk).original_filename in body


# --- While processing is paused, pages without JavaScript stay still ---------------

REFRESH = '<noscript><meta http-equiv="refresh"'


def test_while_paused_a_waiting_documents_pages_do_not_reload_themselves(
    user_client, make_document
):
    document = make_document(name="waiting.txt")
    Document.objects.filter(pk=document.pk).update(status=Status.PENDING)
    QueueControl.set_paused(True, by="test")
    detail = user_client.get(document.get_absolute_url()).content.decode()
    listed = user_client.get(LIST_URL).content.decode()
    for body in (detail, listed):
        assert REFRESH not in body
        assert "Processing is paused by an operator" in body
    # Each says so, and how to look again.
    assert "While processing is paused, it does not reload by itself" in detail
    assert "while processing is paused, this page does not refresh by itself" in listed
    # Resumed, they follow their documents again.
    QueueControl.set_paused(False, by="test")
    assert REFRESH in user_client.get(document.get_absolute_url()).content.decode()
    listed = user_client.get(LIST_URL).content.decode()
    assert REFRESH in listed and "this page refreshes every few seconds" in listed
