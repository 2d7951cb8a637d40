"""An operator in a real browser: log in, read the dashboard, retry a failed job."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from jobqueue.models import ErrorType, QueueControl, QueueItem, Status

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "operator-password-1"


@pytest.fixture
def operator(django_user_model):
    """Staff with view and change permission on queue items (no superuser)."""
    user = django_user_model.objects.create_user(
        "queue-operator", password=PASSWORD, is_staff=True
    )
    user.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="jobqueue",
            codename__in=["view_queueitem", "change_queueitem"],
        )
    )
    return user


def admin_login(page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"{live_server.url}/admin/")


def test_operator_retries_a_failed_job(live_server, page, operator, make_document):
    from playwright.sync_api import expect

    doc = make_document(name="<b>broken</b>.pdf", mime_type="application/pdf")
    item = QueueItem.objects.create(
        document=doc,
        status=Status.FAILED,
        attempts=4,
        error_type=ErrorType.UNKNOWN,
        error_message="Invalid cross-reference table",
    )

    admin_login(page, live_server, operator.username)
    page.locator("#queue-console").get_by_role("link", name="Dashboard").click()
    expect(page.locator("h1")).to_have_text("Queue dashboard")
    expect(page.locator("#state-counts")).to_contain_text("Failed")
    expect(page.locator(".queue-chart")).to_have_count(2)
    expect(page.get_by_text("Invalid cross-reference table")).to_be_visible()

    page.locator("#content-main").get_by_role("link", name="Queue items").click()
    row = page.locator("#result_list tbody tr", has_text="<b>broken</b>.pdf")
    expect(row).to_contain_text("Failed")
    row.locator("input.action-select").check()
    page.select_option("select[name=action]", "retry_jobs")
    page.click("button[name=index]")

    expect(page.locator("ul.messagelist")).to_contain_text("Retried 1 job.")
    expect(row).to_contain_text("Pending")
    item.refresh_from_db()
    assert item.status == Status.PENDING and item.attempts == 0


def test_operator_pauses_and_resumes_processing(live_server, page, operator):
    from playwright.sync_api import expect

    admin_login(page, live_server, operator.username)
    page.goto(f"{live_server.url}/admin/jobqueue/queueitem/dashboard/")
    page.click("#pause-toggle")
    expect(page.locator("#queue-switch")).to_contain_text("Processing is paused")
    assert QueueControl.is_paused()
    page.click("#pause-toggle")
    expect(page.locator("#queue-switch")).to_contain_text("Processing is running")
    assert not QueueControl.is_paused()
