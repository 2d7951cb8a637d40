"""Requests refused before any view sees them, and refusals that must say why."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import sys
from collections.abc import Callable

from csp.middleware import CSPMiddleware
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.cache import patch_cache_control, patch_vary_headers
from django.views import defaults

from documents.api_errors import (
    API_PREFIX,
    DJANGO_ERRORS,
    bad_request_json,
    error_body,
    error_response,
    not_allowed_message,
)
from jobqueue.faults import is_database_away
from ops.middleware import ENDPOINTS as MACHINE_ENDPOINTS

NUL_MESSAGE = "The address contains a NUL character, which nothing here accepts."
NUL_HEADER_MESSAGE = (
    "A header of the request contains a NUL character, which nothing here accepts."
)


class ForwardedForMiddleware:
    """Behind a reverse proxy (``TRUST_X_FORWARDED_FOR``) every request comes from
    the proxy's address: the client's is the last one the proxy put in
    X-Forwarded-For (those before it are the client's say). Login lock-outs and the
    API's throttles then count per client, not all clients as one."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if settings.TRUST_X_FORWARDED_FOR:
            forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
            with contextlib.suppress(ValueError):
                client = forwarded_address(forwarded.rsplit(",", 1)[-1])
                request.META["REMOTE_ADDR"] = str(client)
        return self.get_response(request)


def forwarded_address(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address as proxies write it: ``1.2.3.4``, ``2001:db8::1``, or with the
    client's port, ``1.2.3.4:5678`` or ``[2001:db8::1]:5678`` (some proxies add it).
    Taken for a bad address, one with a port left every client on the proxy's
    address: one lock-out for all of them."""
    value = value.strip()
    if value.startswith("["):
        value = value[1:].partition("]")[0]
    elif value.count(":") == 1:
        value = value.partition(":")[0]
    return ipaddress.ip_address(value)


class RejectNulMiddleware:
    """400 for a NUL in the path, the query string or a header.

    PostgreSQL refuses NUL in any string parameter, so ``?status=%00`` would turn
    into a server error in whichever filter passes it on; forms already refuse NUL
    in posted fields (Django's ProhibitNullCharactersValidator). Headers are stored
    too: django-axes records a log-in's User-Agent and Accept, and an API key's
    prefix is looked up. gunicorn refuses such a header itself; runserver and other
    servers pass it on.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        query = request.META.get("QUERY_STRING", "")
        message = None
        if "\x00" in request.path or "%00" in query or "\x00" in query:
            message = NUL_MESSAGE
        elif any(
            "\x00" in value
            for name, value in request.META.items()
            if name.startswith("HTTP_") or name == "CONTENT_TYPE"
            if isinstance(value, str)
        ):
            message = NUL_HEADER_MESSAGE
        if message is not None:
            if speaks_json(request):  # the API, and the cron endpoint
                response = JsonResponse(error_body("bad_request", message), status=400)
            else:
                # The site's page for a bad request, as Django's handler400 answers:
                # people were shown one line of plain text.
                page = render_to_string("400.html", {"message": message})
                response = HttpResponse(page, status=400)
            # Answered before the middleware that frames every page in the site's
            # policy: what it would have added.
            for frame in (XFrameOptionsMiddleware, CSPMiddleware):
                response = frame(self.get_response).process_response(request, response)
            return response
        # A quoted cookie value may spell a NUL as \000, which Python's cookie parser
        # turns into one, past gunicorn's check: no cookie this site set, so it is
        # dropped, not looked up as a session key (PostgreSQL refused it: a 500 for
        # anyone who sent it).
        if any("\x00" in name + value for name, value in request.COOKIES.items()):
            request.COOKIES = {
                name: value
                for name, value in request.COOKIES.items()
                if "\x00" not in name + value
            }
        return self.get_response(request)


class MethodNotAllowedMiddleware:
    """A 405 says which methods the address takes, keeping its ``Allow`` header.

    Django's ``require_POST``/``require_GET``/``require_http_methods``, class-based
    views' ``http_method_not_allowed`` and ``HttpResponseNotAllowed`` answer with an
    empty body. This fills it: the API's JSON error for ``/api/`` and the machines'
    endpoints (``/healthz``, ``/readyz``, ``/metrics``, the cron endpoint), a page of
    the site (``405.html``) for people. A 405 that already says something (DRF's)
    is left as it is. First in MIDDLEWARE, so the machines' endpoints, answered
    before the rest of the stack, come through it too; the body is replaced in the
    response the stack made, so its headers (CSP, cookies, Allow) stay.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 405 or response.streaming or response.content:
            return response
        allowed = [m.strip() for m in response.get("Allow", "").split(",") if m.strip()]
        message = not_allowed_message(request.method or "", allowed)
        if speaks_json(request):
            body = error_body("method_not_allowed", message)
            response.content = json.dumps(body)
            response["Content-Type"] = "application/json"
        else:
            page = render_to_string("405.html", {"message": message}, request=request)
            response.content = page
            response["Content-Type"] = "text/html; charset=utf-8"
            patch_vary_headers(response, ["Cookie"])  # the page names who is logged in
        if response.has_header("Content-Length"):
            response["Content-Length"] = str(len(response.content))
        return response


def speaks_json(request: HttpRequest) -> bool:
    """The API and the endpoints for machines (probes, metrics, cron) answer JSON."""
    path = request.path
    return (
        path.startswith(API_PREFIX)
        or (path.rstrip("/") or "/") in MACHINE_ENDPOINTS
        # The cron endpoint takes its address without the slash too (jobqueue.urls).
        or path.rstrip("/") == reverse("jobqueue:cron").rstrip("/")
    )


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler400``: JSON in the API's shape wherever JSON is spoken, the site's
    page elsewhere. A Host header outside ALLOWED_HOSTS, refused before any view,
    got the cron endpoint's scripts an HTML page."""
    if speaks_json(request):
        return bad_request_json(request, exception)
    return defaults.bad_request(request, exception)


DATABASE_AWAY = "The database is unavailable at the moment; try again shortly."
DATABASE_AWAY_RETRY_SECONDS = 5


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: as ``bad_request``; a cron run that failed on our side told
    its script so in an HTML page. The database away (at its connection limit,
    restarting) is a 503 with Retry-After, as an upload it refuses answers, which
    HTTP clients' retries wait for; it was a 500 wherever it failed first (the
    token's look-up, the cron run)."""
    if speaks_json(request):
        # Django calls this inside its ``except``: the exception is at hand.
        if is_database_away(sys.exc_info()[1] or Exception()):
            response = error_response(503, "database_unavailable", DATABASE_AWAY)
            response["Retry-After"] = str(DATABASE_AWAY_RETRY_SECONDS)
            return response
        return error_response(500, *DJANGO_ERRORS[500])
    return defaults.server_error(request)


class PrivateCacheMiddleware:
    """What a logged-in person is answered (their documents, pages, files) is
    theirs: ``Cache-Control: private`` keeps a shared cache (a proxy, a CDN) from
    handing it to the next person, and ``no-store`` keeps the browser from showing
    it again from its disk (the Back button after logging out, on a shared
    computer): page images and thumbnails too, which a browser would show from its
    cache without asking (``max-age``), or from its history even when told to
    revalidate (``no-cache``). A response that says how it may be cached already is
    left as it is (the API's answers to scripts, revalidated with their ETag)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        user = getattr(request, "user", None)
        if (
            user is not None
            and user.is_authenticated
            and not response.has_header("Cache-Control")
        ):
            patch_cache_control(response, private=True, no_store=True)
        return response


class UnsentFormMiddleware:
    """A form sent after its session ended (a log-out in another tab, an expired
    session) is turned away to the log-in page, which said nothing of it: the
    person, sent back to an empty upload form or to the old title, could not tell
    that what they had sent was not kept. The log-in page now says so."""

    MESSAGE = (
        "You were logged out (in another tab, or after a long while), so what you "
        "sent was not kept: log in, then send it again."
    )
    COOKIE = "unsent"  # for the log-in page, which says MESSAGE

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        login = reverse("login")
        if (
            request.method == "POST"
            and response.status_code == 302
            and not request.user.is_authenticated
            # login_required's way there (``?next=``), not a log-out's own.
            and response.get("Location", "").startswith(f"{login}?")
        ):
            # Said by a cookie the log-in page reads once, not kept in the session
            # (messages are): each anonymous POST, anyone's script's, wrote a
            # session row to hold it.
            response.set_cookie(
                self.COOKIE,
                "1",
                max_age=600,
                path=login,
                secure=settings.SESSION_COOKIE_SECURE,
                httponly=True,
                samesite="Lax",
            )
        elif request.path == login and self.COOKIE in request.COOKIES:
            response.delete_cookie(self.COOKIE, path=login, samesite="Lax")
        return response
