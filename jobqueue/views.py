"""The cron endpoint: process what is due, within a time budget, for a token holder."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import Http404, HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from jobqueue.worker import process_document_queue


@csrf_exempt  # not a browser form: the bearer token is the credential
@require_POST
def cron(request: HttpRequest) -> JsonResponse:
    """POST with ``Authorization: Bearer <CRON_TOKEN>``; answers the counts."""
    expected = settings.CRON_TOKEN
    if not expected:
        raise Http404("The cron endpoint is disabled (CRON_TOKEN is not set).")
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not given:
        response = JsonResponse(
            {"error": "Send Authorization: Bearer <CRON_TOKEN>."}, status=401
        )
        response["WWW-Authenticate"] = 'Bearer realm="cron"'
        return response
    if not hmac.compare_digest(given.encode(), expected.encode()):
        return JsonResponse({"error": "That cron token is not valid."}, status=403)
    counts = process_document_queue(time_budget=settings.CRON_BUDGET_SECONDS)
    return JsonResponse(counts)
