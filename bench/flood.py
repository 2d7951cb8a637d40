"""Upload flood: many concurrent clients upload corpus files while the queue works.

gunicorn (4 gthread workers x 4 threads by default) serves the API; ``--clients``
threads upload corpus files as fast as they can for ``--seconds`` while one
``process_queue`` (2 workers) extracts them. Then the queue drains and every accepted
upload is checked. Reports 5xx, "database is locked", upload latency (median, p95)
and the time the queue needed to catch up.

    python bench/flood.py --db both
    python bench/flood.py --db sqlite --seconds 10 --clients 8
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.chaos import (  # noqa: E402 - after the path set-up, when run as a script
    PYTHON,
    ScratchDB,
    load_corpus,
    machine,
    percentile,
    product_env,
    run_and_report,
    setup_django,
    start_group,
    stop_group,
    wait_until,
)
from bench.web_restart import (  # noqa: E402
    Server,
    Tally,
    corpus_payloads,
    run_clients,
    storage_check,
)

LOCKED = "database is locked"


@dataclass
class Result:
    database: str
    date: str
    machine: str
    server: str = ""
    clients: int = 0
    seconds: float = 0.0
    uploads: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    server_errors: list[str] = field(default_factory=list)
    connection_errors: int = 0
    locked_in_logs: int = 0
    latency_median_s: float | None = None
    latency_p95_s: float | None = None
    latency_max_s: float | None = None
    accepted_per_second: float = 0.0
    drain_seconds: float = 0.0
    outcomes: dict[str, int] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)

    def problems(self) -> list[str]:
        found = []
        if self.server_errors:
            found.append(f"5xx: {self.server_errors[:5]}")
        if self.locked_in_logs:
            found.append(f"'{LOCKED}' {self.locked_in_logs} times in the logs")
        if self.connection_errors:
            found.append(f"{self.connection_errors} connections failed")
        for key in ("rows_without_file", "rows_without_queue_item", "accepted_missing"):
            if self.checks.get(key):
                found.append(f"{key}: {self.checks[key][:10]}")
        if self.checks.get("wrong_outcome"):
            found.append(f"wrong outcome: {self.checks['wrong_outcome'][:10]}")
        return found


def outcome_check(accepted: dict[int, str]) -> tuple[dict[str, int], list[str]]:
    """Every accepted upload finished; files the manifest calls ok completed."""
    from django.db.models import Count

    from documents.models import Document
    from jobqueue.models import Status

    ok_names = {Path(r["path"]).name for r in load_corpus({"ok"})}
    docs = Document.objects.filter(pk__in=list(accepted))
    outcomes = dict(docs.values_list("status").annotate(n=Count("id")).order_by())
    wrong = [
        f"{name}: {status} {message[:80]}"
        for name, status, message in docs.exclude(status=Status.COMPLETED)
        .filter(original_filename__in=ok_names)
        .values_list("original_filename", "status", "error_message")
    ]
    return outcomes, wrong


def run_one(vendor: str, args: argparse.Namespace) -> Result:
    db = ScratchDB(vendor, f"bench_fire_flood_{os.getpid()}")
    db.create()
    env = product_env(db.url, db.media_root)
    setup_django(env)
    from django.contrib.auth import get_user_model
    from django.db import connections

    from jobqueue.models import QueueItem

    result = Result(vendor, dt.date.today().isoformat(), machine())
    gunicorn_args = ["--workers", str(args.web_workers)]
    if args.threads > 1:
        gunicorn_args += ["--worker-class", "gthread", "--threads", str(args.threads)]
    result.server = "gunicorn " + " ".join(gunicorn_args)
    server = Server(env, db.tmp / "gunicorn.log", args=gunicorn_args)
    worker_log = db.tmp / "worker.log"
    worker = None
    try:
        user = get_user_model().objects.create_user("flood")
        from documents.tokens import create_token

        token = create_token(user)[1]
        server.start()
        worker = start_group(
            [PYTHON, "manage.py", "process_queue", "--workers", "2"], env, worker_log
        )
        tally = Tally()
        began = time.monotonic()
        stop, threads = run_clients(
            lambda: server.port,
            token,
            corpus_payloads(max_bytes=args.max_kb * 1024, big_text_mb=0),
            tally,
            clients=args.clients,
            throttle=0.0,
        )
        time.sleep(args.seconds)
        stop.set()
        for thread in threads:
            thread.join(120)
        result.seconds = round(time.monotonic() - began, 1)
        drain_began = time.monotonic()
        wait_until(
            lambda: not QueueItem.objects.active().exists(), args.drain_timeout, 0.5
        )
        result.drain_seconds = round(time.monotonic() - drain_began, 1)
        server.stop()
        stop_group(worker)
        logs = server.log.read_text(errors="replace") + worker_log.read_text(
            errors="replace"
        )
        result.locked_in_logs = logs.count(LOCKED)
        result.clients = args.clients
        result.uploads = tally.attempts()
        result.statuses = {str(k): v for k, v in sorted(tally.statuses.items())}
        result.server_errors = tally.server_errors
        result.connection_errors = tally.connection_errors + tally.refused_connections
        result.latency_median_s = _round(percentile(tally.latencies, 50))
        result.latency_p95_s = _round(percentile(tally.latencies, 95))
        result.latency_max_s = _round(max(tally.latencies, default=None))
        result.accepted_per_second = round(len(tally.accepted) / result.seconds, 1)
        checks = storage_check(tally.accepted)
        checks.pop("orphan_files")  # nothing was killed: covered by web_restart
        result.outcomes, checks["wrong_outcome"] = outcome_check(tally.accepted)
        result.checks = checks
    finally:
        server.kill()
        if worker is not None:
            stop_group(worker, timeout=5)
        connections.close_all()
        db.drop()
    return result


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| database | server | clients | uploads (seconds) | 202 | 4xx | 5xx "
        "| database is locked | latency median / p95 / max | accepted/s "
        "| drain after | outcomes |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        s = r["statuses"]
        fours = sum(v for k, v in s.items() if k.startswith("4"))
        lines.append(
            f"| {r['database']} | {r['server']} | {r['clients']} "
            f"| {r['uploads']} ({r['seconds']} s) "
            f"| {s.get('202', 0)} | {fours} | {len(r['server_errors'])} "
            f"| {r['locked_in_logs']} | {r['latency_median_s']} / "
            f"{r['latency_p95_s']} / {r['latency_max_s']} s "
            f"| {r['accepted_per_second']} | {r['drain_seconds']} s "
            f"| {', '.join(f'{k} {v}' for k, v in r['outcomes'].items())} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--web-workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=4, help="gthread threads")
    parser.add_argument("--max-kb", type=int, default=1024, help="largest file sent")
    parser.add_argument("--drain-timeout", type=float, default=900)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    def run(vendor: str) -> dict[str, Any]:
        result = run_one(vendor, args)
        return {**asdict(result), "problems": result.problems()}

    return run_and_report(args, run, "Upload flood", table)


if __name__ == "__main__":
    sys.exit(main())
