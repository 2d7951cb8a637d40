"""PDF extraction: files embedded in a PDF (its Attachments panel: a ZUGFeRD or
Factur-X invoice's XML, a portfolio's documents) are named, and the documents
among them read as an e-mail's attachments are."""

from __future__ import annotations

from pathlib import Path

import pytest

from documents.extractors import attachments, extract
from tests.files import (
    docx_bytes,
    mail_message,
    pdf_bytes,
    pdf_with_files,
    scan_pdf_bytes,
    text_image,
    with_member,
    write,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
INVOICE_XML = b"<Invoice><Seller>Roofing GmbH</Seller><Total>1200</Total></Invoice>"


def test_files_embedded_in_a_pdf_are_named_and_documents_read(tmp_path: Path) -> None:
    # Only the pages were read: the invoice's XML, the terms in a DOCX, never.
    pdf = pdf_with_files(
        "Invoice 4711",
        ("factur-x.xml", INVOICE_XML),
        ("terms.docx", docx_bytes("Payment within 30 days")),
        ("logo.png", PNG),  # a picture: named only, never OCRed
    )
    result = extract(write(tmp_path, "invoice.pdf", pdf))
    assert result.text.splitlines() == [
        "Invoice 4711",
        "",
        "Attachment: factur-x.xml",
        INVOICE_XML.decode(),
        "",
        "Attachment: terms.docx",
        "Payment within 30 days",
        "",
        "Attachments: factur-x.xml, terms.docx, logo.png",
    ]
    assert result.note == ""
    assert result.page_count == 1


def test_embedded_files_have_the_attachments_limits_and_notes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(attachments, "MAX_READ_ATTACHMENTS", 2)
    damaged_docx = with_member(
        docx_bytes("gone"), "word/document.xml", lambda xml: xml[: len(xml) // 2]
    )
    scan = scan_pdf_bytes([text_image(["SCANNED WORDS"])])
    pdf = pdf_with_files(
        "Portfolio",
        ("cut.docx", damaged_docx),
        ("scan.pdf", scan),
        ("notes.txt", b"Never read: past the limit"),
    )
    result = extract(write(tmp_path, "portfolio.pdf", pdf), ocr_mode="always")
    assert result.text.splitlines() == [
        "Portfolio",
        "",
        "Attachments: cut.docx, scan.pdf, notes.txt",
    ]
    assert result.note.startswith("Attachments not read: cut.docx (The file is dama")
    assert result.note.endswith(
        "; scan.pdf (no text layer; scans are not OCRed here). Only the first 2 "
        "attachments that are documents were read; 1 more are named only."
    )


def test_files_embedded_in_an_attached_pdf_are_named_not_read(tmp_path: Path) -> None:
    # One level: a PDF in a PDF in an e-mail... would each read twenty more.
    invoice = pdf_with_files("Invoice 4711", ("factur-x.xml", INVOICE_XML))
    msg = mail_message(("invoice.pdf", "application/pdf", invoice))
    text = extract(write(tmp_path, "mail.eml", bytes(msg))).text
    assert "Attachment: invoice.pdf\nInvoice 4711\n\nAttachments: factur-x.xml" in text
    assert "Roofing" not in text


def test_a_pdf_without_embedded_files_reads_as_before(tmp_path: Path) -> None:
    result = extract(write(tmp_path, "plain.pdf", pdf_bytes("Just pages")))
    assert result.text == "Just pages (page 1)"
