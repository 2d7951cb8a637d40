"""``Authorization: Bearer <token>`` for the machines' endpoints (the cron endpoint,
``/metrics``): one reading of the header, and one constant-time comparison.

RFC 9110 (section 11.4) puts one or more spaces between the scheme and the token, and
the scheme is case-insensitive; the API's own check (documents.tokens, DRF's
``split()``) takes tabs too. Each endpoint spelled ``partition(" ")``, which left the
second of two spaces in the token: a right token was refused.
"""

from __future__ import annotations

import hmac
import re

from django.http import HttpRequest

# The scheme, the spaces (or tabs) after it, and the token: whatever follows them.
CREDENTIALS = re.compile(r"([^ \t]+)[ \t]+([^ \t].*)", re.DOTALL)


def bearer_token(request: HttpRequest) -> str | None:
    """The token of the request's ``Authorization: Bearer <token>``; None without
    that header, for another scheme, or for a scheme with no token."""
    found = CREDENTIALS.fullmatch(request.headers.get("Authorization", ""))
    if found is None or found[1].lower() != "bearer":
        return None
    return found[2]


def bearer_matches(given: str, expected: str) -> bool:
    """Whether a bearer token is the expected secret, compared in constant time (as
    bytes: ``compare_digest`` takes only ASCII strings)."""
    return hmac.compare_digest(given.encode(), expected.encode())
