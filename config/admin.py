"""The admin site: Django's own, with input checks that every registered model gets.

Django hands an action's ``_selected_action`` values to ``pk__in`` unchecked ("abc"
raises inside the queryset, a 20-digit id overflows PostgreSQL's bigint), and a
date-hierarchy year past 9999 overflows ``datetime``: each a 500. The checks live in
one mixin that ``register`` puts in front of every ModelAdmin, ours and third-party
ones (auth, axes, knox) alike.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import ValidationError
from django.db.models import Model
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.utils.text import smart_split
from django.views.decorators.cache import never_cache

from config.passwords import PasswordChangeView

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


# The words of an admin search that count: each is matched against every search
# field and all must match, so 1,500 words made an expression SQLite refused (a 500)
# and a query of minutes on PostgreSQL.
MAX_SEARCH_WORDS = 10


class CheckedInputMixin(admin.ModelAdmin):
    """Malformed ids and dates, and searches of too many words, get a message, not
    a 500."""

    def get_search_results(self, request: HttpRequest, queryset, search_term: str):
        words = list(smart_split(search_term))
        if len(words) > MAX_SEARCH_WORDS and self.get_search_fields(request):
            self.message_user(
                request,
                f"Searched for the first {MAX_SEARCH_WORDS} of the "
                f"{len(words):,} words given.",
                messages.WARNING,
            )
            search_term = " ".join(words[:MAX_SEARCH_WORDS])
        return super().get_search_results(request, queryset, search_term)

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


class AdminSite(admin.AdminSite):
    """Every ModelAdmin registered here checks its input (``CheckedInputMixin``)."""

    def register(
        self, model_or_iterable: Any, admin_class: Any = None, **options: Any
    ) -> None:
        admin_class = admin_class or admin.ModelAdmin
        if not issubclass(admin_class, CheckedInputMixin):
            admin_class = type(
                admin_class.__name__,
                (CheckedInputMixin, admin_class),
                {"__module__": admin_class.__module__},
            )
        super().register(model_or_iterable, admin_class, **options)

    @method_decorator(never_cache)
    def login(
        self, request: HttpRequest, extra_context: dict | None = None
    ) -> HttpResponse:
        """Django's; a HEAD answers as its GET does: staff already logged in are
        sent to the index (Django's test is ``method == "GET"``)."""
        if request.method == "HEAD" and self.has_permission(request):
            return HttpResponseRedirect(reverse("admin:index", current_app=self.name))
        return super().login(request, extra_context)

    def password_change(
        self, request: HttpRequest, extra_context: dict | None = None
    ) -> HttpResponse:
        """Django's, through the view that counts wrong current passwords."""
        from django.contrib.admin.forms import AdminPasswordChangeForm

        options = {
            "form_class": AdminPasswordChangeForm,
            "success_url": reverse("admin:password_change_done", current_app=self.name),
            "extra_context": {**self.each_context(request), **(extra_context or {})},
        }
        if self.password_change_template is not None:
            options["template_name"] = self.password_change_template
        request.current_app = self.name
        return PasswordChangeView.as_view(**options)(request)
