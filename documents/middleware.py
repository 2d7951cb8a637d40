"""Request bodies are refused as early as possible: before they are read when their
declared length is over the limit, and while they stream when one file passes its own.

Without this Django reads a whole body (spooling files to disk) before a view can say
no; a slow or hostile client then holds a web worker for as long as it likes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NoReturn

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.defaultfilters import filesizeformat
from django.urls import reverse
from rest_framework import status
from rest_framework.exceptions import APIException

from documents.uploads import NamelessFileHandler, clean_filename

MB = 1024 * 1024
# Where config.urls mounts the JSON API: its clients get JSON errors.
API_PREFIX = "/api/"
# Room for the multipart framing and the form's other fields around the files.
BODY_OVERHEAD = 1 * MB


def max_file_bytes() -> int:
    return settings.MAX_UPLOAD_MB * MB


def max_body_bytes() -> int:
    """The largest body any request may declare: a full upload form."""
    return settings.MAX_UPLOAD_FILES * max_file_bytes() + BODY_OVERHEAD


def max_api_body_bytes() -> int:
    """The largest body an API request may declare: the API takes one file at once."""
    return max_file_bytes() + BODY_OVERHEAD


class BodyRefused(APIException):
    """Raised while a body streams in; DRF renders it, the middleware too."""


class UploadTooLarge(BodyRefused):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"


class TooManyFiles(BodyRefused):
    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "too_many_files"


class UploadCutOff(BodyRefused):
    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "incomplete"


class LengthRequired(BodyRefused):
    status_code = status.HTTP_411_LENGTH_REQUIRED
    default_code = "length_required"
    default_detail = "Send the body with a Content-Length header (not chunked)."


class EncodedBody(BodyRefused):
    status_code = status.HTTP_415_UNSUPPORTED_MEDIA_TYPE
    default_code = "unsupported_media_type"
    default_detail = (
        "The body is sent compressed (Content-Encoding), which is not read here: "
        "send it as it is, without Content-Encoding."
    )


class LimitUploadHandler(FileUploadHandler):
    """Counts files and bytes as they arrive and stops the body at the first excess.

    Django closes (and so deletes) the temporary file being written only when a
    handler raises StopUpload or SkipFile; after any other error it stays on disk,
    held by this request's handlers, until the garbage collector gets to them.
    So a refusal discards it before it is raised, and the middleware discards it
    after any other error while parsing.
    """

    files = 0
    # A multipart body began to be parsed; it was parsed to its end.
    started = False
    finished = False

    def handle_raw_input(self, *args, **kwargs) -> None:
        self.started = True
        return None  # the next handlers parse the body

    def new_file(self, field_name, file_name, *args, **kwargs) -> None:
        super().new_file(field_name, file_name, *args, **kwargs)
        self.files += 1
        if self.files > settings.MAX_UPLOAD_FILES:
            self.refuse(TooManyFiles(too_many_files(self.request)))

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        if start + len(raw_data) > max_file_bytes():
            self.refuse(
                UploadTooLarge(
                    f"“{clean_filename(self.file_name)}” is over the "
                    f"{_size(max_file_bytes())} limit for one file. "
                    "Nothing was uploaded."
                )
            )
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handlers store the file

    def upload_interrupted(self) -> None:
        # The body ended inside a file: the client went away. Keep none of it.
        self.refuse(
            UploadCutOff("The upload was cut off before its end. Nothing was kept.")
        )

    def upload_complete(self) -> None:
        self.finished = True

    def refuse(self, refusal: BodyRefused) -> NoReturn:
        self.discard_files()
        raise refusal

    def discard_files(self) -> None:
        """Close the file each handler is writing (a temporary file is deleted as it
        closes). Files already complete are closed by Django's parser as the error
        passes through it."""
        for handler in self.request.upload_handlers:
            file = getattr(handler, "file", None)
            if handler is not self and file is not None:
                file.close()


class UploadLimitMiddleware:
    """413 for a declared length over the limit (one file's worth on the API, a full
    form elsewhere, 1 MB without a login); per-file limits while streaming; files
    with unusable names kept."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        declared = declared_length(request.META.get("CONTENT_LENGTH") or "")
        if declared and (refusal := too_large(request, declared)):
            return refuse(request, refusal)
        if "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
            # Django reads no body without a length: it would look like an empty form.
            return refuse(request, LengthRequired())
        if declared and encoded(request):
            # Django reads a body as sent: a gzip'd one was parsed as it stood, a
            # form with no file ("Send the document as a file") or JSON that "is
            # not UTF-8 text", and one merely labelled so was taken.
            response = refuse(request, EncodedBody())
            response["Accept-Encoding"] = "identity"  # RFC 9110, 12.5.3
            return response
        limits = LimitUploadHandler(request)
        request.upload_handlers[:0] = [NamelessFileHandler(request), limits]
        try:
            # A token's request is parsed by DRF after it authenticates it, where
            # these refusals render as JSON too.
            token_request = (
                request.path_info.startswith(API_PREFIX)
                and not request.user.is_authenticated
            )
            if request.content_type == "multipart/form-data" and not token_request:
                # Parse here, before any view or CSRF check does, so that a refusal
                # gets its own answer (the CSRF check would parse an anonymous
                # form's body, and a refusal there was a server error).
                try:
                    request.FILES  # noqa: B018 - reading it parses the body
                except BodyRefused as refusal:
                    request._mark_post_parse_error()
                    return refuse(request, refusal)
            return self.get_response(request)
        finally:
            if limits.started and not limits.finished:
                # Parsing stopped on an error of Django's or DRF's (a malformed
                # body, a full temporary disk): its half-written file goes too.
                limits.discard_files()


