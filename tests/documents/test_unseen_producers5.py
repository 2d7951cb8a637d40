"""More documents from producers the rest of the suite does not use: PDFs with
superscripts and subscripts (a footnote's mark, "m²", "H₂O") as Chromium prints
a web page and LibreOffice exports a Writer document with a footnote and a text
frame, each raised letter drawn in a text object of its own; and web pages
Chromium prints with cards side by side (CSS flex) and tables of three wide
columns."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from fpdf import FPDF

from documents.extractors import extract
from tests.files import placed_text_pdf


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def raised_pdf(
    pieces: list[tuple[str, int, float]], margins: tuple[str, str] | None = None
) -> bytes:
    """A page with one line of ``(text, size, rise)`` pieces, each drawn where the
    one before it ends, a superscript raised (a subscript lowered) in millimetres;
    then, when given, a header and a footer drawn after it, as Chrome prints them."""
    pdf = FPDF(format="A4")
    pdf.add_page()
    x = 20.0
    for text, size, rise in pieces:
        pdf.set_font("Helvetica", size=size)
        pdf.text(x, 60 - rise, text)
        x += pdf.get_string_width(text)
    if margins:
        pdf.set_font("Helvetica", size=8)
        pdf.text(10, 8, margins[0])
        pdf.text(10, 290, margins[1])
    return bytes(pdf.output())


LINE = [
    ("The committee agreed on Friday.", 12, 0),
    ("1", 7, 1.5),
    (" The roof covers 120 m", 12, 0),
    ("2", 7, 1.5),
    (" in all, and H", 12, 0),
    ("2", 7, -0.7),
    ("O leaks.", 12, 0),
]
READ = "The committee agreed on Friday.1 The roof covers 120 m2 in all, and H2O leaks."


def test_a_superscript_drawn_on_its_own_keeps_its_line_whole(tmp_path: Path) -> None:
    # PDFium started a line at the raised "1" (both its texts): "Friday.1" / " The
    # roof covers", a sentence torn in two, a space leading the second line.
    assert extract(write(tmp_path, "sup.pdf", raised_pdf(LINE))).text == READ


def test_a_header_drawn_last_stays_on_top_of_a_line_with_a_superscript(
    tmp_path: Path,
) -> None:
    # The line's break at the superscript kept the header drawn after the body
    # from being put back on top: it was read after the body.
    data = raised_pdf(LINE, ("11/28/26, 10:16 AM Roof Minutes", "example.org 1/1"))
    assert extract(write(tmp_path, "margins.pdf", data)).text.splitlines() == [
        "11/28/26, 10:16 AM Roof Minutes",
        READ,
        "example.org 1/1",
    ]


def test_a_word_a_gap_after_a_superscript_is_not_joined_to_it(tmp_path: Path) -> None:
    # PDFium breaks the line before " Pears" too: the words stay apart.
    pieces = [("Apples", 12, 0), ("3", 7, 1.5)]
    pdf = FPDF(format="A4")
    pdf.add_page()
    x = 20.0
    for text, size, rise in [*pieces, ("", 12, 0)]:
        pdf.set_font("Helvetica", size=size)
        pdf.text(x, 60 - rise, text)
        x += pdf.get_string_width(text)
    pdf.text(x + 3, 60, " Pears")
    text = extract(write(tmp_path, "apart.pdf", bytes(pdf.output()))).text
    assert text.split() == ["Apples3", "Pears"]


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium is missing")
def test_chromium_s_superscripts_stay_on_their_line(tmp_path: Path) -> None:
    # Read as "The committee agreed on Friday." / "1 The roof covers 120 m2" /
    # " in all.": the footnote's mark on the next sentence, a line in three.
    page = tmp_path / "minutes.html"
    page.write_text(
        "<!doctype html><html><head><meta charset='utf-8'>"
        "<title>Roof Repair Minutes</title></head><body>"
        "<h1>Roof repair minutes</h1><p>The committee agreed on Friday.<sup>1</sup>"
        " The roof covers 120 m<sup>2</sup> in all.</p>"
        "<p>Water (H<sub>2</sub>O) came in.</p></body></html>",
        encoding="utf-8",
    )
    pdf = tmp_path / "minutes.pdf"
    subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
         f"--print-to-pdf={pdf}", page.as_uri()],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    lines = extract(pdf).text.splitlines()
    assert len(lines) == 5, lines
    assert lines[0].endswith("Roof Repair Minutes"), lines
    assert lines[1:4] == [
        "Roof repair minutes",
        "The committee agreed on Friday.1 The roof covers 120 m2 in all.",
        "Water (H2O) came in.",
    ]
    assert lines[4].endswith("minutes.html 1/1"), lines


FODT = """<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
 xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"
 xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
 xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"
 xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"
 office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.text">
