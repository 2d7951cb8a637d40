"""The queue's hot path in plain SQL: every job is claimed and completed through here.

The ORM would spend more time compiling these statements than the database spends
running them. PostgreSQL does each step in one round trip (data-modifying CTEs,
atomic as one statement); SQLite runs the same steps as separate statements inside
one ``BEGIN IMMEDIATE`` transaction, which costs nothing extra in-process.
Values are always parameters; the state names are the fixed values of ``Status``.
"""

from __future__ import annotations

CLAIMED_FIELDS = (
    "id",
    "document_id",
    "operation",
    "status",
    "priority",
    "attempts",
    "max_retries",
    "claimed_by",
)
_FIELDS = ", ".join(CLAIMED_FIELDS)

# retry_pending → pending once the backoff has passed (the guide's diagram); an index
# probe on idx_queue_status_retry that usually matches nothing.
_DUE = "status = 'retry_pending' AND next_retry_at <= %(now)s"
PROMOTE_DOCUMENTS = f"""UPDATE documents_document SET status = 'pending'
    WHERE id IN (SELECT document_id FROM extraction_queue WHERE {_DUE})"""
PROMOTE_ITEMS = f"UPDATE extraction_queue SET status = 'pending' WHERE {_DUE}"

# The next job by priority, then age: read straight off idx_queue_claim_order.
_NEXT = """SELECT id FROM extraction_queue WHERE status = 'pending'
    ORDER BY priority DESC, created_at, id LIMIT 1"""
_TAKE = """UPDATE extraction_queue SET status = 'processing', attempts = attempts + 1,
    claimed_by = %(worker)s, started_at = %(now)s, finished_at = NULL,
    next_retry_at = NULL, updated_at = %(now)s"""
CLAIM = f"{_TAKE} WHERE id = ({_NEXT}) RETURNING {_FIELDS}"
# One given job, if it is still waiting (DocumentQueueService.mark_in_progress).
TAKE = f"{_TAKE} WHERE id = %(job)s AND status = 'pending' RETURNING {_FIELDS}"
CLAIM_DOCUMENT = """UPDATE documents_document SET status = 'processing',
    updated_at = %(now)s WHERE id = %(document_id)s"""

# PostgreSQL: one statement. SKIP LOCKED lets concurrent claimers pass a locked row.
PG_CLAIM = f"""WITH
    promoted AS ({PROMOTE_ITEMS} RETURNING document_id),
    promoted_documents AS (UPDATE documents_document SET status = 'pending'
        WHERE id IN (SELECT document_id FROM promoted)),
    claimed AS ({_TAKE} WHERE id = ({_NEXT} FOR UPDATE SKIP LOCKED)
        RETURNING {_FIELDS}),
    claimed_document AS (UPDATE documents_document SET status = 'processing',
        updated_at = %(now)s WHERE id = (SELECT document_id FROM claimed))
    SELECT {", ".join(f"claimed.{f}" for f in CLAIMED_FIELDS)},
        (SELECT count(*) FROM promoted)
    FROM (SELECT 1) AS one LEFT JOIN claimed ON true"""
# One statement sees one snapshot: retries it promotes become claimable on the next
# run, so the last column (how many it promoted) tells the caller to run it again.

_DONE = """UPDATE extraction_queue SET status = 'completed', finished_at = %(now)s,
    error_type = '', error_message = '', extraction_time_ms = %(ms)s,
    confidence = %(confidence)s, updated_at = %(now)s
    WHERE id = %(job)s AND status = 'processing'
    AND (%(worker)s IS NULL OR claimed_by = %(worker)s)"""
_DONE_DOCUMENT = """UPDATE documents_document SET status = 'completed',
    error_type = '', error_message = '', updated_at = %(now)s WHERE id = {document}"""
_METRIC = """INSERT INTO extraction_metrics (job_id, document_id, attempt, outcome,
    error_type, error_message, extraction_time_ms, pages, characters, confidence,
    extractor, worker_id, created_at)
    {source}"""
_METRIC_VALUES = """%(job)s, {document}, {attempt}, 'completed', '', '', %(ms)s,
    %(pages)s, %(characters)s, %(confidence)s, %(extractor)s, {worker}, %(now)s"""

COMPLETE = f"{_DONE} RETURNING document_id, attempts, claimed_by"
COMPLETE_DOCUMENT = _DONE_DOCUMENT.format(document="%(document_id)s")
COMPLETE_METRIC = _METRIC.format(
    source="VALUES ("
    + _METRIC_VALUES.format(
        document="%(document_id)s", attempt="%(attempt)s", worker="%(claimed_by)s"
    )
    + ")"
)
PG_COMPLETE = f"""WITH
    done AS ({COMPLETE}),
    done_document AS ({
    _DONE_DOCUMENT.format(document="(SELECT document_id FROM done)")
}),
    metric AS ({
    _METRIC.format(
        source="SELECT "
        + _METRIC_VALUES.format(
            document="document_id", attempt="attempts", worker="claimed_by"
        )
        + " FROM done"
    )
})
    SELECT count(*) FROM done"""
