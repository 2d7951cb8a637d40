"""A document's file at a local path, for the processes that read it (extraction
children, the page renderer): the storage's own path where it has one (a file
system), else a copy, as any Django storage backend may hold the files (S3 and the
like, shared by many worker hosts)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # no Django at run time: the children remove their copies too
    from django.db.models.fields.files import FieldFile

# A document whose stored file went (a restore that missed it, a hand's rm): said
# so, where the reader's own error would only name a path it may not show.
MISSING = (
    "The stored file of this document is missing: restore it from a backup, or "
    "upload the document again (manage.py check_storage lists every document whose "
    "file is missing)."
)
COPIES = Path(tempfile.gettempdir()) / "docqueue-copies"
# Each copy is removed by its reader; one a killed reader left, this long after.
LEFT_COPY_SECONDS = 24 * 3600
_CHUNK = 1024 * 1024


def local_path(file: FieldFile) -> tuple[str, bool]:
    """A path to ``file``'s content, and whether it is a copy, which its reader
    removes (``remove_copy``)."""
    try:
        return file.path, False
    except NotImplementedError:  # the storage keeps no local files
        pass
    COPIES.mkdir(mode=0o700, exist_ok=True)
    _remove_left_copies()
    fd, name = tempfile.mkstemp(dir=COPIES, suffix=PurePosixPath(file.name).suffix)
    try:
        with os.fdopen(fd, "wb") as copy, file.storage.open(file.name, "rb") as source:
            shutil.copyfileobj(source, copy, _CHUNK)
    except BaseException:
        remove_copy(name)
        raise
    return name, True


def remove_copy(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


def _remove_left_copies() -> None:
    cutoff = time.time() - LEFT_COPY_SECONDS
    with os.scandir(COPIES) as entries:
        for entry in entries:
            with contextlib.suppress(FileNotFoundError):
                if entry.stat().st_mtime < cutoff:
                    os.remove(entry.path)
