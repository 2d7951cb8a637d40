"""The documents' admin at scale: a "select all" delete, the list's count and filters,
and the login attempts' delete must not grow with the rows they cover."""

from __future__ import annotations

import re
from datetime import timedelta
from itertools import count
from urllib.parse import quote

import pytest
from axes.models import AccessAttempt, AccessLog
from django.contrib.admin.models import DELETION, LogEntry
from django.contrib.auth.models import Group, Permission
from django.core.files.storage import default_storage
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from documents.admin import DocumentAdmin, LoginAttemptAdmin
from documents.models import Document, Tag
from documents.services import document_delete_many
from jobqueue import admin_lists
from jobqueue.admin_lists import DELETE_SAMPLE
from jobqueue.models import ExtractionMetric, QueueItem, Status
from tests import admin_actions

pytestmark = pytest.mark.django_db

DOCUMENTS = reverse("admin:documents_document_changelist")
ATTEMPTS = reverse("admin:axes_accessattempt_changelist")
_names = count()


def select_all(client, url: str = DOCUMENTS, model=Document, **extra):
    return admin_actions.select_all(client, url, model, **extra)


def confirm(client, response, url: str = DOCUMENTS):
    return admin_actions.confirm(client, response, url)


# --- The documents' bulk delete ----------------------------------------------------


def test_select_all_confirmation_counts_samples_and_says_what_goes_with_them(
    admin_client, make_documents
):
    oldest = make_documents(DELETE_SAMPLE + 5)
    make_documents(2, Status.PROCESSING)
    make_documents(1, Status.PENDING)
    response, msgs = select_all(admin_client)
    assert msgs == []
    assert response.templates[0].name == (
        "admin/documents/document/delete_selected_confirmation.html"
    )
    total = DELETE_SAMPLE + 8
    assert len(response.context["deletable_objects"][0]) == DELETE_SAMPLE
    page = response.content.decode()
    assert f"{total} documents will be deleted" in page
    assert f"their {total} queue items" in page
    assert f"Completed: {DELETE_SAMPLE + 5}" in page and "Processing: 2" in page
    assert "3 of these jobs are waiting or running" in page
    assert f"Queue items: {total}" in page  # Django's summary, counted
    assert "… and 8 more, not listed here." in page
    # The newest are named and linked; the oldest (past the sample) are not.
    newest = Document.objects.order_by("-pk").first()
    assert reverse("admin:documents_document_change", args=[newest.pk]) in page
    assert oldest[0].original_filename not in page
    # The form posts the selection back, not one input per document.
    assert page.count('name="_selected_action"') == 1
    assert 'name="select_across" value="1"' in page


def test_the_confirmation_costs_the_same_for_more_documents(
    admin_client, make_documents
):
    make_documents(3)
    with CaptureQueriesContext(connection) as few:
        small, _ = select_all(admin_client)
    make_documents(DELETE_SAMPLE * 3, Status.FAILED)
    with CaptureQueriesContext(connection) as many:
        large, _ = select_all(admin_client)
    assert large.status_code == 200
    assert len(many) == len(few)
    # The page grows by the sample, not by the documents (Django's lists each with
    # its queue items).
    assert len(large.content) < len(small.content) + 200 * DELETE_SAMPLE


def test_confirming_deletes_in_batches_through_the_service(
    admin_client,
    make_documents,
    deleted_through,
    monkeypatch,
    django_capture_on_commit_callbacks,
):
    monkeypatch.setattr(DocumentAdmin, "delete_batch", 4)
    # Being processed or waiting: deleted too, as the API deletes them.
    doomed = make_documents(7) + make_documents(2, Status.PROCESSING)
    metric = ExtractionMetric.objects.create(
        document=doomed[0], job=doomed[0].queue_items.get(), attempt=1
    )
    files = [d.file.name for d in doomed]
    assert all(default_storage.exists(name) for name in files)
    response, _ = select_all(admin_client)
    # Uploaded after the operator saw the count: not deleted by this confirmation.
    later = make_documents(1)
    with (
        CaptureQueriesContext(connection) as queries,
        django_capture_on_commit_callbacks(execute=True),
    ):
        response, msgs = confirm(admin_client, response)
    assert response.status_code == 200
    assert msgs == ["Successfully deleted 9 documents."]
    assert list(Document.objects.all()) == later
    assert list(QueueItem.objects.values_list("document", flat=True)) == [later[0].pk]
    assert sorted(deleted_through) == sorted(d.pk for d in doomed)
    assert not any(default_storage.exists(name) for name in files)
    assert default_storage.exists(later[0].file.name)
    metric.refresh_from_db()
    assert metric.document is None and metric.job is None
    logged = LogEntry.objects.filter(action_flag=DELETION)
    assert sorted(int(pk) for pk in logged.values_list("object_id", flat=True)) == (
        sorted(d.pk for d in doomed)
    )
    # Nine documents, four at a time: three batches of ids, and a fourth read
    # that finds none left.
    batches = [q for q in queries if re.search(r"\bLIMIT 4\b", q["sql"])]
    assert len(batches) == 4


