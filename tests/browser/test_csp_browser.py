"""Under the Content-Security-Policy, the scripts still run: the admin's own (actions,
select all) and ours (the upload page), with no violation reported by the browser."""

from __future__ import annotations

import pytest

from jobqueue.models import QueueItem, Status

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "root-password-1"


def test_scripts_run_and_nothing_is_blocked(
    live_server, page, django_user_model, make_document
):
    from playwright.sync_api import expect

    violations: list[str] = []
    page.on(
        "console",
        lambda message: (
            violations.append(message.text)
            if "Content Security Policy" in message.text
            else None
        ),
    )
    django_user_model.objects.create_superuser("root", password=PASSWORD)
    for n in range(2):
        QueueItem.objects.create(
            document=make_document(name=f"doc-{n}.txt"), status=Status.FAILED
        )

    page.goto(f"{live_server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", "root")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"{live_server.url}/admin/")

    page.goto(f"{live_server.url}/admin/jobqueue/queueitem/")
    page.check("#action-toggle")  # Django's actions.js ticks every row
    expect(page.locator("input.action-select:checked")).to_have_count(2)
    expect(page.locator(".action-counter")).to_contain_text("2 of 2 selected")

    page.goto(f"{live_server.url}/admin/jobqueue/queueitem/dashboard/")
    page.goto(f"{live_server.url}/documents/upload/")
    expect(page.locator("[data-js-only]").first).to_be_visible()  # app.js ran
    page.goto(f"{live_server.url}/api/docs/")
    expect(page.locator(".swagger-ui .info")).to_be_visible()  # Swagger UI ran
    assert not violations, violations
