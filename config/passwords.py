"""Changing one's password: a wrong current password counts as a failed log-in.

Without it, anyone holding a session (a computer left unlocked, a stolen cookie)
could try current passwords without limit on the password change form, the site's or
the admin's, and learn the real one. django-axes counts each wrong one as it counts
a failed log-in, for the same user name and address, and locks both out alike.
"""

from __future__ import annotations

from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_lockout_response
from django.contrib.auth import views as auth_views
from django.contrib.auth.signals import user_login_failed
from django.http import HttpRequest, HttpResponse


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
