"""Soak run: a real ``process_queue --workers 2`` for minutes under a realistic mix,
watched for anything that grows without bound or is left behind.

The pool works through corpus documents (broken ones included), generated scans that
need OCR, a document whose extraction hangs past ``--timeout`` (its child is killed),
one that kills its child, ``@task`` jobs, cancels, stops and reprocesses of jobs under
way, one SIGKILL of the pool and a restart (its jobs rescued), and the operators'
pause switch. Every ``--interval`` seconds it samples the pool: memory (the worker
and each extraction child), open file descriptors by kind, threads, children and
zombies, the temporary files and folders the product keeps (the pool's TMPDIR is a
folder of its own), SQLite's -wal and -shm, the pool's PostgreSQL connections and
the log's size. At the end it checks the state: every job finished as the manifest
says, none stuck, no orphan row or file, nothing left in the pool's TMPDIR.

    python bench/soak.py                          # 8 minutes on SQLite
    python bench/soak.py --db postgres --minutes 3

Exits 1 when a check fails. Scratch databases and folders are removed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import chaos
import common
from chaos import PYTHON, ROOT, Seeder

# The extraction the tests use: misbehaves as a file's first bytes say.
MISBEHAVING = "tests.extractors_for_tests.extract"
POOL_FLAGS = ["--workers", "2", "--heartbeat-interval", "2", "--poll-interval", "0.5"]
STALE_SECONDS = "6"  # the killed pool's jobs are rescued this long after its death
FINAL_STATES = {"completed", "failed", "cancelled"}


# --- The stream ---------------------------------------------------------------------


def generated_rows(folder: Path) -> dict[str, dict[str, str]]:
    """Files the corpus lacks, as manifest rows: scans that need OCR, a hang past
    the timeout (after reporting a page), a child that dies. Their paths are
    absolute, so the seeder's ``CORPUS / path`` is the path itself."""
    from tests.files import image_bytes, scan_pdf_bytes, text_image

    folder.mkdir(parents=True, exist_ok=True)
    lines = ["Soak scan of the queue", "Invoice 4711 paid in full"]
    files = {
        "scan_png": ("scan.png", image_bytes(text_image(lines)), "ok", "Invoice 4711"),
        "scan_pdf": (
            "scan.pdf",
            scan_pdf_bytes([text_image(lines)]),
            "ok",
            "Invoice 4711",
        ),
        "hang": ("hang.txt", b"hang-after:1\n", "timeout", ""),
        "crash": ("crash.txt", b"exit\n", "crash", ""),
    }
    rows = {}
    for key, (name, data, expect, snippet) in files.items():
        path = folder / name
        path.write_bytes(data)
        rows[key] = {"path": str(path), "expect": expect, "snippet": snippet}
    return rows


class Stream:
    """Feeds the pool and steers it as people and operators would."""

    def __init__(self, owner: Any, extra: dict[str, dict[str, str]]) -> None:
        # A seeder cycles through its rows and stores each file once.
        self.corpus = Seeder(owner, chaos.load_corpus(), corpus_share=1.0)
        self.generated = {
            key: Seeder(owner, [row], corpus_share=1.0) for key, row in extra.items()
        }
        self.extra = extra
        self.rng = random.Random(7)
        self.tasks: list[Any] = []
        self.touched: set[int] = set()  # jobs cancelled, stopped or reprocessed
        self.counts: Counter[str] = Counter()
        self.killed_pid = 0

    @property
    def jobs(self) -> dict[int, str | None]:
        """Every document job queued: job id -> its file's manifest path."""
        jobs = dict(self.corpus.jobs)
        for seeder in self.generated.values():
            jobs.update(seeder.jobs)
        return jobs

    def feed(self, tick: int) -> None:
        """One round of arrivals: corpus files, a scan, tasks; now and then a hang
        and a crash."""
        from bench.bench_tasks import noop

        added = self.corpus.add(3)
        if tick % 3 == 0:
            added += self.generated["scan_png" if tick % 2 else "scan_pdf"].add(1)
        if tick % 100 == 5:  # each costs a worker its timeout, four times
            added += self.generated["hang"].add(1) + self.generated["crash"].add(1)
        self.counts["documents"] += len(added)
        for _ in range(4):
            self.tasks.append(noop.enqueue().id)
        self.counts["tasks"] += 4

    def meddle(self) -> None:
        """Cancel a waiting job, stop a running extraction, reprocess a document."""
        from documents.models import Document
        from documents.services import document_reprocess
        from jobqueue.models import QueueItem, Status
        from jobqueue.services import QueueManager

        mine = QueueItem.objects.filter(pk__in=list(self.jobs))
        waiting = list(
            mine.filter(status=Status.PENDING).values_list("pk", flat=True)[:20]
        )
        if waiting:
            job = self.rng.choice(waiting)
            self.counts["cancelled"] += len(QueueManager().cancel_many([job]))
            self.touched.add(job)
        running = list(
            mine.filter(status=Status.PROCESSING).values_list("pk", flat=True)
        )
        if running:
            job = self.rng.choice(running)
            self.counts["stopped"] += len(QueueManager().stop_many([job]))
            self.touched.add(job)
        # A finished document and one under way (the queue skips the latter).
        for status in (Status.COMPLETED, Status.PROCESSING):
            item = mine.filter(status=status).order_by("?").first()
            if item is None:
                continue
            document = Document.objects.get(pk=item.document_id)
            new = document_reprocess(document=document)
            self.touched.add(item.pk)
            if new is not None:
                self.touched.add(new)
                self.counts["reprocessed"] += 1


