"""Shared plumbing of the queue benchmarks: scratch databases, processes, results.

Runs in the product's venv and imports nothing from Django: the product and the peers
run in their own processes (the peers from bench/.venv-peers), and this side only
starts them, watches the database with plain SQL and writes the figures down.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import re
import shlex
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PRODUCT_PY = Path(sys.executable)
PEERS_DIR = BENCH / "peers"
PEERS_VENV = BENCH / ".venv-peers"
PEERS_PY = PEERS_VENV / "bin" / "python"
RESULTS = BENCH / "RESULTS.md"
CORPUS = Path(os.environ.get("BENCH_CORPUS", ROOT.parent / "shared" / "corpus"))
PG_HOST = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379


# This sandbox sets PYTHONDONTWRITEBYTECODE; a deployment has its .pyc files, and
# recompiling every module at each start would inflate every start-up alike.
NOT_INHERITED = {"PYTHONDONTWRITEBYTECODE", "DATABASE_URL", "MEDIA_ROOT", "PYTHONPATH"}

# --- Environments ---------------------------------------------------------------------


def ensure_peers() -> Path:
    """Create or update bench/.venv-peers (setup.sh is a no-op when up to date)."""
    subprocess.run(
        ["bash", str(PEERS_DIR / "setup.sh")], check=True, stdout=subprocess.DEVNULL
    )
    return PEERS_PY


def product_env(db_url: str, media_root: Path | str, **extra: str) -> dict[str, str]:
    """Environment for our manage.py: production settings, quiet logs."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "QUEUE_", "SQLITE_")) and k not in NOT_INHERITED
    }
    env.update(
        DATABASE_URL=db_url,
        SECRET_KEY="bench-only-secret-key",  # noqa: S106 - scratch databases only
        DEBUG="0",
        MEDIA_ROOT=str(media_root),
        LOG_LEVEL="WARNING",
        # One bench user stands for many people: lift the per-user limits.
        UPLOAD_RATE="1000000/minute",
        API_RATE="1000000/minute",
        # Extraction alone is measured: no thumbnail job after each document.
        THUMBNAILS="0",
        USER_MAX_ACTIVE_JOBS="1000000",
        PYTHONPATH=str(ROOT),
        DJANGO_SETTINGS_MODULE="config.settings",
        **extra,
    )
    return env


def peers_env(db_url: str = "sqlite:////dev/null") -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("DJANGO_") and k not in NOT_INHERITED
    }
    env.update(
        DATABASE_URL=db_url,
        PYTHONPATH=str(PEERS_DIR),
        DJANGO_SETTINGS_MODULE="peersite.settings",
    )
    return env


def product_ops(env: dict[str, str], *args: Any, timeout: float = 600) -> str:
    """Run one bench/product_ops.py action against the product; returns its stdout."""
    return _run([PRODUCT_PY, BENCH / "product_ops.py", *args], env, timeout)


def peer_ops(env: dict[str, str], *args: Any, timeout: float = 600) -> str:
    return _run([PEERS_PY, PEERS_DIR / "ops.py", *args], env, timeout)


