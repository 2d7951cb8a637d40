"""What happens to documents: create with their first job, reprocess, store results."""

from __future__ import annotations

import copy
import errno
import hashlib
import logging
import re
import unicodedata
from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.core.files import File
from django.core.files.storage import Storage
from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import F, Value
from django.db.models.functions import Lower, Substr
from django.utils import timezone

from documents.access import LimitReached, check_active_jobs
from documents.extractors.base import ExtractionResult
from documents.grams import GRAMS_TEXT_CHARS, has_grams, search_grams
from documents.models import Document, Tag
from documents.pages import forget_pages
from documents.uploads import CheckedUpload
from jobqueue.models import Operation, QueueItem, Status, is_operator
from jobqueue.services import DocumentQueueService, QueueManager

logger = logging.getLogger(__name__)

# PostgreSQL refuses NUL in text; neither database can encode a lone surrogate (which
# a broken UTF-16 source can give) as UTF-8. NULs go; surrogates become U+FFFD.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable_text(text: str) -> str:
    """The text without the characters a database cannot store."""
    return _UNSTORABLE.sub(lambda m: "" if m[0] == "\x00" else "\ufffd", text)


def file_sha256(file: File) -> str:
    """The SHA-256 of a file's content, read in chunks; leaves it rewound."""
    digest = hashlib.sha256()
    for chunk in file.chunks():
        digest.update(chunk)
    file.seek(0)
    return digest.hexdigest()


class UploadRefused(Exception):
    """Nothing of this upload was kept; the message says why, in words for its sender."""

    code = "not_stored"
    http_status = 503


class StorageFull(UploadRefused):
    """The file storage has no room left (ENOSPC, or a quota)."""

    code = "storage_full"
    http_status = 507


class DuplicateUpload(UploadRefused):
    """The owner already has a document with the same content."""

    code = "duplicate"
    http_status = 409

    def __init__(self, message: str, *, existing: Document) -> None:
        super().__init__(message)
        self.existing = existing


class TooManyActiveJobs(UploadRefused):
    """The owner already has ``USER_MAX_ACTIVE_JOBS`` documents waiting or running."""

    code = "too_many_active_jobs"
    http_status = 429


NO_SPACE = {errno.ENOSPC, errno.EDQUOT}


def document_create(
    *,
    owner,
    upload: CheckedUpload,
    priority: int = 0,
    allow_duplicate: bool = False,
    limit_active_jobs: bool = False,
) -> Document:
    """Store the file, then create the document and its queue item in one transaction.

    All three exist afterwards, or none: whatever fails (a full disk, the database, a
    bug) the stored file or its partial write is removed before the error goes on.
    Raises ``UploadRefused`` (or a subclass) when the failure is one to tell the user.
    ``limit_active_jobs``: refuse it (``TooManyActiveJobs``) if the owner already has
    ``USER_MAX_ACTIVE_JOBS`` documents waiting or running (people's uploads, not an
    administrator's import).
    """
    sha256 = file_sha256(upload.file)
    if not allow_duplicate:  # before the file is stored: the usual case is cheap
        _refuse_duplicate(owner=owner, upload=upload, sha256=sha256)
    document = Document(
        owner=owner,
        original_filename=upload.filename,
        search_grams=search_grams(original_filename=upload.filename),
        mime_type=upload.mime_type,
        size=upload.file.size,
        sha256=sha256,
        status=Status.PENDING,
    )
    field = document.file.field
    # Named here, not by the storage, so that a write cut short can be found.
    name = field.generate_filename(document, upload.filename)
    try:
        document.file = field.storage.save(
            name, upload.file, max_length=field.max_length
        )
        with transaction.atomic():
            if not allow_duplicate or limit_active_jobs:
                # Checked again, with the owner's uploads taking turns (the owner's
                # row locked on PostgreSQL; SQLite's writers take turns from BEGIN):
                # two copies sent at once (a double click, a client's retry) both
                # passed the look above, and so did uploads sent at once from the
                # form and the API, each counting the jobs before the others'.
                _take_owners_turn({owner.pk})
            if not allow_duplicate:
                _refuse_duplicate(owner=owner, upload=upload, sha256=sha256)
            if limit_active_jobs:
                _refuse_over_active_limit(owner)
            document.save()
            queue = DocumentQueueService()
            if queue.enqueue(document.pk, Operation.EXTRACT, priority) is None:
                # A new document has no active job to deduplicate against: the
                # database refused the insert, so the document must not stay.
                raise IntegrityError("the document's first job was not created")
            # The queue stamped the row as it wrote the status: the answer shows it.
            document.refresh_from_db(fields=["updated_at"])
    except BaseException as error:
        _discard(field.storage, document.file.name or name)
        _raise_refusal(error, upload.filename)
        raise
    return document


