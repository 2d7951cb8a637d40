"""People manage their documents: title and tags, delete, actions on many documents
at once (reprocess, delete, ZIP), and the page images of the viewer."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.db.models.functions import Lower
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    StreamingHttpResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import filesizeformat
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import ngettext
from django.views.decorators.http import (
    require_http_methods,
    require_POST,
    require_safe,
)

from documents.access import (
    ZIP_DOWNLOADS,
    LimitReached,
    TooManyAtOnce,
    can_delete,
    check_active_jobs,
    is_operator,
    may_delete_any,
)
from documents.archive import zip_stream
from documents.extractors.formats import PDF
from documents.forms import DocumentDetailsForm
from documents.models import Document
from documents.pages import PagesBusy, PageUnavailable, page_png
from documents.services import (
    document_delete,
    document_delete_many,
    document_reprocess,
    document_update_details,
)
from documents.views import login_required_back_to, refused_page

# Bounds of one bulk action: a page's worth of documents, and what a ZIP may hold.
MAX_BULK = 100
ZIP_MAX_BYTES = 1024 * 1024 * 1024


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def edit(request: HttpRequest, pk: int) -> HttpResponse:
    """The owner's title and tags for a document (staff may look, not label)."""
    document = get_object_or_404(Document.objects.filter(owner=request.user), pk=pk)
    if request.method == "POST":
        form = DocumentDetailsForm(request.POST)
        if form.is_valid():
            try:
                document_update_details(
                    document=document,
                    title=form.cleaned_data["title"],
                    tag_names=form.cleaned_data["tags"],
                )
            except Document.DoesNotExist:  # deleted meanwhile (another tab)
                raise Http404 from None
            messages.success(request, "The title and tags were saved.")
            return redirect(document)
    else:
        tags = ", ".join(tag.name for tag in document.tags.all())
        form = DocumentDetailsForm(initial={"title": document.title, "tags": tags})
    context = {"document": document, "form": form}
    return render(request, "documents/edit.html", context)


def _actionable(user, action: str) -> QuerySet:
    """Documents the user may reprocess or delete: their own; anyone's, for an
    operator (reprocess) or staff who may delete documents (delete)."""
    anyone = is_operator(user) if action == "reprocess" else may_delete_any(user)
    return Document.objects.all() if anyone else Document.objects.filter(owner=user)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def delete(request: HttpRequest, pk: int) -> HttpResponse:
    """Ask first (GET), then delete the document, its file, text and jobs (POST)."""
    document = get_object_or_404(
        Document.objects.for_user(request.user).without_text(), pk=pk
    )
    if not can_delete(request.user, document):
        raise PermissionDenied(
            "Only the owner or staff allowed to delete documents may delete it."
        )
    if request.method != "POST":
        return render(request, "documents/delete.html", {"documents": [document]})
    name = str(document)
    document_delete(document=document)
    messages.success(request, f"“{name}” was deleted.")
    return redirect("documents:list")


@login_required_back_to("documents:list")
@require_POST
def bulk(request: HttpRequest) -> HttpResponse:
    """Reprocess, delete (after a confirmation page) or download selected documents."""
    ids = _selected_ids(request)
    action = request.POST.get("action", "")
    if not ids or action not in {"reprocess", "delete", "download"}:
        messages.warning(request, "Select one or more documents, then an action.")
        return redirect(_back_to_list(request))
    if len(ids) > MAX_BULK:
        messages.error(request, f"At most {MAX_BULK} documents at once, please.")
        return redirect(_back_to_list(request))
    if action == "download":
        return _download_zip(request, ids)
    documents = list(
        _actionable(request.user, action)
        .filter(pk__in=ids)
        .without_text()
        .order_by("pk")
    )
    left_alone = len(set(ids)) - len(documents) - _say_gone(request, ids)
    who = (
        "a queue operator"
        if action == "reprocess"
        else "staff allowed to delete documents"
    )
    if not documents:
        if left_alone:
            messages.warning(
                request,
                f"Nothing was done: only a document's owner or {who} may {action} it.",
            )
        return redirect(_back_to_list(request))
    if left_alone:
        messages.warning(
            request,
            ngettext(
                "%(n)d selected document was left alone: only its owner or %(who)s "
                "may %(action)s it.",
                "%(n)d selected documents were left alone: only their owners or "
                "%(who)s may %(action)s them.",
                left_alone,
            )
            % {"n": left_alone, "who": who, "action": action},
        )
    if action == "reprocess":
        try:
            check_active_jobs(request.user, adding=len(documents))
        except LimitReached as error:
            return refused_page(request, str(error))
        queued, skipped = 0, []
        for document in documents:
            try:
                reprocessed = document_reprocess(
                    document=document, asked_by=request.user
                )
            except Document.DoesNotExist:  # deleted meanwhile: nothing to queue
                continue
            except LimitReached as error:  # reached meanwhile (another tab, a script)
                messages.error(request, str(error))
                break
            if reprocessed is None:
                skipped.append(document)
            else:
                queued += 1
        messages.success(
            request,
            ngettext(
                "%(n)d document was queued for reprocessing.",
                "%(n)d documents were queued for reprocessing.",
                queued,
            )
            % {"n": queued}
            + _skipped_note(skipped),
        )
        return redirect(_back_to_list(request))
    if request.POST.get("confirm") != "yes":
        context = {
            "documents": documents,
            "list_url": _back_to_list(request),
            "next_query": request.POST.get("next", ""),
        }
        return render(request, "documents/delete.html", context)
    document_delete_many(documents=documents)
    count = len(documents)
    messages.success(
        request,
        ngettext("%(n)d document was deleted.", "%(n)d documents were deleted.", count)
        % {"n": count},
    )
    return redirect(_back_to_list(request))


