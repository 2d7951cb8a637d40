"""The format registry: each format declared once, everything else derived from it."""

from __future__ import annotations

import copy
import io
import re
import zipfile
from pathlib import Path

import docx
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from documents.extractors import (
    CorruptFileError,
    EncryptedFileError,
    TextBuilder,
    UnsupportedFileError,
    classify,
    detect_format,
    extract,
    get_extractor,
)
from documents.extractors.formats import (
    FORMATS,
    READABLE,
    accept_attribute,
    accepted_labels,
    by_extension,
    by_name,
    label_for,
    named_format,
    with_article,
)
from documents.models import Document
from tests.conftest import worker_log
from tests.files import (
    docx_bytes,
    eml_bytes,
    odt_bytes,
    ole_bytes,
    pdf_bytes,
    pptx_bytes,
    rtf_bytes,
    with_doctype,
    with_member,
    xlsx_bytes,
)

UPLOAD_URL = "/documents/upload/"
API_URL = "/api/documents/"
LEGACY = [
    ("minutes.doc", ("WordDocument", "1Table"), "Word 97-2003", "DOCX"),
    ("budget.xls", ("Workbook",), "Excel 97-2003", "XLSX"),
    ("old-budget.xls", ("Book",), "Excel 97-2003", "XLSX"),
    ("slides.ppt", ("PowerPoint Document",), "PowerPoint 97-2003", "PPTX"),
]


def test_every_format_is_declared_once_with_what_it_needs() -> None:
    keys = [fmt.key for fmt in FORMATS]
    assert len(keys) == len(set(keys))
    extensions = [ext for fmt in FORMATS for ext in fmt.extensions]
    assert len(extensions) == len(set(extensions))
    for fmt in FORMATS:
        assert fmt.readable != bool(fmt.refusal), fmt.key
    for fmt in READABLE:
        assert callable(get_extractor(fmt)), fmt.key  # its module and function exist


def test_the_form_accept_and_help_text_derive_from_the_formats(user_client) -> None:
    body = user_client.get(UPLOAD_URL).content.decode()
    assert f'accept="{accept_attribute()}"' in body
    assert f"Accepted: {accepted_labels()}." in body
    for fmt in READABLE:
        assert fmt.label in accepted_labels()
        assert all(ext in accept_attribute().split(",") for ext in fmt.extensions)
    assert ".doc," not in accept_attribute()


def test_labels_replace_mime_types() -> None:
    docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    assert label_for(docx) == "Word (DOCX)"
    assert label_for("text/plain; charset=utf-8") == "Plain text"
    assert label_for("application/x-something") == "Other"


@pytest.mark.parametrize(
    ("noun", "expected"),
    [
        ("OpenDocument text (.odt)", "an OpenDocument text (.odt)"),
        ("Excel (XLSX)", "an Excel (XLSX)"),
        ("E-mail (EML)", "an E-mail (EML)"),
        ("HTML", "an HTML"),
        ("RTF", "an RTF"),
        ("PDF", "a PDF"),
        ("Word (.docx)", "a Word (.docx)"),
        ("PNG image", "a PNG image"),
        ("URL", "a URL"),
        ("upload", "an upload"),
        ("unit", "a unit"),
    ],
)
def test_a_label_takes_a_or_an_as_it_is_said(noun: str, expected: str) -> None:
    assert with_article(noun) == expected


