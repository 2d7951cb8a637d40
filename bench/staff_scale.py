"""The staff-wide pages (every document, every job) over a large library, both databases.

Seeds a scratch database per vendor with bulk SQL (one ``INSERT … SELECT`` per table,
the search index's triggers off meanwhile: no page here searches): ``--documents``
documents of 1,000 people, a few KiB of text each for the completed, and one queue
item each in the document's state. The newest 2,000 wait or run; the others are
finished, 91 % completed, 6 % failed, 3 % cancelled (as ``operator_scale.py``).
Then times each staff-wide page with Django's test Client (median of ``--repeat``
requests after one untimed, and the statements each makes), and writes the plans of
each page's slowest statement to ``--plans`` (ANALYZE on PostgreSQL).

    .venv/bin/python bench/staff_scale.py [--documents N] [--vendors sqlite,postgres]
        [--repeat 5] [--plans FILE] [--no-record]

``--documents`` defaults to 200,000 on SQLite and 1,000,000 on PostgreSQL. Each vendor
runs in its own child process (Django's database is chosen at start-up).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
import search_bench  # noqa: E402
from page_timing import plan, time_requests  # noqa: E402

DEFAULT_DOCUMENTS = {"sqlite": 200_000, "postgres": 1_000_000}
PEOPLE = 1_000
ACTIVE = 2_000
WORDS = 3_000
BLOCKS = 64
THREE_YEARS = 3 * 365 * 86400

# Row ``i`` (1..n) decides everything of its document; the same SQL on both
# databases but for the time arithmetic and the capital letter.
DOCUMENTS_SQL = """
WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < {n}),
rows AS (
  SELECT i, w.word AS word,
    CASE WHEN i > {n} - {active} THEN (CASE i % 4 WHEN 0 THEN 'processing'
             WHEN 1 THEN 'retry_pending' ELSE 'pending' END)
         WHEN i % 100 < 91 THEN 'completed' WHEN i % 100 < 97 THEN 'failed'
         ELSE 'cancelled' END AS status,
    CASE WHEN i % 100 < 50 THEN 'pdf' WHEN i % 100 < 70 THEN 'docx'
         WHEN i % 100 < 85 THEN 'txt' WHEN i % 100 < 93 THEN 'html'
         ELSE 'eml' END AS ext,
    b.body AS body, {at} AS at
  FROM seq JOIN bench_words w ON w.n = (i * 7) % {words}
  JOIN bench_blocks b ON b.n = i % {blocks}
)
INSERT INTO documents_document (owner_id, original_filename, title, file, mime_type,
    size, sha256, status, error_type, error_message, text, search_grams, page_count,
    extractor, extraction_note, thumbnail, created_at, updated_at)
SELECT {first_person} + i % {people}, word || '-' || i || '.' || ext,
    CASE WHEN i % 10 < 3 THEN {capital} || ' report ' || i ELSE '' END,
    'documents/' || i || '.' || ext,
    CASE ext WHEN 'pdf' THEN 'application/pdf'
        WHEN 'docx' THEN 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'
        WHEN 'txt' THEN 'text/plain' WHEN 'html' THEN 'text/html'
        ELSE 'message/rfc822' END,
    ((i % 631) * 7919) % 5000000 + 2000, '' || i, status,
    CASE WHEN status = 'failed' THEN 'corruption' ELSE '' END,
    CASE WHEN status = 'failed' THEN 'The file is damaged.' ELSE '' END,
    CASE WHEN status = 'completed'
         THEN substr(body, 1 + i % 1000, 1500 + (i * 37) % 4500) ELSE '' END,
    '', CASE WHEN ext = 'pdf' THEN 1 + i % 40 END, '', '', '', at, at
FROM rows
"""
QUEUE_SQL = """
INSERT INTO extraction_queue (document_id, operation, status, priority, queue_name,
    payload, attempts, max_retries, error_type, error_message, claimed_by,
    finished_at, extraction_time_ms, created_at, updated_at, next_retry_at)
SELECT id, 'extract', status, 0, 'default', '{}', 1, 3, error_type, error_message,
    '', CASE WHEN status IN ('completed', 'failed', 'cancelled') THEN created_at END,
    (id * 37) % 20000 + 50, created_at, created_at,
    CASE WHEN status = 'retry_pending' THEN created_at END
