"""OCR's page preparation made cheaper: the same skew found with fewer tries, the
same shadow and speckle checks with fewer passes over the page."""

from __future__ import annotations

import pytest
from PIL import Image, ImageDraw, ImageFilter

from documents.extractors import ocr
from tests.files import PROSE_LINES, text_image


@pytest.mark.parametrize("skew", [-9.75, -4.5, -1.375, 0.75, 2.5, 6.25, 9.5])
def test_a_skew_between_whole_degrees_is_found(skew):
    # Tried every degree first: the best half degree beside it and the eighths
    # round that still find a skew off the whole degrees, up to the limit.
    page = text_image(PROSE_LINES, size=24).rotate(
        skew, Image.Resampling.BICUBIC, expand=True, fillcolor=255
    )
    assert abs(ocr._skew(page) + skew) <= 0.25


@pytest.mark.parametrize("size", [(1, 1), (2, 9), (7, 3), (120, 80)])
@pytest.mark.parametrize("reach", [1, 2])
def test_the_lightest_and_darkest_nearby_are_the_rank_filters(size, reach):
    image = Image.effect_noise(size, 90).convert("L")
    lightest = image.filter(ImageFilter.MaxFilter(2 * reach + 1))
    darkest = image.filter(ImageFilter.MinFilter(2 * reach + 1))
    assert ocr._nearby(image, reach).tobytes() == lightest.tobytes()
    assert ocr._nearby(image, reach, lightest=False).tobytes() == darkest.tobytes()


def specks(pairs: bool) -> Image.Image:
    """A white page with dark pixels spaced apart; with ``pairs``, each has a dark
    neighbour diagonally below it (no longer a speck)."""
    page = Image.new("L", (400, 300), 255)
    draw = ImageDraw.Draw(page)
    for x in range(5, 395, 10):
        for y in range(5, 295, 10):
            draw.point((x, y), 0)
            if pairs:
                draw.point((x + 1, y + 1), 0)
    return page


def test_a_pixel_with_a_diagonal_neighbour_is_no_speck():
    # The neighbours are looked at a row and then a column at a time: the corners
    # count too.
    assert ocr._despeckled(specks(pairs=False)) is not None
    assert ocr._despeckled(specks(pairs=True)) is None
