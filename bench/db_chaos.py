"""Database-fault chaos: the queue drains while the database misbehaves.

Two ``process_queue`` processes (2 workers each) work through corpus documents and
NOOP jobs. Every few seconds a database fault is injected, and SIGKILLs of whole
worker process groups go on as in ``bench/chaos.py``:

- PostgreSQL (workers connect through a TCP proxy, tests/db_faults.py): every client
  connection terminated (``pg_terminate_backend``, a burst), the server "restarted"
  (the proxy cut, then restored), the queue and heartbeat tables locked.
- SQLite: the write lock held; the disk made full for the worker processes.

Then every job is checked (lost, stuck, completed twice, document consistent), the
attempts the database's faults must not have charged are counted, and so are the
extractions beyond one per document (plus one per attempt a kill cost). The recovery
time of each fault runs from the database being back to the next job completing.

    python bench/db_chaos.py --db both                   # >= 2,000 jobs
    python bench/db_chaos.py --db sqlite --jobs 300 --seconds 30
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections import Counter, defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.chaos import (  # noqa: E402 - after the path set-up, when run as a script
    Monkey,
    ScratchDB,
    Seeder,
    active_count,
    drain,
    load_corpus,
    lost_attempts,
    machine,
    percentile,
    product_env,
    run_and_report,
    setup_django,
    verify,
)
from tests.db_faults import (  # noqa: E402
    TcpProxy,
    disk_full,
    hold_pg_lock,
    hold_sqlite_write_lock,
    terminate_backends,
)

# Default settings but a shorter stale threshold and heartbeat, so killed workers'
# jobs come back within the run; the poll interval and backoff are the defaults.
WORKER_FLAGS = ["--workers", "2", "--heartbeat-interval", "2", "--timeout", "120"]
STALE_SECONDS = "10"
FAULTS = {"postgres": ("terminate", "restart", "lock"), "sqlite": ("lock", "full")}


def inject(
    kind: str,
    vendor: str,
    db: ScratchDB,
    proxy: Any,
    monkey: Monkey,
    rng: random.Random,
) -> float:
    """Make one fault happen; returns its length in seconds."""
    from django.db import connection

    seconds = rng.uniform(1.0, 4.0)
    started = time.monotonic()
    if kind == "terminate":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            spare = [cursor.fetchone()[0]]
        while time.monotonic() - started < seconds:
            terminate_backends(db.url, spare)
            time.sleep(0.3)
    elif kind == "restart":
        proxy.cut()
        time.sleep(seconds)
        proxy.restore()
    elif kind == "lock" and vendor == "postgres":
        hold_pg_lock(db.url, ["extraction_queue", "worker_heartbeat"], seconds)
    elif kind == "lock":
        hold_sqlite_write_lock(db.url.removeprefix("sqlite:///"), seconds)
    elif kind == "full":
        # Only workers past start-up: the limit hits every file, and a command that
        # cannot print its first line to a log file on a full disk exits.
        with disk_full(p.pid for p in monkey.running if _started(p)):
            time.sleep(seconds)
    return time.monotonic() - started


def _started(proc: Any) -> bool:
    return "Processing the queue" in Path(proc.log_path).read_text(errors="replace")


def recovery_seconds(timeout: float = 60) -> float | None:
    """From now (the database back) until a job completes; None if none did."""
    from jobqueue.models import QueueItem, Status
    from jobqueue.sql import db_now

    back, started = db_now(), time.monotonic()
    done = QueueItem.objects.filter(status=Status.COMPLETED, finished_at__gt=back)
    while time.monotonic() - started < timeout:
        if done.exists():
            return time.monotonic() - started
        time.sleep(0.05)
    return None


def extractions_beyond_one(
    log: Path, jobs: dict[int, str | None], lost: dict[int, list[int]]
) -> int:
    """Extractions of each stored file beyond one per document, plus one per attempt
    a kill cost (a killed child may have finished just before)."""
    from documents.models import Document
    from jobqueue.models import QueueItem

    documents = dict(
        QueueItem.objects.filter(pk__in=[j for j, p in jobs.items() if p]).values_list(
            "pk", "document_id"
        )
    )
    files = dict(
        Document.objects.filter(pk__in=documents.values()).values_list("pk", "file")
    )
    allowed: Counter[str] = Counter()
    for job_id, document_id in documents.items():
        allowed[files[document_id]] += 1 + len(lost.get(job_id, []))
    done = (
        Counter(
            line.split("/media/", 1)[-1] for line in log.read_text().split("\n") if line
        )
        if log.exists()
        else Counter()
    )
    return sum(max(0, n - allowed[name]) for name, n in done.items())


def wrongly_charged(jobs: dict[int, str | None], rows: list[dict[str, str]]) -> int:
    """Failed attempts recorded for jobs that cannot fail (NOOP, files expected to
    extract): the database's faults charged to the job."""
    from jobqueue.models import ExtractionMetric

    ok = {row["path"] for row in rows if row["expect"] == "ok"}
    can_not_fail = [j for j, path in jobs.items() if path is None or path in ok]
    return (
        ExtractionMetric.objects.filter(
            job_id__in=can_not_fail,
            outcome__in=[
                ExtractionMetric.Outcome.RETRY,
                ExtractionMetric.Outcome.FAILED,
            ],
        )
        .exclude(error_message__startswith="Attempt ")
        .count()
    )


def run_one(vendor: str, args: argparse.Namespace) -> dict[str, Any]:
    """The whole run on one fresh scratch database; returns its figures."""
    db = ScratchDB(vendor, f"bench_fire_dbchaos_{os.getpid()}")
    db.create()
    proxy = TcpProxy(5432).start() if vendor == "postgres" else None
    log = db.tmp / "extractions.log"
    bench_env = product_env(db.url, db.media_root)
    worker_env = product_env(
        proxy.url(db.url) if proxy else db.url,
        db.media_root,
        QUEUE_STALE_WORKER_SECONDS=STALE_SECONDS,
        QUEUE_EXTRACT_FUNCTION="tests.extractors_for_tests.extract",
        EXTRACTION_LOG=str(log),
    )
    setup_django(bench_env)
    from django.contrib.auth import get_user_model
    from django.db import connections

    rng = random.Random(args.seed)
    recoveries: dict[str, list[float]] = defaultdict(list)
    not_recovered: Counter[str] = Counter()
    try:
        owner = get_user_model().objects.create_user("dbchaos")
        rows = [r for r in load_corpus() if int(r["bytes"]) < args.max_bytes]
        seeder = Seeder(owner, rows, corpus_share=args.corpus_share)
        seeder.add(args.jobs)
        monkey = Monkey(worker_env, db.tmp, rng=random.Random(args.seed))
        monkey.flags = list(WORKER_FLAGS)
        began = time.monotonic()
        monkey.start_all()
        end = began + args.seconds
        next_kill = began + rng.uniform(*args.kill_every)
        while time.monotonic() < end:
            if monkey.crashed():
                raise RuntimeError(f"a worker exited on its own:\n{monkey.logs()}")
            if active_count() < 100:
                seeder.add(200)
            kind = rng.choice(FAULTS[vendor])
            inject(kind, vendor, db, proxy, monkey, rng)
            took = recovery_seconds()
            if took is None:
                not_recovered[kind] += 1
            else:
                recoveries[kind].append(took)
            gap_end = time.monotonic() + rng.uniform(*args.fault_every)
            while time.monotonic() < gap_end:
                if time.monotonic() >= next_kill:
                    monkey.kill_one(busy_only=True)
                    next_kill = time.monotonic() + rng.uniform(*args.kill_every)
                time.sleep(0.1)
        left = active_count()
        drain_s = drain(monkey, args.drain_timeout)
        total_s = time.monotonic() - began
        exit_codes = monkey.stop_all()
        report = verify(seeder.jobs, rows, monkey.killed_pids)
        lost = lost_attempts(seeder.jobs)
        extra = extractions_beyond_one(log, seeder.jobs, lost)
        charged = wrongly_charged(seeder.jobs, rows)
    finally:
        connections.close_all()
        if proxy:
            proxy.close()
        db.drop()
    every = sorted(t for ts in recoveries.values() for t in ts)
    return {
        "database": vendor,
        "machine": machine(),
        "faults": {k: len(v) + not_recovered[k] for k, v in recoveries.items()},
        "kills": monkey.kills,
        "recovery_s": {
            "n": len(every),
            "median": _round(percentile(every, 50)),
            "p90": _round(percentile(every, 90)),
            "max": _round(every[-1] if every else None),
            "by_fault": {k: _round(max(v)) for k, v in recoveries.items()},
        },
        "not_recovered": dict(not_recovered),
        "extracted_beyond_once": extra,
        "wrongly_charged": charged,
        "drain_seconds": round(drain_s, 1),
        "active_when_faults_stopped": left,
        "total_seconds": round(total_s, 1),
        **asdict(report),
        "problems": report.problems()
        + [f"{n} not recovered within 60 s" for n in not_recovered.values()]
        + [f"{extra} extractions beyond once"] * bool(extra)
        + [f"{charged} attempts charged for the database's faults"] * bool(charged)
        + [f"{len(report.rescued_from_live_workers)} jobs rescued from live workers"]
        * bool(report.rescued_from_live_workers)
        + [f"a survivor exited {code} on SIGTERM" for code in exit_codes if code != 0],
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| database | jobs (corpus + noop) | faults | kills | lost | stuck "
        "| completed twice | extracted beyond once | wrongly charged attempts "
        "| rescued from live workers | inconsistent | recovery s: median / p90 / max (n) "
        "| worst by fault | drain |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|",
    ]
    for r in results:
        rec = r["recovery_s"]
        faults = ", ".join(f"{k} {v}" for k, v in sorted(r["faults"].items()))
        worst = ", ".join(f"{k} {v}" for k, v in sorted(rec["by_fault"].items()))
        lines.append(
            f"| {r['database']} | {r['jobs']:,} ({r['corpus_jobs']:,} + "
            f"{r['noop_jobs']:,}) | {faults} | {r['kills']} | {len(r['lost'])} "
            f"| {len(r['stuck_processing'])} | {len(r['completed_twice'])} "
            f"| {r['extracted_beyond_once']} | {r['wrongly_charged']} "
            f"| {len(r['rescued_from_live_workers'])} | {len(r['inconsistent'])} "
            f"| {rec['median']} / {rec['p90']} / {rec['max']} ({rec['n']}) | {worst} "
            f"| {r['drain_seconds']} s |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--jobs", type=int, default=2000, help="jobs queued up front")
    parser.add_argument("--seconds", type=float, default=90, help="fault phase length")
    parser.add_argument(
        "--fault-every", type=float, nargs=2, default=(2.0, 5.0), metavar=("MIN", "MAX")
    )
    parser.add_argument(
        "--kill-every", type=float, nargs=2, default=(5.0, 12.0), metavar=("MIN", "MAX")
    )
    parser.add_argument("--corpus-share", type=float, default=0.3)
    parser.add_argument("--max-bytes", type=int, default=300_000)
    parser.add_argument("--drain-timeout", type=float, default=600)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    return run_and_report(
        args, lambda vendor: run_one(vendor, args), "Database-fault chaos run", table
    )


if __name__ == "__main__":
    sys.exit(main())