def test_messages_naming_a_format_take_the_right_article(
    user_client, media_root, tmp_path: Path
) -> None:
    odt = odt_bytes("cut short")
    path = tmp_path / "half.odt"
    path.write_bytes(odt[: len(odt) // 2])
    with pytest.raises(CorruptFileError, match=r"\(an OpenDocument text \(\.odt\)"):
        extract(path)
    path = tmp_path / "other.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hello")
    xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    with pytest.raises(UnsupportedFileError, match=r"not an Excel \(\.xlsx\) file"):
        extract(path, mime_type=xlsx)
    response = user_client.post(
        UPLOAD_URL, {"file": SimpleUploadedFile("budget.xlsx", odt)}
    )
    assert "named like an Excel (XLSX) file" in response.content.decode()


@pytest.mark.parametrize(
    ("name", "expected"),
    [("notes.md", "markdown"), ("table.csv", "csv"), ("a.txt", "text"), ("a", "text")],
)
def test_the_name_chooses_among_text_formats(name: str, expected: str) -> None:
    text = by_extension("x.txt")
    assert named_format(text, name).key == expected


def test_a_name_promising_another_kind_of_file_is_a_mismatch() -> None:
    pdf = by_extension("x.pdf")
    assert named_format(pdf, "report.docx") is None
    assert named_format(by_extension("x.txt"), "report.pdf") is None
    assert named_format(by_extension("x.png"), "scan.pdf") is None


# A Windows icon's header, then its one entry: 16 × 16 pixels, at offset 22.
ICON = b"\0\0\1\0\1\0\x10\x10\0\0\1\0\x20\0\0\0\0\0\x16\0\0\0"


@pytest.mark.parametrize(
    ("name", "head", "said"),
    [
        ("design.psd", b"8BPS\x00\x01" + bytes(20), "a Photoshop (PSD) image"),
        ("favicon.ico", ICON, "a Windows icon (ICO)"),
    ],
)
def test_pictures_ocr_cannot_read_are_refused_saying_what_they_are(
    tmp_path: Path, name: str, head: bytes, said: str
) -> None:
    # They were refused with the list of every format read, not what they are.
    path = tmp_path / name
    path.write_bytes(head + bytes(200))
    with pytest.raises(UnsupportedFileError, match=rf"This is {re.escape(said)}.*JPEG"):
        extract(path)


@pytest.mark.parametrize(
    ("detected", "name"), [("x.webp", "photo.jpg"), ("x.jpg", "scan.png")]
)
def test_a_picture_named_as_another_kind_of_picture_is_read_as_it_is(
    detected: str, name: str
) -> None:
    # A WebP a browser saved under the address's ".jpg" was refused at upload,
    # though both are read by OCR alike.
    picture = by_extension(detected)
    assert named_format(picture, name) == picture


@pytest.mark.parametrize(
    ("name", "content", "mime"),
    [
        ("notes.md", b"# Title\n\nSome *words*.\n", "text/markdown"),
        ("table.csv", b"name,amount\nrent,900\n", "text/csv"),
    ],
)
def test_markdown_and_csv_upload_as_their_type_and_read_as_text(
    user_client, media_root, name, content, mime, tmp_path: Path
) -> None:
    response = user_client.post(UPLOAD_URL, {"file": SimpleUploadedFile(name, content)})
    assert response.status_code == 302
    assert Document.objects.get().mime_type == mime
    api = user_client.post(
        API_URL, {"file": SimpleUploadedFile(name, content), "allow_duplicates": "1"}
    )
    assert api.status_code == 202, api.content
    path = tmp_path / name
    path.write_bytes(content)
    assert extract(path, mime_type=mime).text == content.decode()


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_text_without_a_byte_order_mark_uploads_and_reads_as_text(
    user_client, media_root, tmp_path: Path, encoding: str
) -> None:
    text = "Quarterly notes: café, naïve, 50 €\nSecond line.\n"
    content = text.encode(encoding)  # no BOM: a NUL beside every Latin letter
    response = user_client.post(
        UPLOAD_URL, {"file": SimpleUploadedFile("notes.txt", content)}
    )
    assert response.status_code == 302, response.content.decode()
    assert Document.objects.get().mime_type == "text/plain"
    path = tmp_path / "upload.bin"
    path.write_bytes(content)
    assert detect_format(path).key == "text"
    result = extract(path)
    assert result.text == text
    assert encoding in result.note
    # One stray NUL is not UTF-16, nor is binary full of zeros.
    path.write_bytes(b"text with a \x00 NUL byte in it")
    assert detect_format(path) is None
    path.write_bytes(bytes(4096))
    assert detect_format(path) is None


@pytest.mark.parametrize(("name", "streams", "label", "modern"), LEGACY)
def test_legacy_office_files_are_refused_naming_the_modern_format(
    user_client, media_root, tmp_path, name, streams, label, modern
) -> None:
    content = ole_bytes(*streams)
    response = user_client.post(UPLOAD_URL, {"file": SimpleUploadedFile(name, content)})
    assert response.status_code == 400
    body = response.content.decode()
    assert label in body and modern in body
    api = user_client.post(API_URL, {"file": SimpleUploadedFile(name, content)})
    assert api.status_code == 400
    assert modern in api.content.decode()
    assert not Document.objects.exists()
    # In the worker too (a file that reached the queue another way).
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(UnsupportedFileError, match=f"save it as .*{modern}") as info:
        extract(path)
    assert info.value.error_type == "unsupported"


def test_a_password_protected_office_file_is_named_encrypted(
    user_client, tmp_path: Path
) -> None:
    content = ole_bytes("EncryptionInfo", "EncryptedPackage")
    response = user_client.post(
        UPLOAD_URL, {"file": SimpleUploadedFile("locked.docx", content)}
    )
    assert "protected by a password" in response.content.decode()
    path = tmp_path / "locked.docx"
    path.write_bytes(content)
    with pytest.raises(EncryptedFileError) as info:
        extract(path)
    assert info.value.error_type == "corruption"
    # Stored as a DOCX (before this check existed): the extractor says the same.
    docx_mime = (
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    )
    with pytest.raises(EncryptedFileError, match="protected by a password"):
        extract(path, mime_type=docx_mime)


def test_detection_reads_a_file_object_without_closing_it() -> None:
    fh = io.BytesIO(ole_bytes("WordDocument"))
    assert detect_format(fh).key == "doc"
    assert not fh.closed and fh.tell() == 0


# --- The new formats, from files the tests make -----------------------------------

HTML_PAGE = (
    b"<!DOCTYPE html><html><head><title>Harbour news</title>"
    b"<style>p { color: red }</style><script>var secret = 1;</script></head>"
    b"<body><h1>Tide tables</h1><p>High water at 06:12 &amp; 18:40.</p>"
    b"<table><tr><td>Mon</td><td>06:12</td></tr></table>"
    b"<script>trackVisitor();</script></body></html>"
)
NEW_FORMATS = [
    pytest.param(
        "minutes.odt",
        lambda: odt_bytes("The orchard committee met on Monday."),
        "application/vnd.oasis.opendocument.text",
        ["Minutes", "orchard committee met", "rent\t900"],
        id="odt",
    ),
    pytest.param(
        "budget.xlsx",
        lambda: xlsx_bytes([["item", "amount"], ["rent", 900], ["coffee", 12.5]]),
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        ["Budget", "item\tamount", "rent\t900", "coffee\t12.5"],
        id="xlsx",
    ),
    pytest.param(
        "deck.pptx",
        lambda: pptx_bytes("Harbour plans", "Dredge the channel", "Say it slowly"),
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        ["Harbour plans", "Dredge the channel", "Say it slowly"],
        id="pptx",
    ),
    pytest.param(
        "letter.rtf",
        lambda: rtf_bytes("Dear committee,", "the café opens in spring."),
        "application/rtf",
        ["Dear committee,\nthe café opens in spring."],
        id="rtf",
    ),
    pytest.param(
        "page.html",
        lambda: HTML_PAGE,
        "text/html",
        ["Harbour news", "Tide tables", "High water at 06:12 & 18:40.", "Mon 06:12"],
        id="html",
    ),
    pytest.param(
        "mail.eml",
        lambda: eml_bytes(attachments=("report.pdf", "budget.xlsx")),
        "message/rfc822",
        [
            "From: Alice Example <alice@example.org>",
            "To: bob@example.org",
            "Subject: Quarterly report",
            "Date: Wed, 01 Jan 2020 10:00:00 +0000",
            "Hello Bob,\nthe report is attached.",
            "Attachments: report.pdf, budget.xlsx",
        ],
        id="eml",
    ),
]


@pytest.mark.parametrize(("name", "make", "mime", "expected"), NEW_FORMATS)
def test_each_format_is_detected_by_its_bytes_and_read(
    tmp_path: Path, name, make, mime, expected
) -> None:
    path = tmp_path / "upload.bin"  # the name says nothing
    path.write_bytes(make())
    assert detect_format(path).mime_type == mime
    result = extract(path)
    for snippet in expected:
        assert snippet in result.text
    assert result.confidence == 1.0
    assert (result.note, extract(path, mime_type=mime).text) == ("", result.text)


@pytest.mark.parametrize(("name", "make", "mime", "expected"), NEW_FORMATS)
def test_each_format_uploads_through_the_form_and_the_api(
    user_client, media_root, name, make, mime, expected
) -> None:
    content = make()
    response = user_client.post(UPLOAD_URL, {"file": SimpleUploadedFile(name, content)})
    assert response.status_code == 302
    api = user_client.post(
        API_URL,
        {"file": SimpleUploadedFile(f"copy-{name}", content), "allow_duplicates": "1"},
    )
    assert api.status_code == 202, api.content
    assert list(Document.objects.values_list("mime_type", flat=True)) == [mime, mime]


def test_an_html_body_is_read_when_an_email_has_no_text_part(tmp_path: Path) -> None:
    path = tmp_path / "mail.eml"
    path.write_bytes(eml_bytes(text=None, html=HTML_PAGE.decode(), attachments=()))
    text = extract(path).text
    assert "High water at 06:12 & 18:40." in text
    assert "trackVisitor" not in text and "Attachments" not in text


def test_html_leaves_out_scripts_and_styles_and_honours_its_charset(
    tmp_path: Path,
) -> None:
    path = tmp_path / "page.html"
    path.write_bytes(HTML_PAGE)
    text = extract(path).text
    assert "secret" not in text and "trackVisitor" not in text and "color" not in text
    path.write_bytes(
        b'<html><head><meta charset="windows-1252"></head>'
        b"<body><p>caf\xe9 \x93quoted\x94</p></body></html>"
    )
    assert extract(path).text == "café “quoted”"


README = b'<p align="center">\n  <img src="logo.png">\n</p>\n\n# Harbour\n\nTides.\n'
MEMO = b"From: the desk of the editor\nTo: all staff\n\nPlease read the memo.\n"


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("notes.txt", HTML_PAGE, "text/html"),  # the bytes are surer than a name
        ("page.html", b"Just words, no tags.\n", "text/html"),  # the name picks
        ("budget.docx", "xlsx", None),
        ("minutes.pdf", "odt", None),
        # A guess from the content (a tag, two header-like lines) gives way to a
        # plain-text name; a sure sign does not, whatever the name.
        ("readme_html.md", README, "text/markdown"),
        ("memo.txt", MEMO, "text/plain"),
        ("table.csv", MEMO, "text/csv"),
        ("fragment.html", README, "text/html"),
        ("memo.eml", MEMO, "message/rfc822"),
        ("forwarded.txt", "eml", "message/rfc822"),
        ("letter.md", "rtf", "application/rtf"),
        ("report.txt", "pdf", None),
    ],
)
def test_names_and_bytes_agree_or_the_upload_says_why(
    user_client, media_root, name, content, expected
) -> None:
    content = {
        "xlsx": lambda: xlsx_bytes([["a"]]),
        "odt": odt_bytes,
        "eml": eml_bytes,
        "rtf": lambda: rtf_bytes("Dear committee,"),
        "pdf": pdf_bytes,
    }.get(content, lambda: content)()
    response = user_client.post(UPLOAD_URL, {"file": SimpleUploadedFile(name, content)})
    if expected:
        assert Document.objects.get().mime_type == expected
    else:
        assert response.status_code == 400
        assert "is named like a" in response.content.decode()


