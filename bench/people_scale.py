"""People's pages, the API and the operators' pages over a large library, both databases.

Seeds a scratch database per vendor in bulk (``bulk_create``, never the upload path):
``--documents`` documents with a few KiB of extracted text each, mixed statuses, tags,
titles, one queue item and one metrics row each; one person owns ``--heavy`` of them
(50,000 unless the library is smaller), many people own a few each. Then times each
page with Django's test Client, logged in as that person and as staff (median of
``--repeat`` requests, and the statements each makes), and EXPLAINs the slowest
statements (ANALYZE on PostgreSQL, QUERY PLAN on SQLite).

    .venv/bin/python bench/people_scale.py [--documents N] [--heavy 50000]
        [--repeat 5] [--vendors sqlite,postgres] [--explain 6] [--no-record]

``--documents`` defaults to 200,000 on SQLite and 1,000,000 on PostgreSQL. Each vendor
runs in its own child process (Django's database is chosen at start-up).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
import search_bench  # noqa: E402
from page_timing import plan, time_requests  # noqa: E402

DEFAULT_DOCUMENTS = {"sqlite": 200_000, "postgres": 1_000_000}
BATCH = 2_000
TEXT_CHARS = (1_500, 6_000)
# Statuses as a working library has them: mostly done, some failed, a few in flight.
STATUS_WEIGHTS = {
    "completed": 85,
    "failed": 6,
    "cancelled": 2,
    "pending": 4,
    "processing": 1,
    "retry_pending": 2,
}
MIME_TYPES = [
    ("application/pdf", ".pdf", 50),
    ("application/vnd.openxmlformats-officedocument.wordprocessingml.document",
     ".docx", 20),
    ("text/plain", ".txt", 15),
    ("text/html", ".html", 8),
    ("message/rfc822", ".eml", 7),
]  # fmt: skip
TAGS_PER_PERSON = 30
SEED = 7


def seed(documents: int, heavy: int) -> dict:
    """Fill the database; returns what the pages are asked for (names, ids, words)."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.utils import timezone

    from documents.models import Document, Tag
    from jobqueue.models import ExtractionMetric, QueueItem

    rng = random.Random(SEED)
    vocabulary, blocks = search_bench.words_and_blocks()
    users = get_user_model().objects
    person = users.create_user("heavy", password="unused-password-1")  # noqa: S106
    staff = users.create_superuser("staff", password="unused-password-1")  # noqa: S106
    others = [
        users.create_user(f"person{n}") for n in range(max(1, (documents - heavy) // 8))
    ]
    tags = Tag.objects.bulk_create(
        Tag(owner=person, name=f"{vocabulary[40 + n]}") for n in range(TAGS_PER_PERSON)
    )
    # Their real upload times, spread over three years (auto_now_add would stamp now).
    Document._meta.get_field("created_at").auto_now_add = False
    now = timezone.now()
    statuses = list(STATUS_WEIGHTS)
    weights = list(STATUS_WEIGHTS.values())
    owners = [person] * heavy + [
        others[n % len(others)] for n in range(documents - heavy)
    ]
    rng.shuffle(owners)
    Through = Document.tags.through
    for start in range(0, documents, BATCH):
        batch = []
        for n in range(start, min(start + BATCH, documents)):
            mime, ext, _ = rng.choices(MIME_TYPES, [m[2] for m in MIME_TYPES])[0]
            status = rng.choices(statuses, weights)[0]
            block = rng.choice(blocks)
            size = rng.randint(*TEXT_CHARS)
            at = rng.randrange(0, len(block) - size)
            text = f"docid{n} " + block[at : at + size] if status == "completed" else ""
            batch.append(
                Document(
                    owner=owners[n],
                    original_filename=f"{rng.choice(vocabulary[:3000])}-{n}{ext}",
                    title=f"{rng.choice(vocabulary[:3000]).title()} report {n}"
                    if rng.random() < 0.3
                    else "",
                    file=f"documents/{n:08x}{ext}",
                    mime_type=mime,
                    size=rng.randint(2_000, 5_000_000),
                    sha256=f"{n:064x}",
                    status=status,
                    error_type="corruption" if status == "failed" else "",
                    error_message="The file is damaged." if status == "failed" else "",
                    text=text,
                    page_count=rng.randint(1, 40) if ext == ".pdf" else None,
                    created_at=now - timedelta(seconds=(documents - n) * 90),
                )
            )
        made = Document.objects.bulk_create(batch)
        items = QueueItem.objects.bulk_create(
            QueueItem(
                document=d,
                status=d.status,
                attempts=1,
                error_type=d.error_type,
                error_message=d.error_message,
                created_at=d.created_at,
                finished_at=d.created_at,
                extraction_time_ms=rng.randint(50, 20_000),
            )
            for d in made
        )
        ExtractionMetric.objects.bulk_create(
            ExtractionMetric(
                job=item,
                document_id=item.document_id,
                outcome="failed" if item.status == "failed" else "completed",
                error_type=item.error_type,
                extraction_time_ms=item.extraction_time_ms,
                created_at=item.created_at,
            )
            for item in items
            if item.status in ("completed", "failed")
        )
        Through.objects.bulk_create(
            Through(document_id=d.pk, tag_id=tag.pk)
            for d in made
            if d.owner_id == person.pk
            for tag in rng.sample(tags, rng.choice((0, 0, 1, 2)))
        )
    with connection.cursor() as cursor:
        cursor.execute(
            "VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE"
        )
    mine = Document.objects.filter(owner=person).order_by("-created_at", "-id")
    oldest = mine.last()
    return {
        "person_last": -(-heavy // 25),
        "staff_last": -(-documents // 25),
        "person": person,
        "staff": staff,
        "heavy_doc": mine.filter(status="completed").first().pk,
        "failed_doc": mine.filter(status="failed").first().pk,
        "recent_ids": list(mine.values_list("pk", flat=True)[:25]),
        "tag": tags[0].name,
        "common_word": vocabulary[0],
        "rare_word": vocabulary[30_000],
        "prefix": vocabulary[500][:4] + "*",
        "name_part": oldest.original_filename.split("-")[0],
        "day": oldest.created_at.date().isoformat(),
    }


def pages(s: dict, heavy: int) -> list[tuple[str, str, str, dict | None]]:
    """(name, who, path, POST data or None) of every page measured."""
    per_page = 25
    deep = max(2, heavy // per_page - 1)
    ids = "&".join(f"id={pk}" for pk in s["recent_ids"])
    rows: list[tuple[str, str, str, dict | None]] = []
    for who in ("person", "staff"):
        rows += [
            ("list, first page", who, "/documents/", None),
            (f"list, page {deep}", who, f"/documents/?page={deep}", None),
            ("list, last page", who, f"/documents/?page={s[who + '_last']}", None),
            ("list ?status=failed", who, "/documents/?status=failed", None),
            ("list ?type=pdf", who, "/documents/?type=application/pdf", None),
            ("list ?tag=", who, f"/documents/?tag={s['tag']}", None),
            ("list ?since=&until= (a day)", who,
             f"/documents/?since={s['day']}&until={s['day']}", None),
            ("list ?q= (name)", who, f"/documents/?q={s['name_part']}", None),
            ("list sort=name", who, "/documents/?sort=name", None),
            ("list sort=-size", who, "/documents/?sort=-size", None),
            ("list sort=date, page 2", who, "/documents/?sort=date&page=2", None),
            ("status poll (25 ids)", who, f"/documents/status/?{ids}", None),
            ("search, common word", who, f"/documents/search/?q={s['common_word']}",
             None),
            ("search, rare word", who, f"/documents/search/?q={s['rare_word']}", None),
            ("search, prefix", who, f"/documents/search/?q={s['prefix']}", None),
            ("document page", who, f"/documents/{s['heavy_doc']}/", None),
            ("failed document page", who, f"/documents/{s['failed_doc']}/", None),
            ("edit (tag menu)", "person", f"/documents/{s['heavy_doc']}/edit/", None),
            ("bulk delete, confirm (25)", who, "/documents/bulk/",
             {"action": "delete", "id": s["recent_ids"], "next": "?"}),
            ("API list", who, "/api/documents/", None),
            ("API list ?status=failed&type=pdf", who,
             "/api/documents/?status=failed&type=pdf", None),
            (f"API list, page {deep * per_page // 100}", who,
             f"/api/documents/?page_size=100&page={deep * per_page // 100}", None),
        ]  # fmt: skip
    rows += [
        ("admin documents", "staff", "/admin/documents/document/", None),
        ("admin documents ?status=failed", "staff",
         "/admin/documents/document/?status__exact=failed", None),
        ("admin queue items", "staff", "/admin/jobqueue/queueitem/", None),
        ("admin queue dashboard", "staff", "/admin/jobqueue/queueitem/dashboard/",
         None),
        ("/metrics", "staff", "/metrics", None),
    ]  # fmt: skip
    seen, unique = set(), []
    for row in rows:
        if row[:2] not in seen:
            seen.add(row[:2])
            unique.append(row)
    return unique


def measure(s: dict, heavy: int, repeat: int) -> tuple[list[dict], list[tuple]]:
    """Time each page; returns its figures and every statement's (ms, sql, page)."""
    from django.test import Client

    clients = {}
    for who in ("person", "staff"):
        clients[who] = Client()
        clients[who].force_login(s[who])
    results, statements = [], []
    for name, who, path, data in pages(s, heavy):
        client = clients[who]
        times, captured, status = time_requests(client, path, repeat, data)
        statements += [
            (float(q["time"]) * 1000, q["sql"], f"{name} ({who})") for q in captured
        ]
        results.append(
            {
                "page": name,
                "who": who,
                "status": status,
                "median_ms": statistics.median(times),
                "queries": len(captured),
            }
        )
        print(f"{name} ({who}): {results[-1]}", file=sys.stderr)
    return results, statements


def explain(statements: list[tuple], count: int) -> list[dict]:
    """The plans of the ``count`` slowest distinct statements."""
    slowest: dict[str, tuple] = {}
    for ms, sql, page in statements:
        if not sql.lstrip().upper().startswith("SELECT"):
            continue
        if sql not in slowest or slowest[sql][0] < ms:
            slowest[sql] = (ms, page)
    top = sorted(slowest.items(), key=lambda kv: kv[1][0], reverse=True)[:count]
    return [
        {"ms": ms, "page": page, "sql": sql, "plan": plan(sql)}
        for sql, (ms, page) in top
    ]


def child(vendor: str, url: str, documents: int, heavy: int, repeat: int,
          explain_count: int) -> None:  # fmt: skip
    """Seed the database at ``url``, measure, print the figures as JSON."""
    os.environ.update(
        common.product_env(
            url,
            "/tmp",  # noqa: S108 - no files written
            ALLOWED_HOSTS="testserver",
            METRICS_PUBLIC="1",
        )
    )
    sys.path.insert(0, str(common.ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    from documents.models import Document

    call_command("migrate", verbosity=0)
    started = time.monotonic()
    s = seed(documents, heavy)
    seed_seconds = time.monotonic() - started
    results, statements = measure(s, heavy, repeat)
    out = {
        "vendor": vendor,
        "documents": Document.objects.count(),
        "heavy": heavy,
        "seed_seconds": seed_seconds,
        "results": results,
        "plans": explain(statements, explain_count),
    }
    print(json.dumps(out))


def report(run: dict, load_before: float, revision: tuple[str, str]) -> str:
    rows = [
        (
            r["page"],
            r["who"],
            r["status"],
            common.fmt(r["median_ms"], 1),
            r["queries"],
        )
        for r in run["results"]
    ]
    plans = "\n\n".join(
        f"{p['ms']:.1f} ms in “{p['page']}”:\n\n```sql\n{p['sql'][:1500]}\n```\n\n"
        f"```\n{p['plan'][:3000]}\n```"
        for p in run["plans"]
    )
    return "\n\n".join(
        [
            common.header(load_before, revision),
            f"Command: `{common.command_line()}`",
            f"{run['documents']:,} documents, {run['heavy']:,} of them one person's "
            f"(seeded in {run['seed_seconds']:.0f} s). Median of the timed requests; "
            "queries per request:",
            common.md_table(("page", "as", "HTTP", "median ms", "queries"), rows),
            "The slowest statements' plans:",
            plans,
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=0)
    parser.add_argument("--heavy", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--explain", type=int, default=6)
    parser.add_argument("--vendors", default="sqlite,postgres")
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument(
        "--child", nargs=2, metavar=("VENDOR", "URL"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.child:
        heavy = min(args.heavy, args.documents // 2)
        child(*args.child, args.documents, heavy, args.repeat, args.explain)
        return
    load_before = os.getloadavg()[0]
    revision = (common.revision(), common.code_digest())
    for vendor in args.vendors.split(","):
        documents = args.documents or DEFAULT_DOCUMENTS[vendor]
        db = common.ScratchDB(vendor, "bench_people", lambda url: None)
        url = db.fresh()
        try:
            run = common.run_child(
                __file__, vendor, url, "--documents", documents, "--heavy",
                args.heavy, "--repeat", args.repeat, "--explain", args.explain,
            )  # fmt: skip
        finally:
            db.drop()
        text = report(run, load_before, revision)
        print(text)
        if not args.no_record:
            title = f"People's pages at scale, {vendor} (people_scale.py)"
            common.record(title, text, part="People's pages")


if __name__ == "__main__":
    main()
