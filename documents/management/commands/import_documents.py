"""Import a folder (or files) of documents for an owner, queueing each for extraction."""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections import Counter
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.files import File
from django.core.management.base import BaseCommand, CommandError
from django.utils.translation import ngettext
from tqdm import tqdm

from documents.extractors.formats import accepted_labels, by_extension
from documents.services import DuplicateUpload, UploadRefused, document_create
from documents.uploads import check_upload
from jobqueue.management.arguments import whole_number
from jobqueue.models import MAX_PRIORITY, MIN_PRIORITY, PRIORITY_RANGE

NOT_READ = "not a supported format"
REFUSED = "refused"
UNREADABLE = "unreadable"
DUPLICATE = "duplicate"
LINK_SKIPPED = (
    f"{UNREADABLE}: a symbolic link; links in a folder are not followed (name the "
    "file itself to import it)"
)


class Command(BaseCommand):
    help = (
        "Import files for --owner; each is queued. Folders are walked recursively for "
        "files named like a format we know; hidden files and folders are left out."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "paths", nargs="+", metavar="PATH", help="Files or folders to import."
        )
        parser.add_argument(
            "--owner", required=True, help="Username that will own them."
        )
        parser.add_argument(
            "--priority",
            type=whole_number(MIN_PRIORITY, MAX_PRIORITY),
            default=0,
            help=f"Queue priority of their jobs, {PRIORITY_RANGE} (higher runs first).",
        )
        parser.add_argument(
            "--allow-duplicates",
            action="store_true",
            help="Import files whose content this owner already has.",
        )

    def handle(
        self,
        *,
        paths: list[str],
        owner: str,
        priority: int,
        allow_duplicates: bool,
        verbosity: int,
        **options,
    ) -> None:
        User = get_user_model()  # noqa: N806
        try:
            user = User.objects.get(**{User.USERNAME_FIELD: owner})
        except User.DoesNotExist:
            raise CommandError(f"No user named “{owner}”.") from None
        try:
            files = self._collect(paths)
        except KeyboardInterrupt:  # a large folder's walk: nothing imported yet
            raise CommandError(
                "Interrupted while looking for files: nothing was imported.",
                returncode=130,
            ) from None
        imported = 0
        # (path, why in a few words, the whole message)
        skipped = [
            (path, NOT_READ, f"{NOT_READ} (by its name)") for path in self.unsupported
        ] + self.walk_skipped
        show_bar = verbosity > 0 and sys.stderr.isatty()
        done, interrupted = 0, False
        try:
            for path in tqdm(files, unit="file", disable=not show_bar, file=sys.stderr):
                refusal = self._import(path, user, priority, allow_duplicates)
                if refusal:
                    skipped.append((path, *refusal))
                else:
                    imported += 1
                done += 1
        except KeyboardInterrupt:
            # Each file is imported whole or not at all: say what was done.
            interrupted = True
        total = len(files) + len(self.unsupported) + len(self.walk_skipped)
        self.stdout.write(
            f"Imported {imported} of {total} files; skipped {len(skipped)}."
        )
        if self.hidden:
            self.stdout.write(f"Left out {self.hidden} hidden files or folders.")
        for path, _why, message in skipped:
            self.stdout.write(f"  skipped {_shown(path)}: {message}")
        if self.unsupported:
            # Once, not on each line: a folder may hold thousands of such names.
            self.stdout.write(f"Formats accepted: {accepted_labels()}.")
        summary = Counter(why for _, why, _ in skipped)
        if skipped:
            self.stdout.write(
                "Skipped by reason: "
                + ", ".join(f"{why} ({count})" for why, count in summary.items())
            )
        if interrupted:
            raise CommandError(
                f"Interrupted after {done} of {len(files)} files. Run it again for the "
                "rest (those it imported are then skipped as duplicates, unless "
                "--allow-duplicates).",
                returncode=130,
            )
        failed = summary[REFUSED] + summary[UNREADABLE]
        if failed:
            # A script must see it without reading the summary; a duplicate or a
            # name no format has, in a folder, is no failure.
            raise CommandError(
                ngettext(
                    "%d of the files was refused or unreadable (listed above).",
                    "%d of the files were refused or unreadable (listed above).",
                    failed,
                )
                % failed
            )

    def _collect(self, paths: list[str]) -> list[Path]:
        """Named files as they are; folders walked for documents only (see _walk)."""
        files: list[Path] = []
        self.hidden = 0
        self.unsupported: list[Path] = []
        # Found in folders, where a link is not followed: one put in a drop folder
        # (notes.txt → the server's .env) would import what it points at.
        self.walked: set[Path] = set()
        # Skipped while walking: folder links, folders that cannot be listed.
        self.walk_skipped: list[tuple[Path, str, str]] = []
        for raw in paths:
            path = Path(raw)
            if path.is_dir():
                walked = self._walk(path)
                self.walked.update(walked)
                files.extend(walked)
            elif path.is_file():
                files.append(path)
            else:
                raise CommandError(f"{raw} is neither a file nor a folder.")
        return files

    def _walk(self, folder: Path) -> list[Path]:
        """Files under ``folder`` named like a format we know. Hidden entries (.git,
        .DS_Store) are not entered at all; other names are skipped, and said so."""
        found: list[Path] = []

        def unlisted(error: OSError) -> None:  # os.walk would go on without a word
            self.walk_skipped.append(
                (Path(error.filename), UNREADABLE, f"{UNREADABLE}: {error.strerror}")
            )

        for root, dirs, names in os.walk(folder, onerror=unlisted):
            self.hidden += sum(d.startswith(".") for d in dirs)
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in [d for d in dirs if os.path.islink(os.path.join(root, d))]:
                # os.walk does not enter it; say so, as for a link to a file.
                dirs.remove(name)
                self.walk_skipped.append((Path(root, name), UNREADABLE, LINK_SKIPPED))
            for name in sorted(names):
                if name.startswith("."):
                    self.hidden += 1
                    continue
                # A format we refuse (.doc) is checked too: its refusal says
                # what to save it as.
                if by_extension(name) is not None:
                    found.append(Path(root, name))
                else:
                    self.unsupported.append(Path(root, name))
        return found

    def _import(
        self, path: Path, user, priority: int, allow_duplicates: bool
    ) -> tuple[str, str] | None:
        """Import one file; None, or why it was skipped (in a few words, and whole)."""
        opener = _open_in_folder if path in self.walked else _open_nonblocking
        try:
            handle = open(path, "rb", opener=opener)  # noqa: SIM115
        except OSError as error:  # gone meanwhile, a dangling link, no permission
            if error.errno == errno.ELOOP and path in self.walked:
                return UNREADABLE, LINK_SKIPPED
            return UNREADABLE, f"{UNREADABLE}: {error.strerror or error}"
        with handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return UNREADABLE, f"{UNREADABLE}: not a regular file"
            # A name in another encoding (Latin-1) keeps a mark where its
            # letters were, rather than losing them without a trace.
            file = File(handle, name=os.fsencode(path.name).decode("utf-8", "replace"))
            try:
                checked = check_upload(file)
            except ValidationError as error:
                return REFUSED, f"{REFUSED}: {' '.join(error.messages)}"
            except OSError as error:  # a read error midway
                return UNREADABLE, f"{UNREADABLE}: {error.strerror or error}"
            try:
                document_create(
                    owner=user,
                    upload=checked,
                    priority=priority,
                    allow_duplicate=allow_duplicates,
                )
            except DuplicateUpload:
                return DUPLICATE, (
                    f"{DUPLICATE}: this owner already has a file with the same content"
                )
            except UploadRefused as error:  # a full disk, the database
                return REFUSED, f"{REFUSED}: {error}"
        return None


def _open_nonblocking(path: str, flags: int) -> int:
    # A named pipe in the folder would wait for a writer forever.
    return os.open(path, flags | os.O_NONBLOCK)


def _open_in_folder(path: str, flags: int) -> int:
    return _open_nonblocking(path, flags | os.O_NOFOLLOW)


def _shown(path: Path) -> str:
    """A path to print on one line: bytes of another encoding (which a strict UTF-8
    stdout refuses) and control characters (a newline, a terminal's escapes) as
    backslash escapes."""
    text = os.fsencode(path).decode("utf-8", "backslashreplace")
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )
