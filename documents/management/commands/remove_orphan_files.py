"""Delete stored upload files that no document refers to.

An upload stores its file first, then commits the document and its queue item; if the
web process is killed (SIGKILL, OOM, power) between the two, the file stays behind
with no row. Files younger than ``--older-than`` minutes are never touched: their
upload may still be committing.
"""

from __future__ import annotations

from argparse import ArgumentTypeError
from collections.abc import Iterator
from datetime import datetime, timedelta

from django.core.files.storage import Storage
from django.core.management.base import BaseCommand
from django.template.defaultfilters import filesizeformat
from django.utils import timezone

from documents.models import Document

# Where uploads are stored (see documents.models.stored_file_name).
UPLOAD_DIR = "documents"


def minutes(value: str) -> float:
    number = float(value)
    if number < 0:
        raise ArgumentTypeError("must be 0 or more minutes")
    return number


def stored_files(storage: Storage, directory: str) -> Iterator[str]:
    """Every file name under ``directory`` in the storage, recursively."""
    try:
        folders, files = storage.listdir(directory)
    except FileNotFoundError:
        return
    for name in files:
        yield f"{directory}/{name}"
    for folder in folders:
        yield from stored_files(storage, f"{directory}/{folder}")


def _modified_before(storage: Storage, name: str, cutoff: datetime) -> bool:
    try:
        return storage.get_modified_time(name) < cutoff
    except FileNotFoundError:  # deleted meanwhile
        return False


class Command(BaseCommand):
    help = (
        "Delete uploaded files that no document refers to (left by uploads that were "
        "killed before their transaction committed)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--older-than",
            type=minutes,
            default=60.0,
            metavar="MINUTES",
            help="Only files last modified this long ago (default 60).",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="List the files, delete nothing."
        )

    def handle(self, *, older_than: float, dry_run: bool, **options) -> None:
        storage = Document._meta.get_field("file").storage
        cutoff = timezone.now() - timedelta(minutes=older_than)
        # List first, then read the references: a file whose document commits in
        # between is then protected, and younger uploads are left alone by the cutoff.
        names = list(stored_files(storage, UPLOAD_DIR))
        referenced = set(Document.objects.values_list("file", flat=True).iterator())
        orphans = [
            name
            for name in names
            if name not in referenced and _modified_before(storage, name, cutoff)
        ]
        verb = "Would remove" if dry_run else "Removed"
        total = 0
        for name in orphans:
            total += storage.size(name)
            if not dry_run:
                storage.delete(name)
            self.stdout.write(f"{verb} {name}")
        size = filesizeformat(total).replace("\xa0", " ")  # plain text for a terminal
        dry = " (dry run)" if dry_run else ""
        self.stdout.write(f"{verb} {len(orphans)} orphan files ({size}){dry}.")
