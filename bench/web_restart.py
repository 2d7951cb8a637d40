"""Web restart: SIGKILL gunicorn (master and workers) while uploads stream in, restart it.

Clients upload corpus files to ``POST /api/documents/`` with a token, the body sent in
throttled chunks so kills land mid-request; every few seconds gunicorn's whole process
group is SIGKILLed and started again. Afterwards: every accepted upload (202) has its
row; every ``Document`` row has its stored file (same size and sha256) and its queue
item; files stored without a row (upload killed between storing the file and its
commit) are counted and removed with ``manage.py check_storage``; then a worker
processes everything that was accepted.

    python bench/web_restart.py --db both
    python bench/web_restart.py --db sqlite --kills 3
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.chaos import (  # noqa: E402 - after the path set-up, when run as a script
    PYTHON,
    ROOT,
    ScratchDB,
    kill_group,
    load_corpus,
    machine,
    manage,
    percentile,
    product_env,
    run_and_report,
    setup_django,
    start_group,
    stop_group,
    wait_until,
)

CORPUS = Path(os.environ.get("CORPUS_DIR") or ROOT.parent / "shared" / "corpus")
CHUNK = 64 * 1024

# --- The server ------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    """gunicorn serving config.wsgi on a loopback port, as its own process group."""

    env: dict[str, str]
    log: Path
    args: list[str] = field(default_factory=lambda: ["--workers", "2"])
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None
    starts: int = 0
    ready_seconds: list[float] = field(default_factory=list)

    def start(self, timeout: float = 60) -> None:
        """Start gunicorn and wait until it answers."""
        began = time.monotonic()
        env = {
            **self.env,
            "DEBUG": "0",
            "ALLOWED_HOSTS": "127.0.0.1",
            # Django's temporary upload files go here, so leftovers can be counted.
            "TMPDIR": str(self.tmpdir),
        }
        self.tmpdir.mkdir(parents=True, exist_ok=True)
        cmd = [PYTHON, "-m", "gunicorn", "config.wsgi", "--bind"]
        cmd += [f"127.0.0.1:{self.port}", "--timeout", "60", *self.args]
        self.proc = start_group(cmd, env, self.log)
        self.starts += 1
        wait_until(self._answers, timeout, interval=0.1)
        self.ready_seconds.append(time.monotonic() - began)

    @property
    def tmpdir(self) -> Path:
        return self.log.parent / "upload-tmp"

    def _answers(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(f"gunicorn exited:\n{self.log.read_text()[-3000:]}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            conn.request("GET", "/accounts/login/")
            return conn.getresponse().status == 200
        except OSError:
            return False

    def kill(self) -> None:
        """SIGKILL master and workers (the whole process group)."""
        if self.proc is not None:
            kill_group(self.proc)

    def stop(self) -> None:
        if self.proc is not None:
            stop_group(self.proc, timeout=20)


# --- The clients -----------------------------------------------------------------------


def multipart(filename: str, content: bytes) -> tuple[bytes, bytes, str]:
    """(head, tail, content type) of a one-file multipart body; the file goes between."""
    boundary = uuid.uuid4().hex
    head = (
        f"--{boundary}\r\n"
        f'Content-Disposition: form-data; name="file"; filename="{filename}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    return head, tail, f"multipart/form-data; boundary={boundary}"


def upload(
    port: int,
    token: str,
    filename: str,
    content: bytes,
    *,
    throttle: float = 0.0,
    timeout: float = 120,
) -> tuple[int, dict[str, Any]]:
    """POST one file to the API, streamed in chunks; returns (status, JSON body).

    Raises OSError (connection refused or reset, timeout) when the server goes away.
    """
    head, tail, content_type = multipart(filename, content)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.putrequest("POST", "/api/documents/")
        conn.putheader("Authorization", f"Token {token}")
        conn.putheader("Content-Type", content_type)
        conn.putheader("Content-Length", str(len(head) + len(content) + len(tail)))
        conn.endheaders()
        conn.send(head)
        for start in range(0, len(content), CHUNK):
            conn.send(content[start : start + CHUNK])
            if throttle:
                time.sleep(throttle)
        conn.send(tail)
        response = conn.getresponse()
        body = response.read()
    except http.client.HTTPException as exc:  # e.g. RemoteDisconnected
        raise ConnectionError(str(exc)) from exc
    finally:
        conn.close()
    try:
        data = json.loads(body)
    except ValueError:
        data = {"raw": body[:200].decode(errors="replace")}
    return response.status, data


@dataclass
class Tally:
    """What the clients saw, shared by their threads."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    statuses: Counter = field(default_factory=Counter)
    accepted: dict[int, str] = field(default_factory=dict)  # document id -> sha256
    refused: list[str] = field(default_factory=list)  # 4xx messages
    server_errors: list[str] = field(default_factory=list)
    connection_errors: int = 0  # cut mid-request by a kill (reset, closed, timeout)
    refused_connections: int = 0  # server down: nothing was sent
    latencies: list[float] = field(default_factory=list)

    def record(self, status: int, data: dict[str, Any], sha: str, took: float) -> None:
        with self.lock:
            self.statuses[status] += 1
            if status == 202:
                self.accepted[data["id"]] = sha
                self.latencies.append(took)
            elif status >= 500:
                self.server_errors.append(f"{status}: {json.dumps(data)[:300]}")
            else:
                self.refused.append(str(data.get("error", data))[:200])

    def attempts(self) -> int:
        """Uploads that reached the server (refused connections are not counted)."""
        return sum(self.statuses.values()) + self.connection_errors


