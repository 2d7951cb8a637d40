"""The format registry: each format declared once, everything else derived from it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from documents.extractors import (
    EncryptedFileError,
    UnsupportedFileError,
    detect_format,
    extract,
)
from documents.extractors.formats import (
    FORMATS,
    READABLE,
    accept_attribute,
    accepted_labels,
    by_extension,
    extractor_modules,
    label_for,
    named_format,
)
from documents.models import Document
from tests.files import ole_bytes

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
    for module in extractor_modules():
        __import__(module)  # every declared extractor module exists


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


def test_detection_reads_a_file_object_without_closing_it() -> None:
    fh = io.BytesIO(ole_bytes("WordDocument"))
    assert detect_format(fh).key == "doc"
    assert not fh.closed and fh.tell() == 0
