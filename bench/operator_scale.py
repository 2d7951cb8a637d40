"""What operators read (``/metrics``, the queue dashboard) against a year of history.

Seeds a scratch database per vendor and size with bulk SQL (one ``INSERT … SELECT``
per table): ``N`` queue items, the newest 2,000 waiting or running and the others
finished (91 % completed, 6 % failed, 3 % cancelled), and ``N`` metrics rows spread
over a year; then, where the code has them, the folds the workers' housekeeping
does (the metrics' totals, the finished items' count), and the last minutes'
metrics rows (a scrape reads those live). Times
``/metrics`` and the dashboard with Django's test Client (median of ``--repeat``
requests after one untimed, and the statements each makes).

    .venv/bin/python bench/operator_scale.py [--sizes 10000,100000,1000000]
        [--vendors sqlite,postgres] [--repeat 5] [--no-record]

Each vendor and size runs in its own child process (Django's database is chosen at
start-up).
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
from page_timing import plan, time_requests  # noqa: E402

YEAR_SECONDS = 365 * 86400
# Rows written in the last minutes, above the fold's watermark: a scrape reads them.
RECENT_ROWS = 600
# The newest items wait or run (a backlog a scrape counts however long the history).
ACTIVE_ITEMS = 2_000
PAGES = (
    ("/metrics", "/metrics"),
    ("dashboard", "/admin/jobqueue/queueitem/dashboard/"),
)

# A row's number ``i`` (1..n) decides its state and age; the same SQL on both
# databases but for the time arithmetic.
QUEUE_SQL = """
WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < {n})
INSERT INTO extraction_queue (operation, status, priority, queue_name, payload,
    attempts, max_retries, error_type, error_message, claimed_by, finished_at,
    extraction_time_ms, created_at, updated_at, next_retry_at)
SELECT CASE WHEN i % 10 = 0 THEN 'thumbnail' ELSE 'extract' END,
    CASE WHEN i > {n} - {active} THEN (CASE i % 4 WHEN 0 THEN 'processing'
             WHEN 1 THEN 'retry_pending' ELSE 'pending' END)
         WHEN i % 100 < 91 THEN 'completed' WHEN i % 100 < 97 THEN 'failed'
         ELSE 'cancelled' END,
    0, 'default', '{{}}', 1, 3,
    CASE WHEN i <= {n} - {active} AND i % 100 BETWEEN 91 AND 96
         THEN 'corruption' ELSE '' END,
    CASE WHEN i <= {n} - {active} AND i % 100 BETWEEN 91 AND 96
         THEN 'The file is damaged.' ELSE '' END,
    '', CASE WHEN i <= {n} - {active} THEN {at} END, (i * 37) % 20000 + 50, {at},
    {at}, CASE WHEN i > {n} - {active} AND i % 4 = 1 THEN {at} END
FROM seq
"""
METRICS_SQL = """
WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < {n})
INSERT INTO extraction_metrics (attempt, outcome, error_type, error_message,
    extraction_time_ms, extractor, worker_id, created_at)
SELECT 1,
    CASE WHEN i % 100 < 80 THEN 'completed' WHEN i % 100 < 86 THEN 'failed'
         WHEN i % 100 < 92 THEN 'retry' WHEN i % 100 < 95 THEN 'rescued'
         WHEN i % 100 < 98 THEN 'released' ELSE 'refused' END,
    CASE WHEN i % 100 < 80 OR i % 100 >= 95 THEN ''
         WHEN i % 100 < 86 THEN 'corruption' WHEN i % 100 < 92 THEN 'timeout'
         ELSE 'unknown' END,
    '', CASE WHEN i % 100 BETWEEN 92 AND 97 THEN NULL
             ELSE (i * 37) % 20000 + 50 END,
    'bench', 'bench-worker', {at}
