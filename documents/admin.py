"""Documents in the admin: what was uploaded, what extraction made of it, reprocess;
API tokens and login attempts."""

from __future__ import annotations

from typing import Any

from axes.admin import AccessAttemptAdmin, AccessFailureLogAdmin, AccessLogAdmin
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_permission_codename, get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.defaultfilters import filesizeformat
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import ngettext
from knox.models import AuthToken, get_digest_token
from knox.settings import CONSTANTS

from documents.models import Document
from documents.services import (
    document_delete,
    document_delete_many,
    document_reprocess_many,
)
from jobqueue.admin_lists import (
    DELETE_SAMPLE,
    BoundedDeleteMixin,
    EstimatedCountPaginator,
    admin_link,
)
from jobqueue.admin_monitoring import OperatorsMayView, RecentValuesFilter
from jobqueue.dashboard import status_badge
from jobqueue.models import ACTIVE_STATUSES, ErrorType, QueueItem, Status, is_operator

PREVIEW_CHARS = 500
# Documents per transaction when the bulk delete deletes them, through
# ``document_delete_many`` (their jobs, tags and, once the batch commits, files).
DOCUMENT_DELETE_BATCH = 500
# Documents per transaction when the reprocess action queues them: one read of
# their ids and one insert of their jobs, however many are selected.
REPROCESS_BATCH = 1_000


class MimeTypeFilter(RecentValuesFilter):
    """Types as the newest documents have them (Django's lists every row's)."""

    title = "MIME type"
    parameter_name = "mime_type"
    field = "mime_type"


class ErrorTypeFilter(admin.SimpleListFilter):
    """The queue's error types (Django's would read every row for the values)."""

    title = "error type"
    parameter_name = "error_type"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return list(ErrorType.choices)

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet | None:
        if self.value():
            return queryset.filter(error_type=self.value())
        return None


