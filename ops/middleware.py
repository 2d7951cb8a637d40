"""Machines' endpoints, answered before the rest of the stack.

Placed first in MIDDLEWARE but for the one that fills empty 405s (config.middleware),
so that a probe or a scrape is answered before the host check (a kubelet or
Prometheus sends the pod's IP as Host), the HTTPS redirect, sessions and CSP: they
ask whether this process can serve, not whether this request is a good one.
``/metrics`` keeps its own token check.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from ops.probes import healthz, readyz
from ops.views import metrics

ENDPOINTS: dict[str, Callable[[HttpRequest], HttpResponse]] = {
    "/healthz": healthz,
    "/readyz": readyz,
    "/metrics": metrics,
}


class OpsMiddleware:
    """Serve ``ENDPOINTS`` (exact paths; a trailing slash is accepted too)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        endpoint = ENDPOINTS.get(request.path.rstrip("/") or "/")
        if endpoint is None:
            return self.get_response(request)
        return endpoint(request)
