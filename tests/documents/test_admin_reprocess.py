"""The documents' admin "Reprocess" action on "select all": queued in batches, each a
read of ids and one insert of jobs, with the queue's rules (operators only, a
document whose extraction is waiting or running skipped and counted)."""

from __future__ import annotations

import re
import threading
from itertools import count

import pytest
from django.contrib.auth.models import Permission
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from documents import admin as documents_admin
from documents.admin import DocumentAdmin
from documents.models import Document
from jobqueue.models import Operation, QueueItem, Status
from tests import admin_actions

DOCUMENTS = reverse("admin:documents_document_changelist")
_names = count()


def reprocess_all(client, url: str = DOCUMENTS):
    return admin_actions.select_all(client, url, Document, action="reprocess")


def reprocessed() -> set[int]:
    return set(
        QueueItem.objects.filter(
            operation=Operation.REPROCESS, status=Status.PENDING
        ).values_list("document", flat=True)
    )


@pytest.mark.django_db
def test_select_all_queues_in_batches_and_counts_those_already_queued(
    admin_client, make_documents, monkeypatch
):
    monkeypatch.setattr(DocumentAdmin, "reprocess_batch", 4)
    done = make_documents(6) + make_documents(1, Status.FAILED)
    make_documents(2, Status.PROCESSING)
    make_documents(1, Status.PENDING)
    with CaptureQueriesContext(connection) as queries:
        _, msgs = reprocess_all(admin_client)
    assert msgs == [
        "Queued 7 documents for reprocessing; "
        "skipped 3 whose extraction is already waiting or running."
    ]
    assert reprocessed() == {d.pk for d in done}
    # The documents show it, as after one reprocess.
    assert set(
        Document.objects.filter(status=Status.PENDING).values_list("pk", flat=True)
    ) >= {d.pk for d in done}
    # Ten documents, four at a time: three batches of ids and a fourth read that
    # finds none left; one insert of jobs per batch.
    assert len([q for q in queries if re.search(r"\bLIMIT 4\b", q["sql"])]) == 4
    inserts = [q for q in queries if q["sql"].startswith("INSERT INTO extraction_")]
    assert len(inserts) == 3
    # Again: every one is now waiting.
    _, msgs = reprocess_all(admin_client)
    assert msgs == [
        "Queued 0 documents for reprocessing; "
        "skipped 10 whose extraction is already waiting or running."
    ]


@pytest.mark.django_db
def test_ten_or_a_hundred_documents_cost_the_same_statements(
    admin_client, make_documents
):
    def run() -> int:
        data = {
            "action": "reprocess",
            "select_across": "1",
            "index": "0",
            "_selected_action": [Document.objects.order_by("-pk").first().pk],
        }
        with CaptureQueriesContext(connection) as queries:
            response = admin_client.post(DOCUMENTS, data)
        assert response.status_code == 302
        return len(queries)

    make_documents(10)
    few = run()
    assert len(reprocessed()) == 10
    QueueItem.objects.update(status=Status.COMPLETED)
    make_documents(90)
    many = run()
    assert len(reprocessed()) == 100
    assert many == few


@pytest.mark.django_db
def test_the_list_filter_bounds_what_is_queued(admin_client, make_documents):
    make_documents(3)
    failed = make_documents(2, Status.FAILED)
    _, msgs = reprocess_all(admin_client, f"{DOCUMENTS}?status__exact=failed")
    assert msgs == ["Queued 2 documents for reprocessing."]
    assert reprocessed() == {d.pk for d in failed}


@pytest.mark.django_db
def test_only_operators_may_reprocess_all(client, make_documents, django_user_model):
    editor = django_user_model.objects.create_user("editor", is_staff=True)
    editor.user_permissions.set(
        Permission.objects.filter(codename__in=["view_document", "change_document"])
    )
    client.force_login(editor)
    make_documents(3)
    reprocess_all(client)
    assert not reprocessed()


@pytest.mark.django_db
def test_a_batch_refused_at_its_commit_is_read_and_queued_again(
    admin_client, make_documents, monkeypatch
):
    docs = make_documents(3)
    real, calls = documents_admin.document_reprocess_many, []

    def refused_once(*, document_ids):
        calls.append(document_ids)
        if len(calls) == 1:
            raise IntegrityError("a document of the batch was deleted meanwhile")
        return real(document_ids=document_ids)

    monkeypatch.setattr(documents_admin, "document_reprocess_many", refused_once)
    _, msgs = reprocess_all(admin_client)
    assert msgs == ["Queued 3 documents for reprocessing."]
    assert reprocessed() == {d.pk for d in docs}
    assert calls == [[d.pk for d in docs]] * 2


@pytest.mark.django_db(transaction=True)
def test_a_document_deleted_while_its_batch_is_queued_is_left_out(
    admin_client, make_documents, monkeypatch
):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite's batch holds the write lock from its BEGIN: no race")
    kept = make_documents(2)
    doomed = make_documents(1)[0]
    real, calls = documents_admin.document_reprocess_many, []

    def deleted_meanwhile(*, document_ids):
        calls.append(document_ids)
        if doomed.pk in document_ids and Document.objects.filter(pk=doomed.pk):

            def delete() -> None:  # another request, committed on its connection
                try:
                    Document.objects.filter(pk=doomed.pk).delete()
                finally:
                    connection.close()

            thread = threading.Thread(target=delete)
            thread.start()
            thread.join()
        return real(document_ids=document_ids)

    monkeypatch.setattr(documents_admin, "document_reprocess_many", deleted_meanwhile)
    _, msgs = reprocess_all(admin_client)
    assert msgs == ["Queued 2 documents for reprocessing."]
    assert reprocessed() == {d.pk for d in kept}
    assert not Document.objects.filter(pk=doomed.pk).exists()
    # Refused at its commit, the batch was read again without it.
    assert calls == [[*(d.pk for d in kept), doomed.pk], [d.pk for d in kept]]
