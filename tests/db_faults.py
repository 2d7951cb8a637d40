"""Database faults made to really happen, for the fault tests and ``bench/db_chaos.py``.

PostgreSQL: backends terminated (``pg_terminate_backend``), the server "restarted" (a
TCP proxy in front of it cut and brought back), tables locked for a while. SQLite: the
write lock held for a while, the disk made full for the worker processes.
"""

from __future__ import annotations

import contextlib
import resource
import socket
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator

import psycopg

PROXY_PORTS = range(18100, 18200)  # this suite's own range on the shared machine


def terminate_backends(url: str, spare: Iterable[int] = ()) -> int:
    """Kill every client connection to the database of ``url`` except ``spare``
    (backend pids) and the one used here; returns how many were killed."""
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(
            """SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid()
            AND backend_type = 'client backend' AND NOT pid = ANY(%s)""",
            [list(spare)],
        ).fetchone()[0]


def hold_pg_lock(url: str, tables: Iterable[str], seconds: float) -> None:
    """Lock ``tables`` exclusively (reads and writes wait) for ``seconds``."""
    with psycopg.connect(url) as conn:
        while True:
            try:
                conn.execute(f"LOCK TABLE {', '.join(tables)} IN ACCESS EXCLUSIVE MODE")
                break
            except psycopg.errors.DeadlockDetected:
                conn.rollback()  # a worker held one table and wanted the other
        time.sleep(seconds)
        conn.rollback()


def hold_sqlite_write_lock(path: str, seconds: float) -> None:
    """Hold SQLite's write lock for ``seconds``: every writer waits."""
    db = sqlite3.connect(path, timeout=60, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        time.sleep(seconds)
        db.execute("ROLLBACK")
    finally:
        db.close()


@contextlib.contextmanager
def disk_full(pids: Iterable[int]) -> Iterator[None]:
    """While inside, the processes ``pids`` cannot grow any file, as on a full disk:
    SQLite's writes fail (``SQLITE_IOERR``/``SQLITE_FULL``), reads still work.
    (``PRAGMA max_page_count`` would only limit the connection that sets it.)"""
    pids = list(pids)
    before = {pid: resource.prlimit(pid, resource.RLIMIT_FSIZE) for pid in pids}
    try:
        for pid, (_soft, hard) in before.items():
            resource.prlimit(pid, resource.RLIMIT_FSIZE, (1, hard))
        yield
    finally:
        for pid, limits in before.items():
            with contextlib.suppress(ProcessLookupError):
                resource.prlimit(pid, resource.RLIMIT_FSIZE, limits)


class TcpProxy:
    """A TCP forwarder on 127.0.0.1 in front of a database server. ``cut()`` drops
    every connection and refuses new ones, as a restarting server does; ``restore()``
    accepts again."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._listener: socket.socket | None = None
        self._pairs: set[tuple[socket.socket, socket.socket]] = set()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self.cuts = 0

    def start(self) -> TcpProxy:
        for port in PROXY_PORTS:
            try:
                self._listen(port)
            except OSError:
                continue
            self.port = port
            threading.Thread(target=self._accept, daemon=True).start()
            return self
        raise RuntimeError("no free port for the proxy in 18100-18199")

    def url(self, database_url: str) -> str:
        """``database_url`` with its host and port replaced by the proxy's."""
        scheme, rest = database_url.split("://", 1)
        auth, _, tail = rest.rpartition("@")
        name = tail.split("/", 1)[1]
        return f"{scheme}://{auth + '@' if auth else ''}127.0.0.1:{self.port}/{name}"

    def cut(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            pairs, self._pairs = self._pairs, set()
        if listener is not None:
            listener.close()
        for pair in pairs:
            for sock in pair:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
        self.cuts += 1

    def restore(self) -> None:
        self._listen(self.port)

    def close(self) -> None:
        self._closed.set()
        self.cut()

    def _listen(self, port: int) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind(("127.0.0.1", port))
            listener.listen(64)
        except OSError:
            listener.close()
            raise
        listener.settimeout(0.1)
        with self._lock:
            self._listener = listener

    def _accept(self) -> None:
        while not self._closed.is_set():
            listener = self._listener
            if listener is None:
                time.sleep(0.05)
                continue
            try:
                client, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            client.settimeout(None)
            pair = (client, upstream)
            with self._lock:
                if self._listener is not listener:  # cut meanwhile
                    client.close()
                    upstream.close()
                    continue
                self._pairs.add(pair)
            for src, dst in (pair, pair[::-1]):
                threading.Thread(
                    target=self._pump, args=(src, dst, pair), daemon=True
                ).start()

    def _pump(self, src: socket.socket, dst: socket.socket, pair: tuple) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._pairs.discard(pair)
            for sock in pair:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
