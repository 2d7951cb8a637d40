"""Admin input that Django itself does not check: the ids an action is posted with."""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import ValidationError
from django.db.models import Model
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

# The largest id a 64-bit primary key can hold; beyond it PostgreSQL raises.
MAX_ID = 2**63 - 1


def valid_ids(model: type[Model], values: list[str]) -> bool:
    """True when every value can be the model's primary key (PostgreSQL refuses NUL
    and integers beyond 64 bits; Django's own field check catches the rest)."""
    field = model._meta.pk
    for raw in values:
        if "\x00" in raw:
            return False
        try:
            value = field.to_python(raw)
        except ValidationError:
            return False
        if isinstance(value, int) and not 0 < value <= MAX_ID:
            return False
    return True


class CheckedActionsMixin(admin.ModelAdmin):
    """Refuse malformed ids and dates with a message, not a 500.

    Django passes ``_selected_action`` to ``pk__in`` unchecked, so "abc" raises
    inside the queryset; and a date-hierarchy year past 9999 overflows ``datetime``.
    """

    def get_changelist_instance(self, request: HttpRequest):
        try:
            return super().get_changelist_instance(request)
        except OverflowError as error:
            # Django answers this one with its "?e=1" page, as for other bad filters.
            raise IncorrectLookupParameters(error) from error

    def response_action(self, request: HttpRequest, queryset) -> HttpResponse | None:
        selected = request.POST.getlist(helpers.ACTION_CHECKBOX_NAME)
        if not valid_ids(self.model, selected):
            self.message_user(
                request,
                "Nothing was done: the selection holds something that is not an id.",
                messages.ERROR,
            )
            return HttpResponseRedirect(request.get_full_path())
        return super().response_action(request, queryset)
