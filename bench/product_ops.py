"""Helper actions on our product, run as a separate process by the benchmarks.

Runs with the product's settings (DATABASE_URL, MEDIA_ROOT from the environment) and
prints one JSON object. Actions:

  seed-noop N [--words W]      N documents (with W words of text each), one NOOP job
                               each (one transaction)
  seed-tasks N                 N calls of the @task bench.bench_tasks.noop (one transaction)
  seed-files --kinds pdf --repeat R | --jobs N
                               corpus files (expect=ok) copied into MEDIA_ROOT as
                               documents, one EXTRACT job each
  seed-dir DIR                 every file of DIR copied into MEDIA_ROOT as a document
                               (type detected from its bytes), one EXTRACT job each
  latency --samples S [--burst B]
                               enqueue B NOOP jobs (one batch) at a time into an idle
                               worker; enqueue commit → the last QueueItem.started_at,
                               in seconds
  claims --history N --jobs J [--housekeeping] [--scheduled S]
                               N finished jobs (autovacuum off), S jobs scheduled
                               for tomorrow, then (after the
                               workers' housekeeping) J claims and completions
                               timed one by one, in this process
  enqueue-batch N              N subject-less jobs through enqueue_batch, timed
  verify                       states, attempts, metrics rows, pages, first start, last end
  raw-extract --repeat R       the extraction engine in a plain loop (no Django, no queue)
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
CORPUS = Path(os.environ.get("BENCH_CORPUS", BENCH.parent.parent / "shared" / "corpus"))


def corpus_files(kinds: list[str]) -> list[dict[str, str]]:
    """Corpus rows that must extract fine, of the given kinds, in manifest order."""
    with open(CORPUS / "manifest.csv", newline="") as f:
        return [
            row
            for row in csv.DictReader(f)
            if row["expect"] == "ok" and row["kind"] in kinds
        ]


def _setup() -> None:
    import django

    django.setup()


def _user() -> Any:
    from django.contrib.auth import get_user_model

    user, _ = get_user_model().objects.get_or_create(username="bench")
    return user


def blank_documents(n: int, prefix: str, words: int = 0) -> list[Any]:
    """N text documents (subjects for no-op jobs), in one transaction: empty, or
    already holding ``words`` words of text (distinct in each document)."""
    from documents.models import Document

    owner = _user()
    return Document.objects.bulk_create(
        [
            Document(
                owner=owner,
                original_filename=f"{prefix}-{i}.txt",
                file=f"documents/{prefix}-{i}.txt",
                mime_type="text/plain",
                size=0,
                sha256="0" * 64,
                text=" ".join(f"w{i}x{w}" for w in range(words)),
            )
            for i in range(n)
        ],
        batch_size=2000,
    )


def seed_noop(n: int, words: int = 0) -> dict[str, Any]:
    from jobqueue.models import Operation
    from jobqueue.services import QueueManager

    started = time.perf_counter()
    ids = [d.pk for d in blank_documents(n, "noop", words)]
    created = QueueManager(Operation.NOOP).enqueue_batch(ids)
    return {"jobs": len(created), "seconds": time.perf_counter() - started}


def seed_tasks(n: int) -> dict[str, Any]:
    from django.db import transaction

    from bench.bench_tasks import noop

    started = time.perf_counter()
    with transaction.atomic():
        for _ in range(n):
            noop.enqueue()
    return {"jobs": n, "seconds": time.perf_counter() - started}


MIME = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "txt": "text/plain",
}


def seed_files(kinds: list[str], repeat: int, jobs: int | None) -> dict[str, Any]:
    """Copy corpus files into MEDIA_ROOT (one copy per job) and queue them."""
    from django.conf import settings

    from documents.models import Document
    from jobqueue.services import QueueManager

    rows = corpus_files(kinds)
    count = jobs if jobs is not None else repeat * len(rows)
    target = Path(settings.MEDIA_ROOT) / "documents"
    target.mkdir(parents=True, exist_ok=True)
    owner = _user()
    docs, pages = [], 0
    for i in range(count):
        row = rows[i % len(rows)]
        source = CORPUS / row["path"]
        name = f"documents/b{i:05d}{source.suffix}"
        shutil.copyfile(source, Path(settings.MEDIA_ROOT) / name)
        pages += int(row["pages"] or 0)
        docs.append(
            Document(
                owner=owner,
                original_filename=source.name,
                file=name,
                mime_type=MIME[row["kind"]],
                size=source.stat().st_size,
                sha256=row["sha256"],
            )
        )
    docs = Document.objects.bulk_create(docs, batch_size=500)
    started = time.perf_counter()
    created = QueueManager().enqueue_batch([d.pk for d in docs])
    return {
        "jobs": len(created),
        "files": len(rows),
        "manifest_pages": pages,
        "seconds": time.perf_counter() - started,
    }


def seed_dir(source: Path) -> dict[str, Any]:
    """Copy the files of a directory into MEDIA_ROOT and queue them."""
    from django.conf import settings

    from documents.extractors import detect_mime_type
    from documents.models import Document
    from jobqueue.services import QueueManager

    target = Path(settings.MEDIA_ROOT) / "documents"
    target.mkdir(parents=True, exist_ok=True)
    owner = _user()
    docs = []
    for path in sorted(source.iterdir()):
        name = f"documents/{path.name}"
        shutil.copyfile(path, Path(settings.MEDIA_ROOT) / name)
        docs.append(
            Document(
                owner=owner,
                original_filename=path.name,
                file=name,
                mime_type=detect_mime_type(path),
                size=path.stat().st_size,
                sha256="0" * 64,
            )
        )
    docs = Document.objects.bulk_create(docs)
    created = QueueManager().enqueue_batch([d.pk for d in docs])
    return {"jobs": len(created)}


def latency(
    samples: int, gap_min: float, gap_max: float, idle: float, burst: int = 1
) -> dict:
    """``burst`` jobs (one batch) at a time into an idle worker pool: (enqueue
    called, enqueue returned after its commit, the last QueueItem.started_at),
    wall-clock seconds."""
    from jobqueue.models import Operation, QueueItem
    from jobqueue.services import QueueManager

    queue = QueueManager(Operation.NOOP)
    # Documents first, so nothing but the enqueue itself commits during a sample.
    docs = blank_documents((samples + 1) * burst, "lat")

    def one(i: int) -> tuple[float, float, float]:
        batch = [doc.pk for doc in docs[i * burst : (i + 1) * burst]]
        called = time.time()
        job_ids = (
            [queue.enqueue(batch[0])] if burst == 1 else queue.enqueue_batch(batch)
        )
        committed = time.time()  # enqueue() returns right after its COMMIT
        deadline = time.monotonic() + 30
        while True:
            # Autocommit: every look is its own short read, no snapshot is kept.
            started = QueueItem.objects.filter(pk__in=job_ids).values_list(
                "started_at", flat=True
            )
            if len(started) == burst and None not in started:
                return called, committed, max(started).timestamp()
            if time.monotonic() > deadline:
                raise TimeoutError(f"jobs {job_ids} did not start within 30 s")
            time.sleep(0.002)

    one(samples)  # warm-up: the worker is up and has taken a job
    time.sleep(idle)
    rng = random.Random(42)
    values = []
    for i in range(samples):
        time.sleep(rng.uniform(gap_min, gap_max))
        values.append(one(i))
    return {"samples": values}


def claims(
    history: int, jobs: int, housekeeping: bool, scheduled: int = 0
) -> dict[str, Any]:
    """Claim and completion times with ``history`` finished jobs in the table, made as
    a long-running queue makes them: inserted pending, then moved to completed, with
    autovacuum off (PostgreSQL), so their old index entries stay behind as dead ones;
    and ``scheduled`` jobs waiting for tomorrow (retries, tasks' run_after)."""
    from django.db import connection
    from django.utils import timezone

    from jobqueue.models import Operation, QueueItem
    from jobqueue.services import QueueManager

    queue = QueueManager(Operation.NOOP)
    template = queue.enqueue_job(Operation.NOOP, payload={})
    columns = [f.column for f in QueueItem._meta.concrete_fields if f.column != "id"]
    names = ", ".join(columns)
    postgres = connection.vendor == "postgresql"
    started = time.perf_counter()
    with connection.cursor() as cursor:
        if postgres:
            cursor.execute(
                "ALTER TABLE extraction_queue SET (autovacuum_enabled = false)"
            )
            series = "generate_series(1, %s) AS n"
            prefix = ""
        else:
            series = "n"
            prefix = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %s) "
        tomorrow = connection.ops.adapt_datetimefield_value(
            timezone.now() + dt.timedelta(days=1)
        )
        made = ((history, "completed"), (scheduled, "retry_pending"), (jobs, "pending"))
        for copies, status in made:
            if not copies:
                continue
            # The model's own column names; the sizes are parameters.
            copy = f"{prefix}INSERT INTO extraction_queue ({names}) SELECT {names} "
            copy += f"FROM extraction_queue, {series} WHERE id = %s"  # noqa: S608
            cursor.execute(
                copy,
                [copies, template.pk],
            )
            if status != "pending":
                cursor.execute(
                    "UPDATE extraction_queue SET status = %s, next_retry_at = %s "
                    "WHERE id <> %s AND status = 'pending'",
                    [
                        status,
                        tomorrow if status == "retry_pending" else None,
                        template.pk,
                    ],
                )
        cursor.execute("DELETE FROM extraction_queue WHERE id = %s", [template.pk])
    built = time.perf_counter() - started
    tidied = False
    if housekeeping:  # what a worker's housekeeping does within its first minute
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_stat_force_next_flush()")
            time.sleep(1.5)  # the statistics the housekeeping reads are flushed
        tidied = queue.tidy()
    claim_ms, complete_ms = [], []
    for _ in range(jobs):
        t0 = time.perf_counter()
        item = queue.claim("bench")
        t1 = time.perf_counter()
        queue.complete(item.pk, worker_id="bench", attempt=item.attempts)
        claim_ms.append((t1 - t0) * 1000)
        complete_ms.append((time.perf_counter() - t1) * 1000)
    if queue.claim("bench") is not None:
        raise RuntimeError("a job was left unclaimed")
    return {
        "history": QueueItem.objects.filter(status="completed").count() - jobs,
        "scheduled": QueueItem.objects.filter(status="retry_pending").count(),
        "build_seconds": built,
        "tidied": tidied,
        "claim_ms": claim_ms,
        "complete_ms": complete_ms,
    }


