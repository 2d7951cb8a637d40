"""The shipped web server (gunicorn, config/gunicorn.conf.py, as ``make run`` starts it)
against real sockets: bodies over the limit are refused before they are read, a client
cut off mid-upload leaves nothing, and slow clients do not hold up other people; and
``make run`` itself, whose web app and workers stop together."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pty
import re
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
from django.core.management import call_command
from django.test import Client

from documents.models import Document
from jobqueue.models import QueueItem, Status, WorkerHeartbeat
from tests.conftest import REPO_ROOT, free_port, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PORTS = range(18600, 18700)  # this module's own range: never shared with others
MB = 1024 * 1024
CHUNK = 64 * 1024


@dataclass
class Server:
    port: int
    proc: subprocess.Popen
    log: Path
    tmpdir: Path


@pytest.fixture
def server(child_env, tmp_path) -> Iterator[Server]:
    """gunicorn with the shipped configuration, one worker, limits of 1 MB x 2 files."""
    server = launch(child_env, tmp_path)
    try:
        yield server
    finally:
        os.killpg(server.proc.pid, signal.SIGKILL)
        server.proc.wait(10)


def launch(child_env, folder: Path, workers: int = 1) -> Server:
    """Start gunicorn as ``make run`` does, in a process group of its own (a terminal's
    Ctrl+C reaches the whole group); return once it answers."""
    port, log, tmpdir = (
        free_port(PORTS),
        folder / f"gunicorn-{time.monotonic_ns()}.log",
        folder / "upload-tmp",
    )
    tmpdir.mkdir(exist_ok=True)
    env = {
        **child_env,
        "DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "MAX_UPLOAD_MB": "1",
        "MAX_UPLOAD_FILES": "2",
        "WEB_CONCURRENCY": str(workers),
        "TMPDIR": str(tmpdir),  # Django's spooled uploads, to count leftovers
    }
    cmd = [sys.executable, "-m", "gunicorn", "--config", "config/gunicorn.conf.py"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [*cmd, "--bind", f"127.0.0.1:{port}"],
            cwd=REPO_ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = Server(port, proc, log, tmpdir)
    try:
        wait_for(lambda: _answers(server), 60)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        raise
    return server


def _answers(server: Server) -> bool:
    if server.proc.poll() is not None:
        raise RuntimeError(server.log.read_text()[-3000:])
    try:
        return get(server, "/accounts/login/", timeout=5)[0] == 200
    except OSError:
        return False


def get(server: Server, path: str, timeout: float = 15) -> tuple[int, bytes]:
    with socket.create_connection(("127.0.0.1", server.port), timeout) as sock:
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
        )
        return read_response(sock)


def read_response(sock: socket.socket) -> tuple[int, bytes]:
    """Status and body of one response (by its Content-Length: the server may keep
    the connection open a while to drain what the client sent)."""
    raw = b""
    while b"\r\n\r\n" not in raw:
        raw += _recv(sock)
    head, _, body = raw.partition(b"\r\n\r\n")
    length = re.search(rb"(?im)^content-length: *(\d+)", head)
    while length and len(body) < int(length[1]):
        body += _recv(sock)
    return int(head.split(b" ", 2)[1]), body


def _recv(sock: socket.socket) -> bytes:
    chunk = sock.recv(65536)
    if not chunk:
        raise ConnectionError("the server closed the connection mid-response")
    return chunk


@pytest.fixture
def token(user) -> str:
    out = io.StringIO()
    call_command("create_api_token", user.username, stdout=out)
    return out.getvalue().strip()


@pytest.fixture
def session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


def upload_head(
    path: str, length: int, boundary: str, auth: str = "", cookie: str = ""
) -> bytes:
    lines = [
        f"POST {path} HTTP/1.1",
        "Host: 127.0.0.1",
        f"Content-Type: multipart/form-data; boundary={boundary}",
        f"Content-Length: {length}",
    ]
    lines += [f"Authorization: {auth}"] if auth else []
    lines += [f"Cookie: {cookie}"] if cookie else []
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def files_body(files: list[tuple[str, int]], boundary: str) -> bytes:
    body = b""
    for name, size in files:
        body += (
            (
                f"--{boundary}\r\n"
                f'Content-Disposition: form-data; name="file"; filename="{name}"\r\n'
                "Content-Type: text/plain\r\n\r\n"
            ).encode()
            + name.encode() * (size // len(name))
            + b"\r\n"
        )
    return body + f"--{boundary}--\r\n".encode()


def one_file_body(name: str, size: int, boundary: str) -> bytes:
    return files_body([(name, size)], boundary)


def send_until_answered(
    server: Server, head: bytes, body: bytes
) -> tuple[int, bytes, int]:
    """Send the body in chunks, watching for an early answer between them.

    Returns (status, response body, bytes of the body sent before the answer came).
    """
    with socket.create_connection(("127.0.0.1", server.port), 30) as sock:
        sock.sendall(head)
        sent = 0
        while sent < len(body):
            if select.select([sock], [], [], 0.02)[0]:
                break
            try:
                sent += sock.send(body[sent : sent + CHUNK])
            except (BrokenPipeError, ConnectionResetError):
                break
        status, response = read_response(sock)
    return status, response, sent


def assert_nothing_kept(server: Server, media_root: Path) -> None:
    assert not Document.objects.exists() and not QueueItem.objects.exists()
    assert not [p for p in media_root.rglob("*") if p.is_file()]
    assert not list(server.tmpdir.iterdir())


# --- Bodies over the limit --------------------------------------------------------


def test_with_log_format_json_gunicorn_s_own_lines_are_json_too(child_env, tmp_path):
    """Its start, its workers and its access log came in formats of its own (the
    access log on stdout), between the app's JSON lines: a collector choked."""
    # STATIC_ROOT as collectstatic leaves it: no warning that it is missing.
    env = {**child_env, "LOG_FORMAT": "json", "STATIC_ROOT": str(tmp_path)}
    server = launch(env, tmp_path)
    try:
        assert get(server, "/healthz")[0] == 200
    finally:
        os.killpg(server.proc.pid, signal.SIGTERM)
        server.proc.wait(30)
    records = [json.loads(line) for line in server.log.read_text().splitlines()]
    said = {(r["logger"], r["message"].split(" ")[0]) for r in records}
    assert ("gunicorn.error", "Booting") in said
    access = [r["message"] for r in records if r["logger"] == "gunicorn.access"]
    assert any('"GET /healthz HTTP/1.1" 200' in line for line in access), access
    assert all(r["time"].endswith("Z") for r in records)


