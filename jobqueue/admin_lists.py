"""Admin lists that stay usable at millions of rows: the whole table's size estimated
instead of counted, and a bulk delete that counts and samples what it will delete
instead of listing it. Used by the queue's admin and by the documents' and logins'."""

from __future__ import annotations

import time
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import model_ngettext
from django.core.paginator import EmptyPage, PageNotAnInteger, Paginator
from django.db import connections, transaction
from django.db.models import Count, Max, Model, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.functional import cached_property
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.text import capfirst
from django.utils.translation import gettext, gettext_lazy

from jobqueue import sql

# Past this many rows (by PostgreSQL's statistics) an unfiltered list shows the
# table's estimated size: counting it exactly was most of the page's time.
ESTIMATE_ABOVE = 100_000
# The bulk delete's confirmation names this many of the objects and counts the rest
# (Django's lists every one: at a million, a page that never comes back).
DELETE_SAMPLE = 20
# Rows per transaction when the bulk delete deletes them (and logs each).
DELETE_BATCH = 10_000
# Seconds the bulk delete goes on starting batches, so that it answers well within
# a proxy's 60 s (README's nginx and Caddy settings): 110,000 documents took 100 s,
# and the operator got a 504 while the delete went on unseen.
DELETE_SECONDS = 20


def estimated_rows(queryset: QuerySet) -> int | None:
    """The number of rows in the queryset's table as the database estimates it
    (``Dialect.estimated_rows``), when the queryset is the whole table; None
    otherwise, or where no estimate is known."""
    query = queryset.query
    if query.where or query.distinct or query.combinator or query.is_sliced:
        return None
    with connections[queryset.db].cursor() as cursor:
        return sql.dialect().estimated_rows(cursor, queryset.model._meta.db_table)


def admin_link(obj: Model) -> SafeString:
    """An object as Django's delete pages name it: its kind, then a link to it."""
    opts = obj._meta
    url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
    return format_html('{}: <a href="{}">{}</a>', capfirst(opts.verbose_name), url, obj)


class EstimatePages:
    """Paginator mixin for a count that may be an estimate (``estimated``): past its
    last page a page is empty, not an error, as the estimate may be short of the
    rows there are."""

    estimated = False

    def validate_number(self, number: Any) -> int:
        if not self.count or not self.estimated:
            return super().validate_number(number)
        try:
            number = int(number)
        except (TypeError, ValueError):
            raise PageNotAnInteger(
                gettext("That page number is not an integer")
            ) from None
        if number < 1:
            raise EmptyPage(gettext("That page number is less than 1"))
        return number


class EstimatedCountPaginator(EstimatePages, Paginator):
    """A list's paginator that, for a large unfiltered PostgreSQL table, takes the
    planner's estimate of its rows instead of COUNT(*) (``estimated`` says so, and
    the admin's pagination and actions templates say "about"); a filtered list, a
    small table and SQLite are counted exactly."""

    @cached_property
    def count(self) -> int:
        estimate = estimated_rows(self.object_list)
        if estimate is not None and estimate >= ESTIMATE_ABOVE:
            self.estimated = True
            return estimate
        return super().count


