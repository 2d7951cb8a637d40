"""The cron endpoint: process what is due, within a time budget, for a token holder."""

from __future__ import annotations

from django.conf import settings
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    JsonResponse,
)
from django.views.decorators.csrf import csrf_exempt

from jobqueue.bearer import bearer_matches, bearer_token
from jobqueue.models import QueueControl
from jobqueue.worker import process_document_queue


@csrf_exempt  # not a browser form: the bearer token is the credential
def cron(request: HttpRequest) -> HttpResponse:
    """POST with ``Authorization: Bearer <CRON_TOKEN>``; answers the counts, and
    whether an operator has paused processing (then nothing is done)."""
    expected = settings.CRON_TOKEN
    if not expected:
        # Disabled: not there at all, whatever the method; said as its other errors.
        return _error(
            404, "not_found", "The cron endpoint is disabled (CRON_TOKEN is not set)."
        )
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    given = bearer_token(request)
    if given is None:
        response = _error(
            401, "not_authenticated", "Send Authorization: Bearer <CRON_TOKEN>."
        )
        response["WWW-Authenticate"] = 'Bearer realm="cron"'
        return response
    if not bearer_matches(given, expected):
        return _error(403, "permission_denied", "That cron token is not valid.")
    # Read first: the drain ends by closing this thread's connection.
    paused = QueueControl.is_paused()
    counts = process_document_queue(time_budget=settings.CRON_BUDGET_SECONDS)
    return JsonResponse({**counts, "paused": paused})


def _error(status: int, code: str, message: str) -> JsonResponse:
    """The error shape of the site's machine endpoints (its 405 and the API's)."""
    return JsonResponse(
        {"error": {"code": code, "message": message, "fields": {}}}, status=status
    )
