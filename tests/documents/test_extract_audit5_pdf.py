"""Outside audit (5): PDFs and pictures with features real files have and the other
tests' fixtures lack: multi-line form fields and comments, crop boxes hiding text,
blank and tiny scans, PDF structures (incremental updates, object streams, broken
cross-references, AES-256 protection) and the pixel formats of scans and photos."""

from __future__ import annotations

import re
import struct
import zlib

import pytest
from fpdf import FPDF
from fpdf.enums import EncryptionMethod
from PIL import Image, ImageOps

from documents.extractors import CorruptFileError, EncryptedFileError, extract, ocr
from documents.extractors.base import classify
from tests.files import hand_made_pdf, image_bytes, reads, text_image, write

LINES = ["The quick brown fox jumps over", "the lazy dog near the harbour."]
OTHER = ["Invoice 4711 for seven orchard", "ladders, paid in full."]
HELVETICA = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def one_page_pdf(
    content: bytes,
    page: bytes = b"",
    pages: bytes = b"/MediaBox [0 0 612 792]",
    catalog: bytes = b"",
    more: dict[int, bytes] | None = None,
) -> bytes:
    """A one-page PDF drawing ``content`` in Helvetica (/F1); ``page``, ``pages``
    and ``catalog`` add entries to those dictionaries, ``more`` objects from 6 on."""
    return hand_made_pdf(
        {
            1: b"<< /Type /Catalog /Pages 2 0 R %s >>" % catalog,
            2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 %s >>" % pages,
            3: b"<< /Type /Page /Parent 2 0 R %s /Resources << /Font << /F1 4 0 R >> "
            b">> /Contents 5 0 R >>" % page,
            4: HELVETICA,
            5: b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
            **(more or {}),
        }
    )


# --- Text outside the page's text layer ------------------------------------------


def test_a_multi_line_form_field_keeps_its_line_breaks_a_comment_is_one_line(
    tmp_path,
):
    # Acrobat ends the lines of a multi-line field's value, and of a comment, with a
    # bare CR: it stayed in the text, where nothing else has one. A comment is read
    # on one line, as every format's are.
    fields = {
        6: b"<< /Type /Annot /Subtype /Widget /FT /Tx /Ff 4096 /T (notes) "
        b"/V (Deliver to the back door\rafter five o'clock) /Rect [200 600 400 660] "
        b"/P 3 0 R >>",
        7: b"<< /Type /Annot /Subtype /Text /Rect [100 500 120 520] "
        b"/Contents (Checked the totals.\rPlease sign.) >>",
    }
    data = one_page_pdf(
        b"BT /F1 12 Tf 72 640 Td (Delivery notes:) Tj ET",
        page=b"/Annots [6 0 R 7 0 R]",
        catalog=b"/AcroForm << /Fields [6 0 R] /DA (/Helv 0 Tf 0 g) >>",
        more=fields,
    )
    text = extract(write(tmp_path, "form.pdf", data)).text
    assert "\r" not in text
    assert text.split("\n") == [
        "Delivery notes:",
        "Deliver to the back door",
        "after five o'clock",
        "Comment: Checked the totals. Please sign.",
    ]


SLUGGED = (
    b"BT /F1 12 Tf 1 0 0 1 100 700 Tm (Minutes of the board meeting) Tj "
    b"1 0 0 1 100 680 Tm (held on the second of May.) Tj "
    b"1 0 0 1 100 60 Tm (14773_01_1-174.qxd 2/10/04 3:51 PM Page 5) Tj "
    b"1 0 0 1 580 700 Tm (1) Tj 1 0 0 1 580 680 Tm (2) Tj ET"
)


@pytest.mark.parametrize("engine", ["auto", "pdfium", "pdfplumber"])
@pytest.mark.parametrize("where", ["page", "pages"])
def test_text_the_crop_box_hides_is_not_read(tmp_path, engine, where):
    # A book's pages trimmed by their crop box: the printer's slug below and the
    # thumb index in the margin are not shown, and were read on every page (the
    # corpus's freeculture.pdf: 30 lines of numbers and a slug a page). The box
    # may be the page's own or inherited from its parent.
    crop = b"/CropBox [50 100 560 792]"
    data = one_page_pdf(
        SLUGGED,
        page=crop if where == "page" else b"",
        pages=b"/MediaBox [0 0 612 792]" + (crop if where == "pages" else b""),
    )
    text = extract(write(tmp_path, "book.pdf", data), pdf_engine=engine).text
    assert text == "Minutes of the board meeting\nheld on the second of May."


def test_a_crop_box_off_its_media_box_hides_nothing(tmp_path):
    # No area in common: viewers show the media box, and so all of its text.
    data = one_page_pdf(SLUGGED, page=b"/CropBox [600 800 1000 1000]")
    text = extract(write(tmp_path, "off.pdf", data)).text
    assert text.startswith("Minutes of the board meeting") and "Page 5" in text


