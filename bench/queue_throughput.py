"""Drain throughput of trivial jobs: our queue beside the peers, in one run.

For each configuration: a fresh database, N no-op jobs enqueued (timed apart), then
the clock runs from starting the worker process(es) until all N are finished (worker
start-up included). Ours: ``process_queue --workers K`` (K threads in one process) and
K processes of ``--workers 1``, each under a host name of its own where this runs as
root (``unshare --uts``), as separate machines would be. Peers (bench/.venv-peers): django-tasks-db's
``db_worker`` (K processes), Procrastinate's worker (K processes, PostgreSQL), Celery
with Redis as broker and result backend (``-c K``, prefork).

    python bench/queue_throughput.py                 # 5,000 jobs, everything
    python bench/queue_throughput.py --jobs 200 --no-record   # CI-sized

``--warm`` (ours only): the workers start on an empty queue and wait idle, as
long-running workers on their own hosts do; then the N jobs arrive in one batch and
the clock runs from the first job's start to the last job's end (the database's
times), CPU counted from the batch on: how the workers share the queue, start-up left
out (on 2 shared cores, 8 start-ups cost more than the drain of 5,000 jobs).

``--words N`` (ours only): each no-op job's document already holds N words of text,
as a document being reprocessed does: what its status changes cost beside its text.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import common
from common import PEERS_DIR, PEERS_PY, PRODUCT_PY, ROOT


@dataclass(frozen=True)
class Config:
    system: str  # ours | django-tasks-db | procrastinate | celery
    db: str  # sqlite | postgres | redis
    mode: str  # threads | processes
    workers: int

    @property
    def label(self) -> str:
        if self.system == "ours":
            how = "1 process" if self.workers == 1 else f"{self.workers} {self.mode}"
            return f"ours ({how})"
        if self.system == "celery":
            return f"celery -c {self.workers}"
        return (
            f"{self.system} ({self.workers} process{'es' if self.workers > 1 else ''})"
        )


FINISHED_SQL = {
    "ours": "SELECT count(*) FROM extraction_queue WHERE status IN ('completed', 'failed')",
    "django-tasks-db": "SELECT count(*) FROM django_tasks_database_dbtaskresult "
    "WHERE status IN ('SUCCESSFUL', 'FAILED')",
    "procrastinate": "SELECT count(*) FROM procrastinate_jobs "
    "WHERE status IN ('succeeded', 'failed')",
}
IDLE_SQL = "SELECT count(*) FROM worker_heartbeat WHERE status = 'idle'"
LAST_END_SQL = "SELECT max(finished_at) FROM extraction_queue"  # ours, --warm
FIRST_START_SQL = {
    "ours": "SELECT min(started_at) FROM extraction_queue",
    "django-tasks-db": "SELECT min(started_at) FROM django_tasks_database_dbtaskresult",
    "procrastinate": "SELECT min(at) FROM procrastinate_events WHERE type = 'started'",
}


def configs(
    workers: list[int], only: set[str] | None, dbs: set[str] | None
) -> list[Config]:
    out = []
    for db in ("sqlite", "postgres"):
        for k in workers:
            out.append(Config("ours", db, "threads", k))
            if k > 1:
                out.append(Config("ours", db, "processes", k))
        for k in workers:
            out.append(Config("django-tasks-db", db, "processes", k))
    out += [Config("procrastinate", "postgres", "processes", k) for k in workers]
    out += [Config("celery", "redis", "processes", k) for k in workers]
    if only:
        out = [c for c in out if c.system in only]
    if dbs:
        out = [c for c in out if c.db in dbs]
    return out


# Each of our worker processes under a host name of its own, as on separate machines.
OWN_HOSTNAMES = os.geteuid() == 0 and shutil.which("unshare") is not None


def own_host(n: int, cmd: list[Any]) -> list[Any]:
    if not OWN_HOSTNAMES:
        return cmd
    rename = f'hostname worker-host-{n} && exec "$0" "$@"'
    return ["unshare", "--uts", "sh", "-c", rename, *cmd]


def worker_commands(cfg: Config) -> list[list[Any]]:
    if cfg.system == "ours":
        base = [PRODUCT_PY, ROOT / "manage.py", "process_queue", "-v0"]
        if cfg.mode == "threads":
            return [[*base, "--workers", cfg.workers]]
        return [own_host(n, [*base, "--workers", 1]) for n in range(cfg.workers)]
    manage = [PEERS_PY, PEERS_DIR / "manage.py"]
    if cfg.system == "django-tasks-db":
        # No random start-up delay: it would only add to the peer's time.
        cmd = [*manage, "db_worker", "-v0", "--no-startup-delay"]
        return [cmd for _ in range(cfg.workers)]
    if cfg.system == "procrastinate":
        cmd = [*manage, "procrastinate", "worker"]
        return [cmd for _ in range(cfg.workers)]
    return [
        [
            PEERS_PY,
            "-m",
            "celery",
            "-A",
            "celery_bench",
            "worker",
            "-c",
            cfg.workers,
            "-P",
            "prefork",
            "--loglevel",
            "WARNING",
        ]
    ]


def _epoch(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):  # SQLite keeps UTC text
        value = dt.datetime.fromisoformat(value).replace(tzinfo=dt.UTC)
    return value.timestamp()


class Runner:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.tmp = Path(tempfile.mkdtemp(prefix="bench-throughput-"))
        self.dbs = {
            ("ours", "sqlite"): common.ScratchDB(
                "sqlite", "bench_docqueue", common.migrate_product, tmp=self.tmp
            ),
            ("ours", "postgres"): common.ScratchDB(
                "postgres", "bench_docqueue", common.migrate_product, tmp=self.tmp
            ),
            ("peers", "sqlite"): common.ScratchDB(
                "sqlite", "bench_peers", common.migrate_peers, tmp=self.tmp
            ),
            ("peers", "postgres"): common.ScratchDB(
                "postgres", "bench_peers", common.migrate_peers, tmp=self.tmp
            ),
        }

    def close(self) -> None:
        for db in self.dbs.values():
            db.drop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run(self, cfg: Config) -> dict[str, Any]:
        n = self.args.jobs
        scratch = None
        if cfg.db == "redis":
            for db in (12, 13, 14):
                common.redis(db, "FLUSHDB")
            env = common.peers_env()
            seeded = json.loads(common.peer_ops(env, "seed", "celery", n))
        else:
            side = "ours" if cfg.system == "ours" else "peers"
            scratch = self.dbs[(side, cfg.db)]
            url = scratch.fresh()
            if cfg.system == "ours":
                env = common.product_env(url, self.tmp / "media")
                seed = "seed-tasks" if self.args.ours_jobs == "tasks" else "seed-noop"

                words = ["--words", self.args.words] if self.args.words else []

                def seed_now() -> dict[str, Any]:
                    return json.loads(common.product_ops(env, seed, n, *words))

                seeded = None if self.args.warm else seed_now()
            else:
                env = common.peers_env(url)
                framework = "dtdb" if cfg.system == "django-tasks-db" else cfg.system
                seeded = json.loads(common.peer_ops(env, "seed", framework, n))
        log = self.tmp / f"{cfg.system}-{cfg.db}-{cfg.mode}-{cfg.workers}.log"
        cwd = ROOT if cfg.system == "ours" else PEERS_DIR
        timeout = 120 + n / 20
        if scratch is None:

            def finished() -> int:
                return common.redis(13, "DBSIZE")

            result = self._drain(cfg, env, cwd, log, finished, timeout)
        else:
            with scratch.connect() as scalar:

                def finished() -> int:
                    return scalar(FINISHED_SQL[cfg.system])

                watcher = (
                    scalar("SELECT pg_backend_pid()") if cfg.db == "postgres" else None
                )
                warm = (lambda: scalar(IDLE_SQL), seed_now) if self.args.warm else None
                result = self._drain(
                    cfg, env, cwd, log, finished, timeout, (scratch.name, watcher), warm
                )
                first = _epoch(scalar(FIRST_START_SQL[cfg.system]))
                if warm:
                    # The database's clock: the first job's start to the last's end.
                    result["seconds"] = _epoch(scalar(LAST_END_SQL)) - first
                    result["rate"] = n / result["seconds"]
                else:
                    result["startup"] = first - result["t0"] if first else None
        seeded = seeded or result["seeded"]
        result["enqueue_s"] = seeded["seconds"]
        result["check"] = self._verify(cfg, env, n)
        return result

    def _drain(
        self, cfg, env, cwd, log, finished, timeout, pg=(None, None), warm=None
    ) -> dict[str, Any]:
        """Start the workers and wait for the N jobs to finish. ``warm``: (how many
        worker threads are idle, seed the jobs): seed once every thread waits idle,
        and count CPU from then on."""
        n = self.args.jobs
        dbname, watcher = pg
        # The PostgreSQL backends serving the workers: their CPU is the server's share.
        backends: set[int] = set()
        admin = common.pg_admin() if watcher else None
        polls = 0

        def probe() -> int:
            nonlocal polls
            polls += 1
            if admin is not None and polls % 25 == 1:
                backends.update(
                    pid
                    for (pid,) in admin.execute(
                        "SELECT pid FROM pg_stat_activity WHERE datname = %s",
                        [dbname],
                    )
                    if pid != watcher
                )
            return finished()

        t0 = time.time()
        procs = [common.start(cmd, env, log, cwd) for cmd in worker_commands(cfg)]
        before = {"cpu": 0.0, "waited": 0.0, "server": 0.0}
        seeded = None
        try:
            if warm is not None:
                idle, seed = warm
                common.wait_until(
                    idle, lambda v: v >= cfg.workers, 120, interval=0.05, procs=procs
                )
                probe()  # the backends, all connected by now
                tree = [pid for p in procs for pid in common.process_tree(p.pid)]
                before = {
                    "cpu": common.cpu_seconds(tree),
                    "waited": common.run_delay(tree),
                    "server": common.cpu_seconds(sorted(backends)) if admin else 0.0,
                }
                seeded = seed()
            t1, _ = common.wait_until(
                probe, lambda v: v >= n, timeout, interval=0.01, procs=procs
            )
            tree = [pid for p in procs for pid in common.process_tree(p.pid)]
            cpu = common.cpu_seconds(tree) - before["cpu"]
            waited = common.run_delay(tree) - before["waited"]
            server_cpu = (
                common.cpu_seconds(sorted(backends)) - before["server"]
                if admin
                else None
            )
        except Exception:
            print(log.read_text()[-3000:])
            raise
        finally:
            common.stop(procs)
            if admin is not None:
                admin.close()
        seconds = t1 - t0
        return {
            "seeded": seeded,
            "t0": t0,
            "seconds": seconds,
            "rate": n / seconds,
            "startup": None,
            "cpu_ms": cpu * 1000 / n,
            "waited": waited,
            # django-tasks-db reconnects for every job: its backends are gone by now.
            "server_cpu_ms": server_cpu * 1000 / n
            if server_cpu is not None and cfg.system != "django-tasks-db"
            else None,
        }

    def _verify(self, cfg: Config, env: dict[str, str], n: int) -> str:
        """Every job finished once, with its state (and for ours attempt and metrics
        row) recorded."""
        if cfg.system == "ours":
            v = json.loads(common.product_ops(env, "verify"))
            ok = (
                v["status"] == {"completed": n}
                and v["attempts"] == {"1": n}
                and v["metrics"] == {"completed": n}
                and v["jobs_with_one_metric"] == n
            )
            return (
                "ok: completed, attempt 1, 1 metrics row each" if ok else json.dumps(v)
            )
        if cfg.system == "celery":
            results = common.redis(13, "DBSIZE")
            return (
                f"ok: {results} results stored"
                if results == n
                else f"{results} results"
            )
        framework = "dtdb" if cfg.system == "django-tasks-db" else cfg.system
        status = json.loads(common.peer_ops(env, "verify", framework))["status"]
        good = {"django-tasks-db": "SUCCESSFUL", "procrastinate": "succeeded"}
        if status == {good[cfg.system]: n}:
            return f"ok: {n} {good[cfg.system]}"
        return json.dumps(status)


def pgbench(seconds: int) -> dict[int, float]:
    """The machine's own yardstick: pgbench -N (simple updates) at 1 and 2 clients."""
    name = "bench_pgbench"
    common.pg_drop(name)
    with common.pg_admin() as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = f"{common.PG_HOST}/{name}"
    try:
        subprocess.run(
            ["pgbench", "-i", "-q", "-s", "1", url],
            check=True,
            capture_output=True,
        )
        out = {}
        for clients in (1, 2):
            done = subprocess.run(
                [
                    "pgbench",
                    "-N",
                    "-c",
                    str(clients),
                    "-j",
                    str(clients),
                    "-T",
                    str(seconds),
                    url,
                ],
                check=True,
                capture_output=True,
                text=True,
            )
            match = re.search(r"tps = ([\d.]+)", done.stdout)
            out[clients] = float(match.group(1)) if match else float("nan")
        return out
    finally:
        common.pg_drop(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--workers", default="1,2", help="worker counts, e.g. 1,2")
    parser.add_argument("--rounds", type=int, default=1, help="report the median")
    parser.add_argument(
        "--only", default="", help="systems: ours,django-tasks-db,procrastinate,celery"
    )
    parser.add_argument(
        "--ours-jobs",
        choices=("noop", "tasks"),
        default="noop",
        help="ours drains NOOP document jobs, or @task calls (bench.bench_tasks.noop)",
    )
    parser.add_argument("--db", default="", help="sqlite,postgres,redis (default: all)")
    parser.add_argument("--pgbench", type=int, default=5, help="seconds; 0 skips")
    parser.add_argument(
        "--max-load", type=float, default=0, help="first wait for a quieter machine"
    )
    parser.add_argument(
        "--warm",
        action="store_true",
        help="ours only: jobs arrive once the workers wait idle; start-up left out",
    )
    parser.add_argument(
        "--words",
        type=int,
        default=0,
        help="ours only: each no-op job's document already holds this many words",
    )
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    if (args.warm or args.words) and args.only != "ours":
        parser.error("--warm and --words measure ours only: add --only ours")
    common.ensure_peers()
    only = set(filter(None, args.only.split(","))) or None
    dbs = set(filter(None, args.db.split(","))) or None
    todo = configs([int(k) for k in args.workers.split(",")], only, dbs)
    if args.max_load:
        common.wait_quiet(args.max_load)
    runner = Runner(args)
    load_before = os.getloadavg()[0]
    revision_before = (common.revision(), common.code_digest())
    results: dict[Config, list[dict[str, Any]]] = {c: [] for c in todo}
    try:
        for _ in range(args.rounds):
            for cfg in todo:
                res = runner.run(cfg)
                results[cfg].append(res)
                print(
                    f"  {cfg.db:8} {cfg.label:34} {res['rate']:8.0f} jobs/s"
                    f"  ({res['seconds']:.2f} s, worker CPU {res['cpu_ms']:.1f} ms/job;"
                    f" {res['check']})",
                    flush=True,
                )
        with_pg = any(c.db == "postgres" for c in todo)
        bench = pgbench(args.pgbench) if args.pgbench and with_pg else {}
    finally:
        runner.close()
    report(args, todo, results, bench, (load_before, revision_before))


def report(args, todo, results, bench, load) -> None:
    rows, rate = [], {}
    for cfg in todo:
        runs = results[cfg]
        rate[cfg] = statistics.median(r["rate"] for r in runs)
        secs = statistics.median(r["seconds"] for r in runs)
        startups = [r["startup"] for r in runs if r["startup"] is not None]
        startup = statistics.median(startups) if startups else None
        after = args.jobs / (secs - startup) if startup is not None else None
        enq = [r["enqueue_s"] for r in runs if r["enqueue_s"] is not None]
        cpu = statistics.median(r["cpu_ms"] for r in runs)
        waited = statistics.median(r["waited"] for r in runs)
        server = [r["server_cpu_ms"] for r in runs if r["server_cpu_ms"] is not None]
        server_cpu = statistics.median(server) if server else None
        rows.append(
            [
                cfg.db,
                cfg.label,
                cfg.workers,
                f"**{common.fmt(rate[cfg])}**",
                common.fmt(secs, 2),
                common.fmt(startup, 2),
                common.fmt(after),
                common.fmt(cpu, 2),
                common.fmt(server_cpu, 2),
                common.fmt(waited, 1),
                common.fmt(args.jobs / statistics.median(enq)) if enq else "—",
                runs[-1]["check"],
            ]
        )
    table = common.md_table(
        [
            "database",
            "system",
            "workers",
            "jobs/s" if args.warm else "jobs/s (start-up incl.)",
            "drain s",
            "first job at s",
            "jobs/s after first job",
            "worker CPU ms/job",
            "PostgreSQL backend CPU ms/job",
            "s waiting for a CPU",
            "enqueue jobs/s",
            "recorded",
        ],
        rows,
    )
    ratios = []

    def find(system: str, db: str, k: int, mode: str = "processes") -> Config | None:
        for cfg in rate:
            if (cfg.system, cfg.db, cfg.workers) == (system, db, k) and (
                cfg.system != "ours" or k == 1 or cfg.mode == mode
            ):
                return cfg
        return None

    ks = sorted({c.workers for c in todo})
    # The issues' targets: @task calls (issue 12), no-op document jobs (issue 13).
    if args.ours_jobs == "tasks":
        targets = [
            ("sqlite", "django-tasks-db", "sqlite", 3.0),
            ("postgres", "django-tasks-db", "postgres", 3.0),
        ]
    else:
        targets = [
            ("sqlite", "django-tasks-db", "sqlite", 5.0),
            ("postgres", "procrastinate", "postgres", 3.0),
            ("postgres", "celery", "redis", 1.2),
        ]
    for db, peer, peer_db, target in targets:
        for k in ks:
            base = find(peer, peer_db, k)
            for mode in ("threads", "processes") if k > 1 else ("threads",):
                ours = find("ours", db, k, mode)
                if not (base and ours):
                    continue
                label = "1 process" if k == 1 else f"{k} {mode}"
                # Each round's ratio is measured minutes apart at most: the median
                # of those is steadier than a ratio of medians from different rounds.
                per_round = [
                    a["rate"] / b["rate"]
                    for a, b in zip(results[ours], results[base], strict=True)
                ]
                ratio = statistics.median(per_round)
                ratios.append(
                    [
                        db,
                        f"ours ({label}) / {peer} ({k})",
                        f"{ratio:.2f}×",
                        " / ".join(f"{r:.2f}" for r in per_round),
                        f"≥ {target:g}×",
                        "met"
                        if ratio >= target
                        else f"missed by {target / ratio:.2f}×",
                    ]
                )
    # Issue 13: many processes against one database do not collapse throughput.
    for db in ("sqlite", "postgres"):
        ours = {k: find("ours", db, k, "processes") for k in ks}
        ours = {k: cfg for k, cfg in ours.items() if cfg is not None}
        if max(ours, default=0) < 4:
            continue
        best = max(ours.values(), key=lambda cfg: rate[cfg])
        most = ours[max(ours)]
        share = rate[most] / rate[best]
        ratios.append(
            [
                db,
                f"ours ({max(ours)} processes) / best (ours, {best.workers} "
                f"process{'es' if best.workers > 1 else ''})",
                f"{share:.2f}×",
                "—",
                "≥ 0.9×",
                "met" if share >= 0.9 else f"missed by {0.9 / share:.2f}×",
            ]
        )
    ratio_table = (
        common.md_table(
            ["database", "ratio", "median of rounds", "each round", "target", ""],
            ratios,
        )
        if ratios
        else ""
    )
    bench_line = (
        "pgbench -N (same machine, same run): "
        + ", ".join(
            f"{c} client{'s' if c > 1 else ''} {common.fmt(v)} tps"
            for c, v in bench.items()
        )
        if bench
        else ""
    )
    print()
    print(table)
    print()
    print(ratio_table)
    if bench_line:
        print()
        print(bench_line)
    if args.no_record:
        return
    body = "\n\n".join(
        part
        for part in (
            common.header(load[0], load[1]) + f"\n\nCommand: `{common.command_line()}`",
            f"{args.jobs:,} no-op jobs per run"
            + (f" on documents of {args.words:,} words" if args.words else "")
            + ", fresh database per run, median of "
            f"{args.rounds} round(s). "
            + (
                "Warm workers (`--warm`): the jobs arrive in one batch once every "
                "worker waits idle; the clock runs from the first job's start to the "
                "last job's end (the database's times), and CPU is counted from the "
                "batch on: start-up left out. "
                if args.warm
                else "The clock runs from starting the worker process(es) until the "
                "last job is finished, start-up included. "
                '"first job at" is when the first job started (the start-up share); '
                '"jobs/s after first job" leaves start-up out. '
            )
            + '"worker CPU" is the '
            "user + system time of the worker processes and their children "
            f"({'from the batch on' if args.warm else 'start-up included'}; "
            "database server and Redis not included), per job: "
            "unlike wall-clock rates it hardly depends on what else runs on the machine. "
            '"PostgreSQL backend CPU" is the server processes serving the workers '
            "(not measurable for django-tasks-db, which reconnects for every job). "
            '"s waiting for a CPU" is how long the worker processes were ready to run '
            "but had no core (/proc/PID/schedstat): the "
            "machine's other load.",
            table,
            ratio_table,
            bench_line,
        )
        if part
    )
    names = {"sqlite": "SQLite", "postgres": "PostgreSQL", "redis": "Redis"}
    where = ", ".join(names[d] for d in names if any(c.db == d for c in todo))
    systems = sorted({c.system for c in todo}, key=[c.system for c in todo].index)
    what = "@task no-op calls" if args.ours_jobs == "tasks" else "no-op jobs"
    title = f"Drain throughput of {what}: {where}, {' vs '.join(systems)}"
    if args.warm:
        title += ", warm workers"
    if args.words:
        title += f", documents of {args.words:,} words"
    common.record(f"{title} (queue_throughput.py)", body)


if __name__ == "__main__":
    main()
