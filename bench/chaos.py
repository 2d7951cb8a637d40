"""Chaos run: SIGKILL ``process_queue`` at random while it works, then count the damage.

Two ``process_queue`` processes (2 workers each) work through corpus documents and
trivial NOOP jobs; every few seconds one of them is killed with its whole process group
(worker, fork server, extraction children) and a replacement is started. After the kill
phase the survivors drain the queue. Then every job is checked: none lost, none stuck in
``processing``, none completed twice, every document consistent with its job and with
the other copies of the same file.

    python bench/chaos.py --db both                       # >= 2,000 jobs, 60 s of kills
    python bench/chaos.py --db sqlite --jobs 200 --seconds 10

The first part of this module (scratch databases, processes, Django bootstrap) is
shared with ``bench/web_restart.py`` and ``bench/flood.py``; the chaos functions
(``seed``, ``Monkey``, ``verify``) are also driven by ``tests/test_chaos.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime as dt
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
PYTHON = sys.executable
CORPUS = Path(os.environ.get("CORPUS_DIR") or ROOT.parent / "shared" / "corpus")
PG_SERVER = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
SECRET_KEY = "bench-only-secret-key-" + "x" * 40

# --- Shared: scratch databases, processes, Django ---------------------------------


def product_env(db_url: str, media_root: Path | str, **extra: str) -> dict[str, str]:
    """Environment for a product process: production settings, the scratch database."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "QUEUE_", "SQLITE_"))
        and k not in {"DATABASE_URL", "MEDIA_ROOT", "PYTHONPATH"}
    }
    env.update(
        DATABASE_URL=db_url,
        SECRET_KEY=SECRET_KEY,
        DEBUG="0",
        SECURE_COOKIES="0",
        MEDIA_ROOT=str(media_root),
        LOG_LEVEL="WARNING",
        # One bench user stands for many people: lift the per-user limits.
        UPLOAD_RATE="1000000/minute",
        API_RATE="1000000/minute",
        USER_MAX_ACTIVE_JOBS="1000000",
        PYTHONUNBUFFERED="1",
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    env.update(extra)
    return env


@dataclass
class ScratchDB:
    """A throw-away database: a SQLite file in a temp dir, or a PostgreSQL database
    named ``bench_fire_*`` created and dropped here."""

    vendor: str  # "sqlite" | "postgres"
    name: str
    tmp: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="fire-")))

    def __post_init__(self) -> None:
        # Never touch anyone else's database.
        if not re.fullmatch(r"bench_fire_[a-z0-9_]+", self.name):
            raise ValueError(f"refusing to manage database {self.name!r}")

    @property
    def url(self) -> str:
        if self.vendor == "sqlite":
            return f"sqlite:///{self.tmp / (self.name + '.sqlite3')}"
        return f"{PG_SERVER}/{self.name}"

    @property
    def media_root(self) -> Path:
        return self.tmp / "media"

    def create(self) -> str:
        """Create (PostgreSQL) and migrate the database; returns its URL."""
        if self.vendor == "postgres":
            self._pg(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
            self._pg(f'CREATE DATABASE "{self.name}"')
        manage(["migrate", "--noinput", "-v0"], product_env(self.url, self.media_root))
        return self.url

    def drop(self) -> None:
        """Drop the database and delete the temp dir (files, logs, uploads)."""
        if self.vendor == "postgres":
            self._pg(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _pg(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as conn:
            conn.execute(sql)


def manage(args: list[str], env: dict[str, str], timeout: float = 300) -> str:
    """Run ``manage.py`` to completion; returns stdout, raises with stderr on failure."""
    done = subprocess.run(
        [PYTHON, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def start_group(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """Start a process as the leader of a new session, so its group can be killed."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def group_alive(pgid: int) -> bool:
    """True while a live (not zombie) process of the group exists. Zombies are
    skipped: in a container whose init does not reap, they never go away."""
    if not os.path.isdir("/proc"):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # After the command name: state, ppid, pgrp.
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def kill_group(proc: subprocess.Popen, wait: float = 10) -> bool:
    """SIGKILL the whole process group; True when it was gone within ``wait`` s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(wait)
    deadline = time.monotonic() + wait
    while group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not group_alive(proc.pid)


def stop_group(proc: subprocess.Popen, timeout: float = 30) -> int | None:
    """SIGTERM (graceful), then SIGKILL the group if it lingers; returns the exit code."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout)
    code = proc.poll()
    kill_group(proc)
    return code


def setup_django(env: dict[str, str]) -> None:
    """Configure this process like a product process (before any Django import)."""
    os.environ.update(env)
    import django

    django.setup()


def wait_until(
    predicate: Callable[[], Any], timeout: float, interval: float = 0.2
) -> Any:
    """Poll until truthy; raise TimeoutError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not met within {timeout:g} s")
        time.sleep(interval)


def percentile(values: list[float], pct: float) -> float | None:
    """Nearest-rank percentile (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, round(pct / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def load_corpus(expects: Iterable[str] | None = None) -> list[dict[str, str]]:
    """Manifest rows (optionally only some ``expect`` values) whose file exists."""
    manifest = CORPUS / "manifest.csv"
    if not manifest.is_file():
        return []
    with manifest.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    wanted = set(expects) if expects else None
    return [
        row
        for row in rows
        if (wanted is None or row["expect"] in wanted)
        and (CORPUS / row["path"]).is_file()
    ]


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def machine() -> str:
    cpu = "unknown CPU"
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as fh:
        for line in fh:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return f"{os.cpu_count()} cores ({cpu}), Python {sys.version.split()[0]}"


# --- Chaos: seed, kill, verify -----------------------------------------------------

WORKER_FLAGS = ["--workers", "2", "--heartbeat-interval", "1", "--poll-interval", "0.5"]
# A worker silent this long is presumed dead and its jobs are rescued.
STALE_SECONDS = "3"


@dataclass
class Seeder:
    """Creates documents and their jobs: NOOP jobs, and corpus files (each file stored
    once, shared by all its documents, so thousands of jobs cost no disk)."""

    owner: Any
    rows: list[dict[str, str]]
    corpus_share: float = 0.5
    jobs: dict[int, str | None] = field(default_factory=dict)  # job id -> corpus path
    _stored: dict[str, tuple[str, str]] = field(default_factory=dict)
    _next: int = 0

    def add(self, count: int) -> list[int]:
        """Queue ``count`` more jobs (the corpus share of them are real documents)."""
        from documents.models import Document
        from jobqueue.models import Operation
        from jobqueue.services import QueueManager

        n_corpus = round(count * self.corpus_share) if self.rows else 0
        paths = [self._row(self._next + i)["path"] for i in range(n_corpus)]
        self._next += n_corpus
        docs = [self._document(path) for path in paths]
        docs += [self._noop_document() for _ in range(count - n_corpus)]
        docs = Document.objects.bulk_create(docs, batch_size=500)
        corpus_ids = [d.pk for d in docs[:n_corpus]]
        noop_ids = [d.pk for d in docs[n_corpus:]]
        # Seeding in bulk (uploads create a document and its job in one transaction).
        extract_jobs = QueueManager().enqueue_batch(corpus_ids)
        noop_jobs = QueueManager(Operation.NOOP).enqueue_batch(noop_ids)
        if len(extract_jobs) != len(corpus_ids) or len(noop_jobs) != len(noop_ids):
            raise RuntimeError("enqueue_batch skipped documents that had no job")
        self.jobs.update(zip(extract_jobs, paths, strict=True))
        self.jobs.update(dict.fromkeys(noop_jobs))
        return extract_jobs + noop_jobs

    def _row(self, index: int) -> dict[str, str]:
        return self.rows[index % len(self.rows)]

    def _document(self, rel_path: str) -> Any:
        from django.core.files.base import ContentFile
        from django.core.files.storage import default_storage

        from documents.extractors.detect import detect_mime_type
        from documents.models import Document

        if rel_path not in self._stored:
            source = CORPUS / rel_path
            name = default_storage.save(
                f"documents/chaos-{len(self._stored)}{source.suffix}",
                ContentFile(source.read_bytes()),
            )
            mime = detect_mime_type(source) or "application/octet-stream"
            self._stored[rel_path] = (name, mime)
        name, mime = self._stored[rel_path]
        return Document(
            owner=self.owner,
            original_filename=Path(rel_path).name,
            file=name,
            mime_type=mime,
            size=(CORPUS / rel_path).stat().st_size,
            sha256="0" * 64,
        )

    def _noop_document(self) -> Any:
        from documents.models import Document

        return Document(
            owner=self.owner,
            original_filename="noop.txt",
            file="documents/noop.txt",
            mime_type="text/plain",
            size=0,
            sha256="0" * 64,
        )


@dataclass
class Monkey:
    """Keeps ``processes`` workers running and SIGKILLs one at random on demand."""

    env: dict[str, str]
    log_dir: Path
    processes: int = 2
    flags: list[str] = field(default_factory=lambda: list(WORKER_FLAGS))
    rng: random.Random = field(default_factory=lambda: random.Random(1))
    running: list[subprocess.Popen] = field(default_factory=list)
    started: int = 0
    kills: int = 0
    killed_pids: set[int] = field(default_factory=set)
    groups_left_behind: int = 0

    def start(self) -> subprocess.Popen:
        log = self.log_dir / f"worker-{self.started}.log"
        proc = start_group(
            [PYTHON, "manage.py", "process_queue", *self.flags], self.env, log
        )
        proc.log_path = log  # type: ignore[attr-defined]
        self.started += 1
        self.running.append(proc)
        return proc

    def start_all(self) -> None:
        while len(self.running) < self.processes:
            self.start()

    def kill_one(self, *, busy_only: bool = False) -> None:
        """SIGKILL a random worker's process group and start its replacement;
        with ``busy_only``, one that holds a job right now (if any does)."""
        victims = self.running
        if busy_only:
            busy = busy_pids()
            victims = [p for p in self.running if p.pid in busy] or self.running
        victim = self.rng.choice(victims)
        self.running.remove(victim)
        if not kill_group(victim):
            self.groups_left_behind += 1
        self.kills += 1
        self.killed_pids.add(victim.pid)
        self.start()

    def crashed(self) -> list[subprocess.Popen]:
        """Workers that exited without being killed (must never happen)."""
        return [p for p in self.running if p.poll() is not None]

    def stop_all(self, timeout: float = 30) -> list[int | None]:
        codes = [stop_group(p, timeout) for p in self.running]
        self.running.clear()
        return codes

    def logs(self, tail: int = 4000) -> str:
        parts = []
        for path in sorted(self.log_dir.glob("worker-*.log")):
            parts.append(f"--- {path.name}\n{path.read_text(errors='replace')[-tail:]}")
        return "\n".join(parts)


def busy_pids() -> set[int]:
    """Pids of the ``process_queue`` processes holding a job in processing."""
    from jobqueue.models import QueueItem, Status

    claimed = QueueItem.objects.filter(status=Status.PROCESSING).values_list(
        "claimed_by", flat=True
    )
    # Worker ids are host:pid:random:wN.
    return {int(c.split(":")[1]) for c in claimed if c.count(":") >= 3}


def active_count() -> int:
    from jobqueue.models import QueueItem

    return QueueItem.objects.active().count()


def chaos(
    monkey: Monkey,
    seeder: Seeder,
    *,
    seconds: float,
    kill_every: tuple[float, float] = (2.0, 5.0),
    low_water: int = 50,
    top_up: int = 100,
    busy_only: bool = False,
) -> float:
    """Kill a random worker every ``kill_every`` s for ``seconds`` s, topping the queue
    up whenever fewer than ``low_water`` jobs wait; returns the phase's length."""
    started = time.monotonic()
    end = started + seconds
    next_kill = started + monkey.rng.uniform(*kill_every)
    while (now := time.monotonic()) < end:
        if monkey.crashed():
            raise RuntimeError(f"a worker exited on its own:\n{monkey.logs()}")
        if active_count() < low_water:
            seeder.add(top_up)
        if now >= next_kill:
            monkey.kill_one(busy_only=busy_only)
            next_kill = now + monkey.rng.uniform(*kill_every)
        time.sleep(0.2)
    return time.monotonic() - started


def drain(monkey: Monkey, timeout: float) -> float:
    """Wait (no more kills) until no job is pending, processing or retrying."""
    started = time.monotonic()

    def empty() -> bool:
        if monkey.crashed():
            raise RuntimeError(f"a worker exited on its own:\n{monkey.logs()}")
        return active_count() == 0

    wait_until(empty, timeout, interval=0.2)
    return time.monotonic() - started


@dataclass
class Report:
    """What the checks found; every ``*_bad`` list must be empty."""

    jobs: int = 0
    noop_jobs: int = 0
    corpus_jobs: int = 0
    completed: int = 0
    failed: int = 0
    interrupted: int = 0  # jobs with at least one lost (rescued) attempt
    rescued_attempts: int = 0
    # Lost attempts whose worker process had not been killed (heartbeat too late).
    rescued_from_live_workers: list[int] = field(default_factory=list)
    # Failed with "no retries left" because every attempt's process was killed.
    exhausted_by_kills: list[int] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)  # missing, or not finished
    stuck_processing: list[int] = field(default_factory=list)
    completed_twice: list[int] = field(default_factory=list)
    completed_twice_not_interrupted: list[int] = field(default_factory=list)
    inconsistent: list[str] = field(default_factory=list)
    failed_jobs: dict[str, int] = field(default_factory=dict)  # error type -> count

    def problems(self) -> list[str]:
        names = (
            "lost",
            "stuck_processing",
            "completed_twice",
            "completed_twice_not_interrupted",
            "inconsistent",
        )
        return [f"{n}: {getattr(self, n)[:20]}" for n in names if getattr(self, n)]


def lost_attempts(job_ids: Iterable[int]) -> dict[int, list[int]]:
    """Job id -> pids of the processes whose attempts at it were lost (rescued)."""
    from jobqueue.models import ExtractionMetric

    lost: dict[int, list[int]] = defaultdict(list)
    for job_id, worker_id in ExtractionMetric.objects.filter(
        job_id__in=list(job_ids),
        outcome__in=[ExtractionMetric.Outcome.RESCUED, ExtractionMetric.Outcome.FAILED],
        error_message__startswith="Attempt ",
    ).values_list("job_id", "worker_id"):
        # Worker ids are host:pid:random:wN.
        lost[job_id].append(int(worker_id.split(":")[1]))
    return lost


def verify(
    jobs: dict[int, str | None],
    rows: list[dict[str, str]],
    killed_pids: set[int] | None = None,
) -> Report:
    """Check every job and its document after the queue drained. With ``killed_pids``
    a job that failed only because all its attempts were killed is no problem."""
    from django.db.models import Count, Q

    from documents.models import Document
    from jobqueue.models import ExtractionMetric, QueueItem, Status

    report = Report(jobs=len(jobs))
    lost = lost_attempts(jobs)
    report.corpus_jobs = sum(1 for p in jobs.values() if p)
    report.noop_jobs = report.jobs - report.corpus_jobs
    items = {
        item.pk: item
        for item in QueueItem.objects.filter(pk__in=list(jobs)).annotate(
            done=Count(
                "metrics", filter=Q(metrics__outcome=ExtractionMetric.Outcome.COMPLETED)
            ),
        )
    }
    documents = Document.objects.in_bulk([i.document_id for i in items.values()])
    expected = {row["path"]: row for row in rows}
    results: dict[str, set] = defaultdict(set)
    failures: Counter[str] = Counter()
    for job_id, path in jobs.items():
        item = items.get(job_id)
        if item is None or item.status not in (Status.COMPLETED, Status.FAILED):
            report.lost.append(job_id)
            if item is not None and item.status == Status.PROCESSING:
                report.stuck_processing.append(job_id)
            continue
        report.completed += item.status == Status.COMPLETED
        report.failed += item.status == Status.FAILED
        if item.status == Status.FAILED:
            failures[item.error_type or "?"] += 1
        pids = lost.get(job_id, [])
        report.interrupted += bool(pids)
        report.rescued_attempts += len(pids)
        exhausted = item.status == Status.FAILED and len(pids) == item.attempts
        if killed_pids is not None:
            if set(pids) - killed_pids:
                report.rescued_from_live_workers.append(job_id)
            elif exhausted:
                report.exhausted_by_kills.append(job_id)
        if item.done > 1:
            report.completed_twice.append(job_id)
            if not pids:
                report.completed_twice_not_interrupted.append(job_id)
        document = documents[item.document_id]
        # A job whose every attempt was killed ends failed, whatever the file holds.
        row = expected.get(path) if path and not exhausted else None
        problem = _document_problem(item, document, row)
        if problem:
            report.inconsistent.append(f"job {job_id} ({path or 'noop'}): {problem}")
        if path and not exhausted:
            results[path].add(
                (document.status, document.error_type, len(document.text))
            )
    for path, outcomes in results.items():
        if len(outcomes) > 1:
            report.inconsistent.append(f"{path}: copies differ {sorted(outcomes)}")
    report.failed_jobs = dict(failures)
    return report


def _document_problem(item: Any, document: Any, row: dict[str, str] | None) -> str:
    """Why a document disagrees with its finished job (or the manifest), or ''."""
    from jobqueue.models import Status

    if document.status != item.status:
        return f"document {document.status}, job {item.status}"
    if item.status == Status.COMPLETED and item.done != 1:
        return f"completed with {item.done} completed attempts"
    if row is None:
        return ""
    expect = row["expect"]
    if expect == "ok" and item.status == Status.COMPLETED:
        if normalise(row["snippet"]) not in normalise(document.text):
            return "snippet missing from the text"
    elif expect == "ok" or (expect == "encrypted" and item.status != Status.FAILED):
        return f"{item.status} ({item.error_type}: {item.error_message[:80]})"
    return ""


# --- Command line -------------------------------------------------------------------


def run_one(vendor: str, args: argparse.Namespace) -> dict[str, Any]:
    """The whole chaos run on one fresh scratch database; returns its figures."""
    db = ScratchDB(vendor, f"bench_fire_chaos_{os.getpid()}")
    db.create()
    env = product_env(db.url, db.media_root, QUEUE_STALE_WORKER_SECONDS=STALE_SECONDS)
    setup_django(env)
    from django.contrib.auth import get_user_model
    from django.db import connections

    try:
        owner = get_user_model().objects.create_user("chaos")
        rows = load_corpus()
        seeder = Seeder(owner, rows, corpus_share=args.corpus_share)
        seeder.add(args.jobs)
        monkey = Monkey(env, db.tmp, rng=random.Random(args.seed))
        monkey.flags += ["--timeout", str(args.timeout)]
        began = time.monotonic()
        monkey.start_all()
        chaos_s = chaos(
            monkey, seeder, seconds=args.seconds, kill_every=args.kill_every
        )
        left = active_count()
        drain_s = drain(monkey, args.drain_timeout)
        total_s = time.monotonic() - began
        exit_codes = monkey.stop_all()
        report = verify(seeder.jobs, rows, monkey.killed_pids)
    finally:
        connections.close_all()
        db.drop()
    return {
        "database": vendor,
        "date": dt.date.today().isoformat(),
        "machine": machine(),
        "kills": monkey.kills,
        "processes_started": monkey.started,
        "groups_left_behind": monkey.groups_left_behind,
        "graceful_exit_codes": exit_codes,
        "chaos_seconds": round(chaos_s, 1),
        "active_when_kills_stopped": left,
        "drain_seconds": round(drain_s, 1),
        "jobs_per_second": round(report.jobs / total_s, 1),
        **asdict(report),
        "problems": report.problems()
        + [f"a survivor exited {code} on SIGTERM" for code in exit_codes if code != 0],
    }


def table(results: list[dict[str, Any]]) -> str:
    head = (
        "| database | jobs (corpus + noop) | kills | interrupted jobs (lost attempts) "
        "| lost | completed twice | stuck in processing | failed: by type "
        "| of which every attempt killed | rescued from a live worker | inconsistent "
        "| kill phase | drain after kills (jobs left) |\n"
        "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|"
    )
    lines = [head]
    for r in results:
        types = ", ".join(f"{k} {v}" for k, v in sorted(r["failed_jobs"].items()))
        lines.append(
            f"| {r['database']} | {r['jobs']:,} ({r['corpus_jobs']:,} + {r['noop_jobs']:,}) "
            f"| {r['kills']} | {r['interrupted']} ({r['rescued_attempts']}) "
            f"| {len(r['lost'])} | {len(r['completed_twice'])} "
            f"| {len(r['stuck_processing'])} | {r['failed']} ({types}) "
            f"| {len(r['exhausted_by_kills'])} | {len(r['rescued_from_live_workers'])} "
            f"| {len(r['inconsistent'])} | {r['chaos_seconds']} s "
            f"| {r['drain_seconds']} s ({r['active_when_kills_stopped']}) |"
        )
    return "\n".join(lines)


def run_and_report(
    args: argparse.Namespace,
    run: Callable[[str], dict[str, Any]],
    title: str,
    table: Callable[[list[dict[str, Any]]], str],
    notes: Callable[[dict[str, Any]], list[str]] = lambda result: [],
) -> int:
    """Run on one database, or with ``--db both`` on each in its own process; print
    the table (or one JSON object) and exit 1 if any check failed."""
    if args.db == "both":
        results = []
        for vendor in ("sqlite", "postgres"):
            cmd = [PYTHON, sys.argv[0], *sys.argv[1:], "--db", vendor, "--json"]
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode not in (0, 1) or not done.stdout.strip():
                sys.stderr.write(done.stderr)
                return 2
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    else:
        results = [run(args.db)]
    if args.json:
        print(json.dumps(results[0], default=str))
    else:
        print(f"{title}, {dt.date.today()}, {machine()}")
        print(table(results))
        for r in results:
            for line in [*notes(r), *r["problems"]]:
                print(f"{r['database']}: {line}")
    return 1 if any(r["problems"] for r in results) else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--jobs", type=int, default=2000, help="jobs queued up front")
    parser.add_argument("--seconds", type=float, default=60, help="kill phase length")
    parser.add_argument(
        "--kill-every", type=float, nargs=2, default=(2.0, 5.0), metavar=("MIN", "MAX")
    )
    parser.add_argument("--corpus-share", type=float, default=0.5)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--drain-timeout", type=float, default=600)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    return run_and_report(
        args, lambda vendor: run_one(vendor, args), "Chaos run", table
    )


if __name__ == "__main__":
    sys.exit(main())