class BoundedBodyASGI:
    """Under an ASGI server, Django reads a request's whole body (to disk past
    FILE_UPLOAD_MAX_MEMORY_SIZE) before any middleware runs: anyone could send
    gigabytes to any URL. This wraps Django's ASGI application and holds every body
    to the largest any request may send (``max_body_bytes``, a full upload form):
    one declared over it is answered 413 unread, one that streams past it is cut
    off as a client gone. The finer limits (the API's, a request without a log-in)
    stay ``UploadLimitMiddleware``'s. WSGI servers (gunicorn) never read a body
    before Django asks for it."""

    def __init__(self, application: Callable) -> None:
        self.application = application

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return await self.application(scope, receive, send)
        limit = max_body_bytes()
        header = dict(scope.get("headers", ())).get(b"content-length", b"")
        if (declared_length(header.decode("latin-1")) or 0) > limit:
            return await self._refuse(send, limit)
        received = 0

        async def bounded_receive() -> dict:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    return {"type": "http.disconnect"}  # Django stops reading
            return message

        return await self.application(scope, bounded_receive, send)

    @staticmethod
    async def _refuse(send: Callable, limit: int) -> None:
        body = (
            f"The request is larger than any this site takes ({_size(limit)}). "
            "Nothing was uploaded.\n"
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def declared_length(declared: str) -> int | None:
    """The body's length as its Content-Length header says, or None without a number.

    Only ASCII digits, and not too many: a Latin-1 header value such as "²" is a
    digit to ``isdigit()`` and not to ``int()``, and ``int()`` refuses more than
    4,300 digits; both raised out of here, a server error, where a server lets
    them through (runserver does; gunicorn refuses them itself). Django reads such
    a length as no body; one of 19 digits or more is over any limit.
    """
    if not (declared.isascii() and declared.isdigit()):
        return None
    return int(declared) if len(declared) < 19 else sys.maxsize


def encoded(request: HttpRequest) -> bool:
    """Whether the body is declared compressed (Content-Encoding other than
    ``identity``), which nothing here decodes."""
    codings = request.META.get("HTTP_CONTENT_ENCODING", "").lower().split(",")
    return any(coding.strip() not in ("", "identity") for coding in codings)


def too_large(request: HttpRequest, declared: int) -> UploadTooLarge | None:
    """The refusal of a body whose declared length is over the request's limit."""
    size = _size(declared)
    if request.path_info.startswith(API_PREFIX):
        if declared <= max_api_body_bytes():
            return None
        return UploadTooLarge(
            f"The upload is {size}; the API takes one file of at most "
            f"{_size(max_file_bytes())} at once. Nothing was uploaded."
        )
    if declared > BODY_OVERHEAD and not request.user.is_authenticated:
        # Only people logged in upload; an anonymous form (a log-in) is small. Up to
        # a full form's worth of files was read and spooled to disk for anyone.
        return UploadTooLarge(
            f"The request is {size}; without logging in, the limit is "
            f"{_size(BODY_OVERHEAD)}. Log in to upload files."
        )
    if declared <= max_body_bytes():
        return None
    return UploadTooLarge(
        f"The upload is {size}; the limit is {settings.MAX_UPLOAD_FILES} files of "
        f"{_size(max_file_bytes())} each. Nothing was uploaded."
    )


def too_many_files(request: HttpRequest) -> str:
    """Why a body of more than ``MAX_UPLOAD_FILES`` files is refused: the API takes
    one file (2 to that many get the serializer's "Send exactly one file"), the
    upload form up to that many."""
    if request.path_info.startswith(API_PREFIX):
        return (
            "Send exactly one file in the field “file”: the API takes one file at "
            "a time. Nothing was uploaded."
        )
    return (
        f"At most {settings.MAX_UPLOAD_FILES} files at once, please. "
        "Nothing was uploaded."
    )


def refuse(request: HttpRequest, refusal: BodyRefused) -> HttpResponse:
    """JSON in the API's error shape, the upload form with its error, or plain text."""
    message = str(refusal.detail)
    if request.path_info.startswith(API_PREFIX):
        error = {"code": refusal.default_code, "message": message, "fields": {}}
        return JsonResponse({"error": error}, status=refusal.status_code)
    if (
        request.path_info == reverse("documents:upload")
        and request.user.is_authenticated
    ):
        from documents.views import upload_page  # views import this module's app

        # The form's own heading says "Nothing was uploaded:" before its reasons.
        reason = message.removesuffix(" Nothing was uploaded.")
        return upload_page(request, errors=[reason], status=refusal.status_code)
    return HttpResponse(
        message, status=refusal.status_code, content_type="text/plain; charset=utf-8"
    )


def _size(size: int) -> str:
    return filesizeformat(size).replace("\xa0", " ")
