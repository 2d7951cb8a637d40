"""Fixtures of the documents' tests: many documents at once, the deletions the admin
makes through the documents' service, staff who may delete documents only, and the
images OCR reads."""

from __future__ import annotations

from itertools import count

import pytest
from django.contrib.auth.models import Permission

from documents import admin as documents_admin
from documents.models import Document
from jobqueue.models import QueueItem, Status

_names = count()


@pytest.fixture
def make_documents(make_document):
    """``n`` stored documents, each with one queue item in ``status``."""

    def make(n: int, status: str = Status.COMPLETED) -> list[Document]:
        made = []
        for _ in range(n):
            document = make_document(name=f"many-{next(_names)}.txt")
            QueueItem.objects.create(document=document, status=status)
            Document.objects.filter(pk=document.pk).update(status=status)
            made.append(document)
        return made

    return make


@pytest.fixture
def deleted_through(monkeypatch) -> list[int]:
    """The ids of the documents the admin deletes through ``document_delete`` or
    ``document_delete_many``, in order (they are deleted too)."""
    deleted: list[int] = []
    one, many = documents_admin.document_delete, documents_admin.document_delete_many

    def spy_one(*, document: Document) -> None:
        deleted.append(document.pk)
        one(document=document)

    def spy_many(*, documents) -> None:
        documents = list(documents)
        deleted.extend(document.pk for document in documents)
        many(documents=documents)

    monkeypatch.setattr(documents_admin, "document_delete", spy_one)
    monkeypatch.setattr(documents_admin, "document_delete_many", spy_many)
    return deleted


@pytest.fixture
def deleter(client, django_user_model):
    """Staff who may view and delete documents, not queue items, logged in on
    ``client``."""
    staff = django_user_model.objects.create_user("deleter", is_staff=True)
    staff.user_permissions.set(
        Permission.objects.filter(codename__in=["view_document", "delete_document"])
    )
    client.force_login(staff)
    return staff


@pytest.fixture
def ocr_readings(monkeypatch) -> list[tuple[int, int]]:
    """The size of each image Tesseract reads (``ocr.Reader._recognise``), in order."""
    from documents.extractors import ocr

    sizes: list[tuple[int, int]] = []
    recognise = ocr.Reader._recognise

    def counted(self, image):
        sizes.append(image.size)
        return recognise(self, image)

    monkeypatch.setattr(ocr.Reader, "_recognise", counted)
    return sizes
