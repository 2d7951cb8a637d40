"""Shared fixtures: users and clients, private media, documents, worker processes."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Permission
from django.core.cache import cache
from django.core.files.base import ContentFile
from django.db import connection, connections

from documents.models import Document
from jobqueue.services import QueueManager

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path: Path) -> Path:
    """Every test stores uploads in its own folder (and hashes passwords cheaply)."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return settings.MEDIA_ROOT


@pytest.fixture(autouse=True)
def fresh_rate_limits() -> Iterator[None]:
    """Rate counters live in the cache; ids repeat across tests, so start empty."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def queue_log_level() -> Iterator[None]:
    """A command run with -v0 sets the queue's log level for its process, which is
    the whole test run here: not for the next test (as each command's own process)."""
    yield
    logging.getLogger("jobqueue").setLevel(logging.NOTSET)


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("alice", password="alice-password-1")


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user("bob", password="bob-password-1")


def grant_operator(user):
    """Make ``user`` an operator: staff with the change permission on queue items."""
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    user.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="jobqueue",
            codename__in=["view_queueitem", "change_queueitem"],
        )
    )
    return user


def may_delete_documents(user):
    """Give staff ``user`` the permission to delete anyone's documents (as in the
    admin); a fresh instance, as Django caches a user's permissions."""
    user.user_permissions.add(
        Permission.objects.get(
            content_type__app_label="documents", codename="delete_document"
        )
    )
    return type(user).objects.get(pk=user.pk)


@pytest.fixture
def viewer(django_user_model):
    """View-only staff as the README makes them: staff with "Can view queue item"."""
    person = django_user_model.objects.create_user(
        "watcher", password="watcher-password-1", is_staff=True
    )
    person.user_permissions.add(
        Permission.objects.get(
            content_type__app_label="jobqueue", codename="view_queueitem"
        )
    )
    return person


@pytest.fixture
def staff_user(django_user_model):
    """An operator: staff who may steer the queue."""
    return grant_operator(
        django_user_model.objects.create_user(
            "operator", password="operator-password-1", is_staff=True
        )
    )


@pytest.fixture
def user_client(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def make_document(user) -> Callable[..., Document]:
    """A stored document (without a queue item) with the given bytes."""

    def make(
        content: bytes = b"hello world\n",
        name: str = "note.txt",
        mime_type: str = "text/plain",
        owner=None,
    ) -> Document:
        document = Document(
            owner=owner or user,
            original_filename=name,
            mime_type=mime_type,
            size=len(content),
            sha256="0" * 64,
        )
        document.file.save(name, ContentFile(content), save=False)
        document.save()
        return document

    return make


@pytest.fixture
def queue() -> QueueManager:
    return QueueManager()


def test_database_url() -> str:
    """A DATABASE_URL that points child processes at the test database."""
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    host = s.get("HOST") or "127.0.0.1"
    port = s.get("PORT") or 5432
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{host}:{port}/{s['NAME']}"


@pytest.fixture
def child_env(settings) -> dict[str, str]:
    """Environment for a real process that must share the test's database and media."""
    return {
        **os.environ,
        "DATABASE_URL": test_database_url(),
        "MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "PYTHONUNBUFFERED": "1",
    }


@pytest.fixture
def run_worker():
    """Start an in-process worker (real threads); always stopped at teardown."""
    from jobqueue.worker import ExtractionWorker

    workers: list[ExtractionWorker] = []

    def start(**kwargs) -> ExtractionWorker:
        options = {"num_workers": 1, "poll_interval": 0.1, "heartbeat_interval": 0.5}
        worker = ExtractionWorker(**{**options, **kwargs})
        workers.append(worker)
        worker.start()
        return worker

    yield start
    for worker in workers:
        worker.stop(timeout=5)


@pytest.fixture
def start_worker(child_env, tmp_path) -> Iterator[Callable[..., subprocess.Popen]]:
    """Start ``manage.py process_queue`` as a real process; killed at teardown."""
    procs: list[subprocess.Popen] = []

    def start(
        *args: str, env: dict[str, str] | None = None, clock_skew: float = 0
    ) -> subprocess.Popen:
        """``clock_skew``: seconds the process's Python clock is off (tests/skewed_clock)."""
        log = open(tmp_path / f"worker-{len(procs)}.log", "w+b")  # noqa: SIM115
        program = ["-m", "tests.skewed_clock"] if clock_skew else ["manage.py"]
        proc = subprocess.Popen(
            [sys.executable, *program, "process_queue", *args],
            cwd=REPO_ROOT,
            env={**child_env, **(env or {}), "CLOCK_SKEW_SECONDS": str(clock_skew)},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        proc.log = log  # type: ignore[attr-defined]
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        proc.log.close()


def wait_for(
    predicate: Callable[[], object], timeout: float = 60, interval: float = 0.1
):
    """Poll until ``predicate()`` is truthy; fail with a clear message on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s")


def run_async(coroutine: Coroutine) -> object:
    """Run a coroutine to its end in a thread of its own: the browser tests' sync
    Playwright leaves an event loop set in the main thread."""

    async def then_close():
        try:
            return await coroutine
        finally:
            # The database work ran in asgiref's thread: its connection would
            # outlive the test and keep PostgreSQL's test database from being dropped.
            await sync_to_async(connections.close_all)()

    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, then_close()).result()


def free_port(ports: range) -> int:
    """The first port of ``ports`` (a test module's own range) nothing listens on."""
    for port in ports:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {ports.start}-{ports.stop - 1}")


def worker_log(proc: subprocess.Popen) -> str:
    proc.log.flush()
    proc.log.seek(0)
    return proc.log.read().decode(errors="replace")