def enqueue_batch(n: int) -> dict[str, Any]:
    """``enqueue_batch`` of N documents' jobs (the documents made first, untimed)."""
    from jobqueue.models import Operation
    from jobqueue.services import QueueManager

    ids = [d.pk for d in blank_documents(n, "batch")]
    started = time.perf_counter()
    created = QueueManager(Operation.NOOP).enqueue_batch(ids)
    return {"jobs": len(created), "seconds": time.perf_counter() - started}


def verify() -> dict[str, Any]:
    from django.db.models import Count, Max, Min, Sum

    from jobqueue.models import ExtractionMetric, QueueItem

    items = QueueItem.objects.all()
    span = items.aggregate(first=Min("started_at"), last=Max("finished_at"))
    metrics = ExtractionMetric.objects.all()
    return {
        "jobs": items.count(),
        "status": dict(items.values_list("status").annotate(n=Count("id")).order_by()),
        "attempts": dict(
            items.values_list("attempts").annotate(n=Count("id")).order_by()
        ),
        "metrics": dict(
            metrics.values_list("outcome").annotate(n=Count("id")).order_by()
        ),
        "jobs_with_one_metric": items.annotate(m=Count("metrics")).filter(m=1).count(),
        "pages": metrics.filter(outcome="completed").aggregate(p=Sum("pages"))["p"]
        or 0,
        "first_started": span["first"].timestamp() if span["first"] else None,
        "last_finished": span["last"].timestamp() if span["last"] else None,
    }


