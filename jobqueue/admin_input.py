"""Admin input that Django itself does not check: the ids an action is posted with."""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.options import IncorrectLookupParameters
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

# The largest id a 64-bit primary key can hold; beyond it PostgreSQL raises.
MAX_ID = 2**63 - 1


def valid_ids(values: list[str]) -> bool:
    """True when every value is a plain positive whole number that fits an id."""
    return all(v.isascii() and v.isdigit() and 0 < int(v) <= MAX_ID for v in values)


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
        if not valid_ids(selected):
            self.message_user(
                request,
                "Nothing was done: the selection holds something that is not an id.",
                messages.ERROR,
            )
            return HttpResponseRedirect(request.get_full_path())
        return super().response_action(request, queryset)