<office:automatic-styles><style:style style:name="fr1" style:family="graphic">
<style:graphic-properties style:wrap="none" style:vertical-pos="from-top"
 style:horizontal-pos="from-left" style:vertical-rel="page"
 style:horizontal-rel="page"/></style:style></office:automatic-styles>
<office:body><office:text>
<text:p>Minutes of the roof committee.</text:p>
<text:p>The roof leaks<text:note text:id="n1" text:note-class="footnote">
<text:note-citation>1</text:note-citation><text:note-body>
<text:p>Seen on Friday.</text:p></text:note-body></text:note> again.</text:p>
<text:p>Anchor of the box.<draw:frame draw:style-name="fr1" draw:name="F1"
 text:anchor-type="paragraph" svg:x="2cm" svg:y="15cm" svg:width="8cm"><draw:text-box>
<text:p>Boxed note line one.</text:p><text:p>Boxed note line two.</text:p>
</draw:text-box></draw:frame></text:p>
<text:p>Last line of the body.</text:p>
</office:text></office:body></office:document>
"""


@pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice is missing")
def test_libreoffice_s_text_box_is_read_where_it_lies_beside_a_footnote_mark(
    tmp_path: Path,
) -> None:
    # LibreOffice draws a text box placed down the page before the page's text;
    # it is put where it lies, but the footnote's mark on the page (a line break
    # in one of PDFium's texts only) kept it first, above the body.
    source = tmp_path / "minutes.fodt"
    source.write_text(FODT, encoding="utf-8")
    subprocess.run(
        ["soffice", f"-env:UserInstallation={(tmp_path / 'profile').as_uri()}",
         "--headless", "--convert-to", "pdf", "--outdir", str(tmp_path),
         str(source)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    lines = [x for x in extract(tmp_path / "minutes.pdf").text.splitlines() if x]
    assert lines == [
        "Minutes of the roof committee.",
        "The roof leaks1 again.",
        "Anchor of the box.",
        "Last line of the body.",
        "Boxed note line one.",
        "Boxed note line two.",
        "1 Seen on Friday.",
    ]


def chromium_pdf(tmp_path: Path, html: str) -> Path:
    page = tmp_path / "page.html"
    page.write_text(html, encoding="utf-8")
    pdf = tmp_path / "page.pdf"
    subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
         "--no-pdf-header-footer", f"--print-to-pdf={pdf}", page.as_uri()],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return pdf


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium is missing")
def test_cards_side_by_side_are_read_one_after_the_other(tmp_path: Path) -> None:
    # A page of short lines (a grid's cells, a table) was read in rows, and the
    # two cards' wrapped lines were woven together: "... onto a second Card B
    # body text also wraps onto more" / "line in its narrow box. lines in its box."
    pdf = chromium_pdf(
        tmp_path,
        "<!doctype html><html><head><meta charset='utf-8'><style>"
        ".grid{display:grid;grid-template-columns:1fr 1fr 1fr}"
        ".flex{display:flex;gap:20px}</style></head><body>"
        "<h2>Grid section</h2><div class='grid'><div>Cell alpha one</div>"
        "<div>Cell beta two</div><div>Cell gamma three</div><div>Cell delta four</div>"
        "<div>Cell epsilon five</div><div>Cell zeta six</div></div>"
        "<h2>Flex cards</h2><div class='flex'><div><b>Card A title</b><p>Card A body"
        " text that is a little longer and wraps onto a second line in its narrow"
        " box.</p></div><div><b>Card B title</b><p>Card B body text also wraps onto"
        " more lines in its box.</p></div></div>"
        "<h2>Table</h2><table><tr><th>Name</th><th>Qty</th></tr>"
        "<tr><td>Widget</td><td>3</td></tr><tr><td>Gadget</td><td>5</td></tr>"
        "</table></body></html>",
    )
    text = " ".join(extract(pdf).text.split())
    assert (
        "Card A title Card A body text that is a little longer and wraps onto a"
        " second line in its narrow box. Card B title Card B body text also wraps"
        " onto more lines in its box. Table Name Qty Widget 3 Gadget 5"
    ) in text, text
    assert text.startswith("Grid section Cell alpha one Cell beta two"), text


def test_a_table_of_three_columns_is_not_read_as_two_columns_of_prose(
    tmp_path: Path,
) -> None:
    # Rows of three cells, each as wide as a line of prose, were taken for two
    # columns read across: the first column read down, then the other two.
    cells = [(72, 740, "Price List")] + [
        (72 + 170 * column, 720 - 14 * row, f"Item {row}{column} standard size")
        for row in range(8)
        for column in range(3)
    ]
    text = extract(write(tmp_path, "table.pdf", placed_text_pdf(cells))).text
    assert text.splitlines() == ["Price List"] + [
        " ".join(f"Item {row}{column} standard size" for column in range(3))
        for row in range(8)
    ]


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium is missing")
def test_chromium_s_table_of_three_columns_is_read_row_by_row(tmp_path: Path) -> None:
    rows = "".join(
        f"<tr><td>Item {r}0 standard size</td><td>Item {r}1 standard size</td>"
        f"<td>Item {r}2 standard size</td></tr>"
        for r in range(8)
    )
    pdf = chromium_pdf(
        tmp_path,
        "<!doctype html><html><body><h2>Price List</h2>"
        f"<table style='width:100%'>{rows}</table><p>End of list.</p></body></html>",
    )
    assert extract(pdf).text.splitlines() == [
        "Price List",
        *(" ".join(f"Item {r}{c} standard size" for c in range(3)) for r in range(8)),
        "End of list.",
    ]


W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def field(code: str, result: str) -> list[str]:
    """A complex field's runs: begin, its code, separate, its result, end."""
    return [
        f'<w:r {W}><w:fldChar w:fldCharType="begin"/></w:r>',
        f'<w:r {W}><w:instrText xml:space="preserve"> {code} </w:instrText></w:r>',
        f'<w:r {W}><w:fldChar w:fldCharType="separate"/></w:r>',
        f"<w:r {W}><w:t>{result}</w:t></w:r>",
        f'<w:r {W}><w:fldChar w:fldCharType="end"/></w:r>',
    ]


