"""Documents made the way users' programs make them, read as the product reads
them: extract() as a worker's child calls it, and uploads through the API then
`process_queue --once`. Each fixture is made here at test time."""

from __future__ import annotations

import datetime
import io
import shutil
import subprocess
from pathlib import Path

import docx
import openpyxl
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from fpdf import FPDF
from PIL import Image, ImageDraw, ImageFont
from pptx import Presentation

from documents.extractors import extract
from documents.extractors.ocr import unavailable_reason
from documents.models import Document
from tests.files import eml_bytes, ole_bytes, write

# Word's and Outlook's HTML put each cell's text in a <p class=MsoNormal>, and
# LibreOffice's "Save as HTML" in a <p>: every cell came out on a line of its own,
# so an invoice's rows ("Rope", "2", "12.50") fell apart into single words.
OUTLOOK_TABLE = """<html xmlns:o="urn:schemas-microsoft-com:office:office"><body>
<p class=MsoNormal>Please find the order below.<o:p></o:p></p>
<table class=MsoTableGrid border=1 cellspacing=0 cellpadding=0>
 <tr><td width=200 valign=top><p class=MsoNormal><b>Item<o:p></o:p></b></p></td>
  <td width=100 valign=top><p class=MsoNormal><b>Qty<o:p></o:p></b></p></td>
  <td width=100 valign=top><p class=MsoNormal><b>Price<o:p></o:p></b></p></td></tr>
 <tr><td valign=top><p class=MsoNormal>Rope<o:p></o:p></p></td>
  <td valign=top><p class=MsoNormal>2<o:p></o:p></p></td>
  <td valign=top><p class=MsoNormal>12.50<o:p></o:p></p></td></tr>
 <tr><td valign=top><p class=MsoNormal>Paint<o:p></o:p></p></td>
  <td valign=top><p class=MsoNormal><o:p>&nbsp;</o:p></p></td>
  <td valign=top><p class=MsoNormal>7.00<o:p></o:p></p></td></tr>
</table>
<p class=MsoNormal>Regards<o:p></o:p></p>
</body></html>"""


def test_word_and_outlook_html_tables_read_a_row_a_line(tmp_path: Path) -> None:
    result = extract(write(tmp_path, "order.htm", OUTLOOK_TABLE.encode()))
    assert result.text.splitlines() == [
        "Please find the order below.",
        "Item Qty Price",
        "Rope 2 12.50",
        "Paint 7.00",
        "Regards",
    ]


def test_an_outlook_mails_table_reads_a_row_a_line(tmp_path: Path) -> None:
    data = eml_bytes(text=None, html=OUTLOOK_TABLE, attachments=())
    lines = extract(write(tmp_path, "order.eml", data)).text.splitlines()
    assert "Rope 2 12.50" in lines
    assert "Item Qty Price" in lines


def test_a_cell_of_several_lines_and_nested_tables_keep_their_lines(
    tmp_path: Path,
) -> None:
    # As table_row_lines reads a word processor's rows: a cell of several lines
    # (an address, a CV's column) would run together on one line.
    markup = b"""<table>
    <tr><td><p>Harbour Office</p><p>1 Quay Street</p></td><td><p>Invoice</p></td></tr>
    <tr><td><table><tr><td><p>inner a</p></td><td><p>inner b</p></td></tr></table>
    </td><td><p>outer</p></td></tr>
    <tr><td><p>Total</p></td><td><div>19.50<br></div></td></tr>
    </table>"""
    assert extract(write(tmp_path, "page.html", markup)).text.splitlines() == [
        "Harbour Office",
        "1 Quay Street",
        "Invoice",
        "inner a inner b",
        "outer",
        "Total 19.50",
    ]


FLAT_TABLE = """<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
 xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
 xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"
 office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.text">
<office:body><office:text><text:p>Tide table</text:p>
<table:table table:name="T1"><table:table-column table:number-columns-repeated="2"/>
<table:table-row><table:table-cell><text:p>High water</text:p></table:table-cell>
<table:table-cell><text:p>06:12</text:p></table:table-cell></table:table-row>
</table:table></office:text></office:body></office:document>
"""


@pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice is missing")
def test_libreoffice_html_export_reads_a_row_a_line(tmp_path: Path) -> None:
    source = write(tmp_path, "tides.fodt", FLAT_TABLE.encode())
    subprocess.run(
        ["soffice", "--headless", "--convert-to", "html", "--outdir", str(tmp_path),
         f"-env:UserInstallation=file://{tmp_path}/profile", str(source)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    lines = extract(tmp_path / "tides.html").text.splitlines()
    assert "High water 06:12" in lines


# --- Uploaded through the API, read by `process_queue --once` ------------------------


def _docx() -> bytes:
    document = docx.Document()
    document.sections[0].header.paragraphs[0].text = "Harbour Authority"
    document.add_paragraph("Minutes of the pier committee")
    table = document.add_table(rows=2, cols=2)
    for r, row in enumerate(table.rows):
        for c, cell in enumerate(row.cells):
            cell.text = f"r{r}c{c}"
    saved = io.BytesIO()
    document.save(saved)
    return saved.getvalue()


def _xlsx() -> bytes:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Budget"
    sheet.append(["Rope", 12.5, datetime.date(2024, 3, 1)])
    book.create_sheet("Staff").append(["Ann", "Keeper"])
    saved = io.BytesIO()
    book.save(saved)
    return saved.getvalue()


def _pptx() -> bytes:
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Lighthouse plan"
    slide.notes_slide.notes_text_frame.text = "Mention the lamp"
    saved = io.BytesIO()
    deck.save(saved)
    return saved.getvalue()


def _pdf() -> bytes:
    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 10, "Survey of the breakwater")
    return bytes(pdf.output())


READABLE = {
    "minutes.docx": (_docx, ["Minutes of the pier committee", "r0c0\tr0c1"]),
    "budget.xlsx": (
        _xlsx,
        ["Budget", "Rope\t12.5\t2024-03-01", "Staff", "Ann\tKeeper"],
    ),
    "plan.pptx": (_pptx, ["Lighthouse plan", "Mention the lamp"]),
    "survey.pdf": (_pdf, ["Survey of the breakwater"]),
    "order.html": (lambda: OUTLOOK_TABLE.encode(), ["Rope 2 12.50"]),
    "latin1.txt": (lambda: "Caf\u00e9 cr\u00e8me\n".encode("latin-1"), ["Café crème"]),
    "utf16.txt": (lambda: "W\u00f6rld \u20ac\n".encode("utf-16"), ["Wörld €"]),
    "rows.csv": (lambda: b'a,"one\ntwo"\n', ['a,"one', 'two"']),
}


@pytest.mark.django_db(transaction=True)
def test_uploaded_documents_are_read_by_process_queue_once(user_client) -> None:
    ids = {}
    for name, (make, _) in READABLE.items():
        response = user_client.post(
            "/api/documents/", {"file": SimpleUploadedFile(name, make())}
        )
        assert response.status_code == 202, (name, response.content)
        ids[name] = response.json()["id"]
    call_command("process_queue", "--once", verbosity=0, stdout=io.StringIO())
    for name, (_, expected) in READABLE.items():
        document = Document.objects.get(pk=ids[name])
        assert document.status == "completed", (name, document.error_message)
        lines = document.text.splitlines()
        assert all(line in lines for line in expected), (name, lines)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("old.doc", ole_bytes("WordDocument"), "save it as a Word Document (DOCX)"),
        ("old.xls", ole_bytes("Workbook"), "save it as an Excel Workbook (XLSX)"),
        ("old.ppt", ole_bytes("PowerPoint Document"), "PowerPoint Presentation"),
        ("report.txt", _pdf(), "is named like a Plain text file but is a PDF"),
        ("empty.docx", b"", "is empty"),
    ],
)
def test_uploads_refused_with_the_reason(user_client, name, content, says) -> None:
    response = user_client.post(
        "/api/documents/", {"file": SimpleUploadedFile(name, content)}
    )
    assert 400 <= response.status_code < 500
    assert says in response.content.decode()
    assert not Document.objects.exists()


def _scan(words: str) -> Image.Image:
    font = ImageFont.load_default(size=48)
    image = Image.new("L", (1200, 300), 255)
    ImageDraw.Draw(image).text((40, 120), words, fill=0, font=font)
    return image


@pytest.mark.skipif(bool(unavailable_reason("eng")), reason="OCR is not installed")
def test_a_multipage_tiff_and_a_half_scanned_pdf_are_read_in_order(
    tmp_path: Path,
) -> None:
    pages = [_scan("Tiff page one alpha"), _scan("Tiff page two beta")]
    saved = io.BytesIO()
    pages[0].save(saved, "TIFF", save_all=True, append_images=pages[1:])
    tiff = extract(write(tmp_path, "fax.tiff", saved.getvalue()), ocr_mode="auto")
    assert tiff.page_count == 2
    assert tiff.text.split("\n\n") == ["Tiff page one alpha", "Tiff page two beta"]
    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 10, "Typed page one")
    scan = io.BytesIO()
    _scan("Scanned page two").save(scan, "PNG")
    pdf.add_page()
    pdf.image(scan, x=0, y=0, w=210)
    mixed = extract(write(tmp_path, "mixed.pdf", bytes(pdf.output())))
    assert mixed.text.split("\n\n") == ["Typed page one", "Scanned page two"]
