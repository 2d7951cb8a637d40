"""Document work as job kinds of the queue (extract, reprocess, thumbnail, and the
benchmarks' noop): what runs in the child, and what a job's outcome writes to its
document, in the same transaction as the queue item's change."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models.functions import Substr
from django.utils.module_loading import import_string

from documents.local_files import MISSING, local_path
from jobqueue import operations
from jobqueue.child import JobFailed
from jobqueue.models import ErrorType, Operation
from jobqueue.services import QueueManager

# Below people's own work (0), so a thumbnail never delays a document's text.
THUMBNAIL_PRIORITY = -10
# Enough text for a card's lines, without loading a whole book.
CARD_TEXT_CHARS = 3000


def _prepare(item: Any) -> dict[str, Any]:
    from documents.models import Document

    document = Document.objects.only("file", "mime_type").get(pk=item.document_id)
    return {
        "function": settings.QUEUE_EXTRACT_FUNCTION,
        **_local_file(document),
        "mime_type": document.mime_type,
        # Children read no Django settings.
        "options": import_string(settings.QUEUE_EXTRACT_OPTIONS)(),
    }


def _local_file(document: Any) -> dict[str, Any]:
    """The child's ``path`` to the document's file, and whether it is a ``copy``
    (of a storage with no local files), which the child removes."""
    try:
        path, copy = local_path(document.file)
    except FileNotFoundError:  # retried all the same: a share may be back
        raise JobFailed(ErrorType.UNKNOWN, MISSING) from None
    except OSError as exc:  # the storage unreachable: tried again later
        raise JobFailed(
            ErrorType.UNKNOWN,
            f"The file could not be read from storage: {exc.strerror or exc}",
        ) from None
    return {"path": path, "copy": copy}


def _store(item: Any, result: Any) -> None:
    from documents.services import document_store_result

    if result.details:
        QueueManager().record_details(item.pk, item.attempts, result.details)
    document_store_result(document_id=item.document_id, result=result)
    if settings.THUMBNAILS:
        # The text card needs the text: the thumbnail follows the extraction.
        QueueManager(Operation.THUMBNAIL).enqueue(item.document_id, THUMBNAIL_PRIORITY)


def _prepare_thumbnail(item: Any) -> dict[str, Any]:
    from documents.models import Document

    document = Document.objects.only(
        "file", "mime_type", "title", "original_filename"
    ).get(pk=item.document_id)
    return {
        **_local_file(document),
        "mime_type": document.mime_type,
        "title": str(document),
        "text": Document.objects.filter(pk=document.pk)
        .values_list(Substr("text", 1, CARD_TEXT_CHARS), flat=True)
        .get(),
    }


def _store_thumbnail(item: Any, png: bytes) -> None:
    from documents.models import Document
    from documents.pages import store_thumbnail

    document = Document.objects.only("file", "sha256").get(pk=item.document_id)
    name = store_thumbnail(document, png)
    Document.objects.filter(pk=document.pk).update(thumbnail=name)


def _metrics(result: Any) -> dict[str, Any]:
    return {
        "pages": result.page_count,
        "characters": len(result.text),
        "confidence": result.confidence,
        "extractor": result.extractor,
    }


def _thumbnail_metrics(png: bytes) -> dict[str, Any]:
    return {"pages": 1, "extractor": "thumbnail"}


def _noop(item: Any) -> dict[str, Any]:
    """A job that only goes through the queue: for benchmarks and checks."""
    return {"pages": 0, "characters": 0, "confidence": 1.0, "extractor": "noop"}


def register() -> None:
    from documents.models import Document

    # A document's status mirrors its extraction jobs' (see jobqueue.operations).
    documents_table = Document._meta.db_table
    for name in (Operation.EXTRACT, Operation.REPROCESS):
        operations.register(
            operations.JobKind(
                name=name,
                child="documents.extractors.child.extract_in_child",
                prepare=_prepare,
                preload=("documents.extractors.child", "documents.extractors.registry"),
                progress=True,
                on_success=_store,
                status_table=documents_table,
                metrics=_metrics,
            )
        )
    operations.register(
        operations.JobKind(
            name=Operation.THUMBNAIL,
            child="documents.thumbnails.thumbnail_in_child",
            prepare=_prepare_thumbnail,
            preload=("documents.thumbnails",),
            on_success=_store_thumbnail,
            metrics=_thumbnail_metrics,
            timeout=60,
            max_retries=1,
            callbacks=False,
        )
    )
    operations.register(
        operations.JobKind(
            name=Operation.NOOP,
            run=_noop,
            status_table=documents_table,
            metrics=dict,
        )
    )