def test_text_set_off_the_page_is_not_read_and_text_on_it_is(tmp_path):
    # A box inherited from the parent (as fpdf2 writes it) holds all of its text:
    # pypdfium2's get_cropbox gives Letter for it, which would cut an A4 page short.
    pdf = FPDF()  # A4, its /MediaBox on the page tree
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    pdf.text(20, 10, "Headed at the top of an A4 page,")  # above Letter's height
    pdf.text(20, 280, "and signed at its foot.")
    pdf.text(20, -40, "Left over above the page")
    text = extract(write(tmp_path, "a4.pdf", bytes(pdf.output()))).text
    assert text == "Headed at the top of an A4 page,\nand signed at its foot."


# --- Structures and protection -------------------------------------------------


def incremental_update() -> bytes:
    """A PDF saved again with its page's content replaced (an appended update)."""
    base = one_page_pdf(b"BT /F1 12 Tf 72 700 Td (Draft wording) Tj ET")
    start = int(re.search(rb"startxref\n(\d+)", base)[1])
    content = b"BT /F1 12 Tf 72 700 Td (Approved wording) Tj ET"
    update = bytearray(base)
    offset = len(update)
    update += b"5 0 obj\n<< /Length %d >>\nstream\n%s\nendstream\nendobj\n" % (
        len(content),
        content,
    )
    xref = len(update)
    update += (
        b"xref\n0 1\n0000000000 65535 f \n5 1\n%010d 00000 n \n"
        b"trailer\n<< /Size 6 /Root 1 0 R /Prev %d >>\nstartxref\n%d\n%%%%EOF\n"
        % (offset, start, xref)
    )
    return bytes(update)


def object_streams() -> bytes:
    """PDF 1.5: every dictionary packed in a compressed object stream, found
    through a cross-reference stream (as Word and Acrobat save)."""
    content = b"BT /F1 12 Tf 72 700 Td (Packed in an object stream) Tj ET"
    packed = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        HELVETICA,
    ]
    header, body = b"", b""
    for number, obj in enumerate(packed, 1):
        header += b"%d %d " % (number, len(body))
        body += obj + b" "
    stream = zlib.compress(header + body)
    out = bytearray(b"%PDF-1.5\n")
    offsets = [len(out)]
    out += b"5 0 obj\n<< /Length %d >>\nstream\n%s\nendstream\nendobj\n" % (
        len(content),
        content,
    )
    offsets.append(len(out))
    out += (
        b"6 0 obj\n<< /Type /ObjStm /N 4 /First %d /Filter /FlateDecode /Length %d >>"
        b"\nstream\n%s\nendstream\nendobj\n" % (len(header), len(stream), stream)
    )
    offsets.append(len(out))
    rows = b"\x00" + bytes(4) + b"\xff\xff"
    rows += b"".join(b"\x02" + struct.pack(">IH", 6, k) for k in range(4))
    rows += b"".join(b"\x01" + struct.pack(">IH", at, 0) for at in offsets)
    out += (
        b"7 0 obj\n<< /Type /XRef /Size 8 /W [1 4 2] /Root 1 0 R /Length %d >>\n"
        b"stream\n%s\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n"
        % (len(rows), rows, offsets[-1])
    )
    return bytes(out)


def shifted_xref() -> bytes:
    """Every cross-reference offset wrong (a file edited by hand, or by a tool
    that forgot to update them): readers rebuild the table by scanning."""
    data = one_page_pdf(b"BT /F1 12 Tf 72 700 Td (Offsets all wrong) Tj ET")
    return re.sub(
        rb"(\d{10}) 00000 n", lambda m: b"%010d 00000 n" % (int(m[1]) + 7), data
    )


def protected(user_password: str = "") -> bytes:
    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    pdf.cell(0, 10, "Payroll summary for March")
    pdf.set_encryption(
        owner_password="owner",
        user_password=user_password,
        encryption_method=EncryptionMethod.AES_256,
    )
    return bytes(pdf.output())


@pytest.mark.parametrize(
    ("made", "expected"),
    [
        (incremental_update, "Approved wording"),
        (object_streams, "Packed in an object stream"),
        (shifted_xref, "Offsets all wrong"),
        (protected, "Payroll summary for March"),  # AES-256, no password to open
    ],
)
def test_pdf_structures_real_files_have_are_read(tmp_path, made, expected):
    assert extract(write(tmp_path, "doc.pdf", made())).text == expected


def test_a_pdf_needing_a_password_to_open_is_refused_as_encrypted(tmp_path):
    with pytest.raises(EncryptedFileError) as refused:
        extract(write(tmp_path, "locked.pdf", protected(user_password="secret")))
    assert classify(refused.value) == "corruption"
    assert "password" in str(refused.value)


def test_a_pdf_whose_page_tree_loops_reads_what_it_can(tmp_path):
    # A page tree listing itself among its kids: no hang, no crash.
    data = one_page_pdf(
        b"BT /F1 12 Tf 72 700 Td (The only real page) Tj ET",
        pages=b"/MediaBox [0 0 612 792] /Kids [2 0 R 3 0 R]",
    ).replace(b"/Kids [3 0 R] /Count 1", b"/Count 2")
    try:
        result = extract(write(tmp_path, "loop.pdf", data))
    except CorruptFileError:
        return
    assert result.text == "The only real page"