FROM seq
"""


def age_sql(vendor: str, n: int, span: float) -> str:
    """The time of row ``i`` of ``n``, spread over the last ``span`` seconds."""
    step = span / n
    if vendor == "postgres":
        return f"(now() - ({n} - i) * {step} * interval '1 second')"
    return f"strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || (({n} - i) * {step}) || ' seconds')"


def seed(vendor: str, n: int) -> dict:
    """The tables filled; returns how long each part took and whether it folded."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from jobqueue.services import QueueManager

    timings = {}
    started = time.monotonic()
    with connection.cursor() as cursor:
        at = age_sql(vendor, n, YEAR_SECONDS)
        cursor.execute(QUEUE_SQL.format(n=n, active=ACTIVE_ITEMS, at=at))
        cursor.execute(METRICS_SQL.format(n=n, at=age_sql(vendor, n, YEAR_SECONDS)))
    timings["seed_seconds"] = time.monotonic() - started
    # What the workers' housekeeping has done by then (where the code folds).
    fold = getattr(QueueManager(), "fold_metrics", None)  # from jobqueue 0009
    started = time.monotonic()
    timings["folded"] = fold is not None
    if fold is not None:
        fold(margin_seconds=0)
        QueueManager().count_finished()
    timings["fold_seconds"] = time.monotonic() - started
    with connection.cursor() as cursor:
        cursor.execute(
            METRICS_SQL.format(n=RECENT_ROWS, at=age_sql(vendor, RECENT_ROWS, 240))
        )
        cursor.execute(
            "VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE"
        )
    get_user_model().objects.create_superuser("staff", password="unused-password-1")  # noqa: S106
    return timings


def measure(repeat: int) -> list[dict]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username="staff"))
    results = []
    for name, path in PAGES:
        times, statements, status = time_requests(client, path, repeat)
        if status != 200:
            sys.exit(f"{path} answered {status}")
        slowest = sorted(statements, key=lambda q: -float(q["time"]))[:2]
        for q in slowest:
            print(
                f"--- {name}: {q['time']} s\n{q['sql']}\n{plan(q['sql'])}",
                file=sys.stderr,
            )
        results.append(
            {
                "page": name,
                "median_ms": statistics.median(times),
                "statements": len(statements),
                "slowest": [
                    (round(float(q["time"]) * 1000, 1), q["sql"][:160]) for q in slowest
                ],
            }
        )
    return results


def child(vendor: str, url: str, n: int, repeat: int) -> None:
    os.environ.update(
        common.product_env(
            url,
            "/tmp",
            ALLOWED_HOSTS="testserver",
            METRICS_PUBLIC="1",  # noqa: S108
        )
    )
    sys.path.insert(0, str(common.ROOT))
    import django

    django.setup()
    timings = seed(vendor, n)
    print(
        json.dumps({"vendor": vendor, "rows": n, **timings, "results": measure(repeat)})
    )


def report(vendor: str, runs: list[dict], load_before: float, revision: tuple) -> str:
    rows = [
        (
            f"{run['rows']:,}",
            r["page"],
            common.fmt(r["median_ms"], 1),
            r["statements"],
            common.fmt(r["slowest"][0][0], 1) if r["slowest"] else "—",
        )
        for run in runs
        for r in run["results"]
    ]
    folds = ", ".join(
        f"{run['rows']:,}: {run['fold_seconds']:.2f} s" for run in runs if run["folded"]
    )
    return "\n\n".join(
        [
            common.header(load_before, revision),
            f"Command: `{common.command_line()}`",
            f"{vendor}: queue items and metrics rows (the same number of each, a year "
            f"of them, {ACTIVE_ITEMS:,} items waiting or running, plus {RECENT_ROWS} "
            "metrics rows of the last minutes). Median of the timed requests, "
            "statements per request, and the slowest one's time (as the driver times "
            "it: SQLite's compound statements run on as their rows are fetched):",
            common.md_table(
                ("rows", "page", "median ms", "statements", "slowest statement ms"),
                rows,
            ),
            f"First fold of the seeded history: {folds}." if folds else "No fold.",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--vendors", default="sqlite,postgres")
    parser.add_argument("--repeat", type=int, default=5)
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
        db = common.ScratchDB(vendor, "bench_operators", common.migrate_product)
        runs = []
        try:
            for n in (int(s) for s in args.sizes.split(",")):
                url = db.fresh()
                runs.append(
                    common.run_child(__file__, vendor, url, n, "--repeat", args.repeat)
                )
                print(runs[-1], file=sys.stderr)
        finally:
            db.drop()
        text = report(vendor, runs, load_before, revision)
        print(text)
        if not args.no_record:
            common.record(
                f"Operators' pages over a year of history, {vendor} (operator_scale.py)",
                text,
                part="People's pages",
            )


if __name__ == "__main__":
    main()
