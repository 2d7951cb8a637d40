"""Documents in the admin: what was uploaded, what extraction made of it, reprocess."""

from __future__ import annotations

from typing import Any

from axes.admin import AccessAttemptAdmin
from axes.models import AccessAttempt
from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.defaultfilters import filesizeformat
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import ngettext
from knox.models import AuthToken, get_digest_token
from knox.settings import CONSTANTS

from documents.models import Document
from documents.services import document_delete, document_reprocess
from jobqueue.admin_monitoring import OperatorsMayView
from jobqueue.dashboard import status_badge
from jobqueue.models import is_operator

PREVIEW_CHARS = 500


@admin.register(Document)
class DocumentAdmin(OperatorsMayView, admin.ModelAdmin):
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
    list_filter = ("status", "mime_type", "error_type", "created_at")
    date_hierarchy = "created_at"
    search_fields = ("original_filename", "title", "owner__username", "sha256")
    list_select_related = ("owner",)
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
    actions = ("reprocess",)

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
        for document in queryset:
            document_delete(document=document)

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
        queued = already = 0
        for document in queryset:
            if document_reprocess(document=document) is None:
                already += 1
            else:
                queued += 1
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
class LoginAttemptAdmin(AccessAttemptAdmin):
    """django-axes' admin, with its clean-up action working outside a login request."""

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
