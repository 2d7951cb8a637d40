"""Documents people upload, and what extraction made of them."""

from __future__ import annotations

import uuid
from pathlib import PurePosixPath

from django.conf import settings
from django.db import models
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce, Lower, NullIf
from django.urls import reverse

from jobqueue.models import Status


def stored_file_name(instance: Document, filename: str) -> str:
    """A random name under documents/: the uploaded name is never used on disk."""
    suffix = PurePosixPath(filename).suffix.lower()[:10]
    return f"documents/{uuid.uuid4().hex}{suffix}"


def shown_name() -> Lower:
    """What the list shows as a document's name (``Document.__str__``: its title, else
    its file name), in lower case: the list's Name sort, read from doc_owner_shown
    and doc_shown in that order. The empty title is written out in the SQL, not
    passed as a parameter (``Value``): SQLite serves an ORDER BY from an index only
    if the expressions are the same, constants included, and a bound parameter is
    not the constant (it sorted every row instead: 1 s at a million)."""
    return Lower(Coalesce(NullIf("title", RawSQL("''", ())), "original_filename"))


class DocumentQuerySet(models.QuerySet["Document"]):
    def for_user(self, user: settings.AUTH_USER_MODEL) -> DocumentQuerySet:
        """A person sees their own documents; staff see all."""
        if user.is_staff:
            return self
        return self.filter(owner=user)

    def without_text(self) -> DocumentQuerySet:
        """Without the large columns (the text and its search grams), which only a
        document's own page and the search read."""
        return self.defer("text", "search_grams")


class Tag(models.Model):
    """A person's own label for their documents; one name per person, in any case."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tags"
    )
    name = models.CharField(max_length=50)

    class Meta:
        ordering = [Lower("name")]
        constraints = [
            models.UniqueConstraint(
                "owner", Lower("name"), name="uniq_tag_name_per_owner"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Document(models.Model):
    """An uploaded file; ``status`` mirrors its latest queue item."""

    # Indexed first in doc_owner_created (below), which serves every lookup by owner.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="documents",
        db_index=False,
    )
    original_filename = models.CharField(max_length=255)
    title = models.CharField(max_length=255, blank=True)
    tags = models.ManyToManyField(Tag, blank=True, related_name="documents")
    file = models.FileField(upload_to=stored_file_name, max_length=255)
    mime_type = models.CharField(max_length=100)
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64, db_index=True)
    # In no index: a document's status moves twice a job, and each index holding it
    # would be written at each move (on PostgreSQL, every index: no HOT update).
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING
    )
    error_type = models.CharField(max_length=32, blank=True)
    error_message = models.TextField(blank=True)
    text = models.TextField(blank=True)
    # Chinese, Japanese, Korean and Thai words of the title and file name, a line
    # break, then those of the text, as bigrams for the search index
    # (documents.grams.search_grams); "" without them.
    search_grams = models.TextField(blank=True, default="", editable=False)
    page_count = models.PositiveIntegerField(null=True, blank=True)
    confidence = models.FloatField(null=True, blank=True)
    extractor = models.CharField(max_length=64, blank=True)
    extraction_note = models.TextField(blank=True)
    # Storage name of the first page's picture (the ``thumbnail`` job makes it).
    thumbnail = models.CharField(max_length=255, blank=True)
    processed_at = models.DateTimeField(null=True, blank=True)
    # Indexed with the id (doc_created, below), in the order the list shows.
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = DocumentQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        # The list's filters and sorts, a person's own (by owner first) and staff's
        # (all), each read in its order from an index: a page of a person with 50,000
        # documents or of a library of a million is never sorted.
        indexes = [
            models.Index(fields=["-created_at", "-id"], name="doc_created"),
            models.Index(
                fields=["owner", "-created_at", "-id"], name="doc_owner_created"
            ),
            # Covers the types menu (the status counts read the rows: see status).
            models.Index(fields=["owner", "mime_type"], name="doc_owner_type"),
            models.Index(fields=["mime_type"], name="doc_type"),
            # The Name sort: the shown name (shown_name()), then the id for ties.
            models.Index("owner", shown_name(), "id", name="doc_owner_shown"),
            models.Index(fields=["owner", "size", "id"], name="doc_owner_size"),
            models.Index(shown_name(), "id", name="doc_shown"),
            models.Index(fields=["size", "id"], name="doc_size"),
        ]

    def __str__(self) -> str:
        return self.title or self.original_filename

    def get_absolute_url(self) -> str:
        return reverse("documents:detail", args=[self.pk])
