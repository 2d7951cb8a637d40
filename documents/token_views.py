"""A person's own API tokens: make one for a script, see which exist, revoke them.

Without this page a person had to ask an administrator for a token, and could not
revoke one that leaked: changing the password leaves tokens working (scripts keep
running), so the way to shut a leaked one out is here.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_http_methods

from documents.tokens import create_token

# Enough for every script a person runs; a cap keeps a looping script from filling
# the table.
MAX_TOKENS_PER_PERSON = 20
EXPIRY_CHOICES = [
    ("30", "30 days"),
    ("90", "90 days"),
    ("365", "1 year"),
    ("", "Never"),
]


class NewTokenForm(forms.Form):
    expires_days = forms.TypedChoiceField(
        label="Expires after",
        choices=EXPIRY_CHOICES,
        coerce=int,
        empty_value=None,
        required=False,
        initial="90",
    )


@login_required
@require_http_methods(["GET", "POST"])
def api_tokens(request: HttpRequest) -> HttpResponse:
    tokens = request.user.auth_token_set.order_by("-created")
    form = NewTokenForm()
    new_key = None
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "revoke":
            revoked = tokens.filter(token_key=request.POST.get("token", "")).delete()
            if revoked[0]:
                messages.success(request, _("The token was revoked."))
            else:
                messages.error(request, _("No such token of yours: nothing revoked."))
            return redirect("api_tokens")
        if action == "revoke_all":
            count = tokens.delete()[0]
            messages.success(
                request,
                ngettext("%d token was revoked.", "%d tokens were revoked.", count)
                % count,
            )
            return redirect("api_tokens")
        if action != "create":
            return redirect("api_tokens")
        form = NewTokenForm(request.POST)
        if tokens.count() >= MAX_TOKENS_PER_PERSON:
            form.add_error(
                None,
                _(
                    "You have %(max)d tokens, the most one person may have: revoke "
                    "one you no longer use first."
                )
                % {"max": MAX_TOKENS_PER_PERSON},
            )
        elif form.is_valid():
            # Shown in this answer only (never in a message, which is stored in the
            # session or a cookie): a hash is all that is kept.
            _token, new_key = create_token(
                request.user, expires_in_days=form.cleaned_data["expires_days"]
            )
            form = NewTokenForm()
    return render(
        request,
        "registration/api_tokens.html",
        {"tokens": tokens, "form": form, "new_key": new_key},
    )