# --- Sampling -----------------------------------------------------------------------


def fd_kinds(pid: int) -> Counter[str]:
    """The open file descriptors of ``pid`` by kind."""
    kinds: Counter[str] = Counter()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith(("socket:", "pipe:")):
                kinds[target.split(":")[0]] += 1
            elif target.startswith("anon_inode:"):
                kinds[target.removeprefix("anon_inode:").strip("[]")] += 1
            elif ".sqlite3" in target:
                kinds["db"] += 1
            elif target.startswith("/dev/"):
                kinds["dev"] += 1
            else:
                kinds["file"] += 1
    return kinds


def proc_state(pid: int) -> tuple[str, int]:
    """(state letter, threads) of a process; ("", 0) once gone."""
    state, threads = "", 0
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("State:"):
                state = line.split()[1]
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return state, threads


def tree_size(path: Path) -> tuple[int, int]:
    """(entries, bytes) below ``path``."""
    entries = size = 0
    for root, dirs, files in os.walk(path):
        entries += len(dirs) + len(files)
        for name in files:
            with contextlib.suppress(OSError):
                size += os.lstat(os.path.join(root, name)).st_size
    return entries, size


def temp_leftovers(tmp: Path) -> dict[str, int]:
    """What the product keeps in its TMPDIR: progress folders and their files,
    copies of remote files, anything else."""
    found: Counter[str] = Counter()
    with contextlib.suppress(OSError):
        for entry in tmp.iterdir():
            if entry.name.startswith("docqueue-progress-"):
                found["progress dirs"] += 1
                for inside in entry.iterdir():
                    if inside.name.startswith("child-"):  # a child's temp folder
                        found["child dirs"] += 1
                        found["child files"] += tree_size(inside)[0]
                    elif inside.name != "multiprocessing":  # the link to pymp-*
                        found["progress files"] += 1
            elif entry.name == "docqueue-copies":
                found["copies"] += tree_size(entry)[0]
            elif entry.name.startswith("pymp-"):
                found["pymp dirs"] += 1  # multiprocessing's own (forkserver socket)
            else:
                found["other"] += 1 + (tree_size(entry)[0] if entry.is_dir() else 0)
    return dict(found)


def wal_frames_behind(path: Path) -> int | None:
    """Pages written to SQLite's WAL and not yet copied back into the database: a
    figure that keeps growing means readers starve the checkpoints. Read from the
    wal-index header in -shm (mxFrame, then the checkpoint's nBackfill)."""
    try:
        with open(f"{path}-shm", "rb") as fh:
            head = fh.read(100)
    except OSError:
        return None
    if len(head) < 100:
        return None
    written = int.from_bytes(head[16:20], sys.byteorder)
    copied = int.from_bytes(head[96:100], sys.byteorder)
    return written - copied