def corpus_payloads(
    max_bytes: int = 4 * 1024 * 1024, big_text_mb: int = 8
) -> list[tuple[str, bytes]]:
    """Corpus files an upload accepts (expect ok or no_text) up to ``max_bytes``, and
    one generated text file of ``big_text_mb`` MiB."""
    rows = load_corpus({"ok", "no_text"})
    out = []
    for row in rows:
        path = CORPUS / row["path"]
        if path.stat().st_size <= max_bytes:
            out.append((path.name, path.read_bytes()))
    if not out:  # no corpus: generated text files still exercise everything
        out = [(f"note-{i}.txt", f"note {i}\n".encode() * 1000) for i in range(10)]
    if big_text_mb:
        # Over FILE_UPLOAD_MAX_MEMORY_SIZE: Django spools it to a temporary file.
        line = b"A line of a long plain-text upload, 0123456789.\n"
        out.append(("big.txt", line * (big_text_mb * 1024 * 1024 // len(line))))
    return out


def client_loop(
    port_of: Any,
    token: str,
    payloads: list[tuple[str, bytes]],
    tally: Tally,
    stop: threading.Event,
    *,
    seed: int,
    throttle: float,
) -> None:
    """Upload random payloads until ``stop``; a refused connection waits a moment."""
    rng = random.Random(seed)
    while not stop.is_set():
        name, content = rng.choice(payloads)
        sha = hashlib.sha256(content).hexdigest()
        began = time.monotonic()
        try:
            status, data = upload(port_of(), token, name, content, throttle=throttle)
        except ConnectionRefusedError:
            with tally.lock:
                tally.refused_connections += 1
            stop.wait(0.2)
            continue
        except OSError:
            with tally.lock:
                tally.connection_errors += 1
            continue
        tally.record(status, data, sha, time.monotonic() - began)


def run_clients(
    port_of: Any,
    token: str,
    payloads: list[tuple[str, bytes]],
    tally: Tally,
    *,
    clients: int,
    throttle: float,
) -> tuple[threading.Event, list[threading.Thread]]:
    stop = threading.Event()
    threads = [
        threading.Thread(
            target=client_loop,
            args=(port_of, token, payloads, tally, stop),
            kwargs={"seed": n, "throttle": throttle},
            daemon=True,
        )
        for n in range(clients)
    ]
    for thread in threads:
        thread.start()
    return stop, threads


# --- The checks ------------------------------------------------------------------------


def storage_check(accepted: dict[int, str]) -> dict[str, Any]:
    """Rows against files: rows without file or queue item, accepted uploads missing,
    files without a row (orphans). Needs Django set up on the same database."""
    from django.core.files.storage import default_storage

    from documents.management.commands.check_storage import (
        UPLOAD_DIR,
        stored_files,
    )
    from documents.models import Document
    from jobqueue.models import QueueItem

    rows = list(Document.objects.values_list("pk", "file", "size", "sha256"))
    with_items = set(QueueItem.objects.values_list("document_id", flat=True))
    names = {name for _, name, _, _ in rows}
    bad_file, no_item = [], []
    for pk, name, size, sha in rows:
        if not default_storage.exists(name):
            bad_file.append(f"{pk}: {name} missing")
            continue
        with default_storage.open(name, "rb") as fh:
            data = fh.read()
        if len(data) != size or hashlib.sha256(data).hexdigest() != sha:
            bad_file.append(f"{pk}: {name} differs from the upload")
        if pk not in with_items:
            no_item.append(pk)
    ids = {pk for pk, _, _, _ in rows}
    return {
        "documents": len(rows),
        "rows_without_file": bad_file,
        "rows_without_queue_item": no_item,
        "accepted_missing": sorted(set(accepted) - ids),
        "accepted_other_content": sorted(
            pk for pk, _, _, sha in rows if pk in accepted and accepted[pk] != sha
        ),
        "orphan_files": sorted(
            n for n in stored_files(default_storage, UPLOAD_DIR) if n not in names
        ),
    }


def leftover_temp_files(server: Server) -> int:
    return sum(1 for p in server.tmpdir.glob("*.upload*") if p.is_file())


# --- Command line ----------------------------------------------------------------------


@dataclass
class Result:
    database: str
    date: str
    machine: str
    kills: int = 0
    gunicorn_starts: int = 0
    restart_to_ready_median_s: float | None = None
    attempts: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    connection_errors: int = 0
    server_errors: list[str] = field(default_factory=list)
    leftover_temp_upload_files: int = 0
    orphans_removed_output: str = ""
    processed: str = ""
    checks: dict[str, Any] = field(default_factory=dict)

    def problems(self) -> list[str]:
        found = [f"5xx: {self.server_errors[:5]}"] if self.server_errors else []
        for key in (
            "rows_without_file",
            "rows_without_queue_item",
            "accepted_missing",
            "accepted_other_content",
            "orphans_after_cleanup",
            "not_completed",
        ):
            if self.checks.get(key):
                found.append(f"{key}: {self.checks[key]}")
        return found


def run_one(vendor: str, args: argparse.Namespace) -> Result:
    db = ScratchDB(vendor, f"bench_fire_web_{os.getpid()}")
    db.create()
    env = product_env(db.url, db.media_root)
    setup_django(env)
    from django.contrib.auth import get_user_model
    from django.db import connections

    from jobqueue.models import QueueItem, Status

    result = Result(vendor, dt.date.today().isoformat(), machine())
    server = Server(env, db.tmp / "gunicorn.log")
    try:
        get_user_model().objects.create_user("uploader")
        token = manage(["create_api_token", "uploader"], env).strip()
        tally = Tally()
        server.start()
        stop, threads = run_clients(
            lambda: server.port,
            token,
            corpus_payloads(),
            tally,
            clients=args.clients,
            throttle=args.throttle,
        )
        rng = random.Random(args.seed)
        for _ in range(args.kills):
            time.sleep(rng.uniform(*args.kill_every))
            server.kill()
            result.kills += 1
            server.start()
        time.sleep(rng.uniform(*args.kill_every))
        stop.set()
        for thread in threads:
            thread.join(180)
        server.stop()
        result.leftover_temp_upload_files = leftover_temp_files(server)
        checks = storage_check(tally.accepted)
        cleanup = manage(["check_storage", "--older-than", "0"], env)
        result.orphans_removed_output = next(
            line for line in cleanup.splitlines() if "orphan files" in line
        )
        checks["orphans_after_cleanup"] = storage_check(tally.accepted)["orphan_files"]
        result.processed = manage(
            ["process_queue", "--once"], env, timeout=1800
        ).strip()
        checks["not_completed"] = list(
            QueueItem.objects.exclude(status=Status.COMPLETED).values_list(
                "document__original_filename", "status", "error_message"
            )
        )
        result.checks = checks
        result.gunicorn_starts = server.starts
        restarts = server.ready_seconds[1:]
        result.restart_to_ready_median_s = percentile(restarts, 50)
        result.attempts = tally.attempts()
        result.statuses = {str(k): v for k, v in sorted(tally.statuses.items())}
        result.connection_errors = tally.connection_errors
        result.server_errors = tally.server_errors
    finally:
        server.kill()
        connections.close_all()
        db.drop()
    return result


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| database | kills | uploads tried | 202 | 4xx | 5xx | cut by a kill "
        "| documents stored | rows without file / queue item | accepted but missing "
        "| orphan files (removed) | temp upload files left | all processed |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        c, s = r["checks"], r["statuses"]
        fours = sum(v for k, v in s.items() if k.startswith("4"))
        lines.append(
            f"| {r['database']} | {r['kills']} | {r['attempts']} | {s.get('202', 0)} "
            f"| {fours} | {len(r['server_errors'])} | {r['connection_errors']} "
            f"| {c['documents']} "
            f"| {len(c['rows_without_file'])} / {len(c['rows_without_queue_item'])} "
            f"| {len(c['accepted_missing'])} | {len(c['orphan_files'])} "
            f"| {r['leftover_temp_upload_files']} | {r['processed']} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--kills", type=int, default=8)
    parser.add_argument(
        "--kill-every", type=float, nargs=2, default=(2.0, 5.0), metavar=("MIN", "MAX")
    )
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument(
        "--throttle", type=float, default=0.005, help="pause after each 64 KiB sent"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    def run(vendor: str) -> dict[str, Any]:
        result = run_one(vendor, args)
        return {**asdict(result), "problems": result.problems()}

    return run_and_report(
        args, run, "Web restart", table, lambda r: [r["orphans_removed_output"]]
    )


if __name__ == "__main__":
    sys.exit(main())