@pytest.mark.parametrize(
    "make",
    [
        lambda: odt_bytes("cut short"),
        lambda: xlsx_bytes([["cut short"]]),
        lambda: pptx_bytes("cut", "short"),
    ],
    ids=["odt", "xlsx", "pptx"],
)
def test_a_cut_short_container_is_damaged_not_unsupported(tmp_path: Path, make) -> None:
    content = make()
    path = tmp_path / "half"
    path.write_bytes(content[: len(content) // 2])
    assert detect_format(path) is not None
    with pytest.raises(CorruptFileError, match="not a complete ZIP archive"):
        extract(path)


CONTAINER_PARTS = [
    pytest.param(lambda: odt_bytes("damaged"), "content.xml", id="odt"),
    pytest.param(
        lambda: xlsx_bytes([["damaged", n] for n in range(50)]),
        "xl/worksheets/sheet1.xml",
        id="xlsx",
    ),
    pytest.param(lambda: docx_bytes("damaged"), "word/document.xml", id="docx"),
    pytest.param(
        lambda: pptx_bytes("damaged", "slide"), "ppt/slides/slide1.xml", id="pptx"
    ),
]


@pytest.mark.parametrize(
    "damage",
    [lambda xml: xml[: len(xml) // 2], with_doctype],
    ids=["cut-in-half", "billion-laughs"],
)
@pytest.mark.parametrize(("make", "member"), CONTAINER_PARTS)
def test_damaged_xml_in_any_container_is_corruption_with_a_plain_message(
    tmp_path: Path, make, member, damage
) -> None:
    """Whether the library parses the part on opening or later (odfdo on reading the
    body, openpyxl row by row), the user hears the same thing, and it is final."""
    path = tmp_path / "damaged.bin"
    path.write_bytes(with_member(make(), member, damage))
    with pytest.raises(CorruptFileError) as info:
        extract(path)
    message = str(info.value)
    assert classify(info.value) == "corruption"
    assert message.startswith("The file is damaged: its XML cannot be parsed ("), (
        message
    )
    assert "<string>" not in message and "\n" not in message
    assert str(tmp_path) not in message


def test_a_spreadsheet_zip_bomb_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bomb.xlsx"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/workbook.xml", "<workbook/>")
        archive.writestr("xl/worksheets/sheet1.xml", b" " * (300 * 1024 * 1024))
    with pytest.raises(CorruptFileError, match="zip bomb"):
        extract(path)


def test_a_password_protected_odt_is_named_encrypted(tmp_path: Path) -> None:
    content = odt_bytes("secret")
    path = tmp_path / "locked.odt"
    with (
        zipfile.ZipFile(io.BytesIO(content)) as source,
        zipfile.ZipFile(path, "w") as target,
    ):
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename == "META-INF/manifest.xml":
                data = data.replace(  # what LibreOffice writes for an encrypted part
                    b"/>",
                    b"><manifest:encryption-data manifest:checksum-type='SHA1'/>"
                    b"</manifest:file-entry>",
                    1,
                )
            target.writestr(info, data)
    with pytest.raises(EncryptedFileError, match="password") as info:
        extract(path)
    assert info.value.error_type == "corruption"


@pytest.mark.parametrize(
    ("name", "content"), [("readme_html.md", README), ("memo.txt", MEMO)]
)
def test_a_text_file_named_so_keeps_its_text_as_written(
    user_client, media_root, tmp_path: Path, name: str, content: bytes
) -> None:
    user_client.post(UPLOAD_URL, {"file": SimpleUploadedFile(name, content)})
    path = tmp_path / name
    path.write_bytes(content)
    assert extract(path, mime_type=Document.objects.get().mime_type).text == (
        content.decode()
    )


# --- Through a real worker ----------------------------------------------------------


def many_runs_docx(runs: int) -> bytes:
    """A small DOCX whose one paragraph repeats a run: it compresses ~1000x, so a
    few hundred KB expand to many megabytes of text."""
    document = docx.Document()
    paragraph = document.add_paragraph()
    paragraph.add_run("Expanding text. ")
    run_xml = paragraph.runs[0]._r
    for _ in range(runs - 1):
        paragraph._p.append(copy.deepcopy(run_xml))
    saved = io.BytesIO()
    document.save(saved)
    return saved.getvalue()


def test_extraction_stops_at_the_text_limit_without_reading_on(tmp_path: Path) -> None:
    path = tmp_path / "runs.docx"
    path.write_bytes(many_runs_docx(20_000))  # 320,000 characters of text
    result = extract(path, max_chars=1000)
    assert len(result.text) == 1000
    assert result.text.startswith("Expanding text. Expanding text.")
    assert "cut at 1,000 characters" in result.note
    # Pieces after the limit are never produced (no whole string is built first).
    text = TextBuilder(10)
    consumed = []
    text.extend(consumed.append(piece) or piece for piece in ["12345", "67890", "x"])
    assert (text.text, text.truncated, consumed) == (
        "12345\n6789",
        True,
        ["12345", "67890"],
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_real_worker_reads_new_formats_refuses_legacy_and_cuts_long_text(
    start_worker, make_document, queue
) -> None:
    made = {
        "budget.xlsx": xlsx_bytes([["rent", 900]]),
        "mail.eml": eml_bytes(),
        "minutes.odt": odt_bytes("The orchard committee met."),
        "old.doc": ole_bytes("WordDocument"),
        "runs.docx": many_runs_docx(20_000),
    }
    documents = {}
    for name, content in made.items():
        fmt = detect_format(io.BytesIO(content))
        documents[name] = make_document(content, name, mime_type=fmt.mime_type)
        queue.enqueue(documents[name].pk)
    proc = start_worker("--once", env={"EXTRACTED_TEXT_MAX_CHARS": "5000"})
    assert proc.wait(120) == 0, worker_log(proc)
    for document in documents.values():
        document.refresh_from_db()
    assert "rent\t900" in documents["budget.xlsx"].text
    assert "Subject: Quarterly report" in documents["mail.eml"].text
    assert "orchard committee met" in documents["minutes.odt"].text
    old = documents["old.doc"]
    assert (old.status, old.error_type) == ("failed", "unsupported")
    assert "save it as a Word Document (DOCX)" in old.error_message
    cut = documents["runs.docx"]
    assert (cut.status, len(cut.text)) == ("completed", 5000)
    assert "cut at 5,000 characters" in cut.extraction_note


@pytest.mark.parametrize(("name", "make", "mime", "expected"), NEW_FORMATS)
def test_each_format_stops_at_the_text_limit_with_a_note(
    tmp_path: Path, name, make, mime, expected
) -> None:
    path = tmp_path / name
    path.write_bytes(make())
    full = extract(path).text
    result = extract(path, max_chars=20)
    assert full.startswith(result.text) and 15 <= len(result.text) <= 20
    assert "cut at 20 characters" in result.note


@pytest.mark.parametrize(
    ("name", "mime_type"),
    [
        ("pdf", "application/pdf"),
        (
            ".DOCX",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        ),
        ("jpg", "image/jpeg"),
        # Not a registered type, but what many clients and people write.
        ("image/jpg", "image/jpeg"),
        ("text/plain; charset=utf-8", "text/plain"),
    ],
)
def test_a_type_is_found_by_any_name_people_give_it(name, mime_type):
    assert by_name(name).mime_type == mime_type
