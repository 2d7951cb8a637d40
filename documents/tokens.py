"""API tokens: stored hashed by django-rest-knox, shown once, sent as Token or Bearer."""

from __future__ import annotations

from datetime import timedelta

from django.utils.translation import gettext as _
from knox.auth import TokenAuthentication as KnoxTokenAuthentication
from knox.models import AuthToken
from rest_framework.authentication import get_authorization_header
from rest_framework.exceptions import AuthenticationFailed

KEYWORDS = (b"token", b"bearer")


def create_token(user, *, expires_in_days: int | None = None) -> tuple[AuthToken, str]:
    """A new token for ``user``; the key is returned here and never again."""
    expiry = None if expires_in_days is None else timedelta(days=expires_in_days)
    return AuthToken.objects.create(user=user, expiry=expiry)


class TokenAuthentication(KnoxTokenAuthentication):
    """Knox's hashed tokens, under ``Authorization: Token <key>`` or ``Bearer <key>``."""

    def authenticate(self, request) -> tuple | None:
        auth = get_authorization_header(request).split()
        if not auth or auth[0].lower() not in KEYWORDS:
            return None  # another scheme, or none: let the next class try
        if len(auth) != 2:
            raise AuthenticationFailed(
                _("Invalid token header: send “Token <key>” or “Bearer <key>”.")
            )
        try:
            auth[1].decode("ascii")
        except UnicodeDecodeError:
            raise AuthenticationFailed(_("Invalid token.")) from None
        return self.authenticate_credentials(auth[1])

    def authenticate_header(self, request) -> str:
        # A 401 names both schemes it takes (RFC 9110: challenges, comma-separated):
        # knox's names only Token, and a client built for Bearer looks for it.
        return 'Token realm="api", Bearer realm="api"'
