"""Requests refused before any view sees them."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

NUL_MESSAGE = "The address contains a NUL character, which nothing here accepts."


class RejectNulMiddleware:
    """400 for a NUL in the path or query string.

    PostgreSQL refuses NUL in any string parameter, so ``?status=%00`` would turn
    into a server error in whichever filter passes it on; forms already refuse NUL
    in posted fields (Django's ProhibitNullCharactersValidator).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        query = request.META.get("QUERY_STRING", "")
        if "\x00" in request.path or "%00" in query or "\x00" in query:
            if request.path.startswith("/api/"):
                error = {"code": "bad_request", "message": NUL_MESSAGE, "fields": {}}
                return JsonResponse({"error": error}, status=400)
            return HttpResponse(NUL_MESSAGE, status=400, content_type="text/plain")
        return self.get_response(request)
