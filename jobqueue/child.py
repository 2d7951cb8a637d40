"""What runs inside an extraction child process. Kept free of Django so children
start fast and hold no database connection."""

from __future__ import annotations

import importlib
import os
import resource
import select
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from documents.extractors.base import classify


def init_child(megabytes: int, parent_pid: int) -> None:
    """Pool initializer: cap the child's address space, so a parser that explodes
    raises MemoryError (or dies) in the child instead of starving the host. Ctrl+C is
    the parent's to handle: it lets current extractions finish. The child dies with
    the process that asked for it (``parent_pid``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with(parent_pid)
    if megabytes > 0:
        limit = megabytes * 1024 * 1024
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _die_with(pid: int) -> None:
    """Exit as soon as process ``pid`` (the worker or web process that asked for
    this child) is gone, SIGKILLed included, instead of extracting on as an orphan.
    Its fork server cannot see to it: every child holds the pipe whose end tells
    the fork server that its parent died."""

    def watch() -> None:
        try:
            handle = os.pidfd_open(pid)
        except ProcessLookupError:
            os._exit(1)
        except (AttributeError, OSError):  # no pidfd (not Linux 5.3+): poll
            while _exists(pid):
                time.sleep(1.0)
        else:
            select.select([handle], [], [])  # readable once the process has exited
        os._exit(1)

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run_extraction(
    function_path: str,
    path: str,
    mime_type: str,
    options: dict[str, Any],
    progress_path: str | None = None,
) -> tuple[str, Any, str]:
    """Extract one file; failures come back as data (error type, message), because
    arbitrary parser exceptions do not always survive pickling. A long extraction
    reports its progress (done, total) in the file at ``progress_path``."""
    try:
        module_name, _, attr = function_path.rpartition(".")
        extract = getattr(importlib.import_module(module_name), attr)
        progress = progress_writer(progress_path) if progress_path else None
        result = extract(path, mime_type=mime_type, progress=progress, **options)
        return ("ok", result, "")
    except MemoryError:
        return ("error", "unknown", "The extractor ran out of memory on this file.")
    except BaseException as exc:  # noqa: BLE001 - every failure must reach the parent
        message = str(exc) or type(exc).__name__
        error_type = classify(exc)
        if error_type == "unknown":
            message = f"{type(exc).__name__}: {message}"
        return ("error", error_type, message[:2000])


def progress_writer(path: str) -> Callable[[int, int], None]:
    """Report progress as "done total" in a file, replaced whole so a reader never
    sees half of it."""

    def write(done: int, total: int) -> None:
        with open(f"{path}.tmp", "w") as fh:
            fh.write(f"{done} {total}")
        os.replace(f"{path}.tmp", path)

    return write


def read_progress(path: str) -> tuple[int, int] | None:
    """The last (done, total) written by ``progress_writer``, or None."""
    try:
        with open(path) as fh:
            done, total = fh.read().split()
    except (OSError, ValueError):
        return None
    return int(done), int(total)
