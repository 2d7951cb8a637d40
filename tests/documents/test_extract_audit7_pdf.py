"""Outside audit (7): PDFs whose structure other tests' fixtures lack: a scan with a
stamp on a page whose media box does not start at 0, 0, and a page tree whose
/Count overstates its kids."""

from __future__ import annotations

import pytest
from PIL import Image

from documents.extractors import extract
from tests.files import hand_made_pdf, image_bytes, reads, text_image, write

LINES = ["The quick brown fox jumps over", "the lazy dog near the harbour."]
HELVETICA = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def stamped_scan(media_box: tuple[int, int, int, int]) -> bytes:
    """A scanned A4 page filling ``media_box`` with a Bates number typed at its
    foot, drawn where that box lies."""
    left, bottom, right, top = media_box
    page = Image.new("L", (1240, 1754), 255)
    page.paste(text_image(LINES), (100, 150))
    scan = image_bytes(page, "JPEG")
    content = (
        b"q %d 0 0 %d %d %d cm /Im1 Do Q BT /F1 8 Tf %d %d Td (ABC-000123) Tj ET"
        % (
            right - left,
            top - bottom,
            left,
            bottom,
            left + 450,
            bottom + 20,
        )
    )
    return hand_made_pdf(
        {
            1: b"<< /Type /Catalog /Pages 2 0 R >>",
            2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            3: b"<< /Type /Page /Parent 2 0 R /MediaBox [%d %d %d %d] "
            b"/Resources << /Font << /F1 4 0 R >> /XObject << /Im1 6 0 R >> >> "
            b"/Contents 5 0 R >>" % media_box,
            4: HELVETICA,
            5: b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
            6: b"<< /Type /XObject /Subtype /Image /Width 1240 /Height 1754 "
            b"/ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /DCTDecode "
            b"/Length %d >>\nstream\n%s\nendstream" % (len(scan), scan),
        }
    )


@pytest.mark.parametrize(
    "media_box",
    [(0, -842, 595, 0), (1000, 1000, 1595, 1842)],
    ids=["below-the-origin", "far-from-the-origin"],
)
def test_a_stamped_scan_on_a_page_off_the_origin_is_read(tmp_path, media_box):
    # The share of the page its images cover was measured against a page at 0, 0:
    # the scan seemed to cover none of it, and only the stamp was read.
    result = extract(write(tmp_path, "scan.pdf", stamped_scan(media_box)))
    assert reads(result.text, LINES), result.text
    assert "ABC-000123" in result.text


def three_pages(count: int, kids: bytes = b"[3 0 R 6 0 R 7 0 R]") -> bytes:
    """Three pages of text in a page tree claiming ``count`` pages."""
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids %s /Count %d /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 4 0 R >> >> >>" % (kids, count),
        4: HELVETICA,
    }
    for page, contents, word in ((3, 5, b"one"), (6, 8, b"two"), (7, 9, b"three")):
        text = b"BT /F1 12 Tf 72 700 Td (Page %s text) Tj ET" % word
        objects[page] = b"<< /Type /Page /Parent 2 0 R /Contents %d 0 R >>" % contents
        objects[contents] = b"<< /Length %d >>\nstream\n%s\nendstream" % (
            len(text),
            text,
        )
    return hand_made_pdf(objects)


def test_a_page_count_that_overstates_the_pages_makes_up_no_damaged_pages(tmp_path):
    # PDFium takes /Count 5 on trust: two pages that "could not be read", a
    # confidence of 0.6 and a note about damage, for a whole three-page file.
    result = extract(write(tmp_path, "count.pdf", three_pages(5)))
    assert result.text == "Page one text\n\nPage two text\n\nPage three text"
    assert (result.page_count, result.confidence, result.note) == (3, 1.0, "")


def test_a_kid_that_is_missing_still_counts_as_a_damaged_page(tmp_path):
    result = extract(
        write(tmp_path, "kid.pdf", three_pages(3, b"[3 0 R 6 0 R 99 0 R]"))
    )
    assert result.text == "Page one text\n\nPage two text"
    assert result.page_count == 3
    assert result.note.startswith("1 of 3 pages have no readable text")


def test_a_scan_on_a_page_smaller_than_its_pixels_is_read_at_their_resolution(
    tmp_path,
):
    # A scan whose file claims 2,400 dpi makes a page 37 points wide: rendered at
    # 300 dpi it was 155 pixels wide, and OCR read "The ques Grown tox pampe ower".
    page = Image.new("L", (1240, 1754), 255)
    page.paste(text_image(LINES), (100, 150))
    result = extract(
        write(tmp_path, "fine.pdf", image_bytes(page, "PDF", resolution=2400))
    )
    assert reads(result.text, LINES), result.text