def test_a_batch_of_documents_is_deleted_in_as_many_statements_as_one(
    make_documents, django_capture_on_commit_callbacks
):
    """``document_delete_many`` deletes rows, jobs, metrics' links and tags in bulk:
    a batch of 12 documents costs the statements of a batch of 2 (it cost about ten
    statements a document, one document at a time)."""

    def statements_to_delete(documents: list[Document]) -> int:
        for document in documents:
            tag = Tag.objects.create(owner=document.owner, name=f"t{document.pk}")
            document.tags.add(tag)
            ExtractionMetric.objects.create(
                document=document, job=document.queue_items.get(), attempt=1
            )
        with (
            CaptureQueriesContext(connection) as queries,
            django_capture_on_commit_callbacks(execute=True),
        ):
            document_delete_many(documents=documents)
        return len(queries)

    few, many = make_documents(2), make_documents(12, Status.PROCESSING)
    files = [d.file.name for d in few + many]
    assert statements_to_delete(few) == statements_to_delete(many)
    assert not Document.objects.exists() and not QueueItem.objects.exists()
    assert not Tag.objects.exists()
    assert ExtractionMetric.objects.filter(document=None, job=None).count() == 14
    assert not any(default_storage.exists(name) for name in files)


def test_the_delete_keeps_the_lists_filter(admin_client, make_documents):
    kept = make_documents(3)
    make_documents(4, Status.FAILED)
    url = f"{DOCUMENTS}?status__exact=failed"
    response, _ = select_all(admin_client, url)
    assert "4 documents will be deleted" in response.content.decode()
    _, msgs = confirm(admin_client, response, url)
    assert msgs == ["Successfully deleted 4 documents."]
    assert set(Document.objects.all()) == set(kept)


def test_ticked_documents_are_posted_back_and_deleted(admin_client, make_documents):
    one, two, three = make_documents(3)
    response = admin_client.post(
        DOCUMENTS,
        {"action": "delete_selected", "_selected_action": [one.pk, three.pk]},
    )
    page = response.content.decode()
    assert "2 documents will be deleted" in page
    assert page.count('name="_selected_action"') == 2
    _, msgs = confirm(admin_client, response)
    assert msgs == ["Successfully deleted 2 documents."]
    assert list(Document.objects.all()) == [two]


def test_deleting_their_jobs_needs_the_right_to_delete_queue_items(
    client, deleter, make_documents
):
    make_documents(2)
    for extra in ({}, {"post": "yes"}):
        _, msgs = select_all(client, **extra)
        assert msgs == [
            "Nothing was deleted: deleting these documents deletes their queue "
            "items, which your account may not delete."
        ]
    assert Document.objects.count() == 2


def test_view_only_staff_are_not_offered_the_delete(
    client, make_documents, django_user_model
):
    viewer = django_user_model.objects.create_user("viewer", is_staff=True)
    viewer.user_permissions.set(Permission.objects.filter(codename="view_document"))
    client.force_login(viewer)
    make_documents(1)
    assert 'value="delete_selected"' not in client.get(DOCUMENTS).content.decode()
    response, _ = select_all(client, post="yes")
    assert "bounded_delete" not in response.context
    assert Document.objects.count() == 1


# --- The documents' list -----------------------------------------------------------


def test_the_list_reads_no_row_for_its_filters_and_estimates_a_large_table(
    admin_client, make_documents, monkeypatch
):
    make_documents(3)
    monkeypatch.setattr(admin_lists, "estimated_rows", lambda queryset: 1_000_000)
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(DOCUMENTS)
    assert response.status_code == 200
    on_documents = [q["sql"] for q in queries if "documents_document" in q["sql"]]
    # No date hierarchy (its year choices read every row), no DISTINCT of a
    # column's values, no count of the whole table.
    assert not [sql for sql in on_documents if "DISTINCT" in sql or "COUNT(" in sql]
    assert not [sql for sql in on_documents if "MIN(" in sql or "MAX(" in sql]
    page = response.content.decode()
    assert re.search(r"about</span> 1000000 documents", page)
    assert "Select all (about 1000000) documents" in page
    # The filters the hierarchy and Django's value lists stood for are offered.
    assert "?created_at__gte=" in page and "Past 7 days" in page
    assert "?mime_type=text%2Fplain" in page
    assert "?error_type=corruption" in page


