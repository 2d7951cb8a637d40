"""Delete finished queue items older than N days (as the admin's clear page does), and,
unless --status leaves a finished state out, the heartbeats of workers stopped (or
killed: silent) that long ago."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.utils.translation import ngettext

from jobqueue.dashboard import stopped_heartbeats
from jobqueue.management.arguments import amount
from jobqueue.models import FINISHED_STATUSES
from jobqueue.services import QueueManager


class Command(BaseCommand):
    help = "Delete completed, failed and cancelled queue items older than --older-than days."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--older-than",
            type=amount("days", allow_zero=True),
            required=True,
            metavar="DAYS",
            help="Age, in days since their last change, of the items to delete.",
        )
        parser.add_argument(
            "--status",
            action="append",
            choices=[str(s) for s in FINISHED_STATUSES],
            help=(
                "Only these states (repeatable); default: all finished states. "
                "Leaving one out keeps the stopped workers' heartbeats."
            ),
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Say how many, delete nothing."
        )

    def handle(
        self,
        *,
        older_than: float,
        status: list[str] | None,
        dry_run: bool,
        verbosity: int,
        **options,
    ) -> None:
        queue = QueueManager()
        try:
            matching = queue.finished_older_than(older_than, status).count()
        except ValueError as error:
            raise CommandError(str(error)) from None
        # A --status that leaves out a finished state narrows the clearing to those
        # items: the heartbeats stay. All three are the default (as on the clear page).
        stopped = stopped_heartbeats(older_than, status)
        if dry_run:
            also = _heartbeats(stopped.count()) if stopped is not None else ""
            self.stdout.write(f"Would delete {_items(matching)}{also} (dry run).")
            return
        deleted = queue.clear_finished(older_than, status)
        also = _heartbeats(stopped.delete()[0]) if stopped is not None else ""
        if verbosity == 0:  # from cron: nothing to mail
            return
        self.stdout.write(
            f"Deleted {_items(deleted)}{also} older than {older_than:g} days."
        )


def _items(count: int) -> str:
    return ngettext("%d queue item", "%d queue items", count) % count


def _heartbeats(count: int) -> str:
    return (
        ngettext(
            " and %d stopped worker's heartbeat",
            " and %d stopped workers' heartbeats",
            count,
        )
        % count
    )
