"""What runs inside a job's child process. Kept free of Django so children
start fast and hold no database connection."""

from __future__ import annotations

import fcntl
import importlib
import os
import resource
import select
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from multiprocessing import spawn, util
from typing import Any

# A child runs only functions named by module path, so it needs nothing of the parent's
# main script; but forkserver children run it again (as ``__mp_main__``), and a script
# written as the guide's examples are, without an ``if __name__ == "__main__"`` guard,
# would then start a pool and enqueue its jobs once more in every child. This module is
# preloaded into the fork server, so the children it forks skip that.
spawn._fixup_main_from_path = spawn._fixup_main_from_name = lambda _main: None  # noqa: SLF001


class JobFailed(Exception):  # noqa: N818 - the attempt's outcome, as data
    """Raised by a kind's child function: the attempt failed with this error type."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type


# A child's temporary folder, in its worker's folder: ``child-<pid>``.
CHILD_FOLDER_PREFIX = "child-"


def init_child(megabytes: int, parent_pid: int, folder: str = "") -> None:
    """Pool initializer: cap the child's address space, so a parser that explodes
    raises MemoryError (or dies) in the child instead of starving the host. Ctrl+C is
    the parent's to handle: it lets current jobs finish. The child dies with
    the process that asked for it (``parent_pid``). With ``folder`` (its worker's),
    its temporary files go to a folder of its own there."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with(parent_pid)
    if folder:
        _own_temporary_folder(folder)
    if megabytes > 0:
        limit = megabytes * 1024 * 1024
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _own_temporary_folder(parent: str) -> None:
    """Send the temporary files of what runs here (an attachment or an embedded
    document that a library opens by path) to ``parent/child-<pid>``, removed as the
    child exits. A child that is killed (a timeout, a stop, a crash) cannot remove
    its files: its worker removes the folder (``JobRunner``)."""
    folder = os.path.join(parent, f"{CHILD_FOLDER_PREFIX}{os.getpid()}")
    os.makedirs(folder, 0o700, exist_ok=True)  # exists: a dead child's, same pid
    tempfile.tempdir = folder
    util.Finalize(
        None,
        shutil.rmtree,
        args=(folder,),
        kwargs={"ignore_errors": True},
        exitpriority=0,
    )


def dead_processes_folders(parent: str, prefix: str, alive_lock: str = "") -> list[str]:
    """Our folders ``<prefix><pid>`` (or ``<prefix><pid>-…``) in ``parent`` whose
    process has gone: what a killed process could not remove. With ``alive_lock``,
    a folder holding that file is its process's while the file is locked
    (``hold_alive_lock``), whatever its pid says: a pid is reused, and one from
    another pid namespace (a container sharing /tmp) names no process here."""
    found = []
    with os.scandir(parent) as entries:
        for entry in entries:
            pid = entry.name.removeprefix(prefix).partition("-")[0]
            if not (
                entry.name.startswith(prefix)
                and pid.isdigit()
                and entry.is_dir(follow_symlinks=False)
                and entry.stat(follow_symlinks=False).st_uid == os.getuid()
            ):
                continue
            held = (
                _lock_held(os.path.join(entry.path, alive_lock)) if alive_lock else None
            )
            if held is None:  # no lock to ask: its pid tells
                held = process_exists(int(pid))
            if not held:
                found.append(entry.path)
    return found


def hold_alive_lock(path: str) -> Any:
    """Create and lock ``path`` for as long as the returned file stays open: the
    process's folder is then not taken for a dead one's. The lock goes with the
    process, however it ends."""
    handle = open(path, "wb")  # noqa: SIM115 - held open for the process's life
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def _lock_held(path: str) -> bool | None:
    """Whether a process holds the lock on ``path``; None without such a file (a
    process killed before it made one)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError:
        return True  # not ours to judge: keep the folder
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:  # BlockingIOError: another process holds it
        return True
    finally:
        os.close(fd)
    return False


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
            while process_exists(pid):
                time.sleep(1.0)
        else:
            select.select([handle], [], [])  # readable once the process has exited
        os._exit(1)

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()


def process_exists(pid: int) -> bool:
    """Whether process ``pid`` is alive (or a zombie not yet reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run_job(
    function_path: str, kwargs: dict[str, Any], progress_path: str | None = None
) -> tuple[str, Any, str]:
    """Run one attempt; failures come back as data (error type, message), because
    arbitrary exceptions do not always survive pickling. With ``progress_path``, the
    function gets ``progress(done, total)`` to report how far it has got."""
    try:
        module_name, _, attr = function_path.rpartition(".")
        function = getattr(importlib.import_module(module_name), attr)
        if progress_path:
            kwargs = {**kwargs, "progress": progress_writer(progress_path)}
        return ("ok", function(**kwargs), "")
    except JobFailed as exc:
        return ("error", exc.error_type, str(exc)[:2000])
    except MemoryError:
        return ("error", "unknown", "The job ran out of memory.")
    except BaseException as exc:  # noqa: BLE001 - every failure must reach the parent
        return ("error", "unknown", f"{type(exc).__name__}: {exc}"[:2000])


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
