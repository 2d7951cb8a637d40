"""Roles hold: reprocess needs ownership or the operator's permission, only operators
set priorities, and per-user limits answer 429 (active jobs, upload and API rates)."""

from __future__ import annotations

import itertools

import pytest
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from documents.models import Document
from jobqueue.models import QueueItem, Status

pytestmark = pytest.mark.django_db
_COUNTER = itertools.count()


@pytest.fixture
def viewer(django_user_model):
    """Staff with view permissions only: may look at everything, change nothing."""
    viewer = django_user_model.objects.create_user("viewer", is_staff=True)
    viewer.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    return viewer


@pytest.fixture
def operator(django_user_model):
    operator = django_user_model.objects.create_user("op", is_staff=True)
    operator.user_permissions.set(
        Permission.objects.filter(codename__in=["view_queueitem", "change_queueitem"])
    )
    return operator


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def upload(client: Client, **data) -> object:
    # Each upload differs: identical files are refused as duplicates.
    content = f"some text {next(_COUNTER)}\n".encode()
    file = SimpleUploadedFile("a.txt", content)
    return client.post("/api/documents/", {"file": file, **data})


def test_view_only_staff_cannot_reprocess_on_the_web_or_the_api(viewer, make_document):
    document = make_document()
    client = logged_in(viewer)
    assert client.get(f"/documents/{document.pk}/").status_code == 200
    assert b"Reprocess" not in client.get(f"/documents/{document.pk}/").content
    assert client.post(f"/documents/{document.pk}/reprocess/").status_code == 403
    response = client.post(f"/api/documents/{document.pk}/reprocess/")
    assert response.status_code == 403
    assert "operator" in response.json()["error"]["message"]
    assert not QueueItem.objects.filter(document=document).exists()


def test_owner_and_operator_may_reprocess(user, operator, make_document):
    document = make_document()
    assert (
        logged_in(user).post(f"/documents/{document.pk}/reprocess/").status_code == 302
    )
    QueueItem.objects.update(status=Status.COMPLETED)
    response = logged_in(operator).post(f"/api/documents/{document.pk}/reprocess/")
    assert response.status_code == 202


@pytest.mark.parametrize("priority", ["100", "-100", "1"])
def test_only_operators_set_a_priority(user, viewer, operator, make_document, priority):
    for person in (user, viewer):
        response = upload(logged_in(person), priority=priority)
        assert response.status_code == 403
        assert (
            response.json()["error"]["message"]
            == "Only queue operators may set a priority."
        )
        document = make_document(owner=person)
        response = logged_in(person).post(
            f"/api/documents/{document.pk}/reprocess/", {"priority": priority}
        )
        assert response.status_code == 403
    assert not QueueItem.objects.exists()
    assert upload(logged_in(operator), priority=priority).status_code == 202
    assert QueueItem.objects.get().priority == int(priority)


def test_everyone_may_send_the_default_priority(user):
    assert upload(logged_in(user), priority="0").status_code == 202


def test_active_jobs_are_limited_per_user(settings, user, other_user, make_document):
    settings.USER_MAX_ACTIVE_JOBS = 2
    client = logged_in(user)
    assert upload(client).status_code == 202
    assert upload(client).status_code == 202
    response = upload(client)
    assert response.status_code == 429
    assert "the limit is 2" in response.json()["error"]["message"]
    page = client.post(
        "/documents/upload/", {"file": SimpleUploadedFile("b.txt", b"more")}
    )
    assert page.status_code == 429
    assert b"the limit is 2" in page.content
    # A finished document's reprocess would add a job: refused too.
    finished = make_document(content=b"done", name="done.txt")
    Document.objects.filter(pk=finished.pk).update(status=Status.FAILED)
    assert client.post(f"/documents/{finished.pk}/reprocess/").status_code == 429
    assert client.post(f"/api/documents/{finished.pk}/reprocess/").status_code == 429
    # A waiting one's adds none (its extraction reads it anew): not refused.
    waiting = Document.objects.filter(owner=user, status=Status.PENDING).first()
    page = client.post(f"/documents/{waiting.pk}/reprocess/", follow=True)
    assert page.status_code == 200 and "already queued" in page.content.decode()
    assert client.post(f"/api/documents/{waiting.pk}/reprocess/").status_code == 202
    assert QueueItem.objects.filter(document__owner=user).count() == 2
    # Finished jobs do not count, and the limit is each person's own.
    assert upload(logged_in(other_user)).status_code == 202
    QueueItem.objects.update(status=Status.COMPLETED)
    assert upload(client).status_code == 202


def test_uploads_are_rate_limited_per_user_with_retry_after(settings, user, other_user):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"user": "1000/minute", "uploads": "2/minute"},
    }
    client = logged_in(user)
    assert upload(client).status_code == 202
    web = client.post(
        "/documents/upload/",
        {"file": SimpleUploadedFile("w.txt", f"{next(_COUNTER)}".encode())},
    )
    assert web.status_code == 302
    for response in (
        upload(client),
        client.post(
            "/documents/upload/",
            {"file": SimpleUploadedFile("w.txt", f"{next(_COUNTER)}".encode())},
        ),
    ):
        assert response.status_code == 429
        assert 0 < int(response["Retry-After"]) <= 60
    assert client.get("/api/documents/").status_code == 200
    assert client.get("/documents/upload/").status_code == 200
    assert upload(logged_in(other_user)).status_code == 202


def test_api_calls_are_rate_limited_per_user(settings, user, other_user):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"user": "3/minute", "uploads": "100/minute"},
    }
    client = logged_in(user)
    for _ in range(3):
        assert client.get("/api/documents/").status_code == 200
    response = client.get("/api/documents/")
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert response.json()["error"]["message"]
    assert logged_in(other_user).get("/api/documents/").status_code == 200
