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
# What SecurityMiddleware and django-csp, which these answers skip, would have said;
# and no cache keeps an answer about this moment (or the metrics) for later.
HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


class OpsMiddleware:
    """Serve ``ENDPOINTS`` (exact paths; a trailing slash is accepted too)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        endpoint = ENDPOINTS.get(request.path.rstrip("/") or "/")
        if endpoint is None:
            return self.get_response(request)
        response = endpoint(request)
        for name, value in HEADERS.items():
            response.setdefault(name, value)
        return response
