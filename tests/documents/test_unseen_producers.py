"""Documents from producers the rest of the suite does not use: an Outlook
winmail.dat saved from a message and uploaded on its own, and one a mail gateway
passed on under another name and type; a PDF Chrome printed from a page with
letter-spacing; LibreOffice's RTF of a phonetic guide; a file uuencoded into an
e-mail's body by Unix mail."""

from __future__ import annotations

import binascii
import shutil
import subprocess
from email.message import EmailMessage
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from fpdf import FPDF

from documents.extractors import CorruptFileError, detect_format, extract
from documents.extractors.formats import WINMAIL, accept_attribute, by_extension
from documents.models import Document
from tests.files import docx_bytes, pdf_bytes, rtf_bytes, tnef_bytes

UPLOAD_URL = "/documents/upload/"


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_a_winmail_dat_on_its_own_is_read_as_one_attached_to_an_e_mail(
    tmp_path: Path,
) -> None:
    # Was "read by sniffing": the PDF's bytes inside made it pass for a PDF, and
    # only that PDF's text was read; the body and the Word file were lost.
    winmail = tnef_bytes(
        ("invoice.pdf", pdf_bytes("Invoice 4711 due Friday")),
        ("minutes.docx", docx_bytes("Roof repair agreed")),
        rtf=rtf_bytes("Hi Bob, the papers are attached."),
    )
    path = write(tmp_path, "winmail.dat", winmail)
    assert detect_format(path) is WINMAIL
    result = extract(path)
    assert result.text.splitlines() == [
        "Hi Bob, the papers are attached.",
        "",
        "Attachment: invoice.pdf",
        "Invoice 4711 due Friday (page 1)",
        "",
        "Attachment: minutes.docx",
        "Roof repair agreed",
        "",
        "Attachments: invoice.pdf, minutes.docx",
    ]
    assert (result.note, result.confidence) == ("", 1.0)


def test_a_winmail_dat_of_a_body_alone_is_read(tmp_path: Path) -> None:
    # Was refused as unsupported: nothing in it looked like a known format.
    path = write(tmp_path, "winmail.dat", tnef_bytes(body="Meter reading 4711"))
    assert extract(path).text == "Meter reading 4711"


def test_a_damaged_winmail_dat_on_its_own_is_corrupt(tmp_path: Path) -> None:
    whole = tnef_bytes(body="Meter reading 4711")
    # An attribute claiming far more MAPI properties than its bytes hold.
    damaged = whole[:6] + b"\x01\x03\x90\x06\x00\x08\x00\x00\x00" + b"\xff" * 8
    with pytest.raises(CorruptFileError, match="TNEF"):
        extract(write(tmp_path, "winmail.dat", damaged + b"\x00\x00"))


def test_a_winmail_dat_of_a_damaged_body_still_gives_its_files(tmp_path: Path) -> None:
    winmail = tnef_bytes(("notes.txt", b"Meter reading 4711"), rtf=rtf_bytes("Hi Bob"))
    # The compressed RTF's magic number ("LZFu") spoilt: the body cannot be read.
    damaged = winmail.replace(b"LZFu", b"ABCD", 1)
    result = extract(write(tmp_path, "winmail.dat", damaged))
    assert result.text.splitlines() == [
        "Attachment: notes.txt",
        "Meter reading 4711",
        "",
        "Attachments: notes.txt",
    ]
    assert (
        result.note == "Its message body is damaged and was not read; its files were."
    )


def test_a_winmail_dat_uploads_through_the_form(user_client, media_root) -> None:
    # Offered by the file dialog (by its ".dat", which promises nothing).
    assert ".dat" in accept_attribute().split(",") and by_extension("x.dat") is None
    content = tnef_bytes(body="Meter reading 4711")
    response = user_client.post(
        UPLOAD_URL, {"file": SimpleUploadedFile("winmail.dat", content)}
    )
    assert response.status_code == 302
    document = Document.objects.get()
    assert (document.original_filename, document.mime_type) == (
        "winmail.dat",
        "application/vnd.ms-tnef",
    )


def test_a_winmail_dat_passed_on_under_another_name_is_taken_apart(
    tmp_path: Path,
) -> None:
    # A gateway renamed it "ATT00001.dat" and sent it as application/octet-stream:
    # it was read as an attached PDF (its invoice alone), and the body was lost.
    winmail = tnef_bytes(
        ("invoice.pdf", pdf_bytes("Invoice 4711 due Friday")),
        rtf=rtf_bytes("Hi Bob, the papers are attached."),
    )
    msg = EmailMessage()  # written in rich text: its body is in the winmail.dat
    msg["From"] = "Alice <alice@example.com>"
    msg["Subject"] = "Site visit"
    msg.add_attachment(
        winmail, maintype="application", subtype="octet-stream", filename="ATT00001.dat"
    )
    result = extract(write(tmp_path, "mail.eml", bytes(msg)))
    assert result.text.splitlines() == [
        "From: Alice <alice@example.com>",
        "Subject: Site visit",
        "",
        "Hi Bob, the papers are attached.",
        "",
        "Attachment: invoice.pdf",
        "Invoice 4711 due Friday (page 1)",
        "",
        "Attachments: invoice.pdf",
    ]


# --- Letters spaced apart (tracking) ----------------------------------------------


def placed_letters(
    words: list[str] | list[list[str]], tracking: float, size: int = 14
) -> bytes:
    """A page whose first line is drawn a letter at a time (or a piece at a time,
    for a word given as its pieces), ``tracking`` ems apart and without space
    characters; then a line of ordinary text."""
    pdf = FPDF()
    pdf.set_font("helvetica", size=size)
    pdf.add_page()
    extra = tracking * size * 25.4 / 72  # ems in millimetres
    x = 20.0
    for word in words:
        for piece in word:
            pdf.text(x, 30, piece)
            x += pdf.get_string_width(piece) + extra
        x += pdf.get_string_width(" ") + extra
    pdf.text(20, 50, "Body text follows here.")
    return bytes(pdf.output())


