"""Pages of a PDF as PNG images for the viewer: drawn by ``documents.page_render``
in a child process (a hostile file can hang or crash PDFium, never the web process),
bounded in size, and kept in storage so each page is drawn once."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections import deque

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage, Storage

from documents.local_files import local_path, remove_copy
from documents.models import Document
from documents.page_render import PAGE_WIDTH

# Where every document's rendered pages are kept, a folder each (``cache_folder``).
PAGES_DIR = "pages"
RENDER_TIMEOUT_SECONDS = 20
# Pages drawn at once by one web process, and how long a request waits for its turn:
# a page can take seconds of CPU and up to 1 GB (page_render), and many requests at
# once must not take the site (the drawing also runs at a lower CPU priority).
RENDERS_AT_ONCE = 1
RENDER_WAIT_SECONDS = 10
_renders = threading.BoundedSemaphore(RENDERS_AT_ONCE)
# A page that took too long is tried again (the host may have been busy), so a file
# made to be slow, asked for page after page, held the drawing of everyone's pages
# in this web process, 20 s a request. After this many timeouts within the window,
# its owner's pages not drawn yet wait until the window has passed.
SLOW_RENDERS_ALLOWED = 3
SLOW_RENDER_WINDOW_SECONDS = 600
_slow_renders: dict[int, deque[float]] = {}
_slow_lock = threading.Lock()


class PageUnavailable(Exception):
    """The page cannot be shown: no such page, or the file cannot be rendered."""


class PageBroken(PageUnavailable):
    """PDFium could not draw the page (the same bytes fail the same way)."""


class PagesBusy(Exception):
    """Other pages are being drawn; ask again in a moment."""

    message = "Other pages are being drawn; try again in a moment."
    retry_after = 5


class PageSlow(PageUnavailable):
    """Drawing the page took longer than RENDER_TIMEOUT_SECONDS."""


class TooManySlowPages(PagesBusy):
    """The owner's pages took too long too often lately; ask again later."""

    message = (
        "Your pages took too long to draw several times in the last minutes: pages "
        "not drawn yet wait a while."
    )
    retry_after = SLOW_RENDER_WINDOW_SECONDS


def cache_folder(document: Document) -> str:
    """Where the document's rendered pages are kept (removed with the document)."""
    return pages_folder(document.pk)


def pages_folder(document_id: int) -> str:
    """``cache_folder`` of the document with this id."""
    return f"{PAGES_DIR}/{document_id}"


def thumbnail_name(document: Document) -> str:
    """Where the document's first-page thumbnail is kept (removed with its pages)."""
    return f"{cache_folder(document)}/thumbnail-{document.sha256[:16]}.png"


def store_thumbnail(document: Document, png: bytes) -> str:
    """Keep the thumbnail, replacing an older one of the same file."""
    storage, name = document.file.storage, thumbnail_name(document)
    if storage.exists(name):
        storage.delete(name)
    return storage.save(name, ContentFile(png))


def page_png(document: Document, number: int) -> str:
    """The storage name of the page's PNG, rendering it first if it is not kept yet.
    A page that could not be drawn is remembered, and not drawn again (one that took
    too long is tried again: the host may have been busy)."""
    if document.page_count is None:
        raise PageUnavailable("Its pages are shown once it has been processed.")
    if not 1 <= number <= document.page_count:
        raise PageUnavailable(f"There is no page {number}.")
    storage = document.file.storage
    name = f"{cache_folder(document)}/{document.sha256[:16]}-{number}-{PAGE_WIDTH}"
    if storage.exists(f"{name}.png"):
        return f"{name}.png"
    if storage.exists(f"{name}.failed"):
        raise PageUnavailable("This page could not be drawn.")
    if _slow_recently(document.owner_id):
        raise TooManySlowPages
    if not _renders.acquire(timeout=RENDER_WAIT_SECONDS):
        raise PagesBusy
    try:
        png = _render(document, number)
    except PageBroken:
        storage.save(f"{name}.failed", ContentFile(b""))
        raise
    except PageSlow:
        _note_slow(document.owner_id)
        raise
    finally:
        _renders.release()
    return storage.save(f"{name}.png", ContentFile(png))


def _render(document: Document, number: int) -> bytes:
    path, copy = local_path(document.file)
    try:
        done = subprocess.run(  # noqa: S603 - our own module, arguments we built
            [sys.executable, "-m", "documents.page_render", path, str(number)],
            cwd=settings.BASE_DIR,
            capture_output=True,
            timeout=RENDER_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise PageSlow("Drawing this page took too long.") from None
    finally:
        if copy:
            remove_copy(path)
    if done.returncode != 0 or not done.stdout.startswith(b"\x89PNG"):
        raise PageBroken("This page could not be drawn.")
    return done.stdout


def _recent(times: deque[float], now: float) -> deque[float]:
    while times and times[0] <= now - SLOW_RENDER_WINDOW_SECONDS:
        times.popleft()
    return times


def _slow_recently(owner_id: int) -> bool:
    """Whether the owner's pages took too long SLOW_RENDERS_ALLOWED times lately."""
    with _slow_lock:
        times = _recent(_slow_renders.get(owner_id, deque()), time.monotonic())
        if not times:
            _slow_renders.pop(owner_id, None)
        return len(times) >= SLOW_RENDERS_ALLOWED


def _note_slow(owner_id: int) -> None:
    with _slow_lock:
        times = _slow_renders.setdefault(owner_id, deque())
        times.append(time.monotonic())
        _recent(times, time.monotonic())


def forget_pages(document: Document) -> None:
    """Remove the document's rendered pages from storage, and their folder."""
    storage = document.file.storage
    folder = cache_folder(document)
    try:
        _dirs, files = storage.listdir(folder)
    except FileNotFoundError:
        return
    for name in files:
        storage.delete(f"{folder}/{name}")
    remove_empty_folder(storage, folder)


def keeps_folders(storage: Storage) -> bool:
    """Whether an empty folder stays in ``storage`` (a file system) once its last
    file is deleted. Elsewhere a folder is only the common start of its files' names,
    and ``delete`` of a folder's name means what each backend makes of it (S3: a key
    of that name; ``InMemoryStorage``: the folder with its files)."""
    return isinstance(storage, FileSystemStorage)


def remove_empty_folder(storage: Storage, folder: str) -> bool:
    """Remove ``folder`` if it is empty, where an empty folder stays behind
    (``keeps_folders``); whether it was removed."""
    if not keeps_folders(storage):
        return False
    try:
        storage.delete(folder)  # os.rmdir, which leaves a folder that is not empty
    except OSError:
        # A page drawn meanwhile; check_storage removes it once its document is gone.
        return False
    return True
