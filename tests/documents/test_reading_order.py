"""Reading order as people read, whatever order the producer wrote: a PDF page whose
right column is drawn before its left one; an Apple Mail .emlx file, whose message
sits between a length line and Mail's property list."""

from __future__ import annotations

from email.message import EmailMessage
from pathlib import Path

import pypdfium2 as pdfium
from django.core.files.uploadedfile import SimpleUploadedFile
from fpdf import FPDF

from documents.extractors import detect_format, extract
from documents.extractors.formats import EMLX
from documents.models import Document

UPLOAD_URL = "/documents/upload/"
LEFT = "Left column first sentence about apples. " * 8
RIGHT = "Right column sentence about oranges. " * 8


def two_columns(path: Path, order: str) -> Path:
    """A page of two columns of prose, drawn in ``order`` ("RL": the right first)."""
    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    pdf.add_page()
    pdf.set_xy(15, 10)
    pdf.cell(0, 6, "Harbour news from the market")
    for side in order:
        x, text = (15, LEFT) if side == "L" else (110, RIGHT)
        pdf.set_xy(x, 20)
        pdf.multi_cell(85, 6, text)
    pdf.output(str(path))
    return path


def pdfium_text(path: Path) -> str:
    doc = pdfium.PdfDocument(str(path))
    try:
        textpage = doc[0].get_textpage()
        return textpage.get_text_bounded().replace("\r\n", "\n")
    finally:
        doc.close()


def words(text: str) -> list[str]:
    return text.split()


def test_a_right_column_drawn_first_is_read_after_the_left_one(
    tmp_path: Path,
) -> None:
    # Was read as drawn: the right column, then the left one.
    path = two_columns(tmp_path / "right-first.pdf", "RL")
    text = extract(path).text
    assert words(text) == words("Harbour news from the market " + LEFT + RIGHT)


def test_columns_drawn_left_first_read_as_before(tmp_path: Path) -> None:
    path = two_columns(tmp_path / "left-first.pdf", "LR")
    text = extract(path).text
    assert words(text) == words(pdfium_text(path))
    assert words(text)[:6] == ["Harbour", "news", "from", "the", "market", "Left"]


def test_a_drawing_s_labels_keep_the_order_they_were_drawn_in(
    tmp_path: Path,
) -> None:
    # A figure's labels, drawn right to left, under a paragraph: no columns, read
    # row by row (as before).
    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    pdf.add_page()
    pdf.set_xy(15, 20)
    pdf.multi_cell(180, 6, "The curve below rises slowly over the whole year. " * 4)
    for x, label in ((150, "y"), (120, "b"), (60, "x"), (30, "a")):
        for k in range(3):
            pdf.text(x, 80 + 10 * k, label)
    path = tmp_path / "figure.pdf"
    pdf.output(str(path))
    assert extract(path).text.splitlines()[-3:] == ["a x b y"] * 3


def emlx_bytes(message: bytes, *, length: int | None = None) -> bytes:
    """Apple Mail's .emlx: the length line (padded, as Mail writes it), the
    message, then Mail's property list."""
    plist = (
        b'<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" '
        b'"http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n'
        b'<plist version="1.0">\n<dict>\n\t<key>date-received</key>\n'
        b"\t<integer>1577872800</integer>\n\t<key>flags</key>\n"
        b"\t<integer>8590195713</integer>\n</dict>\n</plist>\n"
    )
    count = len(message) if length is None else length
    return f"{count:<10}\n".encode() + message + plist


def message_bytes() -> bytes:
    message = EmailMessage()
    message["From"] = "Alice Example <alice@example.org>"
    message["To"] = "bob@example.org"
    message["Subject"] = "Harbour dues"
    message["Date"] = "Wed, 01 Jan 2020 10:00:00 +0000"
    message["Message-ID"] = "<dues-1@example.org>"
    message.set_content("Hello Bob,\nthe dues are paid.\n")
    message.add_attachment(
        b"Meter reading 4711\n",
        maintype="application",
        subtype="octet-stream",
        filename="notes.txt",
    )
    return message.as_bytes()


EXPECTED = [
    "From: Alice Example <alice@example.org>",
    "To: bob@example.org",
    "Subject: Harbour dues",
    "Date: Wed, 01 Jan 2020 10:00:00 +0000",
    "",
    "Hello Bob,",
    "the dues are paid.",
    "",
    "Attachment: notes.txt",
    "Meter reading 4711",
    "",
    "Attachments: notes.txt",
]


def test_an_emlx_file_is_read_as_the_e_mail_it_holds(tmp_path: Path) -> None:
    # Was plain text: the length line, the raw message (its attachment in
    # base64) and the property list.
    path = tmp_path / "12345.emlx"
    path.write_bytes(emlx_bytes(message_bytes()))
    assert detect_format(path) is EMLX
    result = extract(path)
    assert result.text.splitlines() == EXPECTED
    assert (result.note, result.confidence) == ("", 1.0)


def test_an_emlx_file_cut_short_or_without_its_length_is_still_read(
    tmp_path: Path,
) -> None:
    message = message_bytes()
    path = tmp_path / "12345.partial.emlx"
    # A length past the end: all that follows the length line is the message.
    path.write_bytes(f"{len(message) + 999}\n".encode() + message)
    assert extract(path).text.splitlines() == EXPECTED
    # No length line (an .eml renamed): the file is the message.
    path.write_bytes(message)
    assert extract(path, mime_type=EMLX.mime_type).text.splitlines() == EXPECTED


def test_an_emlx_file_uploads_through_the_form(user_client, media_root) -> None:
    content = emlx_bytes(message_bytes())
    response = user_client.post(
        UPLOAD_URL, {"file": SimpleUploadedFile("12345.emlx", content)}
    )
    assert response.status_code == 302
    document = Document.objects.get()
    assert (document.original_filename, document.mime_type) == (
        "12345.emlx",
        EMLX.mime_type,
    )
