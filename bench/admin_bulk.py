"""The operators' bulk actions: cancel or retry every selected job, clear old
entries, and delete documents, one at a time (before) against the batched
statements (after).

Before is what the admin did until the batched versions: a ``cancel`` or
``retry_failed(job_id=...)`` per job, one transaction each, and for clearing Django's
``delete()``, which loads every row to null the metrics' and heartbeats' pointers;
for documents, ``document_delete`` one at a time against ``document_delete_many``
in the admin's batches.
Each run is a child process on a fresh database, seeded in a few statements; it
prints the seconds and the child's peak memory (RSS).

    python bench/admin_bulk.py
    python bench/admin_bulk.py --db sqlite --jobs 20000 --clear 300000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import common
from common import PRODUCT_PY, ROOT

OPERATIONS = ("cancel", "retry", "clear", "delete")


def child(operation: str, mode: str, count: int) -> dict[str, float]:
    """In the child: seed ``count`` jobs, time the operation, return the figures."""
    import django

    django.setup()
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from documents.models import Document
    from jobqueue.models import ErrorType, ExtractionMetric, QueueItem, Status
    from jobqueue.services import QueueManager

    owner = get_user_model().objects.create_user("bench")
    status = {"cancel": Status.PENDING, "retry": Status.FAILED}.get(
        operation, Status.COMPLETED
    )
    old = timezone.now() - timedelta(days=40)
    ids: list[int] = []
    for start in range(0, count, 5000):
        size = min(5000, count - start)
        documents = Document.objects.bulk_create(
            Document(
                owner=owner,
                original_filename=f"{n}.txt",
                file=f"bench/{start + n}.txt",  # none stored: nothing to remove
                size=1,
                sha256="0",
            )
            for n in range(size)
        )
        items = QueueItem.objects.bulk_create(
            QueueItem(
                document=document,
                status=status,
                attempts=1,
                error_type=ErrorType.TIMEOUT if status == Status.FAILED else "",
                payload={"note": "x" * 200},
            )
            for document in documents
        )
        ExtractionMetric.objects.bulk_create(
            ExtractionMetric(job=item, attempt=1, outcome="completed") for item in items
        )
        ids += [item.pk for item in items]
    QueueItem.objects.update(updated_at=old)

    queue = QueueManager()
    started = time.perf_counter()
    if operation == "cancel":
        done = (
            sum(queue.cancel(pk) for pk in ids)
            if mode == "before"
            else len(queue.cancel_many(ids))
        )
    elif operation == "retry":
        done = (
            sum(queue.retry_failed(job_id=pk) for pk in sorted(ids, reverse=True))
            if mode == "before"
            else len(queue.retry_failed_many(ids))
        )
    elif operation == "delete":
        done = delete_documents(mode, Document.objects.without_text().order_by("pk"))
    elif mode == "before":
        done = queue.finished_older_than(30).delete()[1][QueueItem._meta.label]
    else:
        done = queue.clear_finished(30)
    seconds = time.perf_counter() - started
    if done != count:
        raise RuntimeError(f"{operation} {mode}: {done} of {count} jobs")
    return {
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def delete_documents(mode: str, documents) -> int:
    from documents.admin import DOCUMENT_DELETE_BATCH
    from documents.services import document_delete, document_delete_many

    documents = list(documents)
    if mode == "before":
        for document in documents:
            document_delete(document=document)
    else:
        for start in range(0, len(documents), DOCUMENT_DELETE_BATCH):
            batch = documents[start : start + DOCUMENT_DELETE_BATCH]
            document_delete_many(documents=batch)
    return len(documents)


def run(db: common.ScratchDB, operation: str, mode: str, count: int) -> dict:
    url = db.fresh()
    env = common.product_env(url, tempfile.gettempdir())
    out = subprocess.run(
        [PRODUCT_PY, __file__, "--child", operation, mode, str(count)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument(
        "--jobs",
        type=int,
        default=5000,
        help="to cancel and retry, documents to delete",
    )
    parser.add_argument("--clear", type=int, default=50000, help="items to clear")
    parser.add_argument("--only", choices=OPERATIONS, action="append")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        operation, mode, count = args.child
        print(json.dumps(child(operation, mode, int(count))))
        return
    vendors = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    for vendor in vendors:
        db = common.ScratchDB(
            vendor, f"bench_admin_bulk_{os.getpid()}", common.migrate_product
        )
        try:
            for operation in args.only or OPERATIONS:
                count = args.clear if operation == "clear" else args.jobs
                for mode in ("before", "after"):
                    figures = run(db, operation, mode, count)
                    print(
                        f"{vendor:8} {operation:6} {count:>7} {mode:6} "
                        f"{figures['seconds']:>8.2f} s  {figures['peak_rss_mb']:>5} MB",
                        flush=True,
                    )
        finally:
            db.drop()


if __name__ == "__main__":
    sys.exit(main())