def test_single_letters_a_space_apart_stay_apart(tmp_path: Path) -> None:
    # Letters drawn one at a time a normal space apart are words of one letter.
    path = write(tmp_path, "letters.pdf", placed_letters(["x", "y", "z", "w"], 0))
    assert extract(path).text.splitlines()[0] == "x y z w"


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium is missing")
def test_chromium_s_letter_spacing_is_read_as_words(tmp_path: Path) -> None:
    page = write(
        tmp_path,
        "page.html",
        b'<p style="letter-spacing:0.3em">Spaced heading words here</p>'
        b"<p>Plain paragraph after it.</p>",
    )
    subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
         "--no-pdf-header-footer", f"--print-to-pdf={tmp_path / 'page.pdf'}",
         page.as_uri()],
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        timeout=120,
        check=True,
    )  # fmt: skip
    assert extract(tmp_path / "page.pdf").text.splitlines() == [
        "Spaced heading words here",
        "Plain paragraph after it.",
    ]


# --- RTF: Word's phonetic guide (furigana) ------------------------------------------

# As LibreOffice writes it: an EQ field whose result is empty, its base text (漢字)
# and reading (かんじ) in its code.
RUBY_FIELD = (
    r"{\field{\*\fldinst { EQ \\* jc3 \\* hps12 \\o\\al(\\s\\up 11("
    r"\u12363\'3f\u12435\'3f\u12376\'3f),\u28450\'3f\u23383\'3f)}}{\fldrslt {}}}"
)


def rtf_document(*paragraphs: str) -> bytes:
    body = "".join(rf"{{{paragraph}}}\par " for paragraph in paragraphs)
    return rf"{{\rtf1\ansi\deff0{{\fonttbl{{\f0 Arial;}}}}{body}}}".encode()


def test_the_base_text_of_a_phonetic_guide_is_read(tmp_path: Path) -> None:
    # Was "The word  means Chinese characters.": the field's code, where the text
    # is, was skipped, and its result is empty.
    rtf = rtf_document(f"The word {RUBY_FIELD} means Chinese characters.")
    result = extract(write(tmp_path, "ruby.rtf", rtf))
    assert result.text == "The word 漢字 means Chinese characters."


def test_a_field_s_result_is_read_once_and_its_code_never(tmp_path: Path) -> None:
    # As Word writes a phonetic guide: its result holds the base text too.
    with_result = RUBY_FIELD.replace(
        r"{\fldrslt {}}", r"{\fldrslt {\u28450\'3f\u23383\'3f}}"
    )
    link = r'{\field{\*\fldinst HYPERLINK "http://example.com/" }{\fldrslt {the site}}}'
    rtf = rtf_document(f"Word {with_result} here.", f"Visit {link} today.")
    assert extract(write(tmp_path, "fields.rtf", rtf)).text.splitlines() == [
        "Word 漢字 here.",
        "Visit the site today.",
    ]


@pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice is missing")
def test_libreoffice_s_rtf_keeps_ruby_base_text(tmp_path: Path) -> None:
    source = write(
        tmp_path,
        "ruby.fodt",
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"'
        ' xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2"'
        ' office:mimetype="application/vnd.oasis.opendocument.text"><office:body>'
        "<office:text><text:p>The word <text:ruby><text:ruby-base>漢字</text:ruby-base>"
        "<text:ruby-text>かんじ</text:ruby-text></text:ruby> is read.</text:p>"
        "</office:text></office:body></office:document>".encode(),
    )
    subprocess.run(
        ["soffice", "--headless", "--convert-to", "rtf", "--outdir", str(tmp_path),
         str(source)],
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        timeout=120,
        check=True,
    )  # fmt: skip
    assert extract(tmp_path / "ruby.rtf").text == "The word 漢字 is read."


# --- E-mail: files uuencoded into the body (Unix mail, older mail programs) ---------


def uuencoded(name: str, data: bytes) -> str:
    """``uuencode name < file``, as piped into mail(1)."""
    lines = [
        binascii.b2a_uu(data[i : i + 45]).decode() for i in range(0, len(data), 45)
    ]
    return f"begin 644 {name}\n{''.join(lines)}`\nend\n"


def plain_mail(body: str) -> bytes:
    head = "From: cron@example.com\nTo: ops@example.com\nSubject: Nightly report\n\n"
    return (head + body).encode()


def test_a_file_uuencoded_into_the_body_is_read_as_an_attachment(
    tmp_path: Path,
) -> None:
    # Was its lines of code in the body ("M475A<G1E<FQY..."), the file unread.
    report = b"Backups done: 14 of 14.\nDisk use: 71 percent.\n"
    body = f"The report follows.\n\n{uuencoded('report.txt', report)}\nRegards.\n"
    result = extract(write(tmp_path, "cron.eml", plain_mail(body)))
    assert result.text.splitlines()[4:] == [
        "The report follows.",
        "",
        "Regards.",
        "",
        "Attachment: report.txt",
        "Backups done: 14 of 14.",
        "Disk use: 71 percent.",
        "",
        "Attachments: report.txt",
    ]


def test_prose_that_looks_like_a_uuencoded_file_stays_text(tmp_path: Path) -> None:
    body = "Steps:\nbegin 644 notes.txt\nthen write the notes\nend\n"
    result = extract(write(tmp_path, "prose.eml", plain_mail(body)))
    assert result.text.splitlines()[4:] == [
        "Steps:",
        "begin 644 notes.txt",
        "then write the notes",
        "end",
    ]
