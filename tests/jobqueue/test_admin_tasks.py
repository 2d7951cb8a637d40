"""A ``@task`` item's page in the operators' admin: the task's call (path,
arguments, run_after), its return value and each failed attempt's traceback;
escaped, bounded, in a constant number of queries."""

from __future__ import annotations

from datetime import timedelta
from html import unescape

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from jobqueue import tasks
from jobqueue.admin import TASK_ERRORS_SHOWN, TASK_VALUE_MAX
from jobqueue.models import QueueItem, Status
from jobqueue.runner import Outcome
from tests.jobqueue.task_apps import reports

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert('x')</script>"


def page(client, item: QueueItem) -> str:
    url = reverse("admin:jobqueue_queueitem_change", args=[item.pk])
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def field(body: str, name: str) -> str:
    """The HTML the page shows for one read-only field."""
    assert f"field-{name}" in body, f"no {name} on the page"
    return body.split(f"field-{name}")[1].split('class="form-row')[0]


def enqueued(*args, status: str = Status.PENDING, **kwargs) -> QueueItem:
    """An item as ``@task``'s enqueue makes it."""
    result = reports.logged.enqueue(*args, **kwargs)
    QueueItem.objects.filter(pk=result.id).update(status=status)
    return QueueItem.objects.get(pk=result.id)


def fail(item: QueueItem, exc: Exception) -> None:
    """A failed attempt, recorded as the worker records it (with its traceback)."""
    try:
        raise exc
    except Exception as raised:
        tasks._failed(item, Outcome(False, result=raised))


def test_a_task_item_shows_its_call_and_return_value(admin_client, make_document):
    when = timezone.now() + timedelta(days=1)
    result = reports.logged.using(run_after=when).enqueue(
        "weekly", directory="/srv/out"
    )
    item = QueueItem.objects.get(pk=result.id)
    body = page(admin_client, item)
    assert 'class="fieldset-heading">Task</h2>' in body
    assert "tests.jobqueue.task_apps.reports.logged" in field(body, "task_column")
    assert unescape(field(body, "task_args_column")).count('"weekly"') == 1
    assert '"directory": "/srv/out"' in unescape(field(body, "task_kwargs_column"))
    assert str(when.year) in field(body, "task_run_after_column")
    assert "None yet" in field(body, "task_result_column")
    assert ">None<" in field(body, "task_errors_column")

    item.status, item.result = Status.COMPLETED, {"file": "weekly.1", "rows": [1, 2]}
    item.save()
    shown = unescape(field(page(admin_client, item), "task_result_column"))
    assert '"file": "weekly.1"' in shown and "None yet" not in shown

    # A document's item keeps its page: it has no task.
    document_item = QueueItem.objects.create(
        document=make_document(), status=Status.FAILED, error_message="it broke"
    )
    body = page(admin_client, document_item)
    assert "field-error_column" in body and "it broke" in body
    assert 'class="fieldset-heading">Task</h2>' not in body
    assert "field-task_" not in body


def test_run_after_is_shown_only_when_the_task_had_one(admin_client):
    body = page(admin_client, enqueued("weekly", "/srv/out"))
    assert "field-task_args_column" in body
    assert "field-task_run_after_column" not in body


def test_a_failed_task_shows_each_attempts_traceback_newest_first(
    admin_client, django_user_model, client
):
    item = enqueued("weekly", "/srv/out", status=Status.FAILED)
    fail(item, ValueError("first: no such directory"))
    with CaptureQueriesContext(connection) as one_error:
        page(admin_client, item)
    fail(item, PermissionError("second: read-only file system"))
    fail(item, KeyError("third"))
    with CaptureQueriesContext(connection) as three_errors:
        body = page(admin_client, item)
    errors = unescape(field(body, "task_errors_column"))
    assert errors.count("Traceback (most recent call last)") == 3
    assert (
        errors.index("KeyError: 'third'")
        < errors.index("PermissionError: second: read-only file system")
        < errors.index("ValueError: first: no such directory")
    )
    assert "3 of 3</strong>: <code>builtins.KeyError</code>" in errors
    assert "1 of 3</strong>: <code>builtins.ValueError</code>" in errors
    # Read from the item in hand: no query per attempt.
    assert len(three_errors) == len(one_error)

    # Read-only, so view-only staff see it too.
    viewer = django_user_model.objects.create_user("viewer", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_queueitem"))
    client.force_login(viewer)
    assert "second: read-only file system" in unescape(
        field(page(client, item), "task_errors_column")
    )


def test_arguments_and_tracebacks_are_shown_as_text(admin_client):
    item = enqueued(SCRIPT, directory=SCRIPT, status=Status.COMPLETED)
    item.result = SCRIPT
    item.payload["task"] = f"evil.{SCRIPT}"
    item.save()
    fail(item, ValueError(SCRIPT))
    body = page(admin_client, item)
    assert "<script>alert" not in body
    for name in (
        "task_column",
        "task_args_column",
        "task_kwargs_column",
        "task_result_column",
        "task_errors_column",
    ):
        shown = field(body, name)
        assert "&lt;script&gt;alert(" in shown
        assert SCRIPT in unescape(shown)


def test_huge_arguments_and_tracebacks_are_cut_with_a_note(admin_client):
    huge = "a" * 400_000 + "THE-END"
    item = enqueued("START" + huge, directory=huge, status=Status.FAILED)
    item.payload["errors"] = [
        {"exception_class_path": "builtins.ValueError", "traceback": f"T{n}" + huge}
        for n in range(25)
    ]
    item.save()
    body = page(admin_client, item)
    assert len(body) < 25 * TASK_VALUE_MAX
    args = field(body, "task_args_column")
    # The start and the end are kept, the middle cut where a note says so.
    assert "START" in args and "THE-END" in args
    assert f"cut: {TASK_VALUE_MAX:,} of" in args
    assert f"cut: {TASK_VALUE_MAX:,} of" in field(body, "task_kwargs_column")
    errors = field(body, "task_errors_column")
    assert errors.count('class="task-error"') == TASK_ERRORS_SHOWN
    assert "T24a" in errors and "T0a" not in errors  # the newest
    assert errors.count("THE-END") == TASK_ERRORS_SHOWN
    assert f"The {25 - TASK_ERRORS_SHOWN} earlier failures are not shown." in errors
