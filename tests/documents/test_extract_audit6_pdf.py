"""Outside audit (6): PDFs the other tests' fixtures lack: a table's cell of one
character, a line run off the page's edge, a font that maps its glyphs to control
codes, and bold faked by drawing the text twice; and a scan cut short."""

from __future__ import annotations

import pytest

from documents.extractors import extract
from tests.files import (
    hand_made_pdf,
    image_bytes,
    placed_text_pdf,
    text_image,
    words,
    write,
)


def test_a_table_cell_of_one_character_is_not_glued_to_the_cell_before_it(tmp_path):
    # PDFium's plain text broke the row before a lone "3"; its bounded text, read
    # for the page, ran the two cells together: "Apples3".
    rows = [("Item", "Qty", "Price"), ("Apples", "3", "1.20"), ("Plums", "7", "2.10")]
    cells = [
        (72 + 150 * column, 700 - 20 * row, text)
        for row, cells in enumerate(rows)
        for column, text in enumerate(cells)
    ]
    data = placed_text_pdf(cells)
    text = extract(write(tmp_path, "table.pdf", data)).text
    assert text.split("\n") == ["Item Qty Price", "Apples 3 1.20", "Plums 7 2.10"]


def test_a_superscript_stays_on_its_word(tmp_path):
    # The other side of the table's case: a line break PDFium's two texts disagree
    # on between letters that touch is no gap between words.
    ops = b"BT /F1 12 Tf 72 700 Td (Energy is mc) Tj /F1 7 Tf 5 Ts (2) Tj ET"
    text = extract(write(tmp_path, "sup.pdf", _one_page(ops))).text
    assert text == "Energy is mc2"


def test_a_line_run_off_the_page_edge_keeps_the_words_on_the_page(tmp_path):
    # One text object, more of it past the right edge than on the page: its middle
    # lies off the page, and the whole line was taken for hidden text.
    line = " ".join(f"word{n}" for n in range(150))
    ops = b"BT /F1 10 Tf 36 700 Td (%s) Tj ET" % line.encode()
    text = extract(write(tmp_path, "wide.pdf", _one_page(ops))).text
    assert text.startswith("word0 word1 word2")


def test_text_just_poking_into_the_page_stays_hidden(tmp_path):
    # A printer's slug a point inside the crop box, and a thumb index one letter
    # wide at its edge, are still what the crop box cuts away.
    ops = (
        b"BT /F1 12 Tf 100 700 Td (Minutes of the meeting) Tj ET "
        b"BT /F1 12 Tf 100 91 Td (slug 14773_01 2/10/04 Page 5) Tj ET "
        b"BT /F1 12 Tf 555 500 Td (Index) Tj ET"
    )
    page = b"/CropBox [50 100 560 792]"
    text = extract(write(tmp_path, "slug.pdf", _one_page(ops, page))).text
    assert text == "Minutes of the meeting"


def _cid_font_pdf() -> bytes:
    """A page in a font without a character map whose glyph codes are small
    numbers (a subset font that lost its ToUnicode): PDFium reads them as control
    codes (U+0002 among them, its mark for a line-end hyphen), pdfplumber as
    "(cid:2)"."""
    codes = "".join(f"{code:04X}" for code in (1, 2, 4, 5, 3, 6, 7, 2, 8, 9))
    ops = f"BT /F1 12 Tf 72 700 Td <{codes}> Tj 0 -20 Td <{codes}> Tj ET".encode()
    return hand_made_pdf(
        {
            1: b"<< /Type /Catalog /Pages 2 0 R >>",
            2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
            4: b"<< /Type /Font /Subtype /Type0 /BaseFont /Subset /Encoding "
            b"/Identity-H /DescendantFonts [6 0 R] >>",
            5: b"<< /Length %d >>\nstream\n%s\nendstream" % (len(ops), ops),
            6: b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /Subset "
            b"/CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 "
            b">> /FontDescriptor 7 0 R /CIDToGIDMap /Identity >>",
            7: b"<< /Type /FontDescriptor /FontName /Subset /Flags 4 /FontBBox "
            b"[0 0 1000 1000] /ItalicAngle 0 /Ascent 800 /Descent -200 "
            b"/CapHeight 700 /StemV 80 >>",
        }
    )


def test_glyphs_without_characters_are_no_text(tmp_path):
    # What was left of the control codes ("-" for each U+0002, tabs, line ends)
    # was the page's text; or pdfplumber's "(cid:2)(cid:4)..." replaced it.
    path = write(tmp_path, "cid.pdf", _cid_font_pdf())
    result = extract(path, ocr_mode="never")
    assert result.text == ""
    assert result.note == "OCR is turned off (OCR_MODE=never)."


@pytest.mark.parametrize("engine", ["auto", "pdfplumber"])
def test_bold_faked_by_drawing_the_text_twice_is_read_once(tmp_path, engine):
    # pdfplumber read every letter of it twice ("BBoolldd"); PDFium never did.
    data = placed_text_pdf(
        [
            (72, 700, "Bold heading drawn twice"),
            (72.4, 700, "Bold heading drawn twice"),
            (72, 680, "Normal body all filled in."),
        ]
    )
    text = extract(write(tmp_path, "bold.pdf", data), pdf_engine=engine).text
    assert text == "Bold heading drawn twice\nNormal body all filled in."


def test_small_print_keeps_its_double_letters_with_pdfplumber(tmp_path):
    # Two letters side by side are not one drawn twice, however small the print.
    data = placed_text_pdf([(72, 700, "all williams balloon")], size=5)
    text = extract(write(tmp_path, "small.pdf", data), pdf_engine="pdfplumber").text
    assert text == "all williams balloon"


def test_the_rows_a_cut_short_scan_lacks_are_read_as_paper(tmp_path):
    # Pillow fills the rows the data never reached black (grey for JPEG): OCR
    # read that band's edge as scraps of letters ("ne") after the real lines.
    lines = [
        "Deliver the parcel to",
        "the blue gate at noon",
        "and ring the bell twice",
        "before you leave it",
    ]
    image = text_image(lines)
    data = image_bytes(image, compress_level=0)  # its bytes row by row
    cut = len(data) * 140 // image.height  # between the second line and the third
    result = extract(write(tmp_path, "cut.png", data[:cut]))
    assert result.note.startswith("The image file is incomplete")
    assert words(result.text) == words(" ".join(lines[:2]))


def _one_page(ops: bytes, page: bytes = b"") -> bytes:
    """A Letter page drawing ``ops`` in Helvetica (/F1); ``page`` adds entries to
    the page's dictionary."""
    return hand_made_pdf(
        {
            1: b"<< /Type /Catalog /Pages 2 0 R >>",
            2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] %s "
            b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>" % page,
            4: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            5: b"<< /Length %d >>\nstream\n%s\nendstream" % (len(ops), ops),
        }
    )
