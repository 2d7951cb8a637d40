"""What a cron tick costs: ``process_queue --once`` draining N no-op jobs, and the
same command with nothing queued (the fixed cost of each tick: interpreter, Django,
the worker's start and stop).

Each round: a fresh database, N no-op jobs, then the command is run to its end. The
clock and the CPU (user + system of the command and its children, from
``getrusage``) cover the whole run, start-up included.

    python bench/cron_drain.py
    python bench/cron_drain.py --db sqlite --jobs 2000 --rounds 1 --no-record
    python bench/cron_drain.py --db postgres --jobs 100 --rounds 6 --together 8

``--together N``: the empty run is N commands started at once, as N workers starting on
one host: what their start-ups cost together. The CPU counts the commands and the
children they wait for (a fork server they leave to exit on its own is not counted).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import common
from common import PRODUCT_PY, ROOT


def timed_once(
    env: dict[str, str], workers: int, together: int = 1
) -> tuple[float, float]:
    """Wall and CPU seconds of ``process_queue --once``, ``together`` runs started
    at once (as many workers starting on one host): until the last one exits."""
    cmd = [PRODUCT_PY, ROOT / "manage.py", "process_queue", "--once", "-v0"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    runs = [
        subprocess.Popen(
            [str(c) for c in [*cmd, "--workers", workers]],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
        )
        for _ in range(together)
    ]
    if any(run.wait() for run in runs):
        raise SystemExit("process_queue --once failed")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def verify(env: dict[str, str], jobs: int) -> str:
    v = json.loads(common.product_ops(env, "verify"))
    ok = v["status"] == {"completed": jobs} and v["jobs_with_one_metric"] == jobs
    return "ok: completed, 1 metrics row each" if ok else json.dumps(v)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", default="sqlite,postgres")
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3, help="report the median")
    parser.add_argument(
        "--together",
        type=int,
        default=1,
        help="the empty run: so many commands started at once (their start-ups "
        "sharing the cores)",
    )
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-cron-"))
    load_before = os.getloadavg()[0]
    revision = (common.revision(), common.code_digest())
    rows: list[list[Any]] = []
    for vendor in args.db.split(","):
        scratch = common.ScratchDB(
            vendor, "bench_cron", common.migrate_product, tmp=tmp
        )
        runs, empty, check = [], [], ""
        try:
            for _ in range(args.rounds):
                env = common.product_env(scratch.fresh(), tmp / "media")
                empty.append(timed_once(env, args.workers, args.together))
                common.product_ops(env, "seed-noop", args.jobs)
                runs.append(timed_once(env, args.workers))
                check = verify(env, args.jobs)
                wall, cpu = runs[-1]
                print(
                    f"  {vendor:8} {args.jobs / wall:7.0f} jobs/s  ({wall:.2f} s, "
                    f"CPU {cpu * 1000 / args.jobs:.3f} ms/job; empty run "
                    f"{empty[-1][0]:.2f} s; {check})",
                    flush=True,
                )
        finally:
            scratch.drop()
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        rows.append(
            [
                vendor,
                args.workers,
                f"**{common.fmt(args.jobs / wall)}**",
                common.fmt(wall, 2),
                common.fmt(cpu * 1000 / args.jobs, 3),
                common.fmt(statistics.median(w for w, _ in empty), 2),
                common.fmt(statistics.median(c for _, c in empty) * 1000),
                check,
            ]
        )
    table = common.md_table(
        [
            "database",
            "workers",
            "jobs/s (start-up incl.)",
            "drain s",
            "CPU ms/job",
            "empty run s",
            "empty run CPU ms",
            "recorded",
        ],
        rows,
    )
    print()
    print(table)
    if args.no_record:
        return
    body = "\n\n".join(
        [
            common.header(load_before, revision)
            + f"\n\nCommand: `{common.command_line()}`",
            f"{args.jobs:,} no-op jobs, fresh database per round, median of "
            f"{args.rounds} round(s); `process_queue --once --workers "
            f"{args.workers}` timed from its start to its exit. The empty run is the "
            "same command with nothing queued: what every cron tick costs"
            + (
                f" ({args.together} of them started at once, until the last exits)."
                if args.together > 1
                else "."
            ),
            table,
        ]
    )
    common.record("Cron drain: process_queue --once (cron_drain.py)", body)


if __name__ == "__main__":
    main()
