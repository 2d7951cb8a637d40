"""What a logged-in person is shown is kept by no cache, page images and thumbnails
included: on a shared computer, the next person must not find it in the browser's
cache or history (Back) after the owner has logged out."""

from __future__ import annotations

import pytest
from django.core.files.base import ContentFile
from django.urls import reverse

from documents.models import Document
from documents.pages import PAGE_WIDTH, cache_folder, store_thumbnail
from jobqueue.models import Status

pytestmark = pytest.mark.django_db

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32  # served as stored, never decoded here


@pytest.fixture
def pdf(make_document) -> Document:
    """A processed one-page PDF whose page and thumbnail are drawn already."""
    document = make_document(b"%PDF-1.4\n", name="a.pdf", mime_type="application/pdf")
    Document.objects.filter(pk=document.pk).update(
        status=Status.COMPLETED, page_count=1
    )
    document.refresh_from_db()
    page = f"{cache_folder(document)}/{document.sha256[:16]}-1-{PAGE_WIDTH}.png"
    document.file.storage.save(page, ContentFile(PNG))
    document.thumbnail = store_thumbnail(document, PNG)
    document.save(update_fields=["thumbnail"])
    return document


def directives(response) -> set[str]:
    return {d.strip() for d in response["Cache-Control"].split(",")}


def test_pages_files_and_pictures_are_kept_by_no_cache(user_client, pdf):
    answers = {
        "list": user_client.get(reverse("documents:list")),
        "page": user_client.get(pdf.get_absolute_url()),
        "download": user_client.get(reverse("documents:download", args=[pdf.pk])),
        "page image": user_client.get(reverse("documents:page", args=[pdf.pk, 1])),
        "thumbnail": user_client.get(reverse("documents:thumbnail", args=[pdf.pk])),
        "zip": user_client.post(
            reverse("documents:bulk"), {"action": "download", "id": [pdf.pk]}
        ),
    }
    for what, response in answers.items():
        assert response.status_code == 200, what
        assert directives(response) >= {"private", "no-store"}, what
        assert "max-age" not in response["Cache-Control"], what
        if response.streaming:  # read to its end (which frees the ZIP's slot)
            body = b"".join(response.streaming_content)
            assert body == PNG or what not in {"page image", "thumbnail"}, what
