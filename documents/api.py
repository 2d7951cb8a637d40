"""JSON API for scripts: upload, status, reprocess (session or ``Token`` auth)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.urls import reverse
from rest_framework import status
from rest_framework.decorators import api_view, parser_classes, throttle_classes
from rest_framework.exceptions import APIException, NotFound, PermissionDenied
from rest_framework.exceptions import ValidationError as APIValidationError
from rest_framework.fields import BooleanField
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from documents.access import (
    LimitReached,
    UploadRateThrottle,
    UserThrottle,
    can_reprocess,
    can_set_priority,
    check_active_jobs,
)
from documents.models import Document
from documents.services import (
    DuplicateUpload,
    UploadRefused,
    document_create,
    document_reprocess,
)
from documents.uploads import check_upload

PRIORITY_RANGE = range(-100, 101)


class TooManyActiveJobs(APIException):
    """429: the user already has ``USER_MAX_ACTIVE_JOBS`` jobs waiting or running."""

    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_code = "too_many_active_jobs"


class AlreadyQueued(APIException):
    """409: the document already has a reprocess waiting or running."""

    status_code = status.HTTP_409_CONFLICT
    default_code = "already_queued"


def _document(request: Request, pk: int, *, text: bool = False) -> Document:
    """One of the user's documents (staff: anyone's), or a JSON 404."""
    documents = Document.objects.for_user(request.user)
    if not text:
        documents = documents.defer("text")
    try:
        return documents.get(pk=pk)
    except Document.DoesNotExist:
        raise NotFound(
            f"There is no document {pk}, or it is not one you may see."
        ) from None


class UploadNotKept(APIException):
    """An upload refused after its checks: storage full, duplicate, database."""

    def __init__(self, refusal: UploadRefused) -> None:
        self.status_code = refusal.http_status
        message = str(refusal)
        if isinstance(refusal, DuplicateUpload):
            url = reverse("api:document", args=[refusal.existing.pk])
            message += f" It is {url}; send allow_duplicates=true to keep it again."
        super().__init__(detail=message, code=refusal.code)


def document_json(request: Request, document: Document, *, text: bool = True) -> dict:
    data = {
        "id": document.pk,
        "filename": document.original_filename,
        "status": document.status,
        "status_url": request.build_absolute_uri(
            reverse("api:document", args=[document.pk])
        ),
        "mime_type": document.mime_type,
        "size": document.size,
        "sha256": document.sha256,
        "error_type": document.error_type or None,
        "error_message": document.error_message or None,
        "page_count": document.page_count,
        "confidence": document.confidence,
        "note": document.extraction_note or None,
        "created_at": document.created_at,
        "updated_at": document.updated_at,
        "processed_at": document.processed_at,
    }
    if text:
        data["text"] = document.text
    return data


def _priority(request: Request) -> int:
    raw = request.data.get("priority", 0) or 0
    try:
        priority = int(raw)
    except (TypeError, ValueError):
        raise APIValidationError(
            {"priority": "Priority must be a whole number."}
        ) from None
    if priority not in PRIORITY_RANGE:
        raise APIValidationError({"priority": "Priority must be between -100 and 100."})
    if not can_set_priority(request.user, priority):
        raise PermissionDenied("Only queue operators may set a priority.")
    return priority


def _check_active_jobs(request: Request) -> None:
    try:
        check_active_jobs(request.user)
    except LimitReached as error:
        raise TooManyActiveJobs(str(error)) from None


def _flag(request: Request, name: str) -> bool:
    try:
        return BooleanField().to_internal_value(request.data.get(name, False))
    except APIValidationError as error:
        raise APIValidationError({name: error.detail}) from None


@api_view(["GET", "POST"])
@parser_classes([MultiPartParser, FormParser, JSONParser])
@throttle_classes([UserThrottle, UploadRateThrottle])
def documents(request: Request) -> Response:
    """GET: your documents (newest first, no text). POST: upload one file (202)."""
    if request.method == "GET":
        docs = Document.objects.for_user(request.user).defer("text")
        docs = docs.order_by("-created_at")[:100]
        return Response([document_json(request, d, text=False) for d in docs])
    files = request.FILES.getlist("file")
    if len(files) != 1:
        raise APIValidationError({"file": "Send exactly one file in the field “file”."})
    priority = _priority(request)
    _check_active_jobs(request)
    try:
        checked = check_upload(files[0])
    except ValidationError as error:
        raise APIValidationError({"file": error.messages}) from None
    allow_duplicate = _flag(request, "allow_duplicates")
    try:
        document = document_create(
            owner=request.user,
            upload=checked,
            priority=priority,
            allow_duplicate=allow_duplicate,
        )
    except UploadRefused as refusal:
        raise UploadNotKept(refusal) from refusal
    return Response(
        document_json(request, document, text=False),
        status=status.HTTP_202_ACCEPTED,
        headers={"Location": reverse("api:document", args=[document.pk])},
    )


@api_view(["GET"])
def document_detail(request: Request, pk: int) -> Response:
    """Status, error, page count and text of one of your documents."""
    document = _document(request, pk, text=True)
    return Response(document_json(request, document))


@api_view(["POST"])
@parser_classes([MultiPartParser, FormParser, JSONParser])
def document_reprocess_view(request: Request, pk: int) -> Response:
    """Queue the document again and answer at once (202)."""
    document = _document(request, pk)
    if not can_reprocess(request.user, document):
        raise PermissionDenied("Only the owner or a queue operator may reprocess it.")
    priority = _priority(request)
    _check_active_jobs(request)
    if document_reprocess(document=document, priority=priority) is None:
        raise AlreadyQueued(
            f"“{document}” is already waiting to be reprocessed or being processed; "
            "its status URL shows when it is done."
        )
    data = document_json(request, document, text=False)
    return Response(data, status=status.HTTP_202_ACCEPTED)
