"""OCR of short texts turned a quarter or a half turn: OSD cannot tell the way up of a
line or three, and Tesseract read them upside down, as scraps (confidence ~0.35)."""

from __future__ import annotations

import random

import pytest
from PIL import Image, ImageDraw, ImageFont

from documents.extractors import extract
from tests.files import image_bytes, reads, scan_pdf_bytes, write

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
REPORTED = ["Rotated tiff text", "marmalade sandwich"]
NOTES = [["Page 7"], ["Invoice 4711"], ["Hello world", "second line", "third"]]
NOTE_IDS = ["label", "number", "three-lines"]


def reported(turn: int) -> Image.Image:
    """The outside tester's image: two lines on a strip, turned ``turn`` degrees."""
    font = ImageFont.truetype(FONT, 60)
    image = Image.new("L", (1600, 400), 255)
    draw = ImageDraw.Draw(image)
    draw.text((40, 40), REPORTED[0], fill=0, font=font)
    draw.text((40, 120), REPORTED[1], fill=0, font=font)
    return image.rotate(turn, expand=True, fillcolor=255)


def note(lines: list[str], turn: int = 0) -> Image.Image:
    """A few lines at the top of an A4 page scanned at 150 dpi, turned ``turn``."""
    font = ImageFont.truetype(FONT, 40)
    image = Image.new("L", (1240, 1754), 255)
    draw = ImageDraw.Draw(image)
    for n, line in enumerate(lines):
        draw.text((120, 150 + n * 60), line, fill=0, font=font)
    return image.rotate(turn, expand=True, fillcolor=255)


def saved(tmp_path, image: Image.Image, fmt: str):
    if fmt == "PDF":  # a scan-only PDF: OCR is reached through pdf.py
        return write(tmp_path, "note.pdf", scan_pdf_bytes([image]))
    if fmt == "JPEG":
        image = image.convert("RGB")
    return write(tmp_path, f"note.{fmt.lower()}", image_bytes(image, fmt))


@pytest.mark.parametrize(
    ("fmt", "turn"), [("PNG", 90), ("TIFF", 90), ("PNG", 180), ("PDF", 180)]
)
def test_the_reported_image_is_read_upright(tmp_path, fmt, turn):
    # Was 'UDIMpUeS ape|eUWeW\n1X97 4 pajejoy' at 0.354: OSD gave no answer.
    result = extract(saved(tmp_path, reported(turn), fmt))
    assert result.text == "\n".join(REPORTED)
    assert result.confidence > 0.9
    assert result.details["rotated_pages"] == "1"


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "PDF"])
@pytest.mark.parametrize("turn", [90, 180])
@pytest.mark.parametrize("lines", NOTES, ids=NOTE_IDS)
def test_a_short_note_turned_is_read_upright(tmp_path, ocr_readings, lines, turn, fmt):
    result = extract(saved(tmp_path, note(lines, turn), fmt))
    assert reads(result.text, lines), result.text
    assert result.confidence > 0.8
    # The first reading, then the way up found within three more.
    assert len(ocr_readings) <= 4, ocr_readings


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "PDF"])
@pytest.mark.parametrize("lines", NOTES, ids=NOTE_IDS)
def test_a_short_note_turned_270_is_read_as_it_is(tmp_path, ocr_readings, lines, fmt):
    # Tesseract reads lines lying this way itself: no turn, no reading more.
    result = extract(saved(tmp_path, note(lines, 270), fmt))
    assert reads(result.text, lines), result.text
    assert len(ocr_readings) == 1, ocr_readings


@pytest.mark.parametrize("fmt", ["PNG", "PDF"])
def test_an_upright_short_label_costs_one_reading(tmp_path, ocr_readings, fmt):
    result = extract(saved(tmp_path, note(["Page 7"]), fmt))
    assert result.text == "Page 7"
    assert "rotated_pages" not in result.details
    assert len(ocr_readings) == 1, ocr_readings


def test_a_four_line_page_read_well_costs_one_reading(tmp_path, ocr_readings):
    lines = [
        "Minutes of the meeting",
        "held on Tuesday",
        "in the village hall",
        "at seven",
    ]
    result = extract(saved(tmp_path, note(lines), "PNG"))
    assert reads(result.text, lines), result.text
    assert len(ocr_readings) == 1, ocr_readings


def test_a_page_of_scribbles_costs_at_most_three_readings_more(tmp_path, ocr_readings):
    # Read as scraps whichever way up: each turn is tried once, no more.
    rng = random.Random(1)
    image = Image.new("L", (1240, 1754), 255)
    draw = ImageDraw.Draw(image)
    for _ in range(60):
        x, y = rng.randrange(1200), rng.randrange(1700)
        end = (x + rng.randrange(-60, 60), y + rng.randrange(-40, 40))
        draw.line((x, y, *end), fill=0, width=rng.choice((3, 5, 8)))
        box = (x, y, x + rng.randrange(5, 30), y + rng.randrange(5, 30))
        draw.ellipse(box, outline=0, width=3)
    extract(saved(tmp_path, image, "PNG"))
    assert 1 < len(ocr_readings) <= 4, ocr_readings
