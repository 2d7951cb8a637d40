"""A person's own API tokens: make one for a script, see which exist, revoke them.

Without this page a person had to ask an administrator for a token, and could not
revoke one that leaked: changing the password leaves tokens working (scripts keep
running), so the way to shut a leaked one out is here.
"""

from __future__ import annotations

from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_lockout_response
from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.contrib.auth.signals import user_login_failed
from django.db import transaction
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods
from knox.settings import CONSTANTS

from documents.tokens import create_token

# Enough for every script a person runs; a cap keeps a looping script from filling
# the table.
MAX_TOKENS_PER_PERSON = 20
NOT_YOURS = "No such token of yours: nothing revoked."
EXPIRY_CHOICES = [
    ("30", "30 days"),
    ("90", "90 days"),
    ("365", "1 year"),
    ("", "Never"),
]


class NewTokenForm(forms.Form):
    """How long the token lasts, and the person's password: a token outlives the
    session (logging out and a password change leave it working), so someone
    holding a borrowed or stolen session must not make one, as GitHub's sudo mode
    asks the password again."""

    expires_days = forms.TypedChoiceField(
        label="Expires after",
        choices=EXPIRY_CHOICES,
        coerce=int,
        empty_value=None,
        required=False,
        initial="90",
    )
    password = forms.CharField(
        label="Your password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )

    def __init__(self, *args, user, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_password(self) -> str:
        password = self.cleaned_data["password"]
        if not self.user.check_password(password):
            raise forms.ValidationError(
                _("That is not your password."), code="password_incorrect"
            )
        return password


class RevokeForm(forms.Form):
    """The token to revoke, by its first characters as the page lists it; checked
    first, as PostgreSQL refuses a NUL in any string."""

    token = forms.CharField(max_length=CONSTANTS.TOKEN_KEY_LENGTH)


class NewKey(str):
    """A new token's key: shown in its page, hidden where an error report shows
    variables (the view's, the template's context): the log, the admins' mail."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "'********************'"


def token_within_limit(user, *, expires_in_days: int | None) -> NewKey | None:
    """A new token's key, or None when ``user`` already has the most one may
    (expired ones not counted: they no longer let anyone in)."""
    with transaction.atomic():
        # Two requests at once (a script's retries) count in turn, not both
        # before either makes its token.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        if live_tokens(user).count() >= MAX_TOKENS_PER_PERSON:
            return None
        return NewKey(create_token(user, expires_in_days=expires_in_days)[1])


def live_tokens(user):
    """The person's tokens that still let a script in."""
    return user.auth_token_set.filter(
        Q(expiry__isnull=True) | Q(expiry__gt=timezone.now())
    )


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
@sensitive_post_parameters("password")
def api_tokens(request: HttpRequest) -> HttpResponse:
    tokens = request.user.auth_token_set.order_by("-created")
    form = NewTokenForm(user=request.user)
    new_key = None
    if request.method == "POST":
        action = request.POST.get("action")
        # A revoke shuts scripts out at once: the button asks first, as a delete does.
        confirmed = request.POST.get("confirm") == "yes"
        if action == "revoke":
            revoke = RevokeForm(request.POST)
            chosen = tokens.filter(
                token_key=revoke.cleaned_data["token"] if revoke.is_valid() else None
            )
            if not confirmed:
                return _confirm_revoke(request, chosen, one=True)
            if chosen.delete()[0]:
                messages.success(request, _("The token was revoked."))
            else:
                messages.error(request, _(NOT_YOURS))
            return redirect("api_tokens")
        if action == "revoke_all":
            if not confirmed:
                return _confirm_revoke(request, tokens, one=False)
            # The tokens the page asking first listed: not one made since, in
            # another tab. (A script that sends none means all it has.)
            listed = [
                key
                for key in request.POST.getlist("token")
                if RevokeForm({"token": key}).is_valid()
            ]
            if "token" in request.POST:
                tokens = tokens.filter(token_key__in=listed)
            count = tokens.delete()[0]
            messages.success(
                request,
                ngettext("%d token was revoked.", "%d tokens were revoked.", count)
                % count,
            )
            return redirect("api_tokens")
        if action != "create":
            return redirect("api_tokens")
        # A wrong password counts as a failed log-in (config/passwords.py).
        credentials = {"username": request.user.get_username()}
        if AxesProxyHandler.is_locked(request, credentials):
            return get_lockout_response(request, None, credentials)
        form = NewTokenForm(request.POST, user=request.user)
        if not form.is_valid():
            if form.has_error("password", "password_incorrect"):
                # AxesMiddleware turns the answer into the lock-out page at the limit.
                user_login_failed.send(
                    sender=__name__, credentials=credentials, request=request
                )
        else:
            # Shown in this answer only (never in a message, which is stored in the
            # session or a cookie): a hash is all that is kept.
            new_key = token_within_limit(
                request.user, expires_in_days=form.cleaned_data["expires_days"]
            )
            if new_key is None:
                form.add_error(
                    None,
                    _(
                        "You have %(max)d tokens, the most one person may have: "
                        "revoke one you no longer use first."
                    )
                    % {"max": MAX_TOKENS_PER_PERSON},
                )
            else:
                form = NewTokenForm(user=request.user)
    return render(
        request,
        "registration/api_tokens.html",
        {"tokens": tokens, "form": form, "new_key": new_key, "now": timezone.now()},
    )


def _confirm_revoke(request: HttpRequest, chosen, *, one: bool) -> HttpResponse:
    """The page asking whether to revoke ``chosen`` (the token named, when ``one``;
    otherwise all of the person's), or back to the list when there is none."""
    chosen = list(chosen.order_by("-created"))
    if not chosen:
        messages.error(
            request, _(NOT_YOURS if one else "You have no tokens: nothing revoked.")
        )
        return redirect("api_tokens")
    return render(
        request,
        "registration/revoke_tokens.html",
        {"tokens": chosen, "one": one, "now": timezone.now()},
    )
