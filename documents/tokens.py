"""API tokens: stored hashed by django-rest-knox, shown once, sent as Token or Bearer."""

from __future__ import annotations

import binascii
from datetime import UTC, datetime, timedelta
from hmac import compare_digest

from django.utils import timezone
from django.utils.translation import gettext as _
from knox.auth import TokenAuthentication as KnoxTokenAuthentication
from knox.crypto import hash_token
from knox.models import AuthToken
from knox.signals import token_expired
from rest_framework.authentication import get_authorization_header
from rest_framework.exceptions import AuthenticationFailed

KEYWORDS = (b"token", b"bearer")


def create_token(user, *, expires_in_days: int | None = None) -> tuple[AuthToken, str]:
    """A new token for ``user``; the key is returned here and never again."""
    expiry = None if expires_in_days is None else timedelta(days=expires_in_days)
    return AuthToken.objects.create(user=user, expiry=expiry)


# knox's "Invalid token." said nothing of what to do; the same for every wrong key,
# so that it tells nothing of which keys exist.
UNKNOWN_KEY = (
    "Invalid token: check that the whole key was sent, or make a new one on your "
    "API tokens page, /accounts/tokens/ (a revoked key stays invalid)."
)


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
            raise AuthenticationFailed(_(UNKNOWN_KEY)) from None
        return self.authenticate_credentials(auth[1])

    def authenticate_credentials(self, token: bytes) -> tuple:
        """Knox's check, but a key that has expired says so: knox deletes it and
        answered "Invalid token.", which sent a script's author looking for a typo
        in a key that had worked until then."""
        self.removed: list[tuple[str, datetime]] = []
        try:
            return super().authenticate_credentials(token)
        except AuthenticationFailed as refused:
            expired = expired_on(token.decode("ascii"), self.removed)
            if expired is None:
                if refused.detail == "Invalid token.":  # knox's words
                    raise AuthenticationFailed(_(UNKNOWN_KEY)) from None
                raise
            raise AuthenticationFailed(
                _(
                    "This token expired on %(date)s: make a new one on your API "
                    "tokens page, /accounts/tokens/."
                )
                % {"date": expired.strftime("%Y-%m-%d %H:%M UTC")}
            ) from None

    def _cleanup_token(self, auth_token: AuthToken) -> bool:
        """Knox calls this for each token with the key's prefix: an expired one is
        deleted, and remembered, to say so (no query more on success).

        Knox's own also deleted every other expired token of the same person: one
        script's request then took away the expired token of another, whose next
        request was told "Invalid token." instead of when it expired, and the
        tokens page stopped listing it (the README: listed as expired until it is
        next sent). Only the token sent is looked at here."""
        if auth_token.expiry is None or auth_token.expiry >= timezone.now():
            return False
        # The digest is the primary key: a deleted token's is None.
        digest, expiry = auth_token.digest, auth_token.expiry
        username = auth_token.user.get_username()
        auth_token.delete()
        token_expired.send(sender=type(self), username=username, source="auth_token")
        self.removed.append((digest, expiry))
        return True

    def authenticate_header(self, request) -> str:
        # A 401 names both schemes it takes (RFC 9110: challenges, comma-separated):
        # knox's names only Token, and a client built for Bearer looks for it.
        return 'Token realm="api", Bearer realm="api"'


def expired_on(key: str, removed: list[tuple[str, datetime]]) -> datetime | None:
    """When the token of ``key`` expired, if it is among the expired tokens
    ``removed`` (digest, expiry); None if not."""
    try:
        digest = hash_token(key)
    except (TypeError, binascii.Error):  # not a key knox could have made
        return None
    for removed_digest, expiry in removed:
        if compare_digest(digest, removed_digest):
            return expiry.astimezone(UTC)
    return None
