"""Pages for people: upload, their documents, one document, reprocess, download."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from documents.forms import UploadForm
from documents.models import Document
from documents.services import document_create, document_reprocess
from documents.uploads import accepted_types_label


@login_required
def upload(request: HttpRequest) -> HttpResponse:
    """One or many files; each is accepted or refused with its own reason."""
    form = UploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        created = [
            document_create(owner=request.user, upload=checked)
            for checked in form.cleaned_data["file"]
        ]
        for _name, reason in form.rejected:
            messages.error(request, reason)
        for document in created:
            messages.success(request, f"“{document}” was uploaded and is pending.")
        if len(created) == 1 and not form.rejected:
            return redirect(created[0])
        return redirect("documents:list")
    return render(
        request,
        "documents/upload.html",
        {"form": form, "accepted_types": accepted_types_label()},
        status=400 if form.errors else 200,
    )


@login_required
def document_list(request: HttpRequest) -> HttpResponse:
    documents = Document.objects.for_user(request.user).only(
        "original_filename", "status", "size", "mime_type", "created_at", "owner"
    )
    return render(request, "documents/list.html", {"documents": documents[:200]})


@login_required
def document_detail(request: HttpRequest, pk: int) -> HttpResponse:
    document = get_object_or_404(Document.objects.for_user(request.user), pk=pk)
    return render(request, "documents/detail.html", {"document": document})


@login_required
def document_status(request: HttpRequest, pk: int) -> JsonResponse:
    """The document's queue state, for pages that poll."""
    document = get_object_or_404(Document.objects.for_user(request.user), pk=pk)
    return JsonResponse(
        {
            "id": document.pk,
            "status": document.status,
            "error_type": document.error_type or None,
            "error_message": document.error_message or None,
            "page_count": document.page_count,
        }
    )


@login_required
@require_POST
def reprocess(request: HttpRequest, pk: int) -> HttpResponse:
    document = get_object_or_404(Document.objects.for_user(request.user), pk=pk)
    if document_reprocess(document=document) is None:
        messages.info(request, f"“{document}” is already queued for reprocessing.")
    else:
        messages.success(request, f"“{document}” was queued for reprocessing.")
    return redirect(document)


@login_required
def download(request: HttpRequest, pk: int) -> FileResponse:
    """The original file, for its owner and staff only (media is never public)."""
    document = get_object_or_404(Document.objects.for_user(request.user), pk=pk)
    return FileResponse(
        document.file.open("rb"),
        as_attachment=True,
        filename=document.original_filename,
        content_type=document.mime_type,
    )
