"""``/metrics``: the queue's figures for Prometheus."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from jobqueue.bearer import bearer_matches, bearer_token
from jobqueue.metrics import registry

REGISTRY = registry()


def metrics(request: HttpRequest) -> HttpResponse:
    """With ``METRICS_TOKEN`` set, only for ``Authorization: Bearer <token>``; without
    it, for anyone only if ``METRICS_PUBLIC`` says the network keeps it private;
    otherwise it does not exist (404), whatever the method: a disabled endpoint, or
    one the sender may not use, says nothing of the methods it takes."""
    token = settings.METRICS_TOKEN
    if token:
        given = bearer_token(request)
        if given is None or not bearer_matches(given, token):
            response = HttpResponse(
                "Send Authorization: Bearer <METRICS_TOKEN>.\n",
                status=401,
                content_type="text/plain",
            )
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
            return response
    elif not settings.METRICS_PUBLIC:
        return HttpResponse(
            "Metrics are disabled: set METRICS_TOKEN or METRICS_PUBLIC.\n",
            status=404,
            content_type="text/plain",
        )
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET", "HEAD"])
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)