# --- Scans and photos ------------------------------------------------------------


def test_a_blank_page_is_not_turned_to_straighten_it():
    # Equally flat at every angle, a blank page was "straightened" by -5.4°: a
    # rotation of the whole page (2 s at 9,000² pixels) and a larger page to read.
    assert ocr._skew(Image.new("L", (1200, 900), 255)) == 0
    assert ocr._skew(Image.new("L", (1200, 900), 0)) == 0


def test_print_too_small_to_find_lines_in_is_read_enlarged(tmp_path):
    # Lines under ~9 pixels high are not found as lines at all (a thumbnail, a
    # snippet of a screenshot): the image read as nothing, so was never enlarged.
    lines = ["Total due: 4711 euros"]
    image = text_image(lines, size=8)
    result = extract(write(tmp_path, "snippet.png", image_bytes(image)))
    assert reads(result.text, lines), result.text


def png_48_bit(image: Image.Image) -> bytes:
    """A 16-bit-per-channel RGB PNG (Pillow cannot write one)."""
    rgb = image.convert("RGB")
    rows = b"".join(
        b"\x00"
        + bytes(b for v in rgb.crop((0, y, rgb.width, y + 1)).tobytes() for b in (v, v))
        for y in range(rgb.height)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    header = struct.pack(">IIBBBBB", rgb.width, rgb.height, 16, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def palette_with_clear_background(image: Image.Image) -> bytes:
    """A palette PNG whose background index is transparent black (a logo, a
    screenshot cut out), its print dark blue."""
    page = Image.new("P", image.size, 0)
    page.putpalette([0, 0, 0, 0, 0, 120] + [0] * 762)
    page.paste(1, mask=ImageOps.invert(image).point(lambda v: 255 if v > 128 else 0))
    return image_bytes(page, "PNG", transparency=0)


def exif_turned(image: Image.Image, fmt: str) -> bytes:
    """Stored on its side, with EXIF Orientation 6 to show it upright."""
    exif = Image.Exif()
    exif[274] = 6
    turned = image.convert("RGB").rotate(90, expand=True, fillcolor=(255, 255, 255))
    return image_bytes(turned, fmt, exif=exif)


def top_down_bmp(image: Image.Image) -> bytes:
    """A BMP stored top row first (a negative height), as some scanners write."""
    data = bytearray(image_bytes(image.convert("RGB"), "BMP"))
    width, height = struct.unpack_from("<ii", data, 18)
    start = struct.unpack_from("<I", data, 10)[0]
    size = (width * 3 + 3) // 4 * 4
    rows = [data[start + k * size : start + (k + 1) * size] for k in range(height)]
    data[start:] = b"".join(reversed(rows))
    struct.pack_into("<i", data, 22, -height)
    return bytes(data)


@pytest.mark.parametrize(
    ("name", "made"),
    [
        ("grey16.png", lambda i: image_bytes(i.convert("I").point(lambda v: v * 257).convert("I;16"))),
        ("rgb48.png", png_48_bit),
        ("clear.png", palette_with_clear_background),
        ("cmyk.jpg", lambda i: image_bytes(i.convert("CMYK"), "JPEG", quality=90)),
        ("progressive.jpg", lambda i: image_bytes(i.convert("RGB"), "JPEG", progressive=True)),
        ("turned.webp", lambda i: exif_turned(i, "WEBP")),
        ("turned.png", lambda i: exif_turned(i, "PNG")),
        ("topdown.bmp", top_down_bmp),
        ("float.tif", lambda i: image_bytes(i.convert("F").point(lambda v: v / 255), "TIFF")),
    ],
)  # fmt: skip
def test_pixel_formats_of_scans_and_photos_are_read(tmp_path, name, made):
    result = extract(write(tmp_path, name, made(text_image(LINES))))
    assert reads(result.text, LINES), result.text


def test_every_page_of_a_tiff_in_mixed_modes_is_read_once_in_order(tmp_path):
    # Black and white, colour, palette pages in one file, a blank page among them
    # (a scanner's feeder, a merged fax): each read, the blank one adding nothing.
    path = tmp_path / "pages.tif"
    text_image(LINES).convert("1").save(
        path,
        save_all=True,
        append_images=[
            Image.new("L", (300, 200), 255),
            text_image(OTHER).convert("RGB"),
            text_image(["End of the file."]).convert("P"),
        ],
        compression="tiff_lzw",
    )
    result = extract(path)
    assert result.page_count == 4
    assert result.details["ocr_pages"] == "1-4"
    lines = [*LINES, *OTHER, "End of the file."]
    assert reads(result.text, lines), result.text
    assert len(result.text.split()) == len(" ".join(lines).split())  # each once
    at = [result.text.index(word) for word in ("quick", "Invoice", "End")]
    assert at == sorted(at)
