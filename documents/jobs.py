"""Document extraction as job kinds of the queue (extract, reprocess, and the
benchmarks' noop): what runs in the child, and what a job's outcome writes to its
document, in the same transaction as the queue item's change."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from jobqueue import operations
from jobqueue.child import JobFailed
from jobqueue.models import ErrorType, Operation
from jobqueue.services import QueueManager
from jobqueue.sql import DbNow


def _prepare(item: Any) -> dict[str, Any]:
    from documents.models import Document

    document = Document.objects.only("file", "mime_type").get(pk=item.document_id)
    try:
        path = document.file.path
    except NotImplementedError:
        raise JobFailed(
            ErrorType.EXTRACTOR_MISSING,
            "The file storage has no local paths; mount it or use a shared filesystem.",
        ) from None
    return {
        "function": settings.QUEUE_EXTRACT_FUNCTION,
        "path": path,
        "mime_type": document.mime_type,
        # Children read no Django settings.
        "options": import_string(settings.QUEUE_EXTRACT_OPTIONS)(),
    }


def _store(item: Any, result: Any) -> None:
    from documents.services import document_store_result

    if result.details:
        QueueManager().record_details(item.pk, item.attempts, result.details)
    document_store_result(document_id=item.document_id, result=result)


def _set_status(ids: list[int], status: str, fields: dict[str, Any]) -> None:
    from documents.models import Document

    Document.objects.filter(pk__in=ids).update(
        status=status, updated_at=DbNow(), **fields
    )


def _metrics(result: Any) -> dict[str, Any]:
    return {
        "pages": result.page_count,
        "characters": len(result.text),
        "confidence": result.confidence,
        "extractor": result.extractor,
    }


def _noop(item: Any) -> dict[str, Any]:
    """A job that only goes through the queue: for benchmarks and checks."""
    return {"pages": 0, "characters": 0, "confidence": 1.0, "extractor": "noop"}


def register() -> None:
    for name in (Operation.EXTRACT, Operation.REPROCESS):
        operations.register(
            operations.JobKind(
                name=name,
                child="documents.extractors.child.extract_in_child",
                prepare=_prepare,
                preload=("documents.extractors.child", "documents.extractors.registry"),
                progress=True,
                on_success=_store,
                on_status=_set_status,
                metrics=_metrics,
            )
        )
    operations.register(
        operations.JobKind(
            name=Operation.NOOP, run=_noop, on_status=_set_status, metrics=dict
        )
    )