FROM documents_document
"""


def age_sql(vendor: str, n: int) -> str:
    """The upload time of row ``i`` of ``n``, spread over three years."""
    step = THREE_YEARS / n
    if vendor == "postgres":
        return f"(now() - ({n} - i) * {step} * interval '1 second')"
    return f"strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || (({n} - i) * {step}) || ' seconds')"


def seed(vendor: str, n: int) -> dict:
    """The tables filled; returns the staff user and what the pages ask for."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    users = get_user_model().objects
    staff = users.create_superuser("staff", password="unused-password-1")  # noqa: S106
    people = users.bulk_create(
        get_user_model()(username=f"person{k}") for k in range(PEOPLE)
    )
    vocabulary, blocks = search_bench.words_and_blocks()
    started = time.monotonic()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("CREATE TABLE bench_words (n integer PRIMARY KEY, word text)")
        cursor.execute("CREATE TABLE bench_blocks (n integer PRIMARY KEY, body text)")
        cursor.executemany(
            "INSERT INTO bench_words VALUES (%s, %s)",
            list(enumerate(vocabulary[:WORDS])),
        )
        cursor.executemany(
            "INSERT INTO bench_blocks VALUES (%s, %s)", list(enumerate(blocks[:BLOCKS]))
        )
        triggers = _triggers_off(cursor, vendor)
        cursor.execute(
            DOCUMENTS_SQL.format(
                n=n, active=ACTIVE, words=WORDS, blocks=BLOCKS, people=PEOPLE,
                first_person=min(p.pk for p in people), at=age_sql(vendor, n),
                capital="initcap(word)" if vendor == "postgres"
                else "upper(substr(word, 1, 1)) || substr(word, 2)",
            )
        )  # fmt: skip
        cursor.execute(QUEUE_SQL)
        _triggers_on(cursor, vendor, triggers)
        cursor.execute("DROP TABLE bench_words")
        cursor.execute("DROP TABLE bench_blocks")
    seconds = time.monotonic() - started
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE" if vendor == "postgres" else "ANALYZE")
    return {
        "staff": staff,
        "seed_seconds": seconds,
        "word": vocabulary[(n // 2 * 7) % WORDS],
        "day": _day(n // 2),
    }


def _day(document_id: int) -> str:
    from documents.models import Document

    return Document.objects.get(pk=document_id).created_at.date().isoformat()


def _triggers_off(cursor, vendor: str) -> list[str]:
    """The search index's triggers, off while the documents are seeded."""
    if vendor == "postgres":
        # The foreign keys' checks now, not at the commit: an ALTER TABLE must not
        # find them pending.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ALTER TABLE documents_document DISABLE TRIGGER USER")
        return []
    cursor.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' "
        "AND tbl_name = 'documents_document'"
    )
    found = cursor.fetchall()
    for name, _ in found:
        cursor.execute(f'DROP TRIGGER "{name}"')
    return [sql for _, sql in found]


def _triggers_on(cursor, vendor: str, triggers: list[str]) -> None:
    if vendor == "postgres":
        cursor.execute("ALTER TABLE documents_document ENABLE TRIGGER USER")
    for sql in triggers:
        cursor.execute(sql)


def pages(s: dict) -> list[tuple[str, str]]:
    """(name, path) of every staff-wide page measured."""
    last = -(-s["documents"] // 25)
    return [
        ("list, first page", "/documents/"),
        ("list, page 2000", "/documents/?page=2000"),
        ("list, last page", f"/documents/?page={last}"),
        ("list ?status=failed", "/documents/?status=failed"),
        ("list ?status=cancelled", "/documents/?status=cancelled"),
        ("list ?status=processing", "/documents/?status=processing"),
        ("list ?status=pending, page 2", "/documents/?status=pending&page=2"),
        ("list ?type=pdf", "/documents/?type=application/pdf"),
        ("list ?since=&until= (a day)", f"/documents/?since={s['day']}&until={s['day']}"),
        ("list ?q= (a name's word)", f"/documents/?q={s['word']}"),
        # 3,334 and 33,335 matches at a million, all (but one) among the oldest
        # uploads: a walk of the upload times meets them late.
        ("list ?q= (old matches)", "/documents/?q=report 12"),
        ("list ?q= (10,000+ matches)", "/documents/?q=report 1"),
        ("list ?q= (no match)", "/documents/?q=zzzqqq"),
        ("list ?q=&status=failed", f"/documents/?q={s['word']}&status=failed"),
        ("admin documents", "/admin/documents/document/"),
        ("admin documents ?status=failed", "/admin/documents/document/?status__exact=failed"),
        ("admin queue items", "/admin/jobqueue/queueitem/"),
        ("admin queue items ?status=pending",
         "/admin/jobqueue/queueitem/?status__exact=pending"),
        ("admin queue dashboard", "/admin/jobqueue/queueitem/dashboard/"),
    ]  # fmt: skip


def measure(s: dict, repeat: int) -> tuple[list[dict], list[dict]]:
    """Each page's median time and statements; the plan of its slowest statement."""
    from django.test import Client

    client = Client()
    client.force_login(s["staff"])
    results, plans = [], []
    for name, path in pages(s):
        times, statements, status = time_requests(client, path, repeat)
        if status != 200:
            sys.exit(f"{path} answered {status}")
        slowest = max(statements, key=lambda q: float(q["time"]))
        results.append(
            {
                "page": name,
                "median_ms": statistics.median(times),
                "statements": len(statements),
                "slowest_ms": float(slowest["time"]) * 1000,
            }
        )
        plans.append(
            {"page": name, "sql": slowest["sql"], "plan": plan(slowest["sql"])}
        )
        print(f"{name}: {results[-1]}", file=sys.stderr)
    return results, plans


def child(vendor: str, url: str, n: int, repeat: int) -> None:
    os.environ.update(
        common.product_env(
            url,
            "/tmp",  # noqa: S108 - no files written
            ALLOWED_HOSTS="testserver",
        )
    )
    sys.path.insert(0, str(common.ROOT))
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from documents.models import Document

    if Document.objects.exists():  # seeded by an earlier run (kept for a re-run)
        s = {"staff": get_user_model().objects.get(username="staff"),
             "seed_seconds": 0.0, "day": _day(n // 2),
             "word": search_bench.words_and_blocks()[0][(n // 2 * 7) % WORDS]}  # fmt: skip
    else:
        s = seed(vendor, n)
    s["documents"] = n
    # As a running worker's housekeeping keeps it, once a minute: the finished items
    # counted (the dashboard and /metrics read that count on a large queue).
    from jobqueue.services import QueueManager

    QueueManager().count_finished(every_seconds=0)
    results, plans = measure(s, repeat)
    out = {
        "vendor": vendor,
        "documents": n,
        "seed_seconds": s["seed_seconds"],
        "results": results,
        "plans": plans,
    }
    print(json.dumps(out))


def report(run: dict, load_before: float, revision: tuple) -> str:
    rows = [
        (
            r["page"],
            common.fmt(r["median_ms"], 1),
            r["statements"],
            common.fmt(r["slowest_ms"], 1),
        )
        for r in run["results"]
    ]
    return "\n\n".join(
        [
            common.header(load_before, revision),
            f"Command: `{common.command_line()}`",
            f"{run['vendor']}: {run['documents']:,} documents and as many queue items "
            f"(seeded in {run['seed_seconds']:.0f} s), as staff. Median of the timed "
            "requests, statements per request, and the slowest one's time:",
            common.md_table(("page", "median ms", "statements", "slowest ms"), rows),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=0)
    parser.add_argument("--vendors", default="sqlite,postgres")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--plans", default="")
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        vendor, url, n = args.child
        child(vendor, url, int(n), args.repeat)
        return
    load_before = os.getloadavg()[0]
    revision = (common.revision(), common.code_digest())
    for vendor in args.vendors.split(","):
        n = args.documents or DEFAULT_DOCUMENTS[vendor]
        db = common.ScratchDB(vendor, "bench_staff", common.migrate_product)
        try:
            url = db.fresh()
            run = common.run_child(__file__, vendor, url, n, "--repeat", args.repeat)
        finally:
            db.drop()
        if args.plans:
            with open(f"{args.plans}.{vendor}", "w") as f:
                for p in run["plans"]:
                    f.write(f"--- {p['page']}\n{p['sql']}\n{p['plan']}\n\n")
        text = report(run, load_before, revision)
        print(text)
        if not args.no_record:
            common.record(
                f"Staff-wide pages over a large library, {vendor} (staff_scale.py)",
                text,
                part="People's pages",
            )


if __name__ == "__main__":
    main()