def _discard(storage: Storage, name: str) -> None:
    """Delete a stored file (after a failed upload, or once a delete commits);
    a failure is logged, not raised: check_storage finds what is left."""
    try:
        storage.delete(name)
    except OSError:
        # A failed upload's own error matters more; a done delete stays done.
        logger.exception("Could not remove the stored file %s", name)


def _refuse_duplicate(*, owner, upload: CheckedUpload, sha256: str) -> None:
    existing = (
        Document.objects.filter(owner=owner, sha256=sha256)
        .only("pk", "original_filename", "created_at")
        .order_by("created_at", "pk")
        .first()
    )
    if existing is not None:
        raise DuplicateUpload(
            f"“{upload.filename}” is already uploaded, as “{existing}” on "
            f"{timezone.localtime(existing.created_at):%Y-%m-%d}: nothing new was "
            "kept.",
            existing=existing,
        )


def _refuse_over_active_limit(owner) -> None:
    try:
        check_active_jobs(owner)
    except LimitReached as error:
        raise TooManyActiveJobs(str(error)) from None


def _raise_refusal(error: BaseException, filename: str) -> None:
    """Turn a failure the sender should hear about into ``UploadRefused``."""
    if isinstance(error, OSError) and error.errno in NO_SPACE:
        logger.error("Upload %r refused: storage full (%s)", filename, error)
        raise StorageFull(
            f"“{filename}” was not kept: the server's storage is full. "
            "Nothing of it was stored; please try again later."
        ) from error
    if isinstance(error, DatabaseError):
        logger.exception("Upload %r refused: database error", filename)
        raise UploadRefused(
            f"“{filename}” was not kept: the database did not accept it. "
            "Nothing of it was stored; please try again."
        ) from error


def document_reprocess(
    *, document: Document, priority: int = 0, asked_by=None
) -> int | None:
    """Queue the document again; None while an extraction of it (its first, or a
    reprocess) is waiting or running: the queue keeps one of that work active.
    Raises ``Document.DoesNotExist`` if another request has just deleted it.
    ``asked_by``: the person asking (on the site, on the API), refused
    (``LimitReached``) if a new job would take them over ``USER_MAX_ACTIVE_JOBS``;
    unless an operator, they leave a waiting job's priority as it is."""
    if asked_by is not None:
        with transaction.atomic():
            # Counted and queued in the owner's turn (their delete waits for it):
            # reprocesses sent at once each counted the jobs before the others'
            # were queued, past the limit together. Only the owner's: an operator
            # reprocessing another's document adds nothing to their own count, and
            # locking their row too deadlocked with their admin deletes (whose log
            # entry's key, checked at commit, waits for the operator's row).
            _take_owners_turn({document.owner_id})
            if not Document.objects.filter(pk=document.pk).exists():
                raise Document.DoesNotExist(f"Document {document.pk} was deleted.")
            waiting = (
                QueueItem.objects.active()
                .doing_work_of(Operation.REPROCESS)
                .filter(document_id=document.pk)
            )
            if not waiting.exists():
                check_active_jobs(asked_by)
            elif not is_operator(asked_by):
                # The queue would raise the job to the person's priority, undoing
                # an operator's "Lower priority": only operators set priorities.
                document.refresh_from_db(
                    fields=["status", "error_type", "error_message", "updated_at"]
                )
                return None
            return document_reprocess(document=document, priority=priority)
    try:
        job_id = DocumentQueueService().enqueue(
            document.pk, Operation.REPROCESS, priority
        )
    except ValueError:  # the queue's "There is no document"
        if Document.objects.filter(pk=document.pk).exists():
            raise
        raise Document.DoesNotExist(f"Document {document.pk} was deleted.") from None
    document.refresh_from_db(
        fields=["status", "error_type", "error_message", "updated_at"]
    )
    return job_id


def document_reprocess_many(*, document_ids: list[int], priority: int = 0) -> list[int]:
    """``document_reprocess`` for many documents in one transaction, one insert for
    them all (``QueueManager.enqueue_batch``); the ids of the new jobs. A document
    whose extraction is waiting or running is skipped, by the database, as
    ``document_reprocess`` skips it."""
    return QueueManager(Operation.REPROCESS).enqueue_batch(document_ids, priority)


def document_delete(*, document: Document) -> None:
    """Delete the document with its text and jobs; its file goes once that commits.

    A worker holding one of its jobs finds the job gone and records nothing (fencing).
    """
    document_delete_many(documents=[document])