def _run(cmd: Sequence[Any], env: dict[str, str], timeout: float) -> str:
    done = subprocess.run(
        [str(c) for c in cmd],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode:
        raise RuntimeError(
            f"{shlex.join(map(str, cmd))} failed ({done.returncode}):\n{done.stderr[-3000:]}"
        )
    return done.stdout


def run_child(script: str, *args: Any) -> dict[str, Any]:
    """``script --child ARGS…`` in this interpreter, its log (stderr) shown as it
    runs: the figures it printed last, as JSON. A failed child ends the run."""
    cmd = [sys.executable, script, "--child", *map(str, args)]
    done = subprocess.run(cmd, check=False, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    if done.returncode:
        sys.exit(f"{shlex.join(cmd[1:])} failed ({done.returncode})")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- Scratch databases ----------------------------------------------------------------


def pg_admin() -> psycopg.Connection:
    return psycopg.connect(f"{PG_HOST}/postgres", autocommit=True)


def pg_drop(name: str) -> None:
    _check_name(name)
    with pg_admin() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _check_name(name: str) -> None:
    # Never touch anyone else's database: ours all start with bench_.
    if not re.fullmatch(r"bench_[a-z0-9_]+", name):
        raise ValueError(f"refusing to manage database {name!r}")


@dataclass
class ScratchDB:
    """A migrated template, and a fresh copy of it for every run.

    SQLite: files in a temporary directory. PostgreSQL: ``<name>_tpl`` and ``<name>``,
    created and dropped here.
    """

    vendor: str  # "sqlite" | "postgres"
    name: str  # bench_...
    migrate: Callable[[str], None]  # runs the migrations against a URL
    tmp: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="bench-")))
    _ready: bool = False

    @property
    def url(self) -> str:
        if self.vendor == "sqlite":
            return f"sqlite:///{self.tmp / (self.name + '.sqlite3')}"
        return f"{PG_HOST}/{self.name}"

    @property
    def path(self) -> Path:
        return self.tmp / (self.name + ".sqlite3")

    def _template_url(self) -> str:
        if self.vendor == "sqlite":
            return f"sqlite:///{self.tmp / (self.name + '_tpl.sqlite3')}"
        return f"{PG_HOST}/{self.name}_tpl"

    def fresh(self) -> str:
        """Drop the previous run's database, make a new one from the template."""
        _check_name(self.name)
        if not self._ready:
            self._make_template()
        if self.vendor == "sqlite":
            for suffix in ("", "-wal", "-shm"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)
            src = sqlite3.connect(self._template_url().removeprefix("sqlite:///"))
            dst = sqlite3.connect(self.path)
            src.backup(dst)
            src.close()
            dst.close()
        else:
            pg_drop(self.name)
            with pg_admin() as conn:
                conn.execute(
                    f'CREATE DATABASE "{self.name}" TEMPLATE "{self.name}_tpl"'
                )
        return self.url

    def _make_template(self) -> None:
        if self.vendor == "postgres":
            pg_drop(self.name + "_tpl")
            with pg_admin() as conn:
                conn.execute(f'CREATE DATABASE "{self.name}_tpl"')
        self.migrate(self._template_url())
        self._ready = True

    def drop(self) -> None:
        if self.vendor == "postgres":
            pg_drop(self.name)
            pg_drop(self.name + "_tpl")
        for path in self.tmp.glob(self.name + "*"):
            path.unlink()
        with contextlib.suppress(OSError):
            self.tmp.rmdir()  # only when empty: a caller's directory may hold more

    @contextlib.contextmanager
    def connect(self) -> Iterator[Callable[[str], Any]]:
        """A plain connection for watching; yields ``scalar(sql)``."""
        if self.vendor == "sqlite":
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)

            def scalar(sql: str) -> Any:
                return conn.execute(sql).fetchone()[0]

            try:
                yield scalar
            finally:
                conn.close()
        else:
            pconn = psycopg.connect(self.url, autocommit=True)

            def scalar(sql: str) -> Any:
                return pconn.execute(sql).fetchone()[0]  # type: ignore[index]

            try:
                yield scalar
            finally:
                pconn.close()


def migrate_product(url: str) -> None:
    _run(
        [PRODUCT_PY, ROOT / "manage.py", "migrate", "--noinput", "-v0"],
        product_env(url, tempfile.gettempdir()),
        300,
    )


def migrate_peers(url: str) -> None:
    _run(
        [PEERS_PY, PEERS_DIR / "manage.py", "migrate", "--noinput", "-v0"],
        peers_env(url),
        300,
    )


# --- Redis (a few commands, so the product's venv needs no client) --------------------


def redis(db: int, *command: str) -> Any:
    """Run one Redis command on database ``db``; returns the parsed reply."""
    with socket.create_connection((REDIS_HOST, REDIS_PORT), timeout=10) as sock:
        stream = sock.makefile("rwb")
        for cmd in (("SELECT", str(db)), command):
            stream.write(f"*{len(cmd)}\r\n".encode())
            for arg in cmd:
                data = arg.encode()
                stream.write(b"$%d\r\n%s\r\n" % (len(data), data))
        stream.flush()
        _read_reply(stream)
        return _read_reply(stream)


def _read_reply(stream: Any) -> Any:
    line = stream.readline().rstrip(b"\r\n")
    kind, rest = line[:1], line[1:]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        size = int(rest)
        if size < 0:
            return None
        data = stream.read(size + 2)[:-2]
        return data.decode()
    if kind == b"*":
        return [_read_reply(stream) for _ in range(int(rest))]
    raise RuntimeError(f"unexpected Redis reply {line!r}")


# --- Processes ------------------------------------------------------------------------


def start(
    cmd: Sequence[Any], env: dict[str, str], log: Path, cwd: Path = ROOT
) -> subprocess.Popen:
    """Start a worker in its own process group, output to ``log``."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            [str(c) for c in cmd],
            env=env,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop(procs: Sequence[subprocess.Popen], timeout: float = 30) -> None:
    """SIGTERM each worker (graceful stop), then SIGKILL its group if it lingers."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for proc in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(max(0.1, deadline - time.monotonic()))
    for proc in procs:
        # The group holds the worker's children (pools, forkservers) too.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def wait_until(
    probe: Callable[[], Any],
    done: Callable[[Any], bool],
    timeout: float,
    interval: float = 0.01,
    procs: Sequence[subprocess.Popen] = (),
) -> tuple[float, Any]:
    """Poll ``probe`` until ``done(value)``; returns (wall-clock time, value)."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if done(value):
            return time.time(), value
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up after {timeout:g} s (last value {value!r})")
        for proc in procs:
            if proc.poll() is not None:
                raise RuntimeError(f"worker exited early with {proc.returncode}")
        time.sleep(interval)


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children.get(current, []))
    return tree


def cpu_seconds(pids: Sequence[int]) -> float:
    """CPU time (user + system) of these processes and their reaped children."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
    return total / os.sysconf("SC_CLK_TCK")


