"""OCR of photographed pages: a page on a dark desk, turned a little; a page with
a shadow across it."""

from __future__ import annotations

from PIL import Image, ImageChops, ImageDraw, ImageFilter

from documents.extractors import extract, ocr
from tests.files import PROSE_LINES, image_bytes, reads, text_image


def on_a_desk(page: Image.Image, turn: float) -> Image.Image:
    """``page`` photographed on a dark desk, turned ``turn`` degrees."""
    page = page.rotate(turn, Image.Resampling.BICUBIC, expand=True, fillcolor=255)
    photo = Image.new("L", (page.width + 300, page.height + 300), 40)
    photo.paste(page, (150, 150))
    return photo


def test_a_page_turned_a_little_on_a_dark_desk_is_set_level():
    # The desk round a photographed page counted as print: its level edges outweighed
    # the lines of text, the page was read as level and its first lines were lost.
    photo = on_a_desk(text_image(PROSE_LINES, size=24), 3)
    assert abs(ocr._skew(photo) + 3) <= 0.25


def test_a_scanners_black_border_does_not_hide_the_skew():
    page = text_image(PROSE_LINES, size=24).rotate(
        -2, Image.Resampling.BICUBIC, expand=True, fillcolor=255
    )
    ImageDraw.Draw(page).rectangle((0, page.height - 40, page.width, page.height), 0)
    assert abs(ocr._skew(page) - 2) <= 0.25


def test_a_page_with_a_shadow_across_it_is_read(tmp_path):
    # Paper in a shadow (a phone's, a hand's) at 40 % of the light: Tesseract
    # found its lines but read their letters from the dim grey, as garbage.
    page = text_image(PROSE_LINES, size=30)
    shade = Image.new("L", page.size, 255)
    width, height = page.size
    ImageDraw.Draw(shade).polygon(
        [(width * 0.4, 0), (width, 0), (width, height), (width * 0.6, height)], 100
    )
    shade = shade.filter(ImageFilter.GaussianBlur(6))  # a shadow's soft edge
    path = tmp_path / "shadow.jpg"
    path.write_bytes(image_bytes(ImageChops.multiply(page, shade), "JPEG"))
    text = extract(path).text
    assert reads(text, PROSE_LINES), text


def test_an_evenly_lit_page_is_read_once(tmp_path, ocr_readings):
    # Only a page with a shadow pays for a second reading.
    path = tmp_path / "scan.png"
    path.write_bytes(image_bytes(on_a_desk(text_image(PROSE_LINES, size=30), 0)))
    assert reads(extract(path).text, PROSE_LINES)
    assert len(ocr_readings) == 1, ocr_readings