class BoundedDeleteMixin:
    """ModelAdmin mixin: Django's "Delete selected" action, bounded however many are
    selected. Django's confirmation lists every object and what cascades from it,
    and posts one input per object; here it counts them, names the newest
    ``DELETE_SAMPLE``, and posts the selection back (with the list's filters, in
    the URL). The delete goes ``delete_batch`` at a time, each batch in one
    transaction with its admin history, through the admin's ``delete_queryset``,
    and stops at the newest object the confirmation counted.

    The page is admin/delete_selected_confirmation.html (or the model's own, as
    Django looks for it) with ``bounded_delete`` in its context; a model's page
    says what goes with the objects in its ``bounded_delete_summary`` block, from
    ``bounded_delete_context``."""

    delete_batch = DELETE_BATCH
    delete_seconds = DELETE_SECONDS
    # Enough of each row for its history entry (its str()); every field if empty.
    deletion_log_fields: tuple[str, ...] = ()

    @admin.action(
        description=gettext_lazy("Delete selected %(verbose_name_plural)s"),
        permissions=["delete"],
    )
    def delete_selected(
        self, request: HttpRequest, queryset: QuerySet
    ) -> HttpResponse | None:
        # Named like Django's action, whose confirmation page posts back to this name.
        selected = self.deletable(request, queryset.select_related(None).order_by())
        if selected is None:
            return None
        if request.POST.get("post"):
            upto = request.POST.get("upto", "")
            if upto.isascii() and upto.isdigit() and len(upto) <= 18:
                selected = selected.filter(pk__lte=int(upto))
            deleted, finished = self.delete_in_batches(request, selected)
            if deleted:
                self.message_user(
                    request,
                    gettext("Successfully deleted %(count)d %(items)s.")
                    % {"count": deleted, "items": model_ngettext(self.opts, deleted)},
                    messages.SUCCESS,
                )
            if not finished:
                self.message_user(
                    request,
                    "The rest of the selection is still there: a delete stops "
                    f"after {self.delete_seconds} s, so that its answer comes "
                    "before a proxy gives up. Select them again and delete to go on.",
                    messages.WARNING,
                )
            return None
        summary = selected.aggregate(total=Count("pk"), upto=Max("pk"))
        if not summary["total"]:
            return None
        selected = selected.filter(pk__lte=summary["upto"])
        return self.confirm_delete(request, selected, summary["total"], summary["upto"])

    def deletable(self, request: HttpRequest, selected: QuerySet) -> QuerySet | None:
        """What of the selection may be deleted; None (having told the user why)
        when nothing may."""
        return selected

    def bounded_delete_context(
        self, request: HttpRequest, selected: QuerySet, total: int
    ) -> dict[str, Any]:
        """More of the confirmation page's context: what goes with the objects."""
        return {"model_count": [(self.opts.verbose_name_plural, total)]}

    def confirm_delete(
        self, request: HttpRequest, selected: QuerySet, total: int, upto: int
    ) -> TemplateResponse:
        """Django's confirmation page, with a count and the newest ``DELETE_SAMPLE``
        where Django lists them all."""
        sample = selected.order_by("-pk")[:DELETE_SAMPLE]
        if self.deletion_log_fields:
            sample = sample.only(*self.deletion_log_fields)
        listed = [admin_link(obj) for obj in sample]
        context = {
            **self.admin_site.each_context(request),
            "title": gettext("Delete multiple objects"),
            "subtitle": None,
            "objects_name": str(model_ngettext(self.opts, total)),
            "deletable_objects": [listed],
            # Not iterated by the page (the hidden inputs stand for it).
            "queryset": selected,
            "perms_lacking": [],
            "protected": [],
            "opts": self.opts,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "media": self.media,
            "bounded_delete": {
                "total": total,
                "more": total - len(listed),
                "selected": request.POST.getlist(helpers.ACTION_CHECKBOX_NAME),
                "select_across": request.POST.get("select_across", "0"),
                "upto": upto,
            },
            **self.bounded_delete_context(request, selected, total),
        }
        request.current_app = self.admin_site.name
        app_label, model_name = self.opts.app_label, self.opts.model_name
        return TemplateResponse(
            request,
            self.delete_selected_confirmation_template
            or [
                f"admin/{app_label}/{model_name}/delete_selected_confirmation.html",
                f"admin/{app_label}/delete_selected_confirmation.html",
                "admin/delete_selected_confirmation.html",
            ],
            context,
        )

    def delete_in_batches(
        self, request: HttpRequest, selected: QuerySet
    ) -> tuple[int, bool]:
        """Delete the selection ``delete_batch`` at a time, oldest first, each batch
        in one transaction with its admin history, starting none after
        ``delete_seconds``; how many were deleted, and whether that was all."""
        ids_in_order = selected.order_by("pk").values_list("pk", flat=True)
        deleted, after = 0, 0
        stop_at = time.monotonic() + self.delete_seconds
        while True:
            if deleted and time.monotonic() >= stop_at:
                return deleted, not ids_in_order.filter(pk__gt=after).exists()
            with transaction.atomic():
                # Each batch starts past the last one's ids (never re-reads the rows
                # that earlier batches deleted).
                ids = list(ids_in_order.filter(pk__gt=after)[: self.delete_batch])
                if not ids:
                    return deleted, True
                # Read again in the transaction: still in the selection.
                batch = selected.filter(pk__in=ids)
                if self.deletion_log_fields:
                    batch = batch.only(*self.deletion_log_fields)
                logged = list(batch.order_by("pk"))
                self.log_deletions(request, logged)
                self.delete_queryset(request, batch)
                deleted += len(logged)
            after = ids[-1]
