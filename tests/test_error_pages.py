"""A 405 says which methods an address takes: JSON for the API and the machines'
endpoints, a page of the site for people, with its ``Allow`` header (Django's
``require_POST`` and friends answer with an empty body; config.middleware fills it)."""

from __future__ import annotations

import json
import re

import pytest
from django.http import HttpResponse, HttpResponseNotAllowed
from django.test import RequestFactory
from django.urls import URLPattern, URLResolver, get_resolver

from config.middleware import MethodNotAllowedMiddleware
from tests.conftest import grant_operator

pytestmark = pytest.mark.django_db

METHODS = ("get", "post", "put", "patch", "delete")


def assert_page(response, method: str, allowed: str) -> str:
    """A page of the site naming the method refused and the ones allowed."""
    assert response.status_code == 405
    assert response["Allow"] == allowed
    assert response["Content-Type"] == "text/html; charset=utf-8"
    page = response.content.decode()
    assert "<title>Not available this way · Documents</title>" in page
    assert f"This address does not take {method} requests" in page
    assert "Content-Security-Policy" in response
    return page


def test_a_people_s_page_refusing_a_method_says_which_it_takes(
    client, user, make_document
):
    client.force_login(user)
    document = make_document()
    page = assert_page(client.get("/documents/bulk/"), "GET", "POST")  # require_POST
    assert "it takes POST only." in page
    assert user.username in page  # the site's own layout, as the person's other pages
    response = client.post(f"/documents/{document.pk}/text/")  # require_safe
    assert "it takes GET or HEAD." in assert_page(response, "POST", "GET, HEAD")


def test_a_class_based_view_s_405_is_a_page_too(client):
    # LogoutView takes POST: http_method_not_allowed answered a GET with nothing.
    page = assert_page(client.get("/accounts/logout/"), "GET", "POST, OPTIONS")
    assert "it takes POST or OPTIONS." in page


def test_the_admin_s_405_is_a_page_too(client, staff_user):
    client.force_login(staff_user)
    response = client.get("/admin/jobqueue/queueitem/dashboard/pause/")
    assert "it takes POST only." in assert_page(response, "GET", "POST")


def api_error(response, allowed: str) -> dict:
    assert response.status_code == 405
    assert response["Allow"] == allowed
    assert response["Content-Type"] == "application/json"
    error = json.loads(response.content)["error"]
    assert error["code"] == "method_not_allowed" and error["fields"] == {}
    return error


def test_the_cron_endpoint_s_405_is_json(client, settings):
    settings.CRON_TOKEN = "cron-secret"
    error = api_error(client.get("/queue/cron/"), "POST")
    assert (
        error["message"]
        == "This address does not take GET requests; it takes POST only."
    )


def test_the_metrics_405_is_json(client, settings):
    # Answered before the rest of the stack (ops.middleware), and still filled.
    settings.METRICS_PUBLIC = True
    error = api_error(client.post("/metrics"), "GET, HEAD")
    assert error["message"].endswith("it takes GET or HEAD.")


def test_an_empty_405_under_the_api_is_json_and_its_length_follows():
    def view(request) -> HttpResponse:
        response = HttpResponseNotAllowed(["GET", "HEAD"])
        response["Content-Length"] = "0"
        response["X-Kept"] = "yes"
        return response

    request = RequestFactory().delete("/api/anything/")
    response = MethodNotAllowedMiddleware(view)(request)
    error = api_error(response, "GET, HEAD")
    assert error["message"] == (
        "This address does not take DELETE requests; it takes GET or HEAD."
    )
    assert response["Content-Length"] == str(len(response.content))
    assert response["X-Kept"] == "yes"


def test_a_405_that_already_says_why_is_left_alone(client, user):
    # DRF's own answer, in the API's shape and the middleware's words.
    client.force_login(user)
    error = api_error(client.put("/api/documents/"), "GET, POST, HEAD, OPTIONS")
    assert error["message"] == (
        "This address does not take PUT requests; it takes GET, POST, HEAD or OPTIONS."
    )


def test_other_answers_are_left_alone(client, user):
    client.force_login(user)
    assert client.get("/documents/").status_code == 200
    response = MethodNotAllowedMiddleware(lambda request: HttpResponse(status=204))(
        RequestFactory().get("/documents/")
    )
    assert response.status_code == 204 and response.content == b""


def routes(resolver: URLResolver, prefix: str = "") -> list[str]:
    """Every address of the URLconf, as a pattern ("documents/<int:pk>/")."""
    found: list[str] = []
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            found += routes(entry, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            found.append(prefix + str(entry.pattern))
    return found


def test_no_address_answers_405_with_an_empty_body(
    client, settings, user, make_document, django_user_model
):
    """Every route of the URLconf (an id where it takes one) with every method, as
    a superuser: each 405 has a body and an Allow header."""
    settings.CRON_TOKEN = "cron-secret"
    settings.METRICS_PUBLIC = True
    document = make_document()
    grant_operator(user)
    root = django_user_model.objects.create_superuser("root")
    addresses = {"/healthz", "/readyz", "/metrics"}
    for route in routes(get_resolver()):
        address = "/" + re.sub(r"<int:\w+>", str(document.pk), route)
        if not re.search(r"[<>()\[\]^$*?\\]", address):  # a plain address
            addresses.add(address)
    refused = []
    for address in sorted(addresses):
        for method in METHODS:
            client.force_login(root)  # again: a POST to a logout address logs out
            response = getattr(client, method)(address)
            if response.status_code == 405:
                refused.append(f"{method.upper()} {address}")
                assert response.content.strip(), f"{method.upper()} {address}"
                assert response["Allow"], f"{method.upper()} {address}"
    # Django's, DRF's and our own views' refusals were all met.
    for expected in (
        "GET /documents/bulk/",
        "GET /accounts/logout/",
        "PUT /api/documents/",
        "GET /queue/cron/",
        "POST /metrics",
        "GET /admin/logout/",
    ):
        assert expected in refused


def test_a_nul_in_an_api_address_is_a_json_400(client, user):
    client.force_login(user)
    response = client.get("/api/documents/?status=%00")
    assert response.status_code == 400
    assert json.loads(response.content)["error"]["code"] == "bad_request"


def test_a_page_not_found_is_a_page_of_the_site(client, user):
    client.force_login(user)
    response = client.get("/documents/999999999/")
    assert response.status_code == 404
    page = response.content.decode()
    assert "<title>Not found · Documents</title>" in page
    assert 'href="/documents/"' in page


def test_a_server_error_is_a_page_that_needs_nothing_but_its_template():
    from config.middleware import server_error

    response = server_error(RequestFactory().get("/documents/"))
    assert response.status_code == 500
    assert "Something went wrong" in response.content.decode()


def test_logging_out_says_so_on_the_login_page(client, user):
    client.force_login(user)
    response = client.post("/accounts/logout/", follow=True)
    assert "You are logged out." in response.content.decode()