def test_a_filtered_list_is_counted_once_and_exactly(admin_client, make_documents):
    make_documents(3)
    make_documents(2, Status.FAILED)
    with CaptureQueriesContext(connection) as queries:
        page = admin_client.get(f"{DOCUMENTS}?status__exact=failed").content.decode()
    counts = [q["sql"] for q in queries if "COUNT(" in q["sql"]]
    assert len(counts) == 1 and "WHERE" in counts[0]
    assert "about" not in page and "2 documents" in page


def test_the_list_filters_by_date_type_and_error(admin_client, make_documents):
    old, new = make_documents(2)
    Document.objects.filter(pk=old.pk).update(
        created_at=timezone.now() - timedelta(days=40),
        mime_type="application/pdf",
        error_type="corruption",
    )
    since = quote((timezone.now() - timedelta(days=7)).isoformat())
    for query, shown in [
        (f"created_at__gte={since}", new),
        ("mime_type=application%2Fpdf", old),
        ("error_type=corruption", old),
    ]:
        response = admin_client.get(f"{DOCUMENTS}?{query}")
        assert list(response.context["cl"].result_list) == [shown], query


# --- Login attempts -----------------------------------------------------------------


def test_login_attempts_delete_is_bounded_and_batched(admin_client, monkeypatch):
    monkeypatch.setattr(LoginAttemptAdmin, "delete_batch", 10)
    AccessAttempt.objects.bulk_create(
        AccessAttempt(
            username=f"guess-{i}",
            ip_address=f"192.0.2.{i}",
            user_agent="x",
            failures_since_start=1,
        )
        for i in range(DELETE_SAMPLE + 15)
    )
    response, _ = select_all(admin_client, ATTEMPTS, AccessAttempt)
    page = response.content.decode()
    assert f"{DELETE_SAMPLE + 15} access attempts will be deleted" in page
    assert len(response.context["deletable_objects"][0]) == DELETE_SAMPLE
    assert page.count('name="_selected_action"') == 1
    assert "guess-0" not in page  # the oldest: counted, not listed
    AccessAttempt.objects.create(
        username="later", ip_address="192.0.2.250", failures_since_start=1
    )
    with CaptureQueriesContext(connection) as queries:
        _, msgs = confirm(admin_client, response, ATTEMPTS)
    assert msgs == [f"Successfully deleted {DELETE_SAMPLE + 15} access attempts."]
    assert list(AccessAttempt.objects.values_list("username", flat=True)) == ["later"]
    assert len([q for q in queries if re.search(r"\bLIMIT 10\b", q["sql"])]) == 5


def test_the_login_log_is_listed_without_a_date_hierarchy_and_deleted_bounded(
    admin_client,
):
    url = reverse("admin:axes_accesslog_changelist")
    AccessLog.objects.bulk_create(
        AccessLog(username=f"u{i}", ip_address="192.0.2.1", session_hash=f"h{i}")
        for i in range(DELETE_SAMPLE + 2)
    )
    with CaptureQueriesContext(connection) as queries:
        assert admin_client.get(url).status_code == 200
    assert not [q for q in queries if "DATE_TRUNC" in q["sql"].upper()]
    total = AccessLog.objects.count()  # the client's own login is logged too
    response, _ = select_all(admin_client, url, AccessLog)
    page = response.content.decode()
    assert f"{total} access logs will be deleted" in page
    assert page.count('name="_selected_action"') == 1
    _, msgs = confirm(admin_client, response, url)
    assert msgs == [f"Successfully deleted {total} access logs."]
    assert not AccessLog.objects.exists()


# --- Every other list ---------------------------------------------------------------


def test_other_lists_keep_djangos_confirmation(admin_client):
    group = Group.objects.create(name="kept-as-django-shows-it")
    url = reverse("admin:auth_group_changelist")
    response = admin_client.post(
        url, {"action": "delete_selected", "_selected_action": [group.pk]}
    )
    page = response.content.decode()
    assert "kept-as-django-shows-it" in page
    assert f'name="_selected_action" value="{group.pk}"' in page
    assert "bounded-delete" not in page
    assert "Are you sure you want to delete the selected group?" in page