@admin.register(Document)
class DocumentAdmin(BoundedDeleteMixin, OperatorsMayView, admin.ModelAdmin):
    """Uploaded documents; read-only here, reprocessed through the queue."""

    list_display = (
        "id",
        "original_filename",
        "owner",
        "mime_type",
        "size_column",
        "status_column",
        "page_count",
        "created_at",
    )
    list_display_links = ("id", "original_filename")
    list_filter = (
        "status",
        MimeTypeFilter,
        ErrorTypeFilter,
        # Not a date hierarchy: its choices read every row on each page view.
        ("created_at", admin.DateFieldListFilter),
    )
    search_fields = ("original_filename", "title", "owner__username", "sha256")
    list_select_related = ("owner",)
    # A filtered page counts its matches, not also the whole table; the whole
    # table's size is estimated on PostgreSQL past ESTIMATE_ABOVE rows.
    show_full_result_count = False
    paginator = EstimatedCountPaginator
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "original_filename",
                    "title",
                    "owner",
                    "mime_type",
                    "size_column",
                    "sha256",
                    "status_column",
                    "queue_items_column",
                    "created_at",
                    "updated_at",
                )
            },
        ),
        (
            "Extraction",
            {
                "fields": (
                    "page_count",
                    "extractor",
                    "confidence",
                    "extraction_note",
                    "processed_at",
                    "error_type",
                    "error_column",
                    "text_preview",
                )
            },
        ),
    )
    readonly_fields = tuple(
        name for _, options in fieldsets for name in options["fields"]
    )
    actions = ("reprocess", "delete_selected")
    delete_batch = DOCUMENT_DELETE_BATCH
    reprocess_batch = REPROCESS_BATCH

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Uploads go through the upload form, which checks size, type and name.
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # The record mirrors extraction; the form is view-only, actions check obj=None.
        return obj is None and super().has_change_permission(request)

    def has_reprocess_permission(self, request: HttpRequest) -> bool:
        """Queueing work is an operator's action, as on the site and the API."""
        return is_operator(request.user)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Document]:
        # The list never shows the text, which can be megabytes per row.
        return super().get_queryset(request).without_text()

    def delete_model(self, request: HttpRequest, obj: Document) -> None:
        # Through the service, so the stored file goes with the row.
        document_delete(document=obj)

    def delete_queryset(
        self, request: HttpRequest, queryset: QuerySet[Document]
    ) -> None:
        # Through the service, as the API deletes: a document being processed goes
        # too, its jobs with it (the worker's result is refused).
        document_delete_many(documents=queryset.without_text())

    def deletable(
        self, request: HttpRequest, selected: QuerySet[Document]
    ) -> QuerySet[Document] | None:
        if self.may_delete_their_jobs(request, selected):
            return selected
        self.message_user(
            request,
            "Nothing was deleted: deleting these documents deletes their queue "
            "items, which your account may not delete.",
            messages.ERROR,
        )
        return None

    def may_delete_their_jobs(
        self, request: HttpRequest, selected: QuerySet[Document]
    ) -> bool:
        """Django's rule for what cascades: deleting documents deletes their jobs,
        which needs the right to delete queue items (as Django's page checks),
        whatever the jobs' state (the queue's admin refuses to delete an active
        job alone, which would strand its document's status; with its document
        it goes, as the API and the bulk delete delete it)."""
        opts = QueueItem._meta
        codename = get_permission_codename("delete", opts)
        return (
            request.user.has_perm(f"{opts.app_label}.{codename}")
            or not QueueItem.objects.filter(document__in=selected).exists()
        )

    def get_deleted_objects(
        self, objs: Any, request: HttpRequest
    ) -> tuple[list[Any], dict[str, int], set[str], list[Any]]:
        # The single delete's page (the bulk delete has its own confirmation).
        # Django's collector lists every job of the document and refuses an
        # active one; here the document goes with its jobs in any state, through
        # ``delete_model``, and the page names its newest jobs and counts them.
        documents = list(objs)
        selected = Document.objects.filter(pk__in=[d.pk for d in documents])
        if not self.may_delete_their_jobs(request, selected):
            return [], {}, {str(QueueItem._meta.verbose_name)}, []
        summary = self.bounded_delete_context(request, selected, len(documents))
        jobs = list(
            QueueItem.objects.filter(document__in=selected)
            .only("pk", "operation", "status", "document_id")
            .order_by("-pk")[:DELETE_SAMPLE]
        )
        listed: list[Any] = []
        for document in documents:
            listed.append(admin_link(document))
            its_jobs = [
                admin_link(job) for job in jobs if job.document_id == document.pk
            ]
            if its_jobs:
                listed.append(its_jobs)
        more = summary["queue_items"]["total"] - len(jobs)
        if more > 0:
            listed.append(
                ngettext(
                    "… and %(count)d more queue item, not listed here.",
                    "… and %(count)d more queue items, not listed here.",
                    more,
                )
                % {"count": more}
            )
        return listed, dict(summary["model_count"]), set(), []

    def render_delete_form(
        self, request: HttpRequest, context: dict[str, Any]
    ) -> HttpResponse:
        # What the page says of the jobs that go with the document (its own
        # template: admin/documents/document/delete_confirmation.html).
        if not context["perms_lacking"]:
            selected = Document.objects.filter(pk=context["object"].pk)
            context["queue_items"] = self.bounded_delete_context(request, selected, 1)[
                "queue_items"
            ]
        return super().render_delete_form(request, context)

    def bounded_delete_context(
        self, request: HttpRequest, selected: QuerySet[Document], total: int
    ) -> dict[str, Any]:
        # One grouped read of their jobs: what goes with the documents.
        per_state = dict(
            QueueItem.objects.filter(document__in=selected.values("pk"))
            .order_by()
            .values_list("status")
            .annotate(n=Count("pk"))
        )
        items = sum(per_state.values())
        return {
            "model_count": [
                (self.opts.verbose_name_plural, total),
                (QueueItem._meta.verbose_name_plural, items),
            ],
            "queue_items": {
                "total": items,
                "per_state": [
                    (status.label, per_state[status])
                    for status in Status
                    if status in per_state
                ],
                "active": sum(per_state.get(s, 0) for s in ACTIVE_STATUSES),
            },
        }

    @admin.display(description="Size", ordering="size")
    def size_column(self, obj: Document) -> str:
        return filesizeformat(obj.size)

    @admin.display(description="Status", ordering="status")
    def status_column(self, obj: Document) -> SafeString:
        return status_badge(obj.status)

    @admin.display(description="Queue items")
    def queue_items_column(self, obj: Document) -> SafeString:
        url = reverse("admin:jobqueue_queueitem_changelist")
        count = obj.queue_items.count()
        return format_html(
            '<a href="{}?document__id__exact={}">{}</a>',
            url,
            obj.pk,
            ngettext("%d queue item", "%d queue items", count) % count,
        )

    @admin.display(description="Error message")
    def error_column(self, obj: Document) -> SafeString | str:
        if not obj.error_message:
            return "-"
        return format_html(
            '<pre style="white-space:pre-wrap;margin:0">{}</pre>', obj.error_message
        )

    @admin.display(description="Text (first 500 characters)")
    def text_preview(self, obj: Document) -> SafeString | str:
        if not obj.text:
            return "-"
        preview = obj.text[:PREVIEW_CHARS]
        if len(obj.text) > PREVIEW_CHARS:
            preview += "…"
        return format_html(
            '<pre style="white-space:pre-wrap;max-height:20em;overflow:auto;margin:0">'
            "{}</pre>",
            preview,
        )

    @admin.action(description="Reprocess selected documents", permissions=["reprocess"])
    def reprocess(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        queued, already = self.reprocess_in_batches(queryset)
        parts = [
            ngettext(
                "Queued %(count)d document for reprocessing",
                "Queued %(count)d documents for reprocessing",
                queued,
            )
            % {"count": queued}
        ]
        if already:
            parts.append(
                ngettext(
                    "skipped %(count)d whose extraction is already waiting or running",
                    "skipped %(count)d whose extraction is already waiting or running",
                    already,
                )
                % {"count": already}
            )
        self.message_user(
            request,
            "; ".join(parts) + ".",
            messages.SUCCESS if queued else messages.WARNING,
        )

    def reprocess_in_batches(self, selected: QuerySet[Document]) -> tuple[int, int]:
        """Queue the selection again ``reprocess_batch`` at a time, oldest first,
        each batch one transaction: a read of its ids and one insert of their jobs
        (``document_reprocess_many``), however many "select all" covers.
        (queued, skipped): a document whose extraction is already waiting or
        running is skipped, as ``document_reprocess`` skips it."""
        ids_in_order = (
            selected.select_related(None).order_by("pk").values_list("pk", flat=True)
        )
        queued = skipped = after = 0
        while True:
            for attempt in range(2):
                try:
                    with transaction.atomic():
                        # Each batch starts past the last one's ids.
                        ids = list(
                            ids_in_order.filter(pk__gt=after)[: self.reprocess_batch]
                        )
                        jobs = document_reprocess_many(document_ids=ids) if ids else []
                    break
                except IntegrityError:
                    # A document deleted after its id was read: its new job's
                    # reference was refused at the commit. Read the batch again.
                    if attempt:
                        raise
            if not ids:
                return queued, skipped
            queued += len(jobs)
            skipped += len(ids) - len(jobs)
            after = ids[-1]


class TokenCreateForm(forms.ModelForm):
    """Whose token, and when (if ever) it expires; the key is made on save."""

    class Meta:
        model = AuthToken
        fields = ("user", "expiry")
        help_texts = {"expiry": "Leave empty for a token that lives until revoked."}


admin.site.unregister(AuthToken)


@admin.register(AuthToken)
class TokenAdmin(admin.ModelAdmin):
    """API tokens, listed by their first characters only: the key is stored hashed,
    shown once when the token is made, and revoked by deleting the token."""

    list_display = ("prefix", "user", "created", "expiry")
    list_filter = ("created", "expiry")
    search_fields = ("token_key", "user__username")
    raw_id_fields = ("user",)
    fields = ("prefix", "user", "created", "expiry")
    readonly_fields = ("prefix", "user", "created", "expiry")

    @admin.display(description="Key starts with", ordering="token_key")
    def prefix(self, obj: AuthToken) -> str:
        return f"{obj.token_key}…"

    def get_form(self, request: HttpRequest, obj: Any = None, **kwargs: Any):
        if obj is None:
            kwargs["form"] = TokenCreateForm
            kwargs["fields"] = TokenCreateForm.Meta.fields
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request: HttpRequest, obj: Any = None):
        return TokenCreateForm.Meta.fields if obj is None else self.fields

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None):
        return () if obj is None else self.readonly_fields

    def formfield_for_foreignkey(self, db_field, request: HttpRequest, **kwargs: Any):
        # A key acts as its user on the API: staff who may make tokens make their
        # own; only a superuser makes one for someone else (a script's account).
        if db_field.name == "user" and not request.user.is_superuser:
            kwargs["queryset"] = get_user_model().objects.filter(pk=request.user.pk)
            kwargs["initial"] = request.user.pk
            kwargs["help_text"] = (
                "Your own account: only a superuser makes keys for others."
            )
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: AuthToken, form, change) -> None:
        obj.digest, key = get_digest_token()
        obj.token_key = key[: CONSTANTS.TOKEN_KEY_LENGTH]
        super().save_model(request, obj, form, change)
        self.message_user(
            request,
            f"The new key for {obj.user}: {key} — copy it now; only a hash is "
            "stored, so it cannot be shown again.",
            messages.WARNING,
        )


