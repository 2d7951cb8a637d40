"""One JSON error shape for the whole API, whatever raised the error.

Every error under ``/api/`` answers::

    {"error": {"code": "not_found", "message": "One human sentence.", "fields": {}}}

``code`` is stable for scripts to branch on, ``message`` is for people, and ``fields``
maps a request field to its messages (empty when the error is not about a field).
Views raise DRF exceptions (``NotFound``, ``PermissionDenied``, ``Throttled``,
``ValidationError`` or an ``APIException`` subclass with its ``status_code``); this
module renders them, in the product's words where DRF has only its stock English
(``WORDING``: ``Method "PUT" not allowed.``, "Request was throttled."). Django's
own 404 and 500 pages also come here for API paths.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import (
    DisallowedHost,
    RequestDataTooBig,
    TooManyFieldsSent,
)
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponsePermanentRedirect,
    JsonResponse,
)
from django.http.multipartparser import MAX_TOTAL_HEADER_SIZE, MultiPartParserError
from django.template.defaultfilters import filesizeformat
from django.urls import resolve
from django.views import csrf, defaults
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

API_PREFIX = "/api/"

INVALID_MESSAGE = "Some fields are not valid ({names}): “fields” says what each takes."
# DRF says only "Authentication credentials were not provided."
NOT_AUTHENTICATED_MESSAGE = (
    "Log in, or send “Authorization: Token <key>” (or “Bearer <key>”); "
    "make a key on your API tokens page, /accounts/tokens/."
)


def not_multipart(cause: BaseException | None) -> str:
    """What was wrong with a multipart body, and how to send one. The usual cause:
    a script that sets ``Content-Type: multipart/form-data`` by hand, without the
    boundary its HTTP client would have added."""
    reason = str(cause or "").strip() or "it could not be read"
    if reason == "Request max total header size exceeded.":
        # Django's limit on a part's headers: a long file name, not a bad boundary.
        return (
            "A part of the multipart body has headers over "
            f"{MAX_TOTAL_HEADER_SIZE:,} bytes, most likely for a very long file "
            "name: send the file under a shorter name."
        )
    return (
        f"The multipart body could not be read ({reason[:1].lower()}{reason[1:]}): "
        "let your HTTP client write the Content-Type header with its boundary, as "
        "curl -F file=@report.pdf does, rather than setting it by hand."
    )


def error_body(code: str, message: str, fields: dict | None = None) -> dict:
    """The API's error shape, for responses made outside DRF (middleware, 404s)."""
    return {"error": {"code": code, "message": message, "fields": fields or {}}}


def error_response(status_code: int, code: str, message: str) -> JsonResponse:
    """A plain Django response in the API's error shape."""
    return JsonResponse(error_body(code, message), status=status_code)


def not_allowed_message(method: str, allowed: list[str]) -> str:
    """'This address does not take PUT requests; it takes GET or HEAD.'"""
    message = f"This address does not take {method} requests"
    if not allowed:
        return message + "."
    if len(allowed) == 1:
        return f"{message}; it takes {allowed[0]} only."
    return f"{message}; it takes {or_list(allowed)}."


def or_list(words: list[str], last: str = "or") -> str:
    """'GET, POST or HEAD'."""
    if len(words) < 2:
        return "".join(words)
    return f"{', '.join(words[:-1])} {last} {words[-1]}"