def test_a_set_field_s_result_is_not_read_a_ref_field_s_is(tmp_path: Path) -> None:
    # LibreOffice writes a "Set variable" field as SET with the value as its
    # result, then a REF showing it: read "Set: ACME CorpACME Corp done.", where
    # Word (SET shows nothing) and LibreOffice show the value once.
    import docx
    from docx.oxml import parse_xml

    document = docx.Document()
    for before, runs, after in [
        ("Set: ", field('SET Client "ACME Corp"', "ACME Corp"), ""),
        ("", field('REF "Client"', "ACME Corp"), " done."),
        ("Name: ", field('ASK Name "Your name?"', "Ann"), ""),
        ("", field("REF Name", "Ann"), "."),
        ("Page ", field("PAGE", "1"), "."),
    ]:
        paragraph = document.add_paragraph(before)
        for run in runs:
            paragraph._p.append(parse_xml(run))
        paragraph.add_run(after)
    saved = tmp_path / "fields.docx"
    document.save(saved)
    assert [line.rstrip() for line in extract(saved).text.splitlines()] == [
        "Set:",
        "ACME Corp done.",
        "Name:",
        "Ann.",
        "Page 1.",
    ]


@pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice is missing")
def test_libreoffice_s_docx_of_a_variable_reads_its_value_once(tmp_path: Path) -> None:
    source = tmp_path / "letter.fodt"
    source.write_text(
        '<?xml version="1.0" encoding="UTF-8"?><office:document'
        ' xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"'
        ' xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"'
        ' office:version="1.3"'
        ' office:mimetype="application/vnd.oasis.opendocument.text">'
        "<office:body><office:text><text:variable-decls><text:variable-decl"
        ' office:value-type="string" text:name="Client"/></text:variable-decls>'
        '<text:p>Dear <text:variable-set text:name="Client"'
        ' office:value-type="string">ACME Corp</text:variable-set>,</text:p>'
        '<text:p>Thanks, <text:variable-get text:name="Client">ACME Corp'
        "</text:variable-get>.</text:p></office:text></office:body></office:document>",
        encoding="utf-8",
    )
    subprocess.run(
        ["soffice", f"-env:UserInstallation={(tmp_path / 'profile').as_uri()}",
         "--headless", "--convert-to", "docx", "--outdir", str(tmp_path),
         str(source)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    assert extract(tmp_path / "letter.docx").text.splitlines() == [
        "Dear ACME Corp,",
        "Thanks, ACME Corp.",
    ]
