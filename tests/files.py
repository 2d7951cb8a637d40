"""Small self-made documents for tests, byte-for-byte the same on every run."""

from __future__ import annotations

import datetime
import io
import zipfile

import docx
from fpdf import FPDF

FIXED_TIME = (2020, 1, 1, 0, 0, 0)


def pdf_bytes(text: str = "Quarterly report of the queue", pages: int = 1) -> bytes:
    """A PDF whose page n says ``text (page n)``."""
    pdf = FPDF()
    pdf.set_creation_date(datetime.datetime(*FIXED_TIME, tzinfo=datetime.UTC))
    pdf.set_font("helvetica", size=12)
    for n in range(pages):
        pdf.add_page()
        pdf.multi_cell(0, 10, f"{text} (page {n + 1})")
    return bytes(pdf.output())


def docx_bytes(text: str = "Minutes of the meeting") -> bytes:
    """A DOCX with one paragraph; zip dates fixed so the bytes repeat."""
    document = docx.Document()
    document.add_paragraph(text)
    saved = io.BytesIO()
    document.save(saved)
    out = io.BytesIO()
    with zipfile.ZipFile(saved) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            info.date_time = FIXED_TIME
            target.writestr(info, source.read(info.filename))
    return out.getvalue()