def _selected_ids(request: HttpRequest) -> list[int]:
    values = request.POST.getlist("id")[: MAX_BULK + 1]
    return [int(v) for v in values if v.isascii() and v.isdigit() and len(v) < 19]


def _say_gone(request: HttpRequest, ids: list[int]) -> int:
    """Say how many selected documents were deleted since the list was shown (in
    another tab, or by this form sent twice): not a question of who may change them.
    Another person's document that this one may not see is not found either, as
    everywhere else (a 404): its id says nothing of whether it exists."""
    visible = Document.objects.for_user(request.user).filter(pk__in=ids).count()
    gone = len(set(ids)) - visible
    if gone:
        messages.warning(
            request,
            ngettext(
                "%(n)d selected document was not found: it may have been deleted.",
                "%(n)d selected documents were not found: they may have been deleted.",
                gone,
            )
            % {"n": gone},
        )
    return gone


def _back_to_list(request: HttpRequest) -> str:
    """The list page the action came from (its filters kept), never another site."""
    query = request.POST.get("next", "")
    page = reverse("documents:list")
    # A line end in it would make the redirect's header invalid (a 500); a bare
    # "?" (a list without filters) is no query.
    if query.startswith("?") and len(query) > 1 and query.isprintable():
        return f"{page}{query}"
    return page


def _skipped_note(skipped: list[Document]) -> str:
    """Which documents were not queued again, and why (escaped as the page renders
    the message)."""
    if not skipped:
        return ""
    return " " + ngettext(
        "Skipped, as it is already waiting to be processed or being processed: "
        "%(names)s.",
        "Skipped, as they are already waiting to be processed or being processed: "
        "%(names)s.",
        len(skipped),
    ) % {"names": ", ".join(f"“{d}”" for d in skipped)}


def _download_zip(request: HttpRequest, ids: list[int]) -> HttpResponse:
    # Only the person's own files, even for staff: a ZIP is not the place to audit.
    documents = Document.objects.filter(owner=request.user, pk__in=ids)
    documents = documents.only("pk", "original_filename", "mime_type", "file", "size")
    documents = list(documents.order_by(Lower("original_filename"), "pk"))
    if not documents:
        if not _say_gone(request, ids):
            messages.warning(request, "Only your own documents can be downloaded.")
        return redirect(_back_to_list(request))
    total = sum(d.size for d in documents)
    if total > ZIP_MAX_BYTES:
        messages.error(
            request,
            f"These files come to {filesizeformat(total)}; a download holds at most "
            f"{filesizeformat(ZIP_MAX_BYTES)}. Select fewer.",
        )
        return redirect(_back_to_list(request))
    try:
        chunks = ZIP_DOWNLOADS.hold(request.user, zip_stream(documents))
    except TooManyAtOnce as error:
        headers = {"Retry-After": str(error.retry_after)}
        return refused_page(request, str(error), headers=headers)
    response = StreamingHttpResponse(chunks, content_type="application/zip")
    stamp = timezone.localtime().strftime("%Y-%m-%d-%H%M")
    response["Content-Disposition"] = f'attachment; filename="documents-{stamp}.zip"'
    return response


@login_required
@require_safe
def page_image(request: HttpRequest, pk: int, number: int) -> HttpResponse:
    """One page of the owner's PDF as a PNG (drawn once, then kept)."""
    documents = Document.objects.filter(owner=request.user, mime_type=PDF.mime_type)
    document = get_object_or_404(documents.without_text(), pk=pk)
    try:
        name = page_png(document, number)
    except PageUnavailable as error:
        raise Http404(str(error)) from None
    except PagesBusy as busy:
        answer = HttpResponse(busy.message, status=503, content_type="text/plain")
        answer["Retry-After"] = str(busy.retry_after)
        return answer
    # Kept by no cache, as all a logged-in person is answered: after they log out,
    # Back must not show it again (config.middleware.PrivateCacheMiddleware).
    return FileResponse(document.file.storage.open(name), content_type="image/png")


@login_required
@require_safe
def thumbnail(request: HttpRequest, pk: int) -> FileResponse:
    """The document's first-page thumbnail, for those who may see the document."""
    documents = Document.objects.for_user(request.user).exclude(thumbnail="")
    document = get_object_or_404(documents.only("file", "thumbnail"), pk=pk)
    try:
        image = document.file.storage.open(document.thumbnail)
    except FileNotFoundError:
        raise Http404("The thumbnail is gone; reprocess to draw it again.") from None
    # Kept by no cache, as the page images (page_image).
    return FileResponse(image, content_type="image/png")