class Sampler:
    """One row of figures every interval, about the pool running now."""

    def __init__(self, db: chaos.ScratchDB, tmp: Path, log: Path) -> None:
        self.db, self.tmp, self.log = db, tmp, log
        self.rows: list[dict[str, Any]] = []
        self.t0 = time.monotonic()

    def sample(self, pool: subprocess.Popen, note: str = "") -> dict[str, Any]:
        from jobqueue.models import QueueItem

        tree = common.process_tree(pool.pid)
        children = tree[1:]
        states = {pid: proc_state(pid) for pid in tree}
        fds = fd_kinds(pool.pid)
        row: dict[str, Any] = {
            "t": round(time.monotonic() - self.t0),
            "finished": QueueItem.objects.filter(status__in=FINAL_STATES).count(),
            "rss": common.rss_kb(pool.pid) // 1024,
            "child_rss": sorted(
                (common.rss_kb(pid) // 1024 for pid in children), reverse=True
            ),
            "fds": sum(fds.values()),
            "fd_kinds": dict(fds),
            "threads": states[pool.pid][1],
            "children": len(children),
            "zombies": sum(1 for s, _ in states.values() if s == "Z"),
            "temp": temp_leftovers(self.tmp),
            "log_kb": self.log.stat().st_size // 1024 if self.log.exists() else 0,
            "note": note,
        }
        row.update(self.database())
        self.rows.append(row)
        return row

    def database(self) -> dict[str, Any]:
        from django.db import connection

        if self.db.vendor == "sqlite":
            path = Path(self.db.url.removeprefix("sqlite:///"))
            sizes = {}
            for suffix in ("wal", "shm"):
                with contextlib.suppress(OSError):
                    sizes[suffix] = Path(f"{path}-{suffix}").stat().st_size // 1024
            return {
                "wal_kb": sizes.get("wal", 0),
                "shm_kb": sizes.get("shm", 0),
                "wal_behind": wal_frames_behind(path),
            }
        with connection.cursor() as cursor:
            # Every other session on the scratch database is the pool's.
            cursor.execute(
                "SELECT count(*), count(*) FILTER (WHERE state = 'idle in transaction'),"
                " coalesce(max(extract(epoch FROM now() - xact_start)), 0)"
                " FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            conns, idle_tx, oldest = cursor.fetchone()
        return {"pg_conns": conns, "pg_idle_tx": idle_tx, "pg_oldest_s": float(oldest)}


def table(rows: list[dict[str, Any]], vendor: str) -> str:
    headers = [
        "t (s)",
        "jobs done",
        "worker RSS (MiB)",
        "children RSS (MiB)",
        "fds (kinds)",
        "threads",
        "children",
        "zombies",
        "temp left",
    ]
    headers += (
        ["WAL / SHM (KiB), WAL pages not checkpointed"]
        if vendor == "sqlite"
        else ["PG conns (idle in tx, oldest tx s)"]
    )
    headers += ["log (KiB)", "event"]
    body = []
    for r in rows:
        kinds = " ".join(f"{k} {v}" for k, v in sorted(r["fd_kinds"].items()))
        temp = " ".join(f"{k} {v}" for k, v in sorted(r["temp"].items())) or "0"
        db = (
            f"{r['wal_kb']:,} / {r['shm_kb']}, {r['wal_behind']}"
            if vendor == "sqlite"
            else f"{r['pg_conns']} ({r['pg_idle_tx']}, {r['pg_oldest_s']:.1f})"
        )
        body.append(
            [
                r["t"],
                r["finished"],
                r["rss"],
                "/".join(map(str, r["child_rss"])) or "—",
                f"{r['fds']} ({kinds})",
                r["threads"],
                r["children"],
                r["zombies"],
                temp,
                db,
                f"{r['log_kb']:,}",
                r["note"],
            ]
        )
    return common.md_table(headers, body)


# --- End state ----------------------------------------------------------------------


def end_state(stream: Stream, media: Path) -> list[str]:
    """What is wrong once the pool has drained and stopped."""
    from django.db.models import Q

    from documents.models import Document
    from jobqueue.models import ExtractionMetric, QueueItem, Status, WorkerHeartbeat

    problems = []
    plain = {
        job: path for job, path in stream.jobs.items() if job not in stream.touched
    }
    rows = [*stream.corpus.rows, *stream.extra.values()]
    report = chaos.verify(plain, rows)
    problems += report.problems()
    expected = {row["path"]: row["expect"] for row in stream.extra.values()}
    for job, path in plain.items():
        item = QueueItem.objects.get(pk=job)
        want = expected.get(path)
        if want == "timeout" and (item.status, item.error_type) != (
            "failed",
            "timeout",
        ):
            problems.append(f"hang job {job}: {item.status} {item.error_type}")
        if want == "crash" and (item.status, item.error_type) != ("failed", "unknown"):
            problems.append(f"crash job {job}: {item.status} {item.error_type}")
    unfinished = QueueItem.objects.exclude(status__in=FINAL_STATES)
    if unfinished.exists():
        problems.append(
            "jobs not finished: "
            + ", ".join(str(i) for i in unfinished.values_list("pk", "status")[:20])
        )
    failed_tasks = QueueItem.objects.filter(pk__in=stream.tasks).exclude(
        status=Status.COMPLETED
    )
    if failed_tasks.exists():
        problems.append(f"tasks not completed: {failed_tasks.count()}")
    orphans = ExtractionMetric.objects.filter(job__isnull=True).count()
    orphans += QueueItem.objects.filter(
        Q(document__isnull=True) & ~Q(operation="task")
    ).count()
    if orphans:
        problems.append(f"orphan rows: {orphans}")
    # The killed pool's rows stay as it left them (see killed_heartbeats).
    live = WorkerHeartbeat.objects.exclude(
        status=WorkerHeartbeat.State.STOPPED
    ).exclude(worker_id__contains=f":{stream.killed_pid}:")
    if live.exists():
        problems.append(
            "heartbeats not stopped: "
            + ", ".join(f"{w} {s}" for w, s in live.values_list("worker_id", "status"))
        )
    names = set(Document.objects.values_list("file", flat=True))
    names |= {n for n in Document.objects.values_list("thumbnail", flat=True) if n}
    stray = [
        p.relative_to(media).as_posix()
        for p in media.rglob("*")
        if p.is_file() and p.relative_to(media).as_posix() not in names
    ]
    if stray:
        problems.append(f"files no document names: {stray[:10]}")
    return problems


def killed_heartbeats(pid: int) -> list[str]:
    """The killed pool's heartbeat rows: housekeeping deletes only stopped workers'
    rows, so a killed worker's stay for good."""
    from jobqueue.models import WorkerHeartbeat

    rows = WorkerHeartbeat.objects.filter(worker_id__contains=f":{pid}:").exclude(
        status=WorkerHeartbeat.State.STOPPED
    )
    return [
        f"heartbeat of the killed pool left {status}: {worker}"
        for worker, status in rows.values_list("worker_id", "status")
    ]


# --- The run --------------------------------------------------------------------------


def start_pool(env: dict[str, str], log: Path, timeout: float) -> subprocess.Popen:
    cmd = [PYTHON, "manage.py", "process_queue", *POOL_FLAGS, "--timeout", str(timeout)]
    return chaos.start_group(cmd, env, log)


def run(args: argparse.Namespace) -> tuple[str, list[str], dict[str, Any]]:
    db = chaos.ScratchDB(args.db, f"bench_fire_soak_{os.getpid()}")
    tmp = db.tmp / "tmp"
    tmp.mkdir(parents=True)
    log = db.tmp / "pool.log"
    env = chaos.product_env(
        db.url,
        db.media_root,
        QUEUE_EXTRACT_FUNCTION=MISBEHAVING,
        QUEUE_STALE_WORKER_SECONDS=STALE_SECONDS,
        TMPDIR=str(tmp),
        LOG_LEVEL="INFO",
        PYTHONPATH=str(ROOT),
    )
    db.create()
    chaos.setup_django({k: v for k, v in env.items() if k != "TMPDIR"})
    from django.contrib.auth import get_user_model
    from django.db import connections

    from jobqueue.models import QueueControl, QueueItem

    sampler = Sampler(db, tmp, log)
    problems: list[str] = []
    notes: list[str] = []
    pools: list[subprocess.Popen] = []
    try:
        owner = get_user_model().objects.create_user("soak")
        stream = Stream(owner, generated_rows(db.tmp / "generated"))
        pools.append(start_pool(env, log, args.timeout))
        seconds = args.minutes * 60
        kill_at, pause_at = seconds * 0.4, seconds * 0.6
        killed = paused = False
        began = time.monotonic()
        next_sample = began
        tick = 0
        while (elapsed := time.monotonic() - began) < seconds:
            pool = pools[-1]
            if pool.poll() is not None:
                raise RuntimeError(f"the pool exited ({pool.returncode})")
            note = ""
            if QueueItem.objects.active().count() < 40:
                stream.feed(tick)
            if tick % 7 == 3:
                stream.meddle()
            if not killed and elapsed >= kill_at:
                os.kill(pool.pid, signal.SIGKILL)
                pool.wait()
                stream.killed_pid = pool.pid
                # Its children die with it (zombies until init reaps them aside).
                with contextlib.suppress(TimeoutError):
                    chaos.wait_until(
                        lambda: not chaos.group_alive(stream.killed_pid), 10
                    )
                if chaos.group_alive(stream.killed_pid):
                    problems.append("processes of the killed pool still run")
                pools.append(start_pool(env, log, args.timeout))
                killed, note = True, "SIGKILL + restart"
            if not paused and elapsed >= pause_at:
                QueueControl.set_paused(True, by="soak")
                time.sleep(15)
                QueueControl.set_paused(False, by="soak")
                paused, note = True, "paused 15 s"
            if time.monotonic() >= next_sample or note:
                row = sampler.sample(pools[-1], note)
                print(_line(row), flush=True)
                next_sample = time.monotonic() + args.interval
            tick += 1
            time.sleep(2)
        # No more arrivals: the pool finishes what is queued (retries included).
        drain_by = time.monotonic() + args.drain_minutes * 60
        while QueueItem.objects.active().exists():
            if time.monotonic() > drain_by:
                problems.append("the queue did not drain in time")
                break
            if pools[-1].poll() is not None:
                raise RuntimeError(f"the pool exited ({pools[-1].returncode})")
            if time.monotonic() >= next_sample:
                print(_line(sampler.sample(pools[-1], "draining")), flush=True)
                next_sample = time.monotonic() + args.interval
            time.sleep(1)
        print(_line(sampler.sample(pools[-1], "drained")), flush=True)
        code = chaos.stop_group(pools[-1])
        if code != 0:
            problems.append(f"the pool exited {code} on SIGTERM")
        left = temp_leftovers(tmp)
        if left:
            problems.append(f"left in the pool's TMPDIR after its stop: {left}")
        problems += end_state(stream, db.media_root)
        notes = killed_heartbeats(stream.killed_pid)
        counts = dict(stream.counts, jobs=QueueItem.objects.count())
    except Exception:
        print(log.read_text(errors="replace")[-4000:], file=sys.stderr)
        raise
    finally:
        for pool in pools:
            chaos.kill_group(pool)
        connections.close_all()
        db.drop()
    return table(sampler.rows, args.db), problems, notes, counts


def _line(row: dict[str, Any]) -> str:
    keys = ("t", "finished", "rss", "child_rss", "fds", "threads", "zombies", "temp")
    extra = {k: row[k] for k in row if k.startswith(("wal", "shm", "pg_"))}
    return " ".join(f"{k}={row[k]}" for k in keys) + f" {extra} {row['note']}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--minutes", type=float, default=8)
    parser.add_argument("--drain-minutes", type=float, default=5)
    parser.add_argument(
        "--timeout",
        type=float,
        default=15,
        help="the pool's extraction timeout (OCR must fit on a busy machine)",
    )
    parser.add_argument("--interval", type=float, default=10, help="sampling, s")
    args = parser.parse_args()
    figures, problems, notes, counts = run(args)
    print(f"\nSoak run, {args.db}, {common.stamp()}, {common.machine()}")
    print(f"Command: `{common.command_line()}`")
    print(", ".join(f"{k} {v}" for k, v in counts.items()))
    print(figures)
    for note in notes:
        print(f"NOTE: {note}")
    for problem in problems:
        print(f"PROBLEM: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
