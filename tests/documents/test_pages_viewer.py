"""The page viewer: a PDF's pages drawn as PNG by PDFium in a child process, for the
owner only, bounded in size, drawn once and kept until the document goes."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.urls import reverse
from PIL import Image

from documents import pages
from documents.models import Document
from documents.page_render import PAGE_WIDTH
from documents.services import document_delete
from jobqueue.models import Status
from tests.files import pdf_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def pdf(make_document) -> Document:
    doc = make_document(
        pdf_bytes(pages=3), name="three.pdf", mime_type="application/pdf"
    )
    Document.objects.filter(pk=doc.pk).update(status=Status.COMPLETED, page_count=3)
    doc.refresh_from_db()
    return doc


def page_url(doc: Document, number: int) -> str:
    return reverse("documents:page", args=[doc.pk, number])


def test_a_page_is_a_bounded_png_drawn_once(user_client, pdf, media_root):
    response = user_client.get(page_url(pdf, 2))
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert response["Cache-Control"] == "private, no-store"  # test_kept_by_no_cache
    image = Image.open(io.BytesIO(b"".join(response.streaming_content)))
    assert image.width == PAGE_WIDTH and image.height > image.width  # a portrait page
    kept = list(Path(media_root, "pages", str(pdf.pk)).iterdir())
    assert len(kept) == 1
    before = kept[0].stat().st_mtime_ns
    again = user_client.get(page_url(pdf, 2))
    assert b"".join(again.streaming_content).startswith(b"\x89PNG")
    assert kept[0].stat().st_mtime_ns == before  # served from storage, not redrawn


@pytest.mark.parametrize("number", [0, 4, 10**6])
def test_pages_outside_the_document_are_404(user_client, pdf, number):
    assert user_client.get(page_url(pdf, number)).status_code == 404


def test_only_the_owner_sees_the_pages(client, pdf, other_user, staff_user):
    for someone in (other_user, staff_user):
        client.force_login(someone)
        assert client.get(page_url(pdf, 1)).status_code == 404


def test_a_file_pdfium_cannot_draw_is_404_not_500(user_client, make_document):
    broken = make_document(
        b"%PDF-1.4 broken", name="x.pdf", mime_type="application/pdf"
    )
    Document.objects.filter(pk=broken.pk).update(page_count=1)
    assert user_client.get(page_url(broken, 1)).status_code == 404
    text = make_document(name="t.txt")
    assert user_client.get(page_url(text, 1)).status_code == 404


def test_the_detail_page_shows_one_page_at_a_time(user_client, pdf):
    body = user_client.get(pdf.get_absolute_url(), {"page": 2}).content.decode()
    assert f'src="{page_url(pdf, 2)}"' in body
    assert "Page 2 of 3" in body
    assert (
        'href="?page=1#pages-heading"' in body
        and 'href="?page=3#pages-heading"' in body
    )
    # Past the end, however long the number: the last page, as the list's pages.
    for past in ("99", "9" * 20):
        last = user_client.get(pdf.get_absolute_url(), {"page": past}).content.decode()
        assert "Page 3 of 3" in last and "Next page" not in last
    for not_a_page in ("abc", "-2", "1.5"):
        first = user_client.get(pdf.get_absolute_url(), {"page": not_a_page})
        assert "Page 1 of 3" in first.content.decode()


def test_deleting_the_document_removes_its_pages(
    user_client, pdf, media_root, django_capture_on_commit_callbacks
):
    user_client.get(page_url(pdf, 1))
    folder = Path(media_root, "pages", str(pdf.pk))
    assert any(folder.iterdir())
    with django_capture_on_commit_callbacks(execute=True):
        document_delete(document=pdf)
    assert not folder.exists()


def test_pages_are_drawn_once_the_page_count_is_known(user_client, make_document):
    waiting = make_document(pdf_bytes(), name="new.pdf", mime_type="application/pdf")
    assert user_client.get(page_url(waiting, 1)).status_code == 404


def test_a_page_that_cannot_be_drawn_is_not_drawn_again(
    user_client, make_document, monkeypatch
):
    """Each request for a page PDFium fails on started a child again; now the
    failure is remembered with the page."""
    broken = make_document(
        b"%PDF-1.4 broken", name="x.pdf", mime_type="application/pdf"
    )
    Document.objects.filter(pk=broken.pk).update(page_count=1)
    drawn = []
    render = pages._render
    monkeypatch.setattr(pages, "_render", lambda *a: drawn.append(a) or render(*a))
    for _ in range(3):
        assert user_client.get(page_url(broken, 1)).status_code == 404
    assert len(drawn) == 1


def test_while_pages_are_being_drawn_another_waits_then_is_told_to_retry(
    user_client, pdf, monkeypatch
):
    """One page drawn at a time per web process: many requests for slow pages
    took every core, and the site with them."""
    monkeypatch.setattr(pages, "RENDER_WAIT_SECONDS", 0.1)
    assert pages._renders.acquire(timeout=1)  # a page being drawn
    try:
        response = user_client.get(page_url(pdf, 1))
    finally:
        pages._renders.release()
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert user_client.get(page_url(pdf, 1)).status_code == 200
