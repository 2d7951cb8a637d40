"""The operators' item page and the retry rules: retry and cancel buttons, "retry
anyway" for failures that would repeat, attempt history, the attempts column."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.urls import reverse

from jobqueue.models import (
    ErrorType,
    ExtractionMetric,
    QueueItem,
    Status,
    WorkerHeartbeat,
)
from jobqueue.services import QueueManager

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:jobqueue_queueitem_changelist")


def page_url(item: QueueItem) -> str:
    return reverse("admin:jobqueue_queueitem_change", args=[item.pk])


def messages_of(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


@pytest.fixture
def failed_item(make_document):
    def make(error_type: str, message: str = "it broke", attempts: int = 1):
        doc = make_document(name=f"{error_type}.pdf", mime_type="application/pdf")
        return QueueItem.objects.create(
            document=doc,
            status=Status.FAILED,
            attempts=attempts,
            error_type=error_type,
            error_message=message,
        )

    return make


def test_retrying_a_corrupt_file_needs_retry_anyway(admin_client, failed_item):
    corrupt = failed_item(ErrorType.CORRUPTION, "The file is damaged: no xref")
    timeout = failed_item(ErrorType.TIMEOUT)
    response = admin_client.post(
        CHANGELIST,
        {"action": "retry_jobs", "_selected_action": [corrupt.pk, timeout.pk]},
        follow=True,
    )
    assert messages_of(response) == [
        "Retried 1 job; skipped 1 that would fail again (Corrupt file: the same "
        "bytes fail the same way); choose “Retry anyway” to run it regardless."
    ]
    corrupt.refresh_from_db()
    timeout.refresh_from_db()
    assert corrupt.status == Status.FAILED and timeout.status == Status.PENDING

    response = admin_client.post(
        CHANGELIST,
        {"action": "retry_anyway", "_selected_action": [corrupt.pk]},
        follow=True,
    )
    assert messages_of(response) == ["Retried 1 job."]
    corrupt.refresh_from_db()
    assert corrupt.status == Status.PENDING and corrupt.attempts == 0


def test_the_item_page_has_retry_and_cancel_buttons(admin_client, failed_item):
    item = failed_item(ErrorType.UNKNOWN)
    body = admin_client.get(page_url(item)).content.decode()
    retry = reverse("admin:jobqueue_queueitem_retry", args=[item.pk])
    assert f'action="{retry}"' in body
    assert "Cancel job" not in body  # a failed job has nothing to cancel
    response = admin_client.post(retry, follow=True)
    assert response.redirect_chain[-1][0] == page_url(item)
    assert messages_of(response) == [f"Retried job #{item.pk}."]
    item.refresh_from_db()
    assert item.status == Status.PENDING

    body = admin_client.get(page_url(item)).content.decode()
    cancel = reverse("admin:jobqueue_queueitem_cancel", args=[item.pk])
    assert f'action="{cancel}"' in body
    admin_client.post(cancel)
    item.refresh_from_db()
    assert item.status == Status.CANCELLED


def test_the_item_page_stops_a_running_extraction(admin_client, make_document):
    WorkerHeartbeat.objects.create(worker_id="w1", status="busy")  # a live worker
    item = QueueItem.objects.create(
        document=make_document(), status=Status.PROCESSING, claimed_by="w1"
    )
    body = admin_client.get(page_url(item)).content.decode()
    assert "Stop job" in body and "Cancel job" not in body
    cancel = reverse("admin:jobqueue_queueitem_cancel", args=[item.pk])
    response = admin_client.post(cancel, follow=True)
    assert messages_of(response) == [
        f"Stopped job #{item.pk}: its worker ends it within seconds."
    ]
    item.refresh_from_db()
    assert item.status == Status.CANCELLED
    assert "Stopped by an operator" in item.error_message
    body = admin_client.get(page_url(item)).content.decode()
    assert "Stop job" not in body


def test_the_item_page_asks_before_retrying_what_would_fail_again(
    admin_client, failed_item
):
    item = failed_item(ErrorType.UNSUPPORTED, "Legacy .doc: save it as .docx")
    body = admin_client.get(page_url(item)).content.decode()
    assert "Retry anyway" in body
    assert "would fail again" in body and "Unsupported type" in body
    retry = reverse("admin:jobqueue_queueitem_retry", args=[item.pk])
    response = admin_client.post(retry, follow=True)
    assert "would fail again" in messages_of(response)[0]
    item.refresh_from_db()
    assert item.status == Status.FAILED
    admin_client.post(retry, {"anyway": "1"})
    item.refresh_from_db()
    assert item.status == Status.PENDING


def test_item_buttons_are_post_only_and_need_the_change_permission(
    client, admin_client, failed_item, django_user_model
):
    item = failed_item(ErrorType.UNKNOWN)
    retry = reverse("admin:jobqueue_queueitem_retry", args=[item.pk])
    assert admin_client.get(retry).status_code == 405
    viewer = django_user_model.objects.create_user("v", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_queueitem"))
    client.force_login(viewer)
    assert client.post(retry).status_code == 403
    assert "Retry" not in client.get(page_url(item)).content.decode().split(
        'id="content-main"'
    )[-1].split("Attempt history")[0].replace("Retry due", "")
    item.refresh_from_db()
    assert item.status == Status.FAILED


def test_attempt_history_is_numbered_in_order_with_each_error(
    admin_client, make_document
):
    """A job retried by an operator starts counting again; the history must not."""
    queue = QueueManager()
    doc = make_document()
    job = queue.enqueue(doc.pk)
    queue.claim("w1")
    queue.failed(job, "first: damaged", ErrorType.CORRUPTION)
    queue.retry_failed(job_id=job)
    queue.claim("w2")
    queue.failed(job, "second: damaged again", ErrorType.CORRUPTION)
    assert list(
        ExtractionMetric.objects.filter(job_id=job).values_list("attempt", flat=True)
    ) == [1, 1]  # what the rows hold: the count restarted
    body = admin_client.get(page_url(QueueItem.objects.get(pk=job))).content.decode()
    history = body[body.index('id="attempt-history"') :]
    assert "<tr><td>1</td>" in history and "<tr><td>2</td>" in history
    assert history.index("first: damaged") < history.index("second: damaged again")
    assert history.count("<tr><td>1</td>") == 1


@pytest.mark.parametrize(
    ("status", "error_type", "shown"),
    [
        (Status.FAILED, ErrorType.CORRUPTION, "1"),
        (Status.COMPLETED, "", "1"),
        (Status.RETRY_PENDING, ErrorType.TIMEOUT, "1/4"),
    ],
)
def test_attempts_column_shows_a_limit_only_while_one_applies(
    admin_client, make_document, status, error_type, shown
):
    item = QueueItem.objects.create(
        document=make_document(), status=status, attempts=1, error_type=error_type
    )
    response = admin_client.get(CHANGELIST)
    row = response.content.decode().split(f'value="{item.pk}"')[1].split("</tr>")[0]
    assert f'<td class="field-attempts_column">{shown}</td>' in row


def test_an_encrypted_file_is_called_encrypted_in_the_admin(admin_client, failed_item):
    item = failed_item(
        ErrorType.CORRUPTION,
        "This PDF is encrypted and needs a password; upload an unprotected copy.",
    )
    body = admin_client.get(CHANGELIST).content.decode()
    row = body.split(f'value="{item.pk}"')[1].split("</tr>")[0]
    assert "Encrypted" in row and "Corrupt file" not in row
