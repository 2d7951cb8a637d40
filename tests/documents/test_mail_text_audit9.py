"""What a reader of a mail is told about the attachments it could not read (scanned
pages of a PDF, old Office files), and text files with a stray NUL at upload.
Found by an audit; each file is made here."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from documents.extractors import detect_format, extract
from documents.models import Document
from tests.files import mail_message, ole_bytes, scan_pdf_bytes, text_image

API = "/api/documents/"


def mail_with(tmp_path: Path, *attachments: tuple[str, str, bytes]) -> Path:
    """An .eml with a text body and (file name, MIME type, content) attachments."""
    path = tmp_path / "mail.eml"
    path.write_bytes(bytes(mail_message(*attachments)))
    return path


@pytest.mark.parametrize(
    ("pages", "says"),
    [
        (["Typed page one", "SCAN", "Typed page three", "SCAN"], "its pages 2, 4 have"),
        (["Typed page one", "SCAN"], "its page 2 has"),
    ],
    ids=["two-scans", "one-scan"],
)
def test_the_scanned_pages_of_an_attached_pdf_are_named_in_the_note(
    tmp_path: Path, pages: list[str], says: str
) -> None:
    # The typed pages were read and the scans dropped without a word: the note
    # spoke of scans only when the whole PDF had no text.
    scan = text_image(["SCANNED WORDS"])
    pdf = scan_pdf_bytes([scan if page == "SCAN" else page for page in pages])
    result = extract(mail_with(tmp_path, ("mixed.pdf", "application/pdf", pdf)))
    assert "Typed page one" in result.text
    assert "SCANNED" not in result.text  # attachments are not OCRed (a mail's timeout)
    assert result.note == (
        f"Attachments read in part: mixed.pdf ({says} no text layer and "
        f"{'were' if 'pages' in says else 'was'} not read; scans are not OCRed here)."
    )


def test_a_typed_pdf_attachment_gets_no_note(tmp_path: Path) -> None:
    pdf = scan_pdf_bytes(["Typed page one", "Typed page two"])
    result = extract(mail_with(tmp_path, ("typed.pdf", "application/pdf", pdf)))
    assert "Typed page two" in result.text
    assert result.note == ""


@pytest.mark.parametrize(
    ("name", "streams", "says"),
    [
        (
            "minutes.doc",
            "WordDocument",
            "minutes.doc (an old Word 97-2003 (DOC) file, which cannot be read; open "
            "it in Word or LibreOffice, save it as a Word Document (DOCX) and upload "
            "that)",
        ),
        ("costs.xls", "Workbook", "save it as an Excel Workbook (XLSX)"),
        ("plan.ppt", "PowerPoint Document", "a PowerPoint Presentation (PPTX)"),
    ],
)
def test_an_old_office_attachment_is_said_to_be_unread_with_advice(
    tmp_path: Path, name: str, streams: str, says: str
) -> None:
    # It was listed under "Attachments:" as if it had been read.
    path = mail_with(tmp_path, (name, "application/octet-stream", ole_bytes(streams)))
    result = extract(path)
    assert result.text.endswith(f"Attachments: {name}")
    assert result.note.startswith(f"Attachments not read: {name} (an old ")
    assert says in result.note


def test_a_picture_attachment_still_gets_no_note(tmp_path: Path) -> None:
    psd = b"8BPS\x00\x01" + bytes(64)  # a picture we refuse: pictures are not read
    result = extract(
        mail_with(tmp_path, ("layers.psd", "image/vnd.adobe.photoshop", psd))
    )
    assert result.note == ""


# Text a tool exported with one stray NUL: refused at upload as not readable.
STRAY_NUL = {
    "notes.txt": (b"hello\x00world\n", "helloworld"),
    "export.csv": ("caf\u00e9;1\x00\n2;3\n".encode("latin-1"), "café;1\n2;3"),
    "readme.md": ("# Na\u00efve\x00 notes\n".encode(), "# Naïve notes"),
}


@pytest.mark.django_db(transaction=True)
def test_text_named_as_text_with_a_stray_nul_is_uploaded_and_read(
    user_client, media_root
) -> None:
    ids = {}
    for name, (content, _) in STRAY_NUL.items():
        response = user_client.post(API, {"file": SimpleUploadedFile(name, content)})
        assert response.status_code == 202, (name, response.content)
        ids[name] = response.json()["id"]
    call_command("process_queue", "--once", verbosity=0, stdout=io.StringIO())
    for name, (_, text) in STRAY_NUL.items():
        document = Document.objects.get(pk=ids[name])
        assert document.status == "completed", (name, document.error_message)
        assert document.text.strip() == text  # the NUL dropped, as in long text


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("notes.bin", b"hello\x00world\n"),  # no name promising text: bytes decide
        ("nul.txt", b"\x00"),
        ("random.txt", random.Random(9).randbytes(400)),
        ("strings.txt", b"\x00".join([b"The committee met on Tuesday"] * 50)),
        ("tool.txt", b"MZ\x90\x00\x03\x00\x00\x00This program cannot be run in DOS"),
        ("program.txt", b"\x7fELF\x02\x01\x01" + bytes(57) + b"\x01\x00" * 500),
        ("record.txt", b"Name: Ann\x00\x01\x02Age\x00\x1e"),
    ],
)
def test_binary_with_nuls_is_still_refused_whatever_its_name(
    user_client, media_root, name: str, content: bytes
) -> None:
    response = user_client.post(API, {"file": SimpleUploadedFile(name, content)})
    assert response.status_code == 400, response.content
    assert "not a file we can read" in response.content.decode()
    assert not Document.objects.exists()


def test_detection_by_bytes_alone_is_unchanged(tmp_path: Path) -> None:
    # A short sentence with a NUL is binary to the bytes alone (as pinned by
    # test_detect_edges); only a name promising text lets the upload read it.
    path = tmp_path / "upload.bin"
    path.write_bytes(b"hello\x00world\n")
    assert detect_format(path) is None


def test_the_advice_for_several_old_files_of_a_kind_is_given_once(
    tmp_path: Path,
) -> None:
    doc = ole_bytes("WordDocument")
    path = mail_with(
        tmp_path,
        ("a.doc", "application/msword", doc),
        ("b.doc", "application/msword", doc),
    )
    note = extract(path).note
    assert note.startswith("Attachments not read: a.doc, b.doc (an old Word")
    assert note.count("save it as") == 1
