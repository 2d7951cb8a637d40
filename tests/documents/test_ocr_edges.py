"""OCR of images drawn in ways a plain scan is not: light print on a clear
background, white print on a dark band, print too small for Tesseract."""

from __future__ import annotations

from PIL import Image, ImageDraw, ImageFont, ImageOps

from documents.extractors import extract
from tests.files import image_bytes, reads, text_image

LINES = ["The quick brown fox jumps over", "the lazy dog near the harbour."]
OTHER = ["Invoice 4711 for seven orchard", "ladders, paid in full."]


def test_white_print_on_a_clear_background_is_read(tmp_path):
    # A logo or title made for dark pages: flattened onto white paper, it vanished
    # and the image was said to hold no text.
    ink = ImageOps.invert(text_image(LINES))
    logo = Image.new("RGBA", ink.size, (255, 255, 255, 0))
    logo.putalpha(ink)
    path = tmp_path / "title.png"
    path.write_bytes(image_bytes(logo))
    assert reads(extract(path).text, LINES)


def test_a_heading_on_a_dark_band_is_read(tmp_path):
    # A section heading printed white on a dark bar across the page was dropped
    # as a picture: the text around it came out, the heading did not.
    page = Image.new("L", (1654, 800), 255)
    page.paste(text_image(LINES, size=30), (80, 40))
    page.paste(text_image(OTHER, size=30), (80, 420))
    draw = ImageDraw.Draw(page)
    draw.rectangle((80, 300, 1574, 370), fill=40)
    font = ImageFont.load_default(30)
    draw.text((120, 320), "Section 2: Deliveries", font=font, fill=255)
    path = tmp_path / "report.png"
    path.write_bytes(image_bytes(page))
    text = extract(path).text
    assert "Section 2: Deliveries" in text, text
    assert reads(text, LINES + OTHER)


def test_small_print_is_read_enlarged(tmp_path):
    # Ten-pixel print (a screenshot's small text, a fax's fine print) read with
    # wrong letters and words run together.
    path = tmp_path / "small.png"
    path.write_bytes(image_bytes(text_image(LINES + OTHER, size=10)))
    text = extract(path).text
    assert reads(text, LINES + OTHER), text


def test_a_dark_picture_or_a_smudge_costs_no_second_reading(tmp_path, ocr_readings):
    # A photo's dark parts, a smudge and a heading read already pass for bands: 3 of
    # the corpus's 5 scans were read twice for nothing (twice the time).
    page = Image.new("L", (1654, 1200), 255)
    page.paste(text_image(LINES, size=30), (80, 40))
    draw = ImageDraw.Draw(page)
    draw.ellipse((300, 400, 900, 1000), fill=30)  # a dark picture, no print in it,
    for x in range(340, 860, 23):  # but light specks, as a photo's highlights
        for y in range(440, 960, 31):
            draw.rectangle((x, y, x + 4, y + 4), fill=230)
    draw.ellipse((1200, 300, 1230, 330), fill=0)  # a smudge
    path = tmp_path / "scan.png"
    path.write_bytes(image_bytes(page))
    assert reads(extract(path).text, LINES)
    # The page once, and a look at the picture alone; not the page again.
    assert ocr_readings.count(page.size) == 1, ocr_readings