def test_a_request_for_another_host_is_one_warning_line(server):
    """Django logged each as an ERROR with a traceback of 14 lines: scanners send
    them by the thousand. One line, and it still names the host."""
    with socket.create_connection(("127.0.0.1", server.port), 15) as sock:
        sock.sendall(
            b"GET /accounts/login/ HTTP/1.1\r\nHost: scanner.example\r\n"
            b"Connection: close\r\n\r\n"
        )
        assert read_response(sock)[0] == 400
    assert get(server, "/healthz")[0] == 200  # after it in the log: it was written
    log = server.log.read_text()
    [line] = [line for line in log.splitlines() if "scanner.example" in line]
    assert " WARNING django.security.DisallowedHost Invalid HTTP_HOST" in line
    assert "Traceback" not in log


def test_the_longest_search_in_any_script_reaches_the_app(server):
    # 500 characters (the most a search takes) of Japanese: 4,500 bytes of request
    # line, which gunicorn's default limit (4,094) answered 414 before Django saw it.
    status, _ = get(server, "/documents/?q=" + quote("検索" * 250))
    assert status == 302  # to the log-in page: the app answered


def test_only_a_trusted_proxy_says_a_request_came_over_https(child_env, tmp_path):
    """gunicorn's own default believes X-Forwarded-Proto from any local connection:
    behind a local proxy that passes the client's header through, plain HTTP passed
    for HTTPS (HSTS sent, no SSL redirect, CSRF's https rules) without
    TRUST_X_FORWARDED_PROTO. HSTS, sent over HTTPS only, tells which it was."""
    env = {**child_env, "SECURE_HSTS_SECONDS": "3600"}
    heads = {}
    for trusted in ("0", "1"):
        server = launch({**env, "TRUST_X_FORWARDED_PROTO": trusted}, tmp_path)
        try:
            with socket.create_connection(("127.0.0.1", server.port), 15) as sock:
                sock.sendall(
                    b"GET /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    b"X-Forwarded-Proto: https\r\nConnection: close\r\n\r\n"
                )
                raw = b""
                while b"\r\n\r\n" not in raw:
                    raw += _recv(sock)
                heads[trusted] = raw.partition(b"\r\n\r\n")[0].lower()
        finally:
            os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait(10)
    assert b"strict-transport-security" not in heads["0"]
    assert b"strict-transport-security" in heads["1"]


