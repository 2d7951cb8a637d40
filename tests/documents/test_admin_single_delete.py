"""One document's delete page (its change page → Delete): a document being processed
is deleted as the bulk delete and the API delete it, through the service, with the
right to delete queue items still required; the page stays bounded."""

from __future__ import annotations

import re

import pytest
from django.contrib.admin.models import DELETION, LogEntry
from django.contrib.auth.models import Permission
from django.core.files.storage import default_storage
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from documents.models import Document
from jobqueue.admin_lists import DELETE_SAMPLE
from jobqueue.models import ExtractionMetric, QueueItem, Status

pytestmark = pytest.mark.django_db


def delete_url(document: Document) -> str:
    return reverse("admin:documents_document_delete", args=[document.pk])


def with_jobs(document: Document, *statuses: str) -> Document:
    QueueItem.objects.bulk_create(
        QueueItem(document=document, status=status) for status in statuses
    )
    return document


def test_a_document_being_processed_is_deleted_from_its_page(
    admin_client, make_document, deleted_through, django_capture_on_commit_callbacks
):
    document = with_jobs(make_document(), Status.COMPLETED, Status.PROCESSING)
    Document.objects.filter(pk=document.pk).update(status=Status.PROCESSING)
    running = document.queue_items.get(status=Status.PROCESSING)
    metric = ExtractionMetric.objects.create(document=document, job=running, attempt=1)
    change = reverse("admin:documents_document_change", args=[document.pk])
    assert delete_url(document) in admin_client.get(change).content.decode()
    page = admin_client.get(delete_url(document)).content.decode()
    assert "Cannot delete" not in page
    assert "and its 2 queue items" in page
    assert "Completed: 1" in page and "Processing: 1" in page
    assert "Its extraction is waiting or running" in page
    assert reverse("admin:jobqueue_queueitem_change", args=[running.pk]) in page
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(delete_url(document), {"post": "yes"})
    assert response.status_code == 302
    assert deleted_through == [document.pk]
    assert not Document.objects.exists() and not QueueItem.objects.exists()
    assert not default_storage.exists(document.file.name)
    metric.refresh_from_db()
    assert metric.document is None and metric.job is None
    logged = LogEntry.objects.get(action_flag=DELETION)
    assert logged.object_id == str(document.pk)


def test_deleting_its_jobs_needs_the_right_to_delete_queue_items(
    client, deleter, make_document
):
    busy = with_jobs(make_document(name="busy.txt"), Status.PENDING)
    page = client.get(delete_url(busy)).content.decode()
    assert "Cannot delete document" in page and "queue item" in page
    assert client.post(delete_url(busy), {"post": "yes"}).status_code == 403
    assert Document.objects.filter(pk=busy.pk).exists()
    # A document without jobs deletes nothing else: theirs to delete.
    alone = make_document(name="alone.txt")
    assert client.post(delete_url(alone), {"post": "yes"}).status_code == 302
    assert not Document.objects.filter(pk=alone.pk).exists()
    # With the right to delete queue items, the active job goes with its document.
    deleter.user_permissions.add(Permission.objects.get(codename="delete_queueitem"))
    assert client.post(delete_url(busy), {"post": "yes"}).status_code == 302
    assert not Document.objects.exists() and not QueueItem.objects.exists()


def test_view_only_staff_may_not_delete_from_its_page(client, make_document, user):
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    user.user_permissions.set(Permission.objects.filter(codename="view_document"))
    client.force_login(user)
    document = with_jobs(make_document(), Status.COMPLETED)
    assert client.get(delete_url(document)).status_code == 403
    assert client.post(delete_url(document), {"post": "yes"}).status_code == 403
    assert Document.objects.exists()


def test_the_page_names_the_newest_jobs_and_counts_the_rest(
    admin_client, make_document
):
    few = with_jobs(make_document(name="few.txt"), *[Status.COMPLETED] * 3)
    many = with_jobs(
        make_document(name="many.txt"),
        *[Status.COMPLETED] * (3 * DELETE_SAMPLE),
        Status.PENDING,
    )
    with CaptureQueriesContext(connection) as small:
        admin_client.get(delete_url(few))
    with CaptureQueriesContext(connection) as large:
        page = admin_client.get(delete_url(many)).content.decode()
    assert len(large) == len(small)
    linked = re.findall(r'href="/admin/jobqueue/queueitem/\d+/change/"', page)
    assert len(linked) == DELETE_SAMPLE
    newest = many.queue_items.order_by("-pk").first()
    assert reverse("admin:jobqueue_queueitem_change", args=[newest.pk]) in page
    assert f"… and {2 * DELETE_SAMPLE + 1} more queue items, not listed here." in page
    assert f"Queue items: {3 * DELETE_SAMPLE + 1}" in page
