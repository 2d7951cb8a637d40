"""Changing one's password: a wrong current password counts as a failed log-in.

Without it, anyone holding a session (a computer left unlocked, a stolen cookie)
could try current passwords without limit on the password change form, the site's or
the admin's, and learn the real one. django-axes counts each wrong one as it counts
a failed log-in, for the same user name and address, and locks both out alike.
"""

from __future__ import annotations

import math

from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import (
    get_client_username,
    get_cool_off,
    get_failure_limit,
    get_lockout_response,
)
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.signals import user_login_failed
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def locked_out(
    request: HttpRequest,
    original_response: HttpResponse | None = None,
    credentials: dict | None = None,
) -> HttpResponse:
    """django-axes' lock-out page (AXES_LOCKOUT_CALLABLE), saying in Retry-After how
    long to wait, as every other 429 here does: each failure while locked out
    starts the cool-off again, so it is the whole of it."""
    cool_off = get_cool_off(request)
    context = {
        "failure_limit": get_failure_limit(request, credentials),
        "username": get_client_username(request, credentials) or "",
        "cooloff_timedelta": cool_off,
    }
    response = render(
        request,
        settings.AXES_LOCKOUT_TEMPLATE,
        context,
        status=settings.AXES_HTTP_RESPONSE_CODE,
    )
    if cool_off:
        response["Retry-After"] = str(math.ceil(cool_off.total_seconds()))
    return response


class PasswordChangeView(auth_views.PasswordChangeView):
    """Django's, refused while locked out, a wrong current password counted."""

    def credentials(self) -> dict[str, str]:
        return {"username": self.request.user.get_username()}

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if AxesProxyHandler.is_locked(request, self.credentials()):
            return get_lockout_response(request, None, self.credentials())
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form) -> HttpResponse:
        if form.has_error("old_password", "password_incorrect"):
            # AxesMiddleware turns the answer into the lock-out page at the limit.
            user_login_failed.send(
                sender=__name__, credentials=self.credentials(), request=self.request
            )
        return super().form_invalid(form)
