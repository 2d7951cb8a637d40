"""Still more documents from producers the rest of the suite does not use: text
files from DOS in its Western and Central European code pages (CP850, CP852),
and a PDF with a file attached to a comment, as Acrobat's paperclip tool leaves
it (in no EmbeddedFiles tree)."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from documents.extractors import extract
from tests.files import docx_bytes, hand_made_pdf, pdf_with_files


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# Letters where CP850 and CP852 differ from CP437 (and from each other).
DOS_TEXTS = [
    ("Não há informação sobre a situação. Ação, coração, pão, João.\n", "cp850"),
    ("Größe der Übersicht: Müller, François, Ñandú, æøå ÆØÅ, señor, über.\n", "cp850"),
    ("Zażółć gęślą jaźń. Dzień dobry, proszę pana. Łódź, Kraków, Gdańsk.\n", "cp852"),
    ("Příliš žluťoučký kůň úpěl ďábelské ódy. Dobrý den, jak se máte?\n", "cp852"),
    ("Árvíztűrő tükörfúrógép. Jó napot kívánok!\n", "cp852"),
    ("Le garçon a mangé une crème brûlée à la fenêtre. Où est l'hôpital?\n", "cp850"),
    ("Räksmörgås på Åland, hör du, så är det.\n", "cp850"),
    ("Hyvää päivää, tämä on äänestys.\n", "cp437"),
]


@pytest.mark.parametrize(("text", "code_page"), DOS_TEXTS)
def test_dos_western_and_central_european_texts_are_read(
    tmp_path: Path, text: str, code_page: str
) -> None:
    # Were guessed as cp1252: "informa‡Æo", "Za¾¢ˆ† g©˜l¥", "gar‡on", "R„ksm”rg†s",
    # "Hyv„„ p„iv„„".
    path = write(tmp_path, "dos.txt", text.encode(code_page))
    assert extract(path).text == text


def test_a_cp852_screen_with_boxes_is_read(tmp_path: Path) -> None:
    screen = "╔══════════════╗\n║ Łódź: 5 zł   ║\n╚══════════════╝\nZażółć gęślą.\n"
    path = write(tmp_path, "menu.txt", screen.encode("cp852"))
    assert extract(path).text == screen


def test_windows_and_mac_texts_are_still_not_taken_for_dos(tmp_path: Path) -> None:
    # Guard: a text in its own code page, its quotes glued to words and all.
    samples = {
        "cp1252": "Le garçon a mangé une crème brûlée. Paris–Berlin, say“hi”.\n",
        "latin-1": "Não há informação sobre a situação. Ação, coração, pão.\n",
        "mac-roman": "Le garçon a mangé une crème brûlée à la fenêtre, déjà.\n",
        "cp1250": "Příliš žluťoučký kůň úpěl ďábelské ódy. Łódź, Kraków.\n",
        "iso8859-2": "Zażółć gęślą jaźń. Dzień dobry, proszę pana.\n",
    }
    for encoding, text in samples.items():
        path = write(tmp_path, f"{encoding}.txt", text.encode(encoding))
        assert extract(path).text == text, encoding


def pdf_with_a_paperclip_comment(text: str, name: str, content: bytes) -> bytes:
    """A one-page PDF saying ``text``, with ``content`` attached to a comment as
    Acrobat's "Attach File" tool does: a FileAttachment annotation whose file
    specification holds the file, and no EmbeddedFiles name tree."""
    body = b"BT /F1 12 Tf 72 720 Td (%s) Tj ET" % text.encode("latin-1")
    packed = zlib.compress(content)
    return hand_made_pdf(
        {
            1: b"<< /Type /Catalog /Pages 2 0 R >>",
            2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
            b" /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R"
            b" /Annots [6 0 R] >>",
            4: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            5: b"<< /Length %d >>\nstream\n%s\nendstream" % (len(body), body),
            6: b"<< /Type /Annot /Subtype /FileAttachment /Rect [72 600 92 620]"
            b" /Name /PushPin /FS 7 0 R >>",
            7: b"<< /Type /Filespec /F (%s) /UF (%s) /EF << /F 8 0 R >> >>"
            % (name.encode(), name.encode()),
            8: b"<< /Type /EmbeddedFile /Filter /FlateDecode /Length %d >>\n"
            b"stream\n%s\nendstream" % (len(packed), packed),
        }
    )


def test_a_file_attached_to_a_pdf_comment_is_read(tmp_path: Path) -> None:
    # Was left out: only the EmbeddedFiles tree was looked at.
    data = pdf_with_a_paperclip_comment(
        "Board report, see the pin", "minutes.docx", docx_bytes("Budget approved")
    )
    text = extract(write(tmp_path, "report.pdf", data)).text
    assert text.startswith("Board report, see the pin\n")
    assert "Attachment: minutes.docx\nBudget approved" in text
    assert text.endswith("Attachments: minutes.docx")


def test_a_file_both_in_the_tree_and_on_a_comment_is_read_once(
    tmp_path: Path,
) -> None:
    # fpdf2 (like LibreOffice) lists a commented file in the tree too.
    from fpdf import FPDF

    notes = tmp_path / "notes.txt"
    notes.write_text("Minutes kept once\n")
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.cell(text="Body")
    pdf.file_attachment_annotation(str(notes), x=10, y=30, w=10, h=10)
    text = extract(write(tmp_path, "both.pdf", bytes(pdf.output()))).text
    assert text.count("Minutes kept once") == 1
    assert text.endswith("Attachments: notes.txt")


def test_files_in_the_tree_alone_are_read_as_before(tmp_path: Path) -> None:
    data = pdf_with_files("Invoice", ("invoice.xml", b"<Invoice>42</Invoice>"))
    text = extract(write(tmp_path, "invoice.pdf", data)).text
    assert text.count("<Invoice>42</Invoice>") == 1


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_a_page_saved_as_utf16_without_a_byte_order_mark_is_html(
    tmp_path: Path, encoding: str
) -> None:
    # Was read as plain text, tags and all: only a page with the mark was HTML.
    page = (
        "<!DOCTYPE html><html><head><title>Отчёт</title></head><body>"
        "<p>Привет, мир!</p><script>var x = 1;</script></body></html>"
    )
    path = write(tmp_path, "page.html", page.encode(encoding))
    result = extract(path)
    assert result.extractor == "html"
    assert "Привет, мир!" in result.text
    assert "<" not in result.text and "var x" not in result.text


def test_a_saved_page_s_filled_in_boxes_show_their_values(tmp_path: Path) -> None:
    # A page saved from a browser keeps what was typed in its boxes as their value:
    # it was left out ("Name: Country:"). Hidden fields and passwords stay out.
    page = (
        b"<html><body><form><p>Name: <input name=n value='Jane Doe'>"
        b"<input type=hidden name=token value=abc123>"
        b" Password: <input type=password value=hunter2></p>"
        b"<p>From <input type=date value=2026-01-02><input type=email"
        b" value=jane@example.com></p><input type=submit value='Send order'>"
        b"<input type=checkbox value=yes checked> I agree</form></body></html>"
    )
    text = extract(write(tmp_path, "form.html", page)).text
    assert text.splitlines() == [
        "Name: Jane Doe Password:",
        "From 2026-01-02 jane@example.com",
        "Send order I agree",
    ]
