"""OCR: scans, photos, turned pages, mixed PDFs, multi-page TIFFs, bombs, bounds, and
the same through real workers (both databases), with and without language data."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from fpdf import FPDF
from PIL import Image, ImageDraw, ImageFont

from documents.extraction import dashboard_figures
from documents.extractors import UnsupportedFileError, detect_mime_type, extract
from documents.models import Document
from documents.search import search_documents
from jobqueue.models import ExtractionMetric, QueueItem, Status
from jobqueue.sql import db_now
from tests.conftest import REPO_ROOT, wait_for, worker_log
from tests.files import (
    bomb_png_bytes,
    image_bytes,
    reads,
    scan_pdf_bytes,
    stamped_scan_pdf_bytes,
    text_image,
    write,
)

LINES = ["The quick brown fox jumps over", "the lazy dog near the harbour."]
OTHER = ["Invoice 4711 for seven orchard", "ladders, paid in full."]
TYPED = "Minutes of the allotment committee, typed and saved as PDF."


# Tesseract failing an assertion ends the process it runs in: a child, as workers use.
READ_IN_A_CHILD = (
    "import sys; from documents.extractors import extract; "
    "print(extract(sys.argv[1]).text)"
)


def no_language_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """Point Tesseract at an empty folder, as on a machine without its data."""
    empty = tmp_path / "tessdata"
    empty.mkdir(exist_ok=True)
    monkeypatch.setenv("TESSDATA_PREFIX", str(empty))
    return str(empty)


# --- Extraction ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "params", "mime_type"),
    [
        ("PNG", {}, "image/png"),
        ("JPEG", {"quality": 80}, "image/jpeg"),
        ("WEBP", {"quality": 90}, "image/webp"),
        ("BMP", {}, "image/bmp"),
    ],
)
def test_photos_are_detected_by_bytes_and_read(tmp_path, fmt, params, mime_type):
    image = text_image(LINES).convert("RGB")
    path = write(tmp_path, "photo.bin", image_bytes(image, fmt, **params))
    assert detect_mime_type(path) == mime_type
    result = extract(path)
    assert reads(result.text, LINES), result.text
    assert result.extractor == f"{fmt.lower()}+tesseract"
    assert result.confidence > 0.8
    assert result.details["ocr_pages"] == "1"


def test_a_noisy_photo_of_a_mostly_blank_page_is_read(tmp_path):
    # Sensor noise all over a big, mostly blank page: thresholded as a whole (Otsu),
    # it read nothing, slowly; a local threshold (Sauvola) reads the line.
    side = 3000
    photo = Image.effect_noise((side, side), 17).point(lambda v: min(255, v + 120))
    font = ImageFont.load_default(size=30)
    ImageDraw.Draw(photo).text((side // 10, side // 10), LINES[0], font=font, fill=0)
    path = write(tmp_path, "desk.jpg", image_bytes(photo, "JPEG", quality=90))
    result = extract(path)
    assert reads(result.text, LINES[:1]), result.text


@pytest.mark.parametrize("turn", [90, 180])
def test_a_page_on_its_side_or_upside_down_is_read(tmp_path, turn):
    path = write(tmp_path, "turned.pdf", scan_pdf_bytes([text_image(LINES, turn=turn)]))
    result = extract(path)
    assert reads(result.text, LINES), result.text
    assert result.extractor == "pdfium+tesseract"


def test_mixed_pdf_keeps_typed_text_exactly_and_reads_the_scan(tmp_path):
    path = write(tmp_path, "mixed.pdf", scan_pdf_bytes([TYPED, text_image(OTHER)]))
    typed_only = extract(path, ocr_mode="never")
    result = extract(path)
    assert result.text.startswith(typed_only.text + "\n\n")
    assert reads(result.text[len(typed_only.text) :], OTHER)
    assert result.details["ocr_pages"] == "2"
    assert result.page_count == 2
    assert result.note == ""


def test_letter_spaced_ocr_layer_is_replaced_and_a_good_layer_kept(tmp_path):
    spaced = "  ".join(" ".join(word) for word in " ".join(LINES).split())
    kept = "Layer words that the scanner recognised well enough."
    pdf = scan_pdf_bytes(
        [text_image(LINES), text_image(OTHER)], layers={0: spaced, 1: kept}
    )
    result = extract(write(tmp_path, "layered.pdf", pdf))
    first, second = result.text.split("\n\n")
    assert reads(first, LINES) and "q u i c k" not in first
    assert second == kept  # a usable layer is trusted, not OCRed
    assert result.details["ocr_pages"] == "1"


def test_every_page_of_a_tiff_is_read_in_order_with_progress(tmp_path):
    pages = [text_image(LINES), text_image(OTHER), text_image(["Third page."])]
    tiff = io.BytesIO()
    pages[0].save(tiff, "TIFF", save_all=True, append_images=pages[1:])
    path = write(tmp_path, "pages.tiff", tiff.getvalue())
    reported = []
    result = extract(path, progress=lambda done, total: reported.append((done, total)))
    assert result.page_count == 3
    assert reported == [(1, 3), (2, 3), (3, 3)]
    first, second, third = result.text.split("\n\n")
    assert reads(first, LINES) and reads(second, OTHER) and "Third" in third
    assert result.details["ocr_pages"] == "1-3"


def test_a_scan_with_a_number_stamped_on_it_is_read_from_its_image(tmp_path):
    # A Bates or page number stamped on a scan (legal productions, fax headers) made
    # the page look born-digital: the stamp was all that came out.
    stamped = stamped_scan_pdf_bytes(LINES, "ACME-000123", x=170)
    result = extract(write(tmp_path, "stamped.pdf", stamped))
    assert reads(result.text, LINES), result.text
    assert result.details["ocr_pages"] == "1"


@pytest.mark.parametrize("skew", [-2.5, 3])
def test_a_page_scanned_askew_is_read_whole(tmp_path, skew):
    # Tesseract straightens only quarter turns: two or three degrees off, lines ran
    # into each other and half the words were lost, at a confidence of 0.96.
    lines = [" ".join(LINES + OTHER)] * 2 + [" ".join(OTHER + LINES)] * 2
    page = text_image(lines, size=24).rotate(
        skew, expand=True, fillcolor=255, resample=Image.Resampling.BICUBIC
    )
    result = extract(write(tmp_path, "askew.png", image_bytes(page)))
    assert reads(result.text, LINES + OTHER), result.text
    assert result.text.count("harbour") == 4


@pytest.mark.parametrize(("ink", "paper"), [(190, 255), (150, 190)])
def test_faint_print_is_read(tmp_path, ink, paper):
    # Pencil, a pale photocopy, grey on grey: lighter than Sauvola's threshold (a
    # share below the paper's brightness), it read as nothing at all.
    faint = Image.eval(text_image(LINES), lambda v: ink + v * (paper - ink) // 255)
    result = extract(write(tmp_path, "faint.png", image_bytes(faint)))
    assert reads(result.text, LINES), result.text


def test_a_font_that_maps_no_letters_is_read_from_the_page_image(tmp_path):
    # A font without a /ToUnicode map, as PDF printers and report generators
    # write them: pdfplumber's "(cid:12)" garbage counted as one unreadable glyph
    # per seven characters, passed as readable and was kept; OCR never ran.
    font = tmp_path / "font.ttf"
    font.write_bytes(ImageFont.load_default(size=12).font_bytes)  # Pillow's own
    pdf = FPDF()
    pdf.set_compression(False)
    pdf.add_page()
    pdf.add_font("plain", fname=str(font))
    pdf.set_font("plain", size=16)
    for line in LINES:
        pdf.cell(0, 10, line, new_x="LMARGIN", new_y="NEXT")
    unmapped = re.sub(
        rb"/ToUnicode \d+ 0 R", lambda found: b" " * len(found[0]), bytes(pdf.output())
    )
    result = extract(write(tmp_path, "report.pdf", unmapped))
    assert "tesseract" in result.extractor
    assert reads(result.text, LINES) and "cid:" not in result.text


def test_an_image_longer_than_tesseract_takes_is_read_in_strips(tmp_path):
    # A side of 32,768 pixels or more made Tesseract abort the whole process (a
    # phone's full-page screenshot, a till roll): no error, the job retried to death.
    image = Image.new("L", (700, 34_000), 255)
    for top, lines in ((200, LINES), (16_000, OTHER), (33_000, ["End of the roll."])):
        image.paste(text_image(lines), (0, top))
    path = write(tmp_path, "roll.png", image_bytes(image))
    run = subprocess.run(
        [sys.executable, "-c", READ_IN_A_CHILD, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert reads(run.stdout, LINES + OTHER + ["End of the roll."]), run.stdout


def test_a_phone_photo_with_a_preview_inside_is_read_once(tmp_path):
    # A JPEG that holds a second view of itself (MPO: preview, depth map) was read
    # as two pages, its text twice.
    photo = text_image(LINES).convert("RGB")
    mpo = io.BytesIO()
    photo.save(mpo, "MPO", save_all=True, append_images=[photo.resize((200, 40))])
    result = extract(write(tmp_path, "photo.jpg", mpo.getvalue()))
    assert (result.page_count, result.extractor) == (1, "jpeg+tesseract")
    assert reads(result.text, LINES) and result.text.count("fox") == 1


def test_a_jpeg_cut_short_is_read_as_far_as_it_goes_and_says_so(tmp_path):
    # A camera or a transfer that leaves off the end marker: every pixel is there,
    # yet the photo was refused as damaged.
    data = image_bytes(text_image(LINES).convert("RGB"), "JPEG", quality=90)
    result = extract(write(tmp_path, "photo.jpg", data[:-2]))
    assert reads(result.text, LINES), result.text
    assert "incomplete" in result.note


@pytest.mark.parametrize("compression", ["raw", "tiff_lzw"])
def test_a_tiff_stored_turned_is_read_upright(tmp_path, compression):
    # A scanner stores a sideways page turned, with Orientation 6 (turn it back 90°):
    # Pillow's own reader of uncompressed strips scrambled it, and nothing was read.
    stored = text_image(LINES).rotate(90, expand=True, fillcolor=255)
    tiff = io.BytesIO()
    stored.save(tiff, "TIFF", compression=compression, tiffinfo={274: 6})
    result = extract(write(tmp_path, "scan.tif", tiff.getvalue()))
    assert reads(result.text, LINES), result.text


def test_a_bigtiff_is_a_tiff(tmp_path):
    # BigTIFF (large-format scanners, GDAL) was refused as not a TIFF at all.
    image = text_image(LINES)
    bigtiff = io.BytesIO()
    image.save(bigtiff, "TIFF", big_tiff=True)
    path = write(tmp_path, "scan.tif", bigtiff.getvalue())
    assert bigtiff.getvalue()[:4] == b"II+\x00"
    assert detect_mime_type(path) == "image/tiff"
    assert reads(extract(path).text, LINES)


@pytest.mark.parametrize("side", [10_000, 30_000])
def test_decompression_bomb_is_refused_with_a_clear_error(tmp_path, side):
    path = write(tmp_path, "bomb.png", bomb_png_bytes(side))
    with pytest.raises(UnsupportedFileError, match="too large to read") as refused:
        extract(path)
    assert refused.value.error_type == "unsupported"
    # One limit, ours, in plain words: not Pillow's text with its own two.
    assert str(refused.value) == (
        f"This image is too large to read: {side * side // 1_000_000:,} megapixels, "
        "over the limit of 89 megapixels. Scale it down or save it as a PDF."
    )


def test_ocr_modes(tmp_path):
    path = write(tmp_path, "mixed.pdf", scan_pdf_bytes([TYPED, text_image(OTHER)]))
    never = extract(path, ocr_mode="never")
    assert "allotment" in never.text and "orchard" not in never.text
    assert "OCR is turned off" in never.note
    always = extract(path, ocr_mode="always")
    assert always.details["ocr_pages"] == "1-2"
    assert reads(always.text, OTHER) and "allotment" in always.text


def test_text_and_page_limits_cut_with_a_note(tmp_path):
    path = write(
        tmp_path, "long.pdf", scan_pdf_bytes([TYPED, TYPED, text_image(OTHER)])
    )
    cut = extract(path, max_chars=80)
    assert len(cut.text) == 80
    assert "cut at 80 characters" in cut.note
    assert "ocr_pages" not in cut.details  # the scan was past the limit: not read
    short = extract(path, max_pages=1)
    assert short.page_count == 3 and short.text.count("allotment") == 1
    assert "Only the first 1 of 3 pages" in short.note


def test_without_language_data_scans_complete_empty_with_a_note(tmp_path, monkeypatch):
    no_language_data(monkeypatch, tmp_path)
    scan = extract(write(tmp_path, "scan.pdf", scan_pdf_bytes([text_image(LINES)])))
    assert (scan.text, scan.confidence) == ("", 0.0)
    assert "OCR is unavailable" in scan.note and "tesseract-ocr-eng" in scan.note
    photo = extract(write(tmp_path, "p.png", image_bytes(text_image(LINES))))
    assert photo.text == "" and "OCR is unavailable" in photo.note


# --- Through the queue, real workers ------------------------------------------------

FAST = ["--poll-interval", "0.1", "--heartbeat-interval", "0.5"]


def upload(client, name: str, content: bytes) -> Document:
    response = client.post(
        reverse("documents:upload"), {"file": SimpleUploadedFile(name, content)}
    )
    assert response.status_code == 302, response.content[:500]
    return Document.objects.get(original_filename=name)


def all_done(documents: list[Document]) -> bool:
    ids = [d.pk for d in documents]
    return not QueueItem.objects.filter(document_id__in=ids).exclude(
        status__in=[Status.COMPLETED, Status.FAILED]
    )


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_workers_read_scans_and_photos_and_refuse_bombs(
    user, user_client, start_worker
):
    tiff = io.BytesIO()
    text_image(LINES).save(
        tiff, "TIFF", save_all=True, append_images=[text_image(OTHER)]
    )
    files = {
        "scan.pdf": scan_pdf_bytes([text_image(LINES)]),
        "mixed.pdf": scan_pdf_bytes([TYPED, text_image(OTHER)]),
        "turned.pdf": scan_pdf_bytes([text_image(OTHER, turn=90)]),
        "photo.jpg": image_bytes(text_image(LINES).convert("RGB"), "JPEG", quality=80),
        "pages.tif": tiff.getvalue(),
        "bomb.png": bomb_png_bytes(),
    }
    docs = {name: upload(user_client, name, content) for name, content in files.items()}
    proc = start_worker("--workers", "2", *FAST)
    wait_for(lambda: all_done(list(docs.values())), 120, interval=0.3)
    for doc in docs.values():
        doc.refresh_from_db()
    for name in ("scan.pdf", "photo.jpg"):
        assert docs[name].status == Status.COMPLETED, worker_log(proc)
        assert reads(docs[name].text, LINES), docs[name].text
    assert reads(docs["turned.pdf"].text, OTHER)
    assert "allotment" in docs["mixed.pdf"].text and reads(
        docs["mixed.pdf"].text, OTHER
    )
    assert docs["pages.tif"].page_count == 2
    assert reads(docs["pages.tif"].text, LINES + OTHER)
    assert docs["bomb.png"].status == Status.FAILED
    assert docs["bomb.png"].error_type == "unsupported"
    assert "too large to read" in docs["bomb.png"].error_message
    assert 0.8 < docs["scan.pdf"].confidence <= 1.0
    metric = ExtractionMetric.objects.get(
        document=docs["mixed.pdf"], outcome=ExtractionMetric.Outcome.COMPLETED
    )
    assert metric.details["ocr_pages"] == "2" and metric.details["ocr_ms"] > 0
    # OCRed text is text like any other: search finds it.
    found = {hit.document.pk for hit in search_documents(user, "orchard ladders")}
    assert found == {docs[n].pk for n in ("mixed.pdf", "turned.pdf", "pages.tif")}
    figure = dashboard_figures(db_now())[0]
    assert figure["label"].startswith("OCR pages per minute")
    assert float(figure["value"]) > 0
    assert proc.poll() is None


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_without_language_data_a_scan_completes_with_a_note_and_the_dashboard_says(
    user_client, admin_client, start_worker, tmp_path, monkeypatch
):
    empty = no_language_data(monkeypatch, tmp_path)
    scan = upload(user_client, "scan.pdf", scan_pdf_bytes([text_image(LINES)]))
    proc = start_worker("--workers", "1", *FAST, env={"TESSDATA_PREFIX": empty})
    wait_for(lambda: all_done([scan]), 60, interval=0.2)
    scan.refresh_from_db()
    assert scan.status == Status.COMPLETED, worker_log(proc)
    assert scan.text == ""
    assert "OCR is unavailable" in scan.extraction_note
    page = user_client.get(scan.get_absolute_url()).content.decode()
    assert "OCR is unavailable" in page
    dashboard = admin_client.get(reverse("admin:jobqueue_dashboard")).content.decode()
    assert "OCR unavailable" in dashboard and "tesseract-ocr-eng" in dashboard


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_long_extraction_gets_time_while_it_progresses_and_a_hang_is_stopped(
    user, user_client, admin_client, start_worker, queue
):
    from tests.jobqueue.test_worker_processes import store

    long_scan = store(user, "long.txt", b"pages:6:1 a scan that takes six seconds")
    hang = store(user, "hang.txt", b"hang-after:1 then nothing")
    jobs = [queue.enqueue(long_scan.pk), queue.enqueue(hang.pk)]
    proc = start_worker(
        "--workers", "2", "--timeout", "2.5", "--max-retries", "0", *FAST,
        env={"QUEUE_EXTRACT_FUNCTION": "tests.extractors_for_tests.extract"},
    )  # fmt: skip
    # Progress shows on the document's page and the admin's item page meanwhile.
    wait_for(lambda: QueueItem.objects.get(pk=jobs[0]).progress, 30, interval=0.1)
    page = user_client.get(long_scan.get_absolute_url()).content.decode()
    admin_page = admin_client.get(
        reverse("admin:jobqueue_queueitem_change", args=[jobs[0]])
    ).content.decode()
    assert " of 6 pages read." in page and " of 6 pages (at " in admin_page
    wait_for(lambda: all_done([long_scan, hang]), 60, interval=0.2)
    done, stopped = QueueItem.objects.get(pk=jobs[0]), QueueItem.objects.get(pk=jobs[1])
    assert done.status == Status.COMPLETED, worker_log(proc)
    assert done.progress_total == 6 and done.progress_done >= 1
    assert stopped.status == Status.FAILED and stopped.error_type == "timeout"
    assert "no progress for 2.5 s after 1 of 3 pages" in stopped.error_message


def test_dashboard_figures_say_when_ocr_is_off(settings):
    settings.OCR_MODE = "never"
    assert dashboard_figures(None) == [
        {"label": "OCR", "value": "turned off (OCR_MODE=never)"}
    ]


def test_grey_flattens_transparency_onto_white():
    from documents.extractors.ocr import grey

    clear = Image.new("RGBA", (4, 4), (0, 0, 0, 0))
    assert grey(clear).getpixel((0, 0)) == 255


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "P"])
def test_a_photo_is_greyed_then_turned_as_its_exif_says(mode):
    # Greyed first, to spare turning a colour copy; a picture with transparency is
    # drawn anew in grey, and its EXIF turn (Orientation 6: 90°) was lost with it.
    from documents.extractors.image import upright_grey

    exif = Image.Exif()
    exif[274] = 6
    stored = io.BytesIO()
    Image.new(mode, (30, 10)).save(stored, "PNG", exif=exif)
    page = upright_grey(Image.open(stored))
    assert (page.mode, page.size) == ("L", (10, 30))
