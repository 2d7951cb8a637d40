"""E-mail extraction: the text of attachments that are documents, under their
names, bounded, and a broken one costing its own text only."""

from __future__ import annotations

from email.message import EmailMessage
from pathlib import Path

import pytest

from documents.extractors import attachments, extract
from tests.files import (
    docx_bytes,
    mail_message,
    pdf_bytes,
    scan_pdf_bytes,
    text_image,
    with_member,
    xlsx_bytes,
)

HEAD = [
    "From: Alice <alice@example.com>",
    "To: bob@example.com",
    "Subject: Site visit",
    "",
    "Hi Bob, the papers are attached.",
]


def write(tmp_path: Path, msg: EmailMessage) -> Path:
    path = tmp_path / "mail.eml"
    path.write_bytes(bytes(msg))
    return path


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def test_attached_documents_are_read_under_their_names(tmp_path: Path) -> None:
    # Only their names were read: a search for the invoice's number missed the
    # mail that carried it.
    msg = mail_message(
        ("invoice.pdf", "application/pdf", pdf_bytes("Invoice 4711 due Friday")),
        ("minutes.docx", "application/octet-stream", docx_bytes("Roof repair agreed")),
        ("costs.xlsx", "application/vnd.ms-excel", xlsx_bytes([["roof", 1200]])),
        ("photo.png", "image/png", PNG),  # a picture: named only, never OCRed
    )
    # Text by its declared charset, as the body's parts.
    msg.add_attachment("Zählerstand: 4711\n", subtype="plain", filename="meter.txt")
    msg.add_attachment("site,cost\nroof,1200\n", subtype="csv", filename="site.csv")
    result = extract(write(tmp_path, msg))
    assert result.text.splitlines() == [
        *HEAD,
        "",
        "Attachment: invoice.pdf",
        "Invoice 4711 due Friday (page 1)",
        "",
        "Attachment: minutes.docx",
        "Roof repair agreed",
        "",
        "Attachment: costs.xlsx",
        "Budget",
        "roof\t1200",
        "",
        "Attachment: meter.txt",
        "Zählerstand: 4711",
        "",
        "Attachment: site.csv",
        "site,cost",
        "roof,1200",
        "",
        "Attachments: invoice.pdf, minutes.docx, costs.xlsx, photo.png, meter.txt, "
        "site.csv",
    ]
    assert result.note == ""


