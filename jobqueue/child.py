"""What runs inside an extraction child process. Kept free of Django so children
start fast and hold no database connection."""

from __future__ import annotations

import importlib
import resource
import signal
from typing import Any

from documents.extractors.base import classify


def init_child(megabytes: int) -> None:
    """Pool initializer: cap the child's address space, so a parser that explodes
    raises MemoryError (or dies) in the child instead of starving the host. Ctrl+C is
    the parent's to handle: it lets current extractions finish."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if megabytes > 0:
        limit = megabytes * 1024 * 1024
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def run_extraction(
    function_path: str, path: str, mime_type: str, options: dict[str, Any]
) -> tuple[str, Any, str]:
    """Extract one file; failures come back as data (error type, message), because
    arbitrary parser exceptions do not always survive pickling."""
    try:
        module_name, _, attr = function_path.rpartition(".")
        extract = getattr(importlib.import_module(module_name), attr)
        return ("ok", extract(path, mime_type=mime_type, **options), "")
    except MemoryError:
        return ("error", "unknown", "The extractor ran out of memory on this file.")
    except BaseException as exc:  # noqa: BLE001 - every failure must reach the parent
        message = str(exc) or type(exc).__name__
        error_type = classify(exc)
        if error_type == "unknown":
            message = f"{type(exc).__name__}: {message}"
        return ("error", error_type, message[:2000])
