"""Stored files against document rows, both ways.

An upload stores its file, then commits the document and its queue item; if the web
process is killed (SIGKILL, OOM, power) between the two, the file stays behind with no
row. Such orphan files are removed, and so are the rendered pages and thumbnails of a
document that is gone (a page drawn while it was deleted, or left by an older version
that deleted a person's documents without their files), then their folder; files
younger than ``--older-than`` minutes are never touched, as their upload may still be
committing.

A row whose file is missing is only reported (and the command exits non-zero): the
usual cause is storage that is not mounted or a restore gone wrong, so the remedy is
the operator's (restore the file, or delete the document), never this command's.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

from django.core.files.storage import Storage
from django.core.management.base import BaseCommand, CommandError
from django.template.defaultfilters import filesizeformat, pluralize
from django.utils import timezone

from documents.models import Document
from documents.pages import PAGES_DIR, keeps_folders, pages_folder, remove_empty_folder
from jobqueue.management.arguments import amount

# Where uploads are stored (see documents.models.stored_file_name).
UPLOAD_DIR = "documents"


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
        "Check stored files against documents: remove files no document refers to "
        "(left by uploads killed before their commit, or pages of deleted documents) "
        "and report documents whose file is missing (exit status 1 if there are any)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--older-than",
            type=amount("minutes", allow_zero=True),
            default=60.0,
            metavar="MINUTES",
            help="Only remove orphan files last modified this long ago (default 60).",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Report only, delete nothing."
        )

    def handle(
        self, *, older_than: float, dry_run: bool, verbosity: int, **options
    ) -> None:
        # -v0 (cron): only missing files are written, so cron mails only problems.
        self.quiet = verbosity == 0
        storage = Document._meta.get_field("file").storage
        self._remove_orphans(storage, older_than, dry_run)
        missing = [
            document
            for document in Document.objects.only("pk", "original_filename", "file")
            .order_by("pk")
            .iterator()
            if not storage.exists(document.file.name)
        ]
        for document in missing:
            self.stdout.write(
                f"Missing file of document {document.pk} “{document}”: "
                f"{document.file.name}"
            )
        if missing:
            raise CommandError(
                f"{len(missing)} document{pluralize(len(missing))} without a stored "
                "file: restore the files from a backup (check that MEDIA_ROOT is the "
                "right folder and mounted), or delete those documents."
            )
        if not self.quiet:
            self.stdout.write("Every document has its stored file.")

    def _remove_orphans(self, storage: Storage, older_than: float, dry_run: bool):
        cutoff = timezone.now() - timedelta(minutes=older_than)
        unowned, gone = _unowned(storage)
        orphans = [name for name in unowned if _modified_before(storage, name, cutoff)]
        # A gone document's folder goes once its files have; not while one is young.
        spared = {_top_folder(name) for name in set(unowned) - set(orphans)}
        verb = "Would remove" if dry_run else "Removed"
        total = 0
        for name in orphans:
            total += storage.size(name)
            if not dry_run:
                storage.delete(name)
            if not self.quiet:
                self.stdout.write(f"{verb} {name}")
        emptied = 0
        for folder in gone:
            if folder in spared or not keeps_folders(storage):
                continue
            if dry_run or remove_empty_folder(storage, folder):
                emptied += 1
                if not self.quiet:
                    self.stdout.write(f"{verb} {folder}/")
        size = filesizeformat(total).replace("\xa0", " ")  # plain text for a terminal
        folders = f" and {emptied} page folder{pluralize(emptied)}" if emptied else ""
        dry = " (dry run)" if dry_run else ""
        if not self.quiet:
            self.stdout.write(
                f"{verb} {len(orphans)} orphan files ({size}){folders}{dry}."
            )


def _unowned(storage: Storage) -> tuple[list[str], list[str]]:
    """The stored files no document owns: uploads no row refers to, and whatever is
    under ``pages/`` outside the folder of a document (``pages_folder``); and those
    folders of documents that are gone."""
    # List first, then read the references: a file whose document commits in
    # between is then protected, and younger uploads are left alone by the cutoff.
    # (Pages are drawn only for a committed document.)
    uploads = list(stored_files(storage, UPLOAD_DIR))
    try:
        folders, loose = storage.listdir(PAGES_DIR)
    except FileNotFoundError:
        folders, loose = [], []
    referenced: set[str] = set()
    kept: set[str] = set()
    for pk, name in Document.objects.values_list("pk", "file").iterator():
        referenced.add(name)
        kept.add(pages_folder(pk))
    unowned = [name for name in uploads if name not in referenced]
    unowned += sorted(f"{PAGES_DIR}/{name}" for name in loose)
    gone = sorted({f"{PAGES_DIR}/{name}" for name in folders} - kept)
    for folder in gone:
        unowned += sorted(stored_files(storage, folder))
    return unowned, gone


def _top_folder(name: str) -> str:
    """``pages/7`` of ``pages/7/a.png``: the folder under the top one."""
    return "/".join(name.split("/", 2)[:2])
