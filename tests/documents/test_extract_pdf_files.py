"""PDF extraction: files embedded in a PDF (its Attachments panel: a ZUGFeRD or
Factur-X invoice's XML, a portfolio's documents) are named, and the documents
among them read as an e-mail's attachments are."""

from __future__ import annotations

import json
import subprocess
import sys
import zlib
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


def deflate_bomb_pdf(text: str, name: str, megabytes: int, copies: int = 1) -> bytes:
    """A one-page PDF saying ``text`` with a file embedded, Flate-compressed, that
    inflates to so many megabytes of text lines; named ``copies`` times."""
    squeeze = zlib.compressobj(9)
    block = b"Line of a very long log\n" * (2**20 // 24)
    stream = b"".join(squeeze.compress(block) for _ in range(megabytes))
    stream += squeeze.flush()
    page = f"BT /F1 12 Tf 72 700 Td ({text}) Tj ET".encode()
    names = b" ".join(b"(%d) 5 0 R" % n for n in range(copies))
    font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R /Names << /EmbeddedFiles << /Names ["
        + names
        + b"] >> >> >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 " + font + b" >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(page), page),
        b"<< /Type /Filespec /F (%s) /UF (%s) /EF << /F 6 0 R >> >>"
        % (name.encode(), name.encode()),
        b"<< /Type /EmbeddedFile /Filter /FlateDecode /Length %d >>\nstream\n"
        % len(stream)
        + stream
        + b"\nendstream",
    ]
    pdf, offsets = bytearray(b"%PDF-1.7\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(pdf))
        pdf += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(pdf)
    pdf += b"xref\n0 7\n0000000000 65535 f \n"
    pdf += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    pdf += b"trailer\n<< /Size 7 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(pdf)


# The child's peak memory: its VmHWM (ru_maxrss would keep the parent's, pytest's).
MEASURED = """
import json, re, sys
from documents.extractors import extract
result = extract(sys.argv[1])
peak = re.search(r"VmHWM:\\s*(\\d+)", open("/proc/self/status").read())
print(json.dumps([result.text, result.note, int(peak[1]) // 1024]))
"""


@pytest.mark.parametrize(("megabytes", "copies"), [(300, 1), (26, 20)])
def test_a_deflate_bomb_is_named_over_the_limit_and_the_pages_read(
    tmp_path: Path, megabytes: int, copies: int
) -> None:
    # 300 MB of text in a 0.3 MB PDF, or 26 MB named 20 times: inflated no further
    # than the limit, and once. Under the workers' memory limit, the pages' text
    # was lost with it.
    pdf = deflate_bomb_pdf("Invoice 4711", "log.txt", megabytes, copies)
    run = subprocess.run(
        [sys.executable, "-c", MEASURED, str(write(tmp_path, "bomb.pdf", pdf))],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    text, note, peak_megabytes = json.loads(run.stdout.splitlines()[-1])
    assert text.splitlines() == ["Invoice 4711", "", "Attachments: log.txt"]
    assert note == "Attachments not read: log.txt (over 25 MB)."
    assert peak_megabytes < 300
