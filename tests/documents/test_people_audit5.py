"""Fifth audit of the people's pages: a stale form's CSRF refusal is a page of the site,
logging in again leads back to the form's page, bulk actions name documents deleted
meanwhile as such, right-to-left text reads from the right, and names keep their quotes."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from documents.models import Document
from jobqueue.models import QueueItem, Status

pytestmark = pytest.mark.django_db

DJANGO_CSRF_PAGE = "CSRF verification failed. Request aborted."


def test_a_stale_form_gets_a_page_saying_what_to_do(user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    client.get(reverse("documents:upload"))  # the cookie, as the form's page sets it
    response = client.post(
        reverse("documents:upload"),
        {"file": SimpleUploadedFile("a.txt", b"words\n"), "csrfmiddlewaretoken": "x"},
    )
    page = response.content.decode()
    assert response.status_code == 403
    assert "<title>The form was out of date · Documents</title>" in page
    assert "Nothing was uploaded or changed." in page
    assert "reload the page" in page and "CSRF" in page
    assert DJANGO_CSRF_PAGE not in page
    assert not Document.objects.exists()


def test_a_browser_without_the_cookie_is_told_to_allow_it():
    response = Client(enforce_csrf_checks=True).post(
        reverse("login"), {"username": "alice", "password": "x"}
    )
    page = response.content.decode()
    assert response.status_code == 403
    assert "did not send this site's cookie" in page
    assert DJANGO_CSRF_PAGE not in page


def test_logging_in_after_reprocess_leads_to_the_document_not_a_405(
    client, user, make_document
):
    document = make_document()
    response = client.post(reverse("documents:reprocess", args=[document.pk]))
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next=/documents/{document.pk}/"
    response = client.post(
        response["Location"],
        {"username": "alice", "password": "alice-password-1"},
        follow=True,
    )
    assert response.redirect_chain[-1][0] == f"/documents/{document.pk}/"
    assert response.status_code == 200
    assert not QueueItem.objects.exists()  # the person clicks Reprocess again


def test_logging_in_after_a_bulk_action_leads_to_the_list(client):
    response = client.post(reverse("documents:bulk"), {"action": "reprocess"})
    assert response["Location"] == "/accounts/login/?next=/documents/"


@pytest.mark.parametrize("action", ["reprocess", "delete", "download"])
def test_bulk_on_documents_deleted_meanwhile_says_they_are_gone(
    user_client, make_document, action
):
    gone = make_document(name="gone.txt")
    gone_pk = gone.pk
    gone.delete()
    response = user_client.post(
        reverse("documents:bulk"),
        {"action": action, "id": [gone_pk], "confirm": "yes"},
        follow=True,
    )
    page = response.content.decode()
    assert "1 selected document was not found: it may have been deleted." in page
    assert "only a document" not in page and "Only your own" not in page


def test_bulk_counts_deleted_documents_apart_from_those_left_alone(
    user_client, make_document
):
    kept = make_document(name="kept.txt")
    gone = [make_document(name=f"gone-{n}.txt") for n in range(2)]
    ids = [kept.pk, *(d.pk for d in gone)]
    Document.objects.filter(pk__in=[d.pk for d in gone]).delete()
    response = user_client.post(
        reverse("documents:bulk"), {"action": "reprocess", "id": ids}, follow=True
    )
    page = response.content.decode()
    assert "2 selected documents were not found: they may have been deleted." in page
    assert "left alone" not in page
    assert "1 document was queued for reprocessing." in page
    assert QueueItem.objects.get().document_id == kept.pk


def test_right_to_left_text_takes_its_own_direction(user_client, make_document):
    document = make_document("שלום עולם מה שלום כולם?\n".encode())
    Document.objects.filter(pk=document.pk).update(
        status=Status.COMPLETED, text="שלום עולם מה שלום כולם?\n"
    )
    page = user_client.get(document.get_absolute_url()).content.decode()
    assert '<pre class="document-text" dir="auto"' in page
    response = user_client.get(reverse("documents:search"), {"q": "שלום"})
    assert '<p class="hit__snippet" dir="auto"><mark>שלום</mark>' in (
        response.content.decode()
    )


def test_the_list_s_caption_names_the_status_in_words(user_client, make_documents):
    make_documents(1, Status.RETRY_PENDING)
    page = user_client.get(reverse("documents:list"), {"status": "retry_pending"})
    assert "with status retry pending, page 1 of 1" in page.content.decode()


def test_a_quote_in_a_file_name_survives_the_browser_s_form_encoding(user_client):
    # Browsers send " in a file name as %22 (the HTML standard's multipart encoding).
    upload = SimpleUploadedFile("report %22final%22.txt", b"The final report.\n")
    response = user_client.post(reverse("documents:upload"), {"file": upload})
    assert response.status_code == 302
    assert Document.objects.get().original_filename == 'report "final".txt'


def test_a_person_changes_their_password_on_the_sites_own_pages(user, client):
    client.force_login(user)
    page = client.get(reverse("documents:list")).content.decode()
    assert f'href="{reverse("password_change")}"' in page  # from the user's name
    form = client.get(reverse("password_change")).content.decode()
    assert "Django administration" not in form and "Change your password" in form
    response = client.post(
        reverse("password_change"),
        {
            "old_password": "alice-password-1",
            "new_password1": "a-new-long-phrase-42",
            "new_password2": "a-new-long-phrase-42",
        },
        follow=True,
    )
    assert "Password changed" in response.content.decode()
    user.refresh_from_db()
    assert user.check_password("a-new-long-phrase-42")