# Characters that would rearrange or hide the message they are quoted in (bidi
# overrides and isolates, line breaks, controls): written as escapes instead.
HIDDEN_CHARACTERS = re.compile(
    r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def shown(value: object, limit: int = 40) -> str:
    """A caller's value, quoted in a message: cut short, so a message stays one, and
    with the characters that would reorder or break it (U+202E...) as escapes."""
    text = str(value)
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return HIDDEN_CHARACTERS.sub(lambda found: f"\\u{ord(found[0]):04x}", text)


def nothing_at(path: str) -> str:
    """A 404 that is about no document (an address, a format, a page of the API)."""
    return f"There is nothing you may see at {shown(path, 200)}; see /api/docs/."


def csrf_message(reason: str) -> str:
    """Django's and DRF's CSRF refusal, saying how to pass the check."""
    reason = reason.strip().rstrip(".")
    return (
        f"The CSRF check failed{f' ({reason})' if reason else ''}: with a session, "
        "send the X-CSRFToken header set to the csrftoken cookie's value, or use "
        "an API token (Authorization: Token <key>) instead."
    )


def _messages(detail: object) -> list[str]:
    if isinstance(detail, dict):
        return [m for value in detail.values() for m in _messages(value)]
    if isinstance(detail, list):
        return [m for value in detail for m in _messages(value)]
    return [str(detail)]


def _named(name: str, message: str) -> str:
    """DRF's stock "This field may not be null." names the field it is about."""
    for stock in ("This field ", "This list "):
        if message.startswith(stock):
            return f"“{name}” {message.removeprefix(stock)}"
    return message


def _validation_body(detail: object) -> dict:
    if not isinstance(detail, dict):
        messages = _messages(detail)
        return error_body("invalid", " ".join(messages) or "The request is not valid.")
    fields = {
        name: [_named(name, m) for m in _messages(value)]
        for name, value in detail.items()
    }
    general = fields.pop("non_field_errors", [])
    every = general + [m for messages in fields.values() for m in messages]
    if len(every) == 1:
        message = every[0]
    else:
        message = " ".join(general) or INVALID_MESSAGE.format(names=", ".join(fields))
    return error_body("invalid", message, fields)


def _is_stock(exc: exceptions.APIException) -> bool:
    """The exception says only DRF's default English, nothing of ours."""
    return str(exc.detail) == str(exc.default_detail)


def _not_found(exc: Exception, request: Request, view: object) -> str | None:
    # Http404 (get_object_or_404, DRF's ?format=) names a model and a query.
    if isinstance(exc, Http404) or _is_stock(exc):
        return nothing_at(request.path)
    return None  # ours: "There is no document 7, or ..."


def _method_not_allowed(exc: Exception, request: Request, view: object) -> str:
    return not_allowed_message(
        request.method or "", list(getattr(view, "allowed_methods", []))
    )


def _not_acceptable(exc: Exception, request: Request, view: object) -> str | None:
    if not _is_stock(exc):
        return None  # a ?format= refused by documents.api.KnownFormats
    renderers = exc.available_renderers or []
    types = or_list(list(dict.fromkeys(r.media_type for r in renderers)))
    return f"This address answers {types}: send that in Accept, or leave Accept out."


def _unsupported_media_type(
    exc: Exception, request: Request, view: object
) -> str | None:
    if not str(exc.detail).startswith('Unsupported media type "'):
        return None  # ours: the upload says how to send a file
    parsers = getattr(view, "parser_classes", [])
    types = or_list([parser.media_type for parser in parsers])
    return (
        f"This address does not read a body of type {shown(request.content_type)}: "
        f"send {types}."
    )


def _throttled(exc: Exception, request: Request, view: object) -> str:
    wait = exc.wait
    when = "later" if wait is None else f"in {wait} second{'s' if wait != 1 else ''}"
    return f"Too many requests: you are over your rate limit; try again {when}."


def _permission_denied(exc: Exception, request: Request, view: object) -> str | None:
    # DRF's SessionAuthentication: "CSRF Failed: CSRF token missing."
    detail = str(exc.detail)
    if detail.startswith("CSRF Failed:"):
        return csrf_message(detail.removeprefix("CSRF Failed:"))
    return None


def _not_authenticated(exc: Exception, request: Request, view: object) -> str:
    return NOT_AUTHENTICATED_MESSAGE  # DRF says only that none were given


# DRF's stock English, by exception class: what the API says instead (None: the
# exception's own message, one of ours). The most specific class wins.
WORDING: dict[type[Exception], Callable[[Exception, Request, object], str | None]] = {
    Http404: _not_found,
    exceptions.NotFound: _not_found,
    exceptions.MethodNotAllowed: _method_not_allowed,
    exceptions.NotAcceptable: _not_acceptable,
    exceptions.UnsupportedMediaType: _unsupported_media_type,
    exceptions.Throttled: _throttled,
    exceptions.PermissionDenied: _permission_denied,
    exceptions.NotAuthenticated: _not_authenticated,
}


def _message(
    exc: Exception, request: Request | None, view: object, detail: object
) -> str:
    for cls in type(exc).__mro__ if request is not None else ():
        if cls in WORDING and (message := WORDING[cls](exc, request, view)):
            return message
    return str(detail) or "The request failed."


def exception_handler(exc: Exception, context: dict) -> Response | None:
    """DRF's ``EXCEPTION_HANDLER``: DRF's status and headers, our body."""
    response = drf_exception_handler(exc, context)
    if response is None:
        return None  # not an API error: Django's 500 handler answers (JSON for /api/)
    request = context.get("request")
    if isinstance(exc, exceptions.ValidationError):
        response.data = _validation_body(exc.detail)
    else:
        detail = (
            response.data.get("detail", "") if isinstance(response.data, dict) else ""
        )
        code = getattr(detail, "code", None) or "error"
        message = _message(exc, request, context.get("view"), detail)
        response.data = error_body(code, message)
    if request is not None:
        # JSON even where the view renders something else (the schema's YAML).
        request.accepted_renderer = JSONRenderer()
        request.accepted_media_type = JSONRenderer.media_type
    return response


@csrf_exempt  # it changes nothing: a script's POST with a typo in its path gets 404
def api_not_found(
    request: HttpRequest, *args: object, **kwargs: object
) -> HttpResponse:
    """Any address under ``/api/`` that is not an endpoint; a GET of one without
    its trailing slash (``/api/docs``) is sent on, as APPEND_SLASH would have."""
    # The catch-all matches first, so CommonMiddleware never redirects here.
    if (
        request.method in ("GET", "HEAD")
        and not request.path_info.endswith("/")
        and resolve(request.path_info + "/").func is not api_not_found
    ):
        return HttpResponsePermanentRedirect(
            request.get_full_path(force_append_slash=True)
        )
    return _no_endpoint(request)


def _no_endpoint(request: HttpRequest) -> HttpResponse:
    return error_response(
        status.HTTP_404_NOT_FOUND,
        "not_found",
        f"There is no API endpoint at {request.path}; see /api/docs/.",
    )


# Django's error views for requests that never reached DRF, as (status, code, message).
DJANGO_ERRORS = {
    400: ("bad_request", "The request could not be understood."),
    403: ("permission_denied", "You may not do that."),
    500: (
        "server_error",
        "Something went wrong on our side; it is logged. Try again later.",
    ),
}


def bad_request_json(request: HttpRequest, exception: Exception) -> JsonResponse:
    """A 400 raised outside DRF (Django's ``handler400``), in the API's shape: for
    the API and the other endpoints scripts call (``config.middleware.bad_request``)."""
    if isinstance(exception, RequestDataTooBig):  # a JSON or form body, no file
        return error_response(
            status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            "too_large",
            "The request body is over "
            f"{filesizeformat(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)}; files go in "
            "a multipart upload.",
        )
    if isinstance(exception, MultiPartParserError):  # parsed by a middleware
        return error_response(400, "parse_error", not_multipart(exception))
    if isinstance(exception, TooManyFieldsSent):
        # "The request could not be understood." said nothing of the cause.
        return error_response(
            400,
            "too_many_fields",
            "The body has more than "
            f"{settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,} fields: send only "
            "the fields the endpoint takes.",
        )
    if isinstance(exception, DisallowedHost):  # not in ALLOWED_HOSTS
        host = shown(request.META.get("HTTP_HOST", ""), 100)
        return error_response(
            400,
            "disallowed_host",
            f"This site does not answer to the host name “{host}” (the request's "
            "Host header): call it by one of its own names.",
        )
    return error_response(400, *DJANGO_ERRORS[400])


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler403``: JSON for API paths, Django's page for everything else."""
    if request.path.startswith(API_PREFIX):
        return error_response(403, *DJANGO_ERRORS[403])
    return defaults.permission_denied(request, exception)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """``CSRF_FAILURE_VIEW``: JSON for API paths, Django's page for everything else."""
    if request.path.startswith(API_PREFIX):
        return error_response(403, "permission_denied", csrf_message(reason))
    return csrf.csrf_failure(request, reason)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler404``: JSON for API paths, Django's page for everything else."""
    if request.path.startswith(API_PREFIX):
        return _no_endpoint(request)
    return defaults.page_not_found(request, exception)
