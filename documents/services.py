"""What happens to documents: create with their first job, reprocess, store results."""

from __future__ import annotations

import hashlib
import logging

from django.core.files import File
from django.db import transaction
from django.utils import timezone

from documents.extractors.base import ExtractionResult
from documents.models import Document
from documents.uploads import CheckedUpload
from jobqueue.models import Operation, Status
from jobqueue.services import DocumentQueueService

logger = logging.getLogger(__name__)


def file_sha256(file: File) -> str:
    """The SHA-256 of a file's content, read in chunks; leaves it rewound."""
    digest = hashlib.sha256()
    for chunk in file.chunks():
        digest.update(chunk)
    file.seek(0)
    return digest.hexdigest()


def document_create(*, owner, upload: CheckedUpload, priority: int = 0) -> Document:
    """Store the file, then create the document and its queue item in one transaction.

    If the transaction fails the stored file is removed, so nothing is left behind.
    """
    document = Document(
        owner=owner,
        original_filename=upload.filename,
        mime_type=upload.mime_type,
        size=upload.file.size,
        sha256=file_sha256(upload.file),
        status=Status.PENDING,
    )
    document.file.save(upload.filename, upload.file, save=False)
    try:
        with transaction.atomic():
            document.save()
            DocumentQueueService().enqueue(document.pk, Operation.EXTRACT, priority)
    except BaseException:
        document.file.delete(save=False)
        raise
    return document


def document_reprocess(*, document: Document, priority: int = 0) -> int | None:
    """Queue the document again; None if a reprocess is already waiting or running."""
    job_id = DocumentQueueService().enqueue(document.pk, Operation.REPROCESS, priority)
    document.refresh_from_db(
        fields=["status", "error_type", "error_message", "updated_at"]
    )
    return job_id


def document_store_result(*, document_id: int, result: ExtractionResult) -> None:
    """Save extracted text (call inside the job's transaction, so text and status
    change together; the database's own triggers keep the search index in step)."""
    Document.objects.filter(pk=document_id).update(
        text=result.text,
        page_count=result.page_count,
        confidence=result.confidence,
        extractor=result.extractor,
        extraction_note=result.note,
        processed_at=timezone.now(),
    )
