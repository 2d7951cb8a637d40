"""More documents from producers the rest of the suite does not use: an ODT whose
page-number fields hold "0", as LibreOffice leaves them after a headless
conversion; a text file from DOS (CP437, with boxes and accented letters); a PDF
whose header and footer were drawn after a body of one line (Chrome's, printed
with headers and footers)."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest
from fpdf import FPDF
from odfdo import Document as OdfDocument
from odfdo import Element, Paragraph

from documents.extractors import extract


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def odt_with_page_fields(value: str = "0") -> bytes:
    """An ODT as LibreOffice saves it after a headless conversion: its page-number
    and page-count fields hold "0" (or `value`)."""
    document = OdfDocument("text")
    document.body.append(Paragraph("Roof repair agreed on Friday."))
    document.body.append(
        Element.from_tag(
            f"<text:p>This is page <text:page-number>{value}</text:page-number> of "
            f"<text:page-count>{value}</text:page-count>, see page "
            '<text:page-ref text:ref-name="r">2</text:page-ref>.</text:p>'
        )
    )
    master = document.styles.get_element("//style:master-page")
    master.append(
        Element.from_tag(
            '<style:footer><text:p>Page <text:page-number text:select-page="current">'
            f"{value}</text:page-number> of <text:page-count>{value}</text:page-count> "
            "Acme Roofing</text:p></style:footer>"
        )
    )
    saved = io.BytesIO()
    document.save(saved)
    return saved.getvalue()


def test_an_odt_s_page_number_fields_without_a_page_s_value_are_left_out(
    tmp_path: Path,
) -> None:
    # Were read as the value they held: "Page 0 of 0", and "page 0 of 0" in the
    # body. A page reference (to a bookmark's page) is text the writer put there.
    text = extract(write(tmp_path, "minutes.odt", odt_with_page_fields())).text
    assert "Roof repair agreed on Friday." in text
    assert "This is page of , see page 2." in text
    assert "Page of Acme Roofing" in text
    assert "0" not in text


def test_an_odt_s_page_numbers_with_a_value_are_read(tmp_path: Path) -> None:
    # Guard: a page's number (a value the layout gave), as a DOCX's field result.
    data = odt_with_page_fields("3")
    text = extract(write(tmp_path, "minutes.odt", data)).text
    assert "This is page 3 of 3, see page 2." in text
    assert "Page 3 of 3 Acme Roofing" in text


DOS_SCREEN = """\
╔══════════════════════════════╗
║  MENU PRINCIPAL - Société    ║
╠══════════════════════════════╣
║ 1. Entrée des données        ║
║ 2. Résumé du café            ║
╚══════════════════════════════╝
┌─────────┬──────────┐
│ Müller  │ Größe: 5 │
└─────────┴──────────┘
Señor García ▒▒▒▒ ████
"""


def test_a_dos_text_with_boxes_is_read_as_cp437(tmp_path: Path) -> None:
    # Was guessed as cp1252: "ÉÍÍÍ»", "Soci‚t‚", "M\x81ller".
    path = write(tmp_path, "menu.txt", DOS_SCREEN.encode("cp437"))
    assert extract(path).text == DOS_SCREEN


def test_a_dos_text_with_accented_letters_alone_is_read_as_cp437(
    tmp_path: Path,
) -> None:
    # Was guessed as cp1252: "caf‚", "GenŠve", "se¤or".
    text = "Le café de la Société était fermé. Müller aß Brötchen à Genève; señor.\n"
    path = write(tmp_path, "note.txt", text.encode("cp437"))
    assert extract(path).text == text


def test_western_texts_are_not_taken_for_dos(tmp_path: Path) -> None:
    # Guard: the code pages' own texts, accented letters, symbols and all.
    samples = {
        "cp1252": "Café “Zur Größe” — 20 € für Müller, naïve façade, señor.\n",
        "latin-1": "Société générale: élève à l'école, Zürich über alles.\n",
        "mac-roman": "Zürich für Bürger übrigens, café à Genève.\n",
        "cp1250": "Łódź, Kraków i Gdańsk: żółć, źdźbło, ćma.\n",
    }
    for encoding, text in samples.items():
        path = write(tmp_path, f"{encoding}.txt", text.encode(encoding))
        assert extract(path).text == text, encoding


def pdf_with_margins_drawn_last(body: list[str]) -> bytes:
    """A page whose header and footer are drawn after its body, as Chrome prints
    them: the body's lines, then the date and title at the top, then the address
    and "1/1" at the foot."""
    pdf = FPDF(format="A4")
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    for n, line in enumerate(body):
        pdf.text(20, 60 + 8 * n, line)
    pdf.set_font("Helvetica", size=8)
    pdf.text(10, 8, "11/28/26, 10:16 AM Roof Repair Minutes")
    pdf.text(10, 290, "https://example.org/minutes 1/1")
    return bytes(pdf.output())


def test_a_header_and_footer_drawn_last_go_to_the_top_and_foot(
    tmp_path: Path,
) -> None:
    # Were read after the body when it was one line (a short last page): the
    # header and footer, one run down the page, made one band with it.
    path = write(
        tmp_path,
        "short.pdf",
        pdf_with_margins_drawn_last(["Second page: the budget is nine hundred."]),
    )
    assert extract(path).text.splitlines() == [
        "11/28/26, 10:16 AM Roof Repair Minutes",
        "Second page: the budget is nine hundred.",
        "https://example.org/minutes 1/1",
    ]


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium is missing")
def test_chromium_s_printed_header_and_footer_frame_each_page(tmp_path: Path) -> None:
    page = tmp_path / "minutes.html"
    page.write_text(
        "<!doctype html><html><head><meta charset='utf-8'>"
        "<title>Roof Repair Minutes</title></head><body>"
        "<h1>Roof repair minutes</h1><p>The committee agreed on Friday.</p>"
        "<p style='page-break-before: always'>The budget is nine hundred.</p>"
        "</body></html>",
        encoding="utf-8",
    )
    pdf = tmp_path / "minutes.pdf"
    subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
         f"--print-to-pdf={pdf}", page.as_uri()],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    lines = [line for line in extract(pdf).text.splitlines() if line.strip()]
    assert len(lines) == 7, lines
    headers, footers = lines[0::4][:2], [lines[3], lines[6]]
    assert all(line.endswith("Roof Repair Minutes") for line in headers), lines
    assert footers[0].endswith("minutes.html 1/2"), lines
    assert footers[1].endswith("minutes.html 2/2"), lines
    assert lines[5] == "The budget is nine hundred.", lines
