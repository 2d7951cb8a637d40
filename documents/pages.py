"""Pages of a PDF as PNG images for the viewer: drawn by ``documents.page_render``
in a child process (a hostile file can hang or crash PDFium, never the web process),
bounded in size, and kept in storage so each page is drawn once."""

from __future__ import annotations

import resource
import subprocess
import sys

from django.conf import settings
from django.core.files.base import ContentFile

from documents.models import Document
from documents.page_render import PAGE_WIDTH

RENDER_TIMEOUT_SECONDS = 20
RENDER_MEMORY_BYTES = 1024 * 1024 * 1024


class PageUnavailable(Exception):
    """The page cannot be shown: no such page, or the file cannot be rendered."""


def cache_folder(document: Document) -> str:
    """Where the document's rendered pages are kept (removed with the document)."""
    return f"pages/{document.pk}"


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
    """The storage name of the page's PNG, rendering it first if it is not kept yet."""
    if document.page_count is not None and not 1 <= number <= document.page_count:
        raise PageUnavailable(f"There is no page {number}.")
    storage = document.file.storage
    name = f"{cache_folder(document)}/{document.sha256[:16]}-{number}-{PAGE_WIDTH}.png"
    if storage.exists(name):
        return name
    try:
        done = subprocess.run(  # noqa: S603 - our own module, arguments we built
            [
                sys.executable,
                "-m",
                "documents.page_render",
                document.file.path,
                str(number),
            ],
            cwd=settings.BASE_DIR,
            capture_output=True,
            timeout=RENDER_TIMEOUT_SECONDS,
            check=False,
            preexec_fn=_limit_memory,  # noqa: PLW1509 - no threads are forked here
        )
    except subprocess.TimeoutExpired:
        raise PageUnavailable("Drawing this page took too long.") from None
    if done.returncode != 0 or not done.stdout.startswith(b"\x89PNG"):
        raise PageUnavailable("This page could not be drawn.")
    return storage.save(name, ContentFile(done.stdout))


def forget_pages(document: Document) -> None:
    """Remove the document's rendered pages from storage."""
    storage = document.file.storage
    folder = cache_folder(document)
    try:
        _dirs, files = storage.listdir(folder)
    except FileNotFoundError:
        return
    for name in files:
        storage.delete(f"{folder}/{name}")


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (RENDER_MEMORY_BYTES, RENDER_MEMORY_BYTES))
