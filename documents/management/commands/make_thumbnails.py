"""Queue thumbnail jobs for documents read before thumbnails existed (or all)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from documents.jobs import THUMBNAIL_PRIORITY
from documents.models import Document
from jobqueue.models import Operation, Status
from jobqueue.services import QueueManager


class Command(BaseCommand):
    help = (
        "Queue a thumbnail job for each document whose text has been read and that "
        "has no thumbnail yet (--all: every such document, drawing them again). "
        "Running workers draw them."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--all",
            action="store_true",
            help="also documents that have a thumbnail (draw them again)",
        )

    def handle(self, *args, all: bool = False, **options) -> None:  # noqa: A002
        documents = Document.objects.filter(status=Status.COMPLETED)
        if not all:
            documents = documents.filter(thumbnail="")
        ids = list(documents.values_list("pk", flat=True))
        queued = QueueManager(Operation.THUMBNAIL).enqueue_batch(
            ids, priority=THUMBNAIL_PRIORITY
        )
        if options["verbosity"]:
            self.stdout.write(
                f"Queued {len(queued)} thumbnail job(s) for {len(ids)} document(s)."
            )
