"""Text files by their names: a mail's text attachment with a stray NUL, and the
extensions of text people keep (logs, TSV, configuration, JSON, XML, reStructuredText)
read alike as uploads and as attachments. Found by an audit; each file is made here."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from documents.extractors import extract
from documents.extractors.formats import TEXT, accept_attribute, by_extension
from documents.models import Document
from tests.files import mail_message

API = "/api/documents/"


def mail_with(tmp_path: Path, *attachments: tuple[str, str, bytes]) -> Path:
    path = tmp_path / "mail.eml"
    path.write_bytes(bytes(mail_message(*attachments)))
    return path


@pytest.mark.parametrize("mime", ["text/plain", "application/octet-stream"])
def test_a_text_attachment_with_a_stray_nul_is_read(tmp_path: Path, mime: str) -> None:
    # It was skipped without a word, where an upload of the same file is read.
    result = extract(
        mail_with(tmp_path, ("export.txt", mime, b"Invoice 4471\x00 paid\n"))
    )
    assert "\nAttachment: export.txt\nInvoice 4471 paid\n" in result.text
    assert result.note == ""


TEXT_FILES = {
    "server.log": b"2026-11-28 06:00:01 ERROR disk full on /var\n",
    "prices.tsv": b"item\tprice\nrope\t12.50\n",
    "settings.ini": b"[mail]\nhost = smtp.example.com\n",
    "deploy.yaml": b"service: harbour-api\nreplicas: 3\n",
    "deploy.yml": b"service: harbour-api\nreplicas: 3\n",
    "order.json": b'{"customer": "Ann Keeper", "total": 12.5}\n',
    "invoice.xml": b'<?xml version="1.0"?>\n<Invoice><Buyer>Ann Keeper</Buyer></Invoice>\n',
    "README.rst": b"Harbour\n=======\n\nThe pier opens at six.\n",
}


@pytest.mark.parametrize("name", sorted(TEXT_FILES))
def test_text_extensions_are_text_formats(name: str) -> None:
    # A .log was no format: not offered by the upload form's picker, not imported
    # from a folder, and a mail's .log sent as application/octet-stream not read.
    assert by_extension(name) is TEXT
    assert f".{name.rpartition('.')[2]}" in accept_attribute().split(",")


@pytest.mark.parametrize("name", sorted(TEXT_FILES))
def test_text_attachments_sent_as_binary_are_read_by_their_names(
    tmp_path: Path, name: str
) -> None:
    # Mail programs send a .log, .json or .yaml as application/octet-stream: skipped.
    content = TEXT_FILES[name]
    result = extract(mail_with(tmp_path, (name, "application/octet-stream", content)))
    assert f"Attachment: {name}" in result.text.splitlines()
    assert content.decode().strip().splitlines()[-1] in result.text


@pytest.mark.django_db(transaction=True)
def test_a_log_with_a_stray_nul_is_uploaded_and_read(user_client, media_root) -> None:
    # A log written through a crash holds NULs: refused as "not a file we can read".
    content = b"06:00:01 service started\n\x00\x00\x0006:00:05 service stopped\n"
    response = user_client.post(API, {"file": SimpleUploadedFile("app.log", content)})
    assert response.status_code == 202, response.content
    call_command("process_queue", "--once", verbosity=0, stdout=io.StringIO())
    document = Document.objects.get(pk=response.json()["id"])
    assert document.status == "completed", document.error_message
    assert document.text.splitlines() == [
        "06:00:01 service started",
        "06:00:05 service stopped",
    ]
