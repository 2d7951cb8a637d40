"""The resolution PDF pages are rendered at for OCR: a scan whose file claims a low
resolution is rendered at no more than three times its pixels a side; other scans,
pages of vector text and text drawn over a scan render at 300 dpi, as before."""

from __future__ import annotations

import pypdfium2 as pdfium
import pytest
from PIL import Image, ImageDraw, ImageFont

from documents.extractors import extract
from tests.files import hand_made_pdf, image_bytes, pdf_bytes, reads, write

LINES = ["The quick brown fox jumps over", "the lazy dog near the harbour."]
AS_BEFORE = 300 / 72  # points to pixels at the default OCR resolution


@pytest.fixture
def renders(monkeypatch) -> list[tuple[float, tuple[int, int]]]:
    """The scale of each page rendered, and the bitmap's size."""
    seen = []
    render = pdfium.PdfPage.render

    def spy(page, **kwargs):
        bitmap = render(page, **kwargs)
        seen.append((kwargs["scale"], (bitmap.width, bitmap.height)))
        return bitmap

    monkeypatch.setattr(pdfium.PdfPage, "render", spy)
    return seen


def scan() -> Image.Image:
    """A book's page, 6 by 9 inches, scanned at 100 dpi."""
    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 24)
    page = Image.new("L", (600, 900), 255)
    draw = ImageDraw.Draw(page)
    for n, line in enumerate(LINES):
        draw.text((60, 80 + 40 * n), line, font=font, fill=0)
    return page


def scan_under(text: bytes) -> bytes:
    """The scan on a page of a point per pixel (a 72-dpi claim), ``text`` drawn
    over it in Helvetica (``3 Tr`` makes it invisible, as scanners' OCR layers)."""
    jpeg = image_bytes(scan(), "JPEG")
    content = b"q 600 0 0 900 0 0 cm /Im1 Do Q BT /F1 8 Tf 300 20 Td %s ET" % text
    return hand_made_pdf(
        {
            1: b"<< /Type /Catalog /Pages 2 0 R >>",
            2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 600 900] "
            b"/Resources << /Font << /F1 4 0 R >> /XObject << /Im1 6 0 R >> >> "
            b"/Contents 5 0 R >>",
            4: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            5: b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
            6: b"<< /Type /XObject /Subtype /Image /Width 600 /Height 900 "
            b"/ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /DCTDecode "
            b"/Length %d >>\nstream\n%s\nendstream" % (len(jpeg), jpeg),
        }
    )


def test_a_scan_claiming_72_dpi_is_rendered_at_three_times_its_pixels(
    tmp_path, renders
):
    # Pillow's default: a page as many points wide as the scan has pixels, which
    # was rendered at 300 dpi, 17 times its pixels.
    path = write(tmp_path, "scan.pdf", image_bytes(scan(), "PDF", resolution=72))
    result = extract(path)
    assert reads(result.text, LINES), result.text
    assert renders == [(3.0, (3 * 600, 3 * 900))]


@pytest.mark.parametrize("dpi", [100, 150])
def test_a_scan_of_100_dpi_or_more_renders_at_300_dpi_as_before(tmp_path, renders, dpi):
    # At 100 dpi, three times the scan's pixels per point came out a hair under
    # 300 dpi, and the bitmap a pixel narrower.
    path = write(tmp_path, "scan.pdf", image_bytes(scan(), "PDF", resolution=dpi))
    assert reads(extract(path).text, LINES)
    assert [scale for scale, _ in renders] == [AS_BEFORE]


def test_a_page_of_vector_text_renders_at_300_dpi_as_before(tmp_path, renders):
    path = write(tmp_path, "typed.pdf", pdf_bytes("Quarterly report of the queue"))
    assert "Quarterly" in extract(path, ocr_mode="always").text
    assert [scale for scale, _ in renders] == [AS_BEFORE]


@pytest.mark.parametrize(
    ("text", "scale"),
    [(b"(ABC-000123) Tj", AS_BEFORE), (b"3 Tr (The quick brown fox) Tj", 3.0)],
    ids=["visible-stamp", "invisible-layer"],
)
def test_text_drawn_over_a_scan_keeps_300_dpi_unless_invisible(
    tmp_path, renders, text, scale
):
    # Typed text renders finer than the scan's pixels; an OCR layer is not drawn.
    path = write(tmp_path, "scan.pdf", scan_under(text))
    assert reads(extract(path, ocr_mode="always").text, LINES)
    assert [s for s, _ in renders] == [scale]