admin.site.unregister(AccessAttempt)


@admin.register(AccessAttempt)
class LoginAttemptAdmin(BoundedDeleteMixin, AccessAttemptAdmin):
    """django-axes' admin, with its clean-up action working outside a login request,
    and a bulk delete that stays bounded: a password-guessing run from many
    addresses leaves a row per address and name."""

    actions = ("cleanup_expired_attempts", "delete_selected")
    # Not a date hierarchy (its choices read every row on each page view; the
    # attempt time's list filter stands for it), and a filtered page counts only
    # its matches. Counted exactly: "about" is only said on documents' pages.
    date_hierarchy = None
    show_full_result_count = False

    # Deletes records: not for staff who may only look (axes' own action has no
    # permission, so anyone who can see the list could run it).
    @admin.action(description="Clean up expired attempts", permissions=["delete"])
    def cleanup_expired_attempts(
        self, request: HttpRequest, queryset: QuerySet
    ) -> None:
        # axes computes the cut-off from the time its login handler stamps on the
        # request; an admin request has no stamp (AttributeError, a 500).
        request.axes_attempt_time = timezone.now()
        super().cleanup_expired_attempts(request, queryset)


admin.site.unregister(AccessLog)
admin.site.unregister(AccessFailureLog)


@admin.register(AccessLog)
class LoginLogAdmin(BoundedDeleteMixin, AccessLogAdmin):
    """django-axes' log of logins and logouts: a row each, never cleaned up; its
    bulk delete and its list stay bounded however long it grows."""

    actions = ("delete_selected",)
    date_hierarchy = None
    show_full_result_count = False


@admin.register(AccessFailureLog)
class LoginFailureLogAdmin(BoundedDeleteMixin, AccessFailureLogAdmin):
    """django-axes' log of failed logins: a row each, as many as an attacker sends."""

    actions = ("delete_selected",)
    date_hierarchy = None
    show_full_result_count = False