def raw_extract(repeat: int) -> dict[str, Any]:
    """The engine alone: registry.extract on the same files, one process, a plain loop."""
    from documents.extractors import pdf as _pdf  # noqa: F401 - import outside timing
    from documents.extractors.registry import extract

    paths = [CORPUS / row["path"] for row in corpus_files(["pdf"])]
    pages = 0
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(repeat):
        for path in paths:
            result = extract(path, mime_type="application/pdf", pdf_engine="auto")
            pages += result.page_count or 0
    seconds = time.perf_counter() - started
    return {
        "pages": pages,
        "seconds": seconds,
        "cpu": time.process_time() - cpu,
        "files": len(paths) * repeat,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    noop = sub.add_parser("seed-noop")
    noop.add_argument("n", type=int)
    noop.add_argument("--words", type=int, default=0, help="of text in each document")
    sub.add_parser("seed-tasks").add_argument("n", type=int)
    files = sub.add_parser("seed-files")
    files.add_argument("--kinds", default="pdf")
    files.add_argument("--repeat", type=int, default=1)
    files.add_argument("--jobs", type=int, default=None)
    sub.add_parser("seed-dir").add_argument("dir", type=Path)
    lat = sub.add_parser("latency")
    lat.add_argument("--samples", type=int, default=50)
    lat.add_argument("--gap-min", type=float, default=0.2)
    lat.add_argument("--gap-max", type=float, default=0.6)
    lat.add_argument("--idle", type=float, default=2.0)
    lat.add_argument("--burst", type=int, default=1)
    history = sub.add_parser("claims")
    history.add_argument("--history", type=int, required=True)
    history.add_argument("--jobs", type=int, default=1000)
    history.add_argument("--housekeeping", action="store_true")
    history.add_argument("--scheduled", type=int, default=0)
    sub.add_parser("enqueue-batch").add_argument("n", type=int)
    sub.add_parser("verify")
    sub.add_parser("raw-extract").add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()

    if args.action == "raw-extract":
        out = raw_extract(args.repeat)
    else:
        _setup()
        if args.action == "seed-noop":
            out = seed_noop(args.n, args.words)
        elif args.action == "seed-tasks":
            out = seed_tasks(args.n)
        elif args.action == "seed-files":
            out = seed_files(args.kinds.split(","), args.repeat, args.jobs)
        elif args.action == "seed-dir":
            out = seed_dir(args.dir)
        elif args.action == "latency":
            out = latency(
                args.samples, args.gap_min, args.gap_max, args.idle, args.burst
            )
        elif args.action == "claims":
            out = claims(args.history, args.jobs, args.housekeeping, args.scheduled)
        elif args.action == "enqueue-batch":
            out = enqueue_batch(args.n)
        else:
            out = verify()
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
