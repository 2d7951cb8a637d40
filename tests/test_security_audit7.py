"""Seventh audit, as an attacker holding someone's session, or probing the public
endpoints: the password change forms cannot be used to guess the current password,
and the public readiness probe names no folder of the server."""

from __future__ import annotations

import pytest
from django.test import Client

PASSWORD = "alice-password-1"
NEW = "Zq9-a-long-new-password"


def change(client: Client, url: str, old: str):
    return client.post(
        url, {"old_password": old, "new_password1": NEW, "new_password2": NEW}
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url", ["/accounts/password_change/", "/admin/password_change/"]
)
def test_a_borrowed_session_cannot_guess_the_current_password(settings, user, url):
    user.is_staff = True  # the admin's form is for staff
    user.save(update_fields=["is_staff"])
    client = Client()
    client.force_login(user)
    for n in range(settings.AXES_FAILURE_LIMIT - 1):
        assert change(client, url, f"guess-{n}").status_code == 200
    locked = change(client, url, "guess-last")
    assert locked.status_code == 429
    assert "Too many failed log-ins" in locked.content.decode()
    # Locked: even the right password changes nothing, and no login from here.
    assert change(client, url, PASSWORD).status_code == 429
    user.refresh_from_db()
    assert user.check_password(PASSWORD)
    login = {"username": "alice", "password": PASSWORD}
    assert Client().post("/accounts/login/", login).status_code == 429


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url", ["/accounts/password_change/", "/admin/password_change/"]
)
def test_the_owner_still_changes_a_password_after_a_typo(user, url):
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    client = Client()
    client.force_login(user)
    assert change(client, url, "typo").status_code == 200
    response = change(client, url, PASSWORD)
    assert response.status_code == 302
    assert response["Location"] == f"{url}done/"
    user.refresh_from_db()
    assert user.check_password(NEW)


@pytest.mark.django_db
def test_the_readiness_probe_names_no_folder_of_the_server(settings, monkeypatch):
    folder = "/srv/secret-tessdata-folder"
    monkeypatch.setenv("TESSDATA_PREFIX", folder)
    settings.OCR_MODE = "auto"
    settings.OCR_LANGUAGES = "xyz"  # no such language data anywhere
    response = Client().get("/readyz")
    assert response.status_code == 503
    body = response.content.decode()
    assert "xyz" in response.json()["checks"]["ocr"]
    assert folder not in body and "secret" not in body