def document_delete_many(*, documents: Iterable[Document]) -> None:
    """``document_delete`` for many in one transaction, a few statements in all
    (Django deletes the rows, their jobs and tags' links in bulk), not per document."""
    documents = list(documents)
    # Copies: their pks stay for the files' removal once the delete commits.
    gone = [copy.copy(document) for document in documents]

    def discard_files() -> None:
        # After the commit, each document's files whatever another's did: an error
        # here would skip the rest and answer a delete that happened with an error.
        for document in gone:
            _discard(document.file.storage, document.file.name)
            try:
                forget_pages(document)
            except OSError:
                logger.exception(
                    "Could not remove the pages of document %s", document.pk
                )

    with transaction.atomic():
        _take_owners_turn({document.owner_id for document in gone})
        ids = [document.pk for document in gone]
        # Their jobs' rows, then theirs, in the order a worker's completion locks
        # them: one committing now is waited for, and what it added (a thumbnail
        # job, a metrics row) is seen by the delete below, not left pointing at a
        # document gone (a foreign-key error at commit).
        jobs = QueueItem.objects.filter(document_id__in=ids)
        list(jobs.select_for_update().order_by("pk").values_list("pk", flat=True))
        rows = Document.objects.filter(pk__in=ids)
        list(rows.select_for_update().order_by("pk").values_list("pk"))
        rows.delete()
        for owner_id in {document.owner_id for document in gone}:
            _drop_unused_tags(owner_id)
        transaction.on_commit(discard_files)


def document_update_details(
    *, document: Document, title: str, tag_names: list[str]
) -> None:
    """Set the owner's title and tags; tags are the owner's own, made on first use.
    Raises ``Document.DoesNotExist`` if another request has just deleted it."""
    with transaction.atomic():
        _take_owners_turn({document.owner_id})
        if not Document.objects.filter(pk=document.pk).exists():
            raise Document.DoesNotExist(f"Document {document.pk} was deleted.")
        # Matched in Python, as tag_names does (NFC, casefold): SQLite's iexact and
        # LOWER() fold ASCII letters only, so "été" made a second tag beside "Été";
        # a tag kept before names were composed is the one sent composed now.
        owners = Tag.objects.filter(owner_id=document.owner_id)
        mine = {_folded(tag.name): tag for tag in owners}
        tags = [
            mine.get(_folded(name))
            # The unique constraint's own fold (PostgreSQL's LOWER folds "İ" to
            # "i", casefold does not): a tag it takes for this one is this one.
            or owners.alias(folded=Lower("name"))
            .filter(folded=Lower(Value(name)))
            .order_by("pk")
            .first()
            or Tag.objects.create(owner_id=document.owner_id, name=name)
            for name in tag_names
        ]
        fields = ["title", "updated_at"]
        if has_grams(title) or has_grams(document.title):
            document.search_grams = document_grams(document.pk, title=title)
            fields.append("search_grams")
        document.title = title
        document.save(update_fields=fields)
        document.tags.set(tags)
        _drop_unused_tags(document.owner_id)


def _folded(name: str) -> str:
    """A tag's name as matched: composed (NFC) and case-folded."""
    return unicodedata.normalize("NFC", name).casefold()


def _take_owners_turn(owner_ids: set[int]) -> None:
    """Lock the owners' rows (PostgreSQL; SQLite's writers take turns from BEGIN),
    in one order, before their documents' tags change: two edits, or an edit and a
    delete, of one owner's documents at once had one request drop an unused tag that
    the other was linking (a foreign-key error), or take their rows' locks in
    opposite orders (a deadlock). FOR NO KEY UPDATE: a worker committing a result
    checks the owner's key of the document row it wrote (FOR KEY SHARE), which FOR
    UPDATE blocked while this request waited for that very row (a deadlock)."""
    list(
        get_user_model()
        .objects.select_for_update(no_key=True)
        .filter(pk__in=owner_ids)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def _drop_unused_tags(owner_id: int) -> None:
    # A tag no document carries any more would linger in the list's filter.
    Tag.objects.filter(owner_id=owner_id, documents=None).delete()


def document_grams(document_id: int, **changed: str) -> str:
    """The document's ``search_grams`` once the ``changed`` fields (text, title,
    original_filename) hold the given values; the others are read as stored. Every
    write of those fields sets the grams with them, through here."""
    stored = {
        "text": Substr("text", 1, GRAMS_TEXT_CHARS),
        "title": F("title"),
        "original_filename": F("original_filename"),
    }
    read = {f"stored_{k}": v for k, v in stored.items() if k not in changed}
    if read:
        row = Document.objects.filter(pk=document_id).values(**read).get()
        changed = {
            **{k.removeprefix("stored_"): v or "" for k, v in row.items()},
            **changed,
        }
    return search_grams(**changed)


def document_store_result(*, document_id: int, result: ExtractionResult) -> None:
    """Save extracted text (call inside the job's transaction, so text and status
    change together; the database's own triggers keep the search index in step)."""
    text = storable_text(result.text)
    Document.objects.filter(pk=document_id).update(
        text=text,
        search_grams=document_grams(document_id, text=text),
        page_count=result.page_count,
        confidence=result.confidence,
        extractor=result.extractor,
        extraction_note=storable_text(result.note),
        processed_at=timezone.now(),
    )
