"""The extraction as a job's child function: no Django here, children start fast."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from documents.extractors.base import classify, hide_paths
from documents.local_files import MISSING, remove_copy
from jobqueue.child import JobFailed


def extract_in_child(
    function: str,
    path: str,
    mime_type: str,
    options: dict[str, Any],
    progress: Callable[[int, int], None] | None = None,
    copy: bool = False,
) -> Any:
    """Runs in the child: the extraction, its failures as typed ``JobFailed``;
    ``copy``: ``path`` is a copy of the stored file, removed after."""
    try:
        module_name, _, attr = function.rpartition(".")
        extract = getattr(importlib.import_module(module_name), attr)
        return extract(path, mime_type=mime_type, progress=progress, **options)
    except MemoryError:
        raise JobFailed(
            "unknown", "The extractor ran out of memory on this file."
        ) from None
    except Exception as exc:
        if isinstance(exc, FileNotFoundError) and exc.filename == path:
            raise JobFailed("unknown", MISSING) from None
        # A library's message may name the stored file: not for the user's eyes.
        message = hide_paths(str(exc), path) or type(exc).__name__
        error_type = classify(exc)
        if error_type == "unknown":
            message = f"{type(exc).__name__}: {message}"
        raise JobFailed(error_type, message[:2000]) from None
    finally:
        if copy:
            remove_copy(path)