def test_a_broken_attachment_costs_its_own_text_and_is_noted(tmp_path: Path) -> None:
    damaged_docx = with_member(
        docx_bytes("gone"), "word/document.xml", lambda xml: xml[: len(xml) // 2]
    )
    msg = mail_message(
        ("cut.docx", "application/octet-stream", damaged_docx),
        ("notes.txt", "text/plain", b"Still read"),
        ("deck.pdf", "application/pdf", pdf_bytes("Slides")[:200]),
    )
    result = extract(write(tmp_path, msg))
    assert result.text.splitlines()[len(HEAD) :] == [
        "",
        "Attachment: notes.txt",
        "Still read",
        "",
        "Attachments: cut.docx, notes.txt, deck.pdf",
    ]
    assert result.note.startswith("Attachments not read: cut.docx (The file is dama")
    assert "; deck.pdf (The file is damaged: " in result.note


def test_a_fault_in_an_extractor_costs_its_attachment_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def faulty(path, **options):
        raise RuntimeError("an extractor's own fault")

    monkeypatch.setattr(attachments.registry, "extract", faulty)
    msg = mail_message(
        ("report.pdf", "application/pdf", pdf_bytes("Report")),
        ("notes.txt", "text/plain", b"Still read"),
    )
    result = extract(write(tmp_path, msg))
    assert "Attachment: notes.txt\nStill read" in result.text
    assert "Attachment: report.pdf" not in result.text
    assert result.note == "Attachments not read: report.pdf (an extractor's own fault)."


def test_attachments_are_read_so_many_and_so_large(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(attachments, "MAX_READ_ATTACHMENTS", 2)
    monkeypatch.setattr(attachments, "MAX_ATTACHMENT_BYTES", 2 * 2**20)
    big = b"x" * (3 * 2**20)
    msg = mail_message(
        ("huge.txt", "text/plain", big),
        ("photo.png", "image/png", PNG),  # not a document: counts for nothing
        *[(f"note{n}.txt", "text/plain", f"Note {n}".encode()) for n in range(1, 5)],
    )
    result = extract(write(tmp_path, msg))
    assert "Note 1" in result.text and "Note 2" in result.text
    assert "Note 3" not in result.text and "xxxx" not in result.text
    assert result.text.endswith(
        "Attachments: huge.txt, photo.png, note1.txt, note2.txt, note3.txt, note4.txt"
    )
    assert result.note == (
        "Attachments not read: huge.txt (over 2 MB). Only the first 2 attachments "
        "that are documents were read; 2 more are named only."
    )


def test_the_text_limit_stops_reading_attachments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past the limit, an attachment is not even opened.
    opened = []
    real_extract = attachments.registry.extract

    def counted(path, **options):
        opened.append(options["mime_type"])
        return real_extract(path, **options)

    monkeypatch.setattr(attachments.registry, "extract", counted)
    msg = mail_message(
        ("a.pdf", "application/pdf", pdf_bytes("A" * 200)),
        ("b.pdf", "application/pdf", pdf_bytes("B" * 200)),
    )
    result = extract(write(tmp_path, msg), max_chars=150)
    assert len(result.text) == 150 and "cut at 150 characters" in result.note
    assert opened == ["application/pdf"]


def test_attachments_of_a_forwarded_message_are_read(tmp_path: Path) -> None:
    inner = mail_message(("quote.pdf", "application/pdf", pdf_bytes("Quote 99 EUR")))
    inner.replace_header("Subject", "Quote")
    outer = mail_message()
    outer.add_attachment(inner, filename="Quote.eml")
    text = extract(write(tmp_path, outer)).text
    assert "Attachment: quote.pdf\nQuote 99 EUR (page 1)\n\nAttachments: quote.pdf" in (
        text
    )
    assert text.endswith("Attachments: Quote.eml")


def test_signatures_and_keys_are_not_read_as_text(tmp_path: Path) -> None:
    # Text by its bytes, yet neither sent nor named as text: a signature's base64
    # would fill the mail's text with noise.
    signature = b"-----BEGIN PGP SIGNATURE-----\n\niQEzBAEBCAAdFiEE\n-----END"
    msg = mail_message(
        ("signature.asc", "application/pgp-signature", signature),
        ("key.pem", "application/x-pem-file", b"-----BEGIN PUBLIC KEY-----\nMIIB"),
    )
    result = extract(write(tmp_path, msg))
    assert "BEGIN" not in result.text
    assert result.text.endswith("Attachments: signature.asc, key.pem")
    assert result.note == ""


def test_a_scanned_pdf_attachment_is_named_not_ocred(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # OCR would spend the mail's one timeout on the scans it carries.
    scan = scan_pdf_bytes([text_image(["SCANNED WORDS"])])
    msg = mail_message(("scan.pdf", "application/pdf", scan))
    result = extract(write(tmp_path, msg), ocr_mode="always")
    assert "SCANNED" not in result.text
    assert result.note == (
        "Attachments not read: scan.pdf (no text layer; scans are not OCRed here)."
    )


def test_a_long_pdf_attachment_is_read_in_part_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(attachments, "MAX_ATTACHMENT_PAGES", 2)
    msg = mail_message(("long.pdf", "application/pdf", pdf_bytes("Chapter", pages=3)))
    result = extract(write(tmp_path, msg))
    assert "Chapter (page 2)" in result.text
    assert "Chapter (page 3)" not in result.text
    assert result.note == "Attachments read in part: long.pdf (its first 2 of 3 pages)."
    # EXTRACTION_MAX_PAGES, when lower, is the attachments' limit too.
    result = extract(write(tmp_path, msg), max_pages=1)
    assert result.note == "Attachments read in part: long.pdf (its first 1 of 3 pages)."
