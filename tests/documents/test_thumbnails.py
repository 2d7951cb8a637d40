"""First-page thumbnails: drawn by the queue's own ``thumbnail`` job kind once a
document's text is read, shown in the list and on the document's page, private to
those who may see the document, and gone with it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from PIL import Image

from documents.extractors.base import ExtractionResult
from documents.jobs import _store
from documents.models import Document
from documents.services import document_delete
from documents.thumbnails import HEIGHT, WIDTH, thumbnail_in_child
from jobqueue.child import JobFailed
from jobqueue.models import ExtractionMetric, Operation, QueueItem, Status
from tests.conftest import wait_for, worker_log
from tests.files import bomb_png_bytes, docx_bytes, image_bytes, pdf_bytes, text_image

FAST = ("--workers", "2", "--poll-interval", "0.2")
# The suite runs without thumbnails (pyproject's env); these tests turn them on.
ON = {"THUMBNAILS": "1"}


def picture(png: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG"
    return image.convert("L")


def inked(image: Image.Image) -> float:
    """Share of pixels darker than light grey: how much is drawn on the page."""
    return sum(image.histogram()[:160]) / (image.width * image.height)


def write(tmp_path: Path, name: str, content: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(content)
    return str(path)


# --- Drawing (the child's function) ----------------------------------------------------


def test_a_pdf_thumbnail_is_its_first_page_drawn_small(tmp_path):
    path = write(tmp_path, "a.pdf", pdf_bytes("Quarterly report " * 40, pages=3))
    image = picture(thumbnail_in_child(path, "application/pdf", "a.pdf", ""))
    assert image.width <= WIDTH and image.height <= HEIGHT
    assert image.height > image.width  # a portrait page keeps its shape
    assert 0.001 < inked(image) < 0.5  # text on a white page


def test_an_image_is_scaled_upright_and_flattened(tmp_path):
    big = text_image(["Invoice 4711"] * 20, size=60).convert("RGBA")
    path = write(tmp_path, "a.png", image_bytes(big))
    image = picture(thumbnail_in_child(path, "image/png", "a.png", ""))
    assert max(image.width / WIDTH, image.height / HEIGHT) == pytest.approx(1, abs=0.01)
    assert inked(image) > 0.001


@pytest.mark.parametrize(
    "mime_type",
    [
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "text/plain",
        "message/rfc822",
    ],
)
def test_other_documents_get_a_text_card_of_their_text(tmp_path, mime_type):
    path = write(tmp_path, "a.bin", b"not read: the card is drawn from the text")
    card = picture(thumbnail_in_child(path, mime_type, "Minutes", "Line one\n" * 40))
    empty = picture(thumbnail_in_child(path, mime_type, "", ""))
    assert (card.width, card.height) == (WIDTH, HEIGHT)
    assert inked(card) > inked(empty) * 3


@pytest.mark.parametrize("form", ["JPEG", "PNG"])
def test_a_cut_short_image_is_drawn_with_what_it_holds(tmp_path, form):
    # Its text is read (with a note); a failed thumbnail beside it would be a second,
    # needless failure on a document that completed.
    whole = image_bytes(text_image(["Invoice 4711"] * 20, size=60), form)
    path = write(tmp_path, f"cut.{form.lower()}", whole[: len(whole) * 2 // 3])
    image = picture(thumbnail_in_child(path, f"image/{form.lower()}", "cut", ""))
    assert inked(image) > 0.001


@pytest.mark.parametrize(
    ("name", "content", "mime_type", "error_type"),
    [
        ("broken.pdf", b"%PDF-1.7\n garbage", "application/pdf", "corruption"),
        ("broken.png", b"\x89PNG\r\n\x1a\n garbage", "image/png", "corruption"),
        ("bomb.png", bomb_png_bytes(), "image/png", "unsupported"),
    ],
)
def test_a_file_that_cannot_be_drawn_fails_with_its_reason(
    tmp_path, name, content, mime_type, error_type
):
    with pytest.raises(JobFailed) as caught:
        thumbnail_in_child(write(tmp_path, name, content), mime_type, name, "")
    assert caught.value.error_type == error_type
    assert "drawn" in str(caught.value) or "too large" in str(caught.value)


# --- Through real workers (both databases) -------------------------------------------


def upload(client, name: str, content: bytes) -> Document:
    response = client.post(
        reverse("documents:upload"), {"file": SimpleUploadedFile(name, content)}
    )
    assert response.status_code == 302, response.content[:500]
    return Document.objects.get(original_filename=name)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_workers_draw_thumbnails_after_the_text_and_people_see_them(
    user, user_client, client, other_user, start_worker
):
    files = {
        "report.pdf": pdf_bytes("Quarterly report of the allotment committee"),
        "photo.png": image_bytes(text_image(["Invoice 4711 for ladders"])),
        "minutes.docx": docx_bytes("Minutes of the allotment committee"),
        "notes.txt": b"Notes from the allotment committee\n",
        "broken.pdf": b"%PDF-1.7\n" + b"\x00" * 300,
    }
    docs = {name: upload(user_client, name, content) for name, content in files.items()}
    good = [docs[n] for n in files if n != "broken.pdf"]
    list_url = reverse("documents:list")
    statuses = user_client.get(
        reverse("documents:statuses"), {"id": [d.pk for d in good]}
    ).json()["documents"]
    assert {d["thumbnail_url"] for d in statuses} == {None}
    assert b"data-thumbnail" in user_client.get(list_url).content

    proc = start_worker(*FAST, env=ON)
    wait_for(
        lambda: (
            Document.objects.filter(pk__in=[d.pk for d in good])
            .exclude(thumbnail="")
            .count()
            == len(good)
        ),
        90,
        interval=0.3,
    )
    # Each thumbnail is a job of its own kind, after its document's extraction.
    for doc in good:
        jobs = dict(
            QueueItem.objects.filter(document=doc).values_list("operation", "status")
        )
        assert jobs == {
            Operation.EXTRACT: Status.COMPLETED,
            Operation.THUMBNAIL: Status.COMPLETED,
        }, worker_log(proc)
        doc.refresh_from_db()
        assert doc.status == Status.COMPLETED  # the thumbnail job leaves it alone
        metric = ExtractionMetric.objects.get(
            document=doc, job__operation=Operation.THUMBNAIL
        )
        assert metric.outcome == ExtractionMetric.Outcome.COMPLETED
    # A broken file fails its extraction; no thumbnail job is made for it.
    wait_for(lambda: Document.objects.get(pk=docs["broken.pdf"].pk).status == "failed")
    assert not QueueItem.objects.filter(
        document=docs["broken.pdf"], operation=Operation.THUMBNAIL
    ).exists()

    url = reverse("documents:thumbnail", args=[docs["report.pdf"].pk])
    response = user_client.get(url)
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert picture(b"".join(response.streaming_content)).height <= HEIGHT
    assert response["Cache-Control"].startswith("private")
    page = user_client.get(list_url).content.decode()
    assert page.count('<img src="/documents/') == len(good)
    detail = user_client.get(docs["photo.png"].get_absolute_url()).content.decode()
    assert reverse("documents:thumbnail", args=[docs["photo.png"].pk]) in detail
    statuses = user_client.get(
        reverse("documents:statuses"), {"id": [d.pk for d in good]}
    ).json()["documents"]
    assert all(d["thumbnail_url"] and not d["thumbnail_pending"] for d in statuses)

    # Private: another person gets a 404, a visitor the login page.
    client.force_login(other_user)
    assert client.get(url).status_code == 404
    client.logout()
    assert client.get(url).status_code == 302

    # Gone with the document.
    doc = Document.objects.get(pk=docs["report.pdf"].pk)
    storage, name = doc.file.storage, doc.thumbnail
    assert storage.exists(name)
    document_delete(document=doc)
    assert not storage.exists(name)
    assert proc.poll() is None


@pytest.mark.django_db
def test_thumbnails_waiting_do_not_count_against_a_persons_limit(
    user, user_client, settings, make_document
):
    settings.USER_MAX_ACTIVE_JOBS = 1
    document = make_document()
    QueueItem.objects.create(document=document, operation=Operation.THUMBNAIL)
    response = user_client.post(
        reverse("documents:upload"),
        {"file": SimpleUploadedFile("a.txt", b"some text to read")},
    )
    assert response.status_code == 302


@pytest.mark.django_db
def test_thumbnails_can_be_turned_off(user, settings, make_document, queue):
    settings.THUMBNAILS = False
    document = make_document()
    item = QueueItem.objects.create(document=document, status=Status.PROCESSING)
    _store(item, ExtractionResult("text", 1, 1.0, "plain"))
    assert not QueueItem.objects.filter(operation=Operation.THUMBNAIL).exists()
    settings.THUMBNAILS = True
    _store(item, ExtractionResult("text", 1, 1.0, "plain"))
    assert QueueItem.objects.filter(operation=Operation.THUMBNAIL).exists()


@pytest.mark.django_db
def test_make_thumbnails_queues_those_missing(make_document):
    done, drawn, waiting = (make_document(name=f"{n}.txt") for n in "abc")
    Document.objects.filter(pk__in=[done.pk, drawn.pk]).update(status=Status.COMPLETED)
    Document.objects.filter(pk=drawn.pk).update(thumbnail="pages/x/thumbnail.png")
    out = io.StringIO()
    call_command("make_thumbnails", stdout=out)
    assert "Queued 1 thumbnail job(s) for 1 document(s)." in out.getvalue()
    jobs = QueueItem.objects.filter(operation=Operation.THUMBNAIL)
    assert list(jobs.values_list("document_id", flat=True)) == [done.pk]
    call_command("make_thumbnails", "--all", stdout=out)
    assert set(jobs.values_list("document_id", flat=True)) == {done.pk, drawn.pk}
