"""Claim time against history, and batch enqueue (issue 13).

Claims: a fresh database per size with 1k, 100k and 1M finished jobs (made as a busy
queue makes them: inserted pending, moved to completed; PostgreSQL with autovacuum
off, so their old index entries stay as dead ones), then 1,000 jobs claimed and
completed one at a time in one process; median and p95 of each claim. Then the same
at the smallest size with 100,000 jobs scheduled for tomorrow (retries, tasks'
run_after), which a claim must pass over. Batch enqueue:
``enqueue_batch`` of 100,000 documents' jobs into an empty queue, jobs/s.

    python bench/claim_history.py
    python bench/claim_history.py --db postgres --sizes 1000,100000 --no-record
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
from pathlib import Path

import common

DBS = ("postgres", "sqlite")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", default=",".join(DBS))
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=100_000)
    parser.add_argument(
        "--scheduled", type=int, default=100_000, help="then with these for later"
    )
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="bench-claims-"))
    load_before = os.getloadavg()[0]
    revision = (common.revision(), common.code_digest())
    claim_rows, batch_rows = [], []
    try:
        for vendor in args.db.split(","):
            scratch = common.ScratchDB(
                vendor, "bench_claims", common.migrate_product, tmp=tmp
            )
            try:
                first = None
                tidy_modes = (False, True) if vendor == "postgres" else (False,)
                # (housekeeping, finished jobs, jobs scheduled for later)
                runs = [(tidy, size, 0) for tidy in tidy_modes for size in sizes]
                if args.scheduled:
                    runs.append((False, sizes[0], args.scheduled))
                for tidy, size, scheduled in runs:
                    env = common.product_env(scratch.fresh(), tmp / "media")
                    extra = ["--housekeeping"] if tidy else []
                    out = json.loads(
                        common.product_ops(
                            env,
                            "claims",
                            "--history",
                            size,
                            "--jobs",
                            args.jobs,
                            "--scheduled",
                            scheduled,
                            *extra,
                            timeout=3600,
                        )
                    )
                    median = statistics.median(out["claim_ms"])
                    first = first or median
                    done = "vacuumed" if out["tidied"] else "nothing to do"
                    claim_rows.append(
                        [
                            vendor,
                            done if tidy else "not run",
                            f"{out['history']:,}",
                            f"{out['scheduled']:,}",
                            f"**{median:.3f}**",
                            f"{percentile(out['claim_ms'], 0.95):.3f}",
                            f"{statistics.median(out['complete_ms']):.3f}",
                            f"{median / first:.2f}",
                            f"{out['build_seconds']:.0f}",
                        ]
                    )
                    print(
                        f"  {vendor:8} {size:>9,} finished, {scheduled:,} scheduled, "
                        f"housekeeping {tidy}: claim {median:.3f} ms"
                    )
                env = common.product_env(scratch.fresh(), tmp / "media")
                out = json.loads(
                    common.product_ops(env, "enqueue-batch", args.batch, timeout=3600)
                )
                rate = out["jobs"] / out["seconds"]
                batch_rows.append(
                    [
                        vendor,
                        f"{out['jobs']:,}",
                        f"{out['seconds']:.2f}",
                        f"**{rate:,.0f}**",
                    ]
                )
                print(f"  {vendor:8} enqueue_batch {out['jobs']:,}: {rate:,.0f} jobs/s")
            finally:
                scratch.drop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    claims = common.md_table(
        [
            "database",
            "workers' housekeeping",
            "finished jobs",
            "scheduled for later",
            "claim median ms",
            "claim p95 ms",
            "completion median ms",
            "claim vs smallest",
            "history built in s",
        ],
        claim_rows,
    )
    batch = common.md_table(["database", "jobs", "seconds", "jobs/s"], batch_rows)
    print()
    print(claims)
    print()
    print(batch)
    if args.no_record:
        return
    body = (
        common.header(load_before, revision) + "\n\n"
        f"Command: `{common.command_line()}`\n\n"
        f"{args.jobs:,} jobs claimed and completed one at a time in one process "
        "(the claim timed alone) after the finished jobs were made: inserted pending, "
        "then moved to completed, PostgreSQL's autovacuum off for the table, so the "
        "pending range of the claim index keeps their dead entries. With the "
        "workers' housekeeping (`QueueManager.tidy`: a vacuum once 10,000 dead "
        "rows) run once before the claims, as a worker runs it within its first "
        "minute. The last row of each database: with jobs scheduled for "
        "tomorrow (retries, tasks' `run_after`) beside the pending ones.\n\n"
        + claims
        + "\n\n`enqueue_batch` of documents' jobs into an empty queue (the documents "
        "made first, untimed):\n\n" + batch
    )
    common.record(
        "Claim time against history, and batch enqueue (claim_history.py)", body
    )


if __name__ == "__main__":
    main()