def run_delay(pids: Sequence[int]) -> float:
    """Seconds these (live) processes spent runnable but waiting for a CPU: how much
    the machine's other load held them back (/proc/PID/schedstat)."""
    total = 0
    for pid in pids:
        for task in _tasks(pid):
            with (
                contextlib.suppress(OSError, ValueError, IndexError),
                open(f"/proc/{pid}/task/{task}/schedstat") as f,
            ):
                total += int(f.read().split()[1])
    return total / 1e9


def thread_times(pid: int) -> dict[int, tuple[int, int]]:
    """Each live thread of ``pid``: nanoseconds spent on a CPU, and how many times it
    was put on one (its wake-ups), from /proc/PID/task/TID/schedstat."""
    times = {}
    for task in _tasks(pid):
        with (
            contextlib.suppress(OSError, ValueError, IndexError),
            open(f"/proc/{pid}/task/{task}/schedstat") as f,
        ):
            on_cpu, _, slices = (int(v) for v in f.read().split()[:3])
            times[int(task)] = on_cpu, slices
    return times


def _tasks(pid: int) -> list[str]:
    try:
        return os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []


def wait_quiet(max_load: float, timeout: float = 600) -> float:
    """Wait (up to ``timeout``) for the 1-minute load average to fall below
    ``max_load``: other people's test runs share the machine. Returns the load."""
    deadline = time.monotonic() + timeout
    while (load := os.getloadavg()[0]) >= max_load and time.monotonic() < deadline:
        time.sleep(5)
    return load


def rss_kb(pid: int) -> int:
    """Resident set size of one process in KiB (0 if it has gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


# --- Reporting ------------------------------------------------------------------------


def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---:" if i else "---" for i in range(len(headers))) + "|",
    ]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def fmt(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def command_line() -> str:
    """The command that produced the figures, as it can be pasted."""
    return shlex.join(["python", *[str(a) for a in sys.argv]]).replace(
        str(ROOT) + "/", ""
    )


def machine() -> str:
    cpu = "unknown CPU"
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB RAM, Python {sys.version.split()[0]}"


def record(title: str, body: str, part: str = "Queue") -> None:
    """Put ``### title`` with ``body`` under ``## part`` in RESULTS.md, replacing the
    previous figures of that section and leaving everything else as it was."""
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    lines = text.splitlines(keepends=True)
    heads = [i for i, line in enumerate(lines) if line.rstrip() == f"## {part}"]
    if not heads:
        lines += ["\n", f"## {part}\n"]
        heads = [len(lines) - 1]
    start = heads[0]
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")),
        len(lines),
    )
    intro, *sections = re.split(r"(?m)^(?=### )", "".join(lines[start + 1 : end]))
    section = f"### {title}\n\n{body.strip()}\n"
    for i, old in enumerate(sections):
        if old.startswith(f"### {title}\n"):
            sections[i] = section
            break
    else:
        sections.append(section)
    queue = (intro.rstrip("\n") + "\n\n") if intro.strip() else "\n"
    queue += "\n".join(s.rstrip("\n") + "\n" for s in sections)
    rest = "".join(lines[end:])
    RESULTS.write_text(
        "".join(lines[: start + 1]) + queue + ("\n" + rest if rest else "")
    )


PRODUCT_PATHS = ("jobqueue", "documents", "config")


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True
    ).stdout


def _local_edits() -> tuple[str, str]:
    """(tracked diff against HEAD, untracked file names) of the product's code."""
    return (
        _git("diff", "HEAD", "--", *PRODUCT_PATHS),
        _git("ls-files", "--others", "--exclude-standard", "--", *PRODUCT_PATHS),
    )


def code_digest() -> str:
    """A digest of the product's code as it is on disk, commits aside."""
    diff, untracked = _local_edits()
    digest = hashlib.sha256(_git("ls-files", "-s", "--", *PRODUCT_PATHS).encode())
    digest.update(diff.encode())
    for name in sorted(untracked.split()):
        with contextlib.suppress(OSError):
            digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()


def revision() -> str:
    """The product code measured: its commit, plus a digest of any local edits."""
    head = _git("rev-parse", "--short", "HEAD").strip() or "unknown"
    diff, untracked = _local_edits()
    if not diff and not untracked.strip():
        return f"commit {head}"
    return f"commit {head} + local edits {code_digest()[:8]}"


def header(load_before: float, revision_before: tuple[str, str]) -> str:
    """First line of every recorded section: when, where, what code, how busy.
    ``revision_before`` is ``(revision(), code_digest())`` taken at the start."""
    named, digest = revision_before
    code = named
    if code_digest() != digest:
        code = f"{named} → {revision()} (PRODUCT CODE CHANGED DURING THE RUN)"
    return (
        f"Run {stamp()} on {machine()}, product at {code}; load average "
        f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after (the 2 cores are "
        "shared with other engineers' test runs)."
    )


def stamp() -> str:
    return dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