def test_a_declared_length_over_the_limit_gets_413_before_the_body_is_sent(
    server, token, media_root
):
    boundary = uuid.uuid4().hex
    body = one_file_body("huge.txt", 20 * MB, boundary)
    head = upload_head("/api/documents/", len(body), boundary, auth=f"Token {token}")
    status, response, sent = send_until_answered(server, head, body)
    assert status == 413
    error = json.loads(response)["error"]
    assert (
        error["code"] == "too_large"
        and "the API takes one file of at most 1.0 MB" in error["message"]
    )
    assert sent < len(body)
    assert_nothing_kept(server, media_root)


def test_one_file_over_its_limit_gets_413_while_it_streams_in(
    server, token, media_root
):
    # The body's declared length is under the API's limit; its one file is not.
    boundary = uuid.uuid4().hex
    body = one_file_body("big.txt", MB + MB // 2, boundary)
    head = upload_head("/api/documents/", len(body), boundary, auth=f"Token {token}")
    status, response, sent = send_until_answered(server, head, body)
    assert status == 413
    assert "“big.txt” is over the 1.0 MB limit" in response.decode()
    assert sent < len(body)
    assert_nothing_kept(server, media_root)


def test_the_upload_page_shows_the_413_as_a_form_error(
    server, session_cookie, media_root
):
    boundary = uuid.uuid4().hex
    body = one_file_body("big.txt", 2 * MB + MB // 2, boundary)
    head = upload_head("/documents/upload/", len(body), boundary, cookie=session_cookie)
    status, response, sent = send_until_answered(server, head, body)
    assert status == 413
    page = response.decode()
    assert 'id="upload-errors"' in page and "“big.txt” is over the 1.0 MB limit" in page
    assert sent < len(body)
    assert_nothing_kept(server, media_root)


def test_a_chunked_body_without_a_length_is_refused_with_411(server, token):
    head = (
        "POST /api/documents/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Token {token}\r\nTransfer-Encoding: chunked\r\n"
        "Content-Type: multipart/form-data; boundary=x\r\n\r\n"
    ).encode()
    status, response, _ = send_until_answered(server, head, b"4\r\nabcd\r\n" * 4096)
    assert status == 411
    assert json.loads(response)["error"]["code"] == "length_required"


# --- A client cut off ---------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/documents/", "/documents/upload/"])
def test_a_client_cut_off_mid_upload_leaves_nothing(
    server, token, session_cookie, media_root, path
):
    # The first file arrives whole; the connection ends inside the second.
    boundary = uuid.uuid4().hex
    body = files_body([("whole.txt", 1000), ("cut.txt", MB - 4096)], boundary)
    auth = {"auth": f"Token {token}"} if path.startswith("/api/") else {}
    cookie = {} if auth else {"cookie": session_cookie}
    with socket.create_connection(("127.0.0.1", server.port), 30) as sock:
        sock.sendall(upload_head(path, len(body), boundary, **auth, **cookie))
        sock.sendall(body[: len(body) // 2])
        # The client stops sending (the server reads the end of the stream, as when
        # it goes away) but still listens, so the test knows the server is done.
        sock.shutdown(socket.SHUT_WR)
        status, response = read_response(sock)
    assert status == 400
    assert "cut off before its end" in response.decode()
    assert_nothing_kept(server, media_root)
    # The next upload goes through as usual.
    body = one_file_body("later.txt", 1000, boundary)
    head = upload_head("/api/documents/", len(body), boundary, auth=f"Token {token}")
    assert send_until_answered(server, head, body)[0] == 202
    assert Document.objects.get().original_filename == "later.txt"


# --- Slow clients -------------------------------------------------------------------


def test_slow_clients_do_not_hold_up_other_people(server, token):
    """Eight clients trickle (four their headers, four an upload's body) while
    another person's requests are answered; one worker process serves them all."""
    slow: list[socket.socket] = []
    boundary = uuid.uuid4().hex
    body = one_file_body("slow.txt", 500_000, boundary)
    try:
        for i in range(8):
            sock = socket.create_connection(("127.0.0.1", server.port), 30)
            if i % 2:
                sock.sendall(b"GET /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            else:
                head = upload_head(
                    "/api/documents/", len(body), boundary, f"Token {token}"
                )
                sock.sendall(head + body[:1000])
            slow.append(sock)
        for _ in range(3):
            started = time.monotonic()
            for sock in slow:  # each trickles one more byte
                sock.sendall(b"x")
            assert get(server, "/accounts/login/", timeout=15)[0] == 200
            time.sleep(max(0.0, 0.5 - (time.monotonic() - started)))
        # The slow clients are still connected and unanswered: they were not just
        # dropped to make room.
        for sock in slow:
            assert not select.select([sock], [], [], 0)[0]
    finally:
        for sock in slow:
            sock.close()


def test_ctrl_c_stops_the_server_at_once_while_requests_arrive(child_env, tmp_path):
    """Ctrl+C reaches the master and its workers; both stop within a second or two,
    no worker left for the graceful timeout to kill."""
    for _ in range(2):
        server = launch(child_env, tmp_path, workers=2)
        stop = threading.Event()

        def keep_asking(port: int = server.port, stop=stop) -> None:
            while not stop.is_set():
                try:
                    with socket.create_connection(("127.0.0.1", port), 1) as sock:
                        sock.sendall(
                            b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                        )
                        sock.recv(1024)
                except OSError:
                    time.sleep(0.01)

        time.sleep(1.0)  # both workers booted, their thread pools not yet grown
        asker = threading.Thread(target=keep_asking)
        asker.start()
        time.sleep(0.3)
        os.killpg(server.proc.pid, signal.SIGINT)
        try:
            server.proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait(10)
            raise AssertionError(server.log.read_text()[-3000:]) from None
        finally:
            stop.set()
            asker.join()
        assert "SIGKILL" not in server.log.read_text()


def test_a_quit_signal_during_a_request_hand_off_ends_the_worker():
    """gthread's own quit handler shuts its thread pool down, taking the lock that the
    main thread holds while it hands a request to the pool: a signal landing there
    deadlocked the worker until the graceful timeout killed it (5 Ctrl+C in 27 by
    hand). Here the signal lands exactly there."""
    from gunicorn.config import Config
    from gunicorn.glogging import Logger

    from config.gunicorn_worker import SafeQuitThreadWorker

    cfg = Config()
    worker = SafeQuitThreadWorker(0, os.getpid(), [], None, 30, cfg, Logger(cfg))
    worker.tpool = worker.get_thread_pool()
    exits = []

    def quit_mid_hand_off() -> None:
        with worker.tpool._shutdown_lock:  # as in ThreadPoolExecutor.submit
            try:
                worker.handle_quit(signal.SIGQUIT, None)
            except SystemExit as exc:
                exits.append(exc.code)

    main = threading.Thread(target=quit_mid_hand_off, daemon=True)
    main.start()
    main.join(5)
    assert exits == [0], "the quit handler deadlocked"
    worker.tpool.shutdown()


QUIT_WHILE_THE_POOL_GROWS = """
import signal, threading
from gunicorn.config import Config
from gunicorn.glogging import Logger
from config.gunicorn_worker import SafeQuitThreadWorker

cfg = Config()
worker = SafeQuitThreadWorker(0, 0, [], None, 30, cfg, Logger(cfg))
worker.tpool = worker.get_thread_pool()
start = threading.Thread.start

def start_then_quit(thread):
    start(thread)
    worker.handle_quit(signal.SIGQUIT, None)

threading.Thread.start = start_then_quit
worker.tpool.submit(print, "served")
"""


def test_a_quit_signal_while_the_pool_grows_ends_the_worker(child_env):
    """A signal landing while the pool starts a thread, before the pool has recorded
    it, left that thread waiting for work that never came, and the worker's exit
    waiting for the thread, until the master's graceful timeout killed it (Ctrl+C, 1
    run in 4 of the test above). The quit now ends the worker within seconds."""
    child = subprocess.run(
        [sys.executable, "-c", QUIT_WHILE_THE_POOL_GROWS],
        cwd=REPO_ROOT,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=15,
    )
    assert (child.returncode, child.stdout) == (0, "served\n"), child.stderr


SLOW_START_CONFIG = """
import runpy
import time

shipped = runpy.run_path({shipped!r})
globals().update({{k: v for k, v in shipped.items() if not k.startswith("__")}})


def post_fork(server, worker):
    time.sleep(3)  # in the new worker, before its own signal handlers
"""


@pytest.mark.parametrize(
    "stop", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"]
)
def test_a_stop_signal_while_a_worker_starts_is_not_lost(child_env, tmp_path, stop):
    """The master passes Ctrl+C (as SIGQUIT) or SIGTERM on to its workers. One that
    reached a new worker before its own handlers were installed ran the master's,
    inherited with the fork, and was lost: the master waited its whole graceful
    timeout (20 s) before killing the worker. Here a post_fork hook keeps the worker
    in that window for 3 s; the signal, held until the handlers are in, stops it."""
    config = tmp_path / "slow_start.conf.py"
    shipped = str(REPO_ROOT / "config" / "gunicorn.conf.py")
    config.write_text(SLOW_START_CONFIG.format(shipped=shipped))
    log = tmp_path / "gunicorn.log"
    env = {**child_env, "DEBUG": "0", "ALLOWED_HOSTS": "127.0.0.1"}
    cmd = [sys.executable, "-m", "gunicorn", "--config", str(config)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [*cmd, "--bind", f"127.0.0.1:{free_port(PORTS)}", "--workers", "1"],
            cwd=REPO_ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_for(lambda: "Booting worker" in log.read_text(), 60)
        time.sleep(0.5)  # the worker is in post_fork
        proc.send_signal(stop)
        proc.wait(12)  # 3 s of post_fork, then at once; not 20 s
    except subprocess.TimeoutExpired:
        raise AssertionError(log.read_text()[-3000:]) from None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    assert "SIGKILL" not in log.read_text()


# --- make run: the web app and the workers stop together ------------------------------


def processes() -> dict[int, tuple[int, str, int]]:
    """Every process of the machine: pid -> (parent pid, state, session), from
    /proc."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except (OSError, ValueError):
            continue  # not a process, or gone
        # "pid (name) state ppid pgrp session ...": the name may hold spaces and
        # parentheses.
        state, ppid, _, session = stat.rsplit(")", 1)[1].split()[:4]
        found[int(entry.name)] = (int(ppid), state, int(session))
    return found


def descendants(pid: int) -> set[int]:
    table = processes()
    found, new = set(), {pid}
    while new:
        new = {p for p, (ppid, _, _) in table.items() if ppid in new} - found
        found |= new
    return found


def in_session(leader: int) -> set[int]:
    """Every process of the session that ``leader`` leads (a terminal's programs),
    those whose parent ended included."""
    return {p for p, (_, _, session) in processes().items() if session == leader}


def alive(pids: set[int]) -> set[int]:
    table = processes()
    return {p for p in pids if p in table and table[p][1] != "Z"}


@dataclass
class MakeRun:
    pid: int
    terminal: int  # the pty's controlling side: what is typed, what is shown
    port: int
    output: bytearray


@pytest.fixture
def make_run(child_env, tmp_path, user) -> Iterator[Callable[[], MakeRun]]:
    """``make run`` in a terminal of its own (a pty, so Ctrl+C is the terminal's),
    on the test's database, without the installs and the .env it would make (the
    ``user`` fixture is there, so no first user is made either)."""
    make = shutil.which("make")
    if make is None or not Path("/proc/self/stat").exists():
        pytest.skip("needs make and /proc")
    started: list[MakeRun] = []

    def start(from_a_shell: bool = False) -> MakeRun:
        """``from_a_shell``: typed at an interactive shell, the session's leader
        (which passes the terminal's hangup to its jobs), rather than make alone."""
        port = free_port(PORTS)
        # Without the flags of a make running the suite (make test): this one is new.
        env = {k: v for k, v in child_env.items() if not k.startswith(("MAKE", "MFL"))}
        env.update(
            DEBUG="0",
            ALLOWED_HOSTS="127.0.0.1",
            STATIC_ROOT=str(tmp_path / "static"),
            WEB_CONCURRENCY="1",
            QUEUE_WORKERS="1",
            QUEUE_EXTRACT_FUNCTION="tests.extractors_for_tests.extract",
        )
        args = [make, "--no-print-directory", "run", f"PY={sys.executable}"]
        args += ["-o", "install-system", "-o", ".venv/.installed", "-o", ".env"]
        args += ["HOST=127.0.0.1", f"PORT={port}"]
        if from_a_shell:
            line = " ".join(shlex.quote(arg) for arg in args)
            # "; exit": so that the shell does not exec make in its place.
            args = ["/bin/bash", "--norc", "--noprofile", "-i", "-c", f"{line}; exit"]
        pid, terminal = pty.fork()
        if pid == 0:  # the child: make (or the shell), in the pty's session
            try:
                os.chdir(REPO_ROOT)
                os.execve(args[0], args, env)  # noqa: S606 - no shell wanted
            finally:
                os._exit(127)
        run = MakeRun(pid, terminal, port, bytearray())
        threading.Thread(target=_show, args=(run,), daemon=True).start()
        started.append(run)
        return run

    yield start
    for run in started:
        for pid in alive(descendants(run.pid) | in_session(run.pid) | {run.pid}):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(run.pid, 0)
        if run.terminal >= 0:
            os.close(run.terminal)


def _show(run: MakeRun) -> None:
    """Read what the terminal shows (unread, it would fill up and block the
    programs writing to it)."""
    while True:
        try:
            chunk = os.read(run.terminal, 65536)
        except OSError:
            return  # the terminal is closed: every program on it has ended
        if not chunk:
            return
        run.output += chunk


def _serving(run: MakeRun) -> bool:
    if os.waitpid(run.pid, os.WNOHANG)[0]:
        raise AssertionError(run.output.decode(errors="replace")[-3000:])
    try:
        with socket.create_connection(("127.0.0.1", run.port), 5) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            answered = sock.recv(1024).startswith(b"HTTP/1.1 200")
    except OSError:
        return False
    return answered and WorkerHeartbeat.objects.in_state("alive").exists()


def _ended(run: MakeRun, timeout: float) -> int | None:
    """make's wait status once it has ended, None if it has not within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid, status = os.waitpid(run.pid, os.WNOHANG)
        if pid:
            return status
        time.sleep(0.1)
    return None


@pytest.mark.parametrize(
    "stop",
    [
        "ctrl_c",
        "ctrl_c_as_a_job_starts",
        "sigterm_to_make",
        "sigterm_to_its_shell",
        "terminal_closed",
        "terminal_closed_under_make",
    ],
)
def test_make_run_stops_the_web_app_and_the_workers_together(
    make_run, make_document, queue, stop
):
    """Ctrl+C in make's terminal, SIGTERM to make, SIGTERM to the shell running its
    recipe, or the terminal closed under the shell make was typed at (which passes
    the SIGHUP to make's job; the programs then write to no terminal) or under make
    itself, the session's leader (ssh -t host make run; make passes no SIGHUP on,
    and waited for its recipe for ever): gunicorn and
    process_queue both stop, each signalled once, the workers gracefully (their current job completes, their heartbeats say stopped),
    and make ends. A SIGTERM left both running: the shell's trap waited for gunicorn,
    in the foreground, to end first. A Ctrl+C as a job started reached its new
    extraction child too, before the child ignores SIGINT, and the job was released.
    A trap that signals the workers on top of the terminal's Ctrl+C stops them at
    once (the second signal), releasing their job."""
    run = make_run(from_a_shell=stop == "terminal_closed")
    wait_for(lambda: _serving(run), 120)
    job_id = queue.enqueue(make_document(b"sleep:3 then text", "slow.txt").pk)
    wait_for(lambda: QueueItem.objects.get(pk=job_id).status == Status.PROCESSING, 30)
    if stop != "ctrl_c_as_a_job_starts":
        time.sleep(1)  # into the extraction, its child process set up
    programs = descendants(run.pid)
    if stop.startswith("ctrl_c"):
        os.write(run.terminal, b"\x03")
    elif stop == "sigterm_to_make":
        os.kill(run.pid, signal.SIGTERM)
    elif stop.startswith("terminal_closed"):
        os.close(run.terminal)
        run.terminal = -1
    else:
        table = processes()
        (shell,) = [p for p in programs if table[p][0] == run.pid]
        os.kill(shell, signal.SIGTERM)
    signal_name = "SIGINT" if stop.startswith("ctrl_c") else "SIGTERM"
    ended = _ended(run, 40)
    output = run.output.decode(errors="replace")
    assert ended is not None, output[-3000:]
    # A clean stop is no error: make ends by the signal it was sent, or with the
    # shell's status, the web app's 0, where the shell alone was signalled.
    assert "Error 1" not in output, output[-3000:]  # make: *** … Error 143
    if stop == "sigterm_to_its_shell":
        assert os.waitstatus_to_exitcode(ended) == 0, output[-3000:]
    # The workers' helpers (multiprocessing's fork server) end as their pipe closes.
    wait_for(lambda: not alive(programs), 10)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", run.port), 2).close()
    if run.terminal >= 0:  # what the terminal showed
        # Once each: a second signal stops the workers at once, releasing their jobs.
        announced = f"Received {signal_name}: finishing current jobs"
        assert output.count(announced) == 1, output
        assert "Second signal" not in output
        assert "SIGKILL" not in output
    assert QueueItem.objects.get(pk=job_id).status == Status.COMPLETED, output
    assert WorkerHeartbeat.objects.exists()
    assert not WorkerHeartbeat.objects.exclude(status=WorkerHeartbeat.State.STOPPED)
