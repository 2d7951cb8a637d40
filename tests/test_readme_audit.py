"""README.md's precise statements, checked against the product (an outside audit)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.management import (
    CommandError,
    call_command,
    get_commands,
    load_command_class,
)
from django.test import Client

from documents import middleware
from documents.models import Document

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()
API_URL = "/api/documents/"
MIB = 1024 * 1024


# --- Production: the reverse proxy's body limits --------------------------------------

# Each server's own units: nginx's "m" is a mebibyte; Caddy reads sizes with
# go-humanize, where "MB" is 1,000,000 bytes and "MiB" 1,048,576.
NGINX = re.compile(r"client_max_body_size (\d+)m;")
CADDY = re.compile(r"max_size (\d+)(MiB|MB)\b")
CADDY_UNITS = {"MiB": MIB, "MB": 1000 * 1000}


def proxy_limits() -> list[tuple[str, int]]:
    found = [(f"nginx {n}m", int(n) * MIB) for n in NGINX.findall(README)]
    found += [
        (f"Caddy {n}{u}", int(n) * CADDY_UNITS[u]) for n, u in CADDY.findall(README)
    ]
    return found


def test_the_proxy_limits_the_readme_gives_let_through_what_the_app_takes(settings):
    """A proxy limit under the app's refuses uploads the app would take (Caddy's
    ``51MB`` is 51,000,000 bytes: a 50 MB file, 52,428,800, never reached the app);
    one far over it lets bodies through that the app only refuses itself."""
    settings.MAX_UPLOAD_MB, settings.MAX_UPLOAD_FILES = 50, 20  # the defaults
    app = {middleware.max_body_bytes(), middleware.max_api_body_bytes()}
    assert app == {1001 * MIB, 51 * MIB}
    limits = proxy_limits()
    assert len(limits) >= 5, limits  # the table's two rows, and the nginx example's
    for name, size in limits:
        assert any(0 <= size - limit < MIB for limit in app), (name, size, app)


# --- Operations: every option a synopsis names exists ----------------------------------

SYNOPSIS = re.compile(r"`manage\.py (\w+)([^`]*)`")


def test_every_option_the_readme_names_for_a_command_exists():
    checked = 0
    for name, rest in SYNOPSIS.findall(README):
        if name not in get_commands():
            continue
        parser = load_command_class(get_commands()[name], name).create_parser(
            "manage.py", name
        )
        known = {s for action in parser._actions for s in action.option_strings}
        for flag in re.findall(r"--[a-z][a-z-]*", rest):
            assert flag in known, f"README names {flag} for {name}; it takes {known}"
            checked += 1
    assert checked > 20


@pytest.mark.django_db
@pytest.mark.parametrize("status", ["completed", "failed", "cancelled"])
def test_clear_queue_status_takes_the_finished_states(status):
    call_command("clear_queue", "--older-than", "1", "--status", status, verbosity=0)


@pytest.mark.django_db
def test_clear_queue_status_refuses_a_state_that_is_not_finished():
    with pytest.raises(CommandError, match="invalid choice"):
        call_command("clear_queue", "--older-than", "1", "--status", "pending")


# --- The API: the list's page size, a document's tags ----------------------------------


@pytest.fixture
def api(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("page_size", "expected"),
    [("500", 100), ("100", 100), ("7", 7), ("abc", 20), ("0", 20), ("-3", 20)],
)
def test_page_size_is_at_most_100_and_a_bad_one_gives_20(
    api, user, page_size, expected
):
    Document.objects.bulk_create(
        Document(
            owner=user,
            original_filename=f"{n}.txt",
            file=f"uploads/{n}.txt",
            mime_type="text/plain",
            size=1,
            sha256=f"{n:064x}",
        )
        for n in range(101)
    )
    response = api.get(API_URL, {"page_size": page_size})
    assert response.status_code == 200, response.content[:300]
    assert response.json()["count"] == 101
    assert len(response.json()["results"]) == expected


@pytest.mark.django_db
def test_a_patch_takes_at_most_20_tags_of_50_characters(api, make_document):
    document = make_document()
    url = f"{API_URL}{document.pk}/"

    def patch(tags: list[str]):
        return api.patch(url, {"tags": tags}, content_type="application/json")

    assert patch([f"t{n}" for n in range(20)]).status_code == 200
    for tags, message in (
        ([f"u{n}" for n in range(21)], "At most 20 tags"),
        (["y" * 51], "longer than 50 characters"),
    ):
        response = patch(tags)
        assert response.status_code == 400, response.content[:300]
        error = response.json()["error"]
        assert error["code"] == "invalid" and message in error["fields"]["tags"][0]
    document.refresh_from_db()
    assert sorted(document.tags.values_list("name", flat=True)) == sorted(
        f"t{n}" for n in range(20)
    )
