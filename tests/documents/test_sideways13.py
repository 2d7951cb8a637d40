"""Text set sideways a glyph at a time (a chart's axis title in a PDF from LibreOffice
Calc or Impress, fpdf2's rotation() around each letter): PDFium broke it into pieces
and put some glyphs out of order ("U / nits / s / o / dl" for "Units sold"). And a
bounce (multipart/report) whose delivery status was named, not read."""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import pytest
from fpdf import FPDF
from openpyxl import Workbook
from openpyxl.chart import BarChart, Reference

from documents.extractors import extract


def glyph_by_glyph_pdf(path: Path, angle: float, lines: list[str]) -> Path:
    """A page with a title, ``lines`` set at ``angle`` (degrees, anticlockwise) one
    glyph at a time, each turned on its own as LibreOffice draws them, and a label."""
    pdf = FPDF(unit="pt", format=(300, 300))
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.text(20, 30, "Sales by month")
    turn = math.radians(angle)
    for n, line in enumerate(lines):
        # fpdf2's y runs down the page: each line under the one before, as it reads.
        x, y = 150 + 16 * n * math.sin(turn), 150 + 16 * n * math.cos(turn)
        for glyph in line:
            with pdf.rotation(angle, x, y):
                pdf.text(x, y, glyph)
            width = pdf.get_string_width(glyph)
            x, y = x + width * math.cos(turn), y - width * math.sin(turn)
    pdf.text(80, 280, "Plot area")
    pdf.output(str(path))
    return path


@pytest.mark.parametrize("angle", [90, -90, 180])
def test_a_title_set_sideways_glyph_by_glyph_reads_as_its_words(
    tmp_path: Path, angle: int
) -> None:
    # Up the page (a y-axis title), down it, and upside down.
    path = glyph_by_glyph_pdf(tmp_path / "axis.pdf", angle, ["Units sold"])
    assert extract(path).text == "Sales by month\nUnits sold\nPlot area"


@pytest.mark.parametrize("angle", [90, 180])
def test_two_lines_set_sideways_glyph_by_glyph_stay_two_lines(
    tmp_path: Path, angle: int
) -> None:
    path = glyph_by_glyph_pdf(tmp_path / "two.pdf", angle, ["Units sold", "per month"])
    assert extract(path).text == "Sales by month\nUnits sold\nper month\nPlot area"


@pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice is missing")
def test_a_calc_chart_s_axis_title_reads_as_its_words(tmp_path: Path) -> None:
    # LibreOffice draws a turned axis title a glyph at a time, each with its own
    # text matrix: it read "U", "nits", "s", "old".
    book = Workbook()
    sheet = book.active
    for row in [("Month", "Sales"), ("Jan", 10), ("Feb", 20)]:
        sheet.append(row)
    chart = BarChart()
    chart.title = "Monthly sales"
    chart.x_axis.title = "Month"
    chart.y_axis.title = "Units sold"
    chart.add_data(
        Reference(sheet, min_col=2, min_row=1, max_row=3), titles_from_data=True
    )
    chart.set_categories(Reference(sheet, min_col=1, min_row=2, max_row=3))
    sheet.add_chart(chart, "B8")
    book.save(tmp_path / "chart.xlsx")
    subprocess.run(
        ["soffice", "--headless", "--convert-to", "pdf", "--outdir", str(tmp_path),
         str(tmp_path / "chart.xlsx")],
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        timeout=120,
        check=True,
    )  # fmt: skip
    if not (tmp_path / "chart.pdf").exists():  # Writer alone opens no workbook
        pytest.skip("LibreOffice Calc is missing")
    lines = extract(tmp_path / "chart.pdf").text.splitlines()
    assert "Units sold" in lines
    assert lines[:3] == ["Month Sales", "Jan 10", "Feb 20"]  # upright, as before


BOUNCE = """\
From: MAILER-DAEMON@example.com
To: me@example.com
Subject: Undelivered Mail Returned to Sender
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="B"

--B
Content-Type: text/plain

This is the mail system.

--B
Content-Type: {status}

Reporting-MTA: dns; mx.example.com
Arrival-Date: Sat, 28 Nov 2026 16:00:00 +0000
{recipients}
--B
Content-Type: text/rfc822-headers

From: me@example.com
Subject: My lost mail

--B--
"""


def recipient(address: str) -> str:
    return f"\nFinal-Recipient: rfc822; {address}\nAction: failed\nStatus: 5.1.1\n"


def test_a_bounce_reads_its_failed_recipients_and_their_status(tmp_path: Path) -> None:
    path = tmp_path / "bounce.eml"
    path.write_text(
        BOUNCE.format(
            status="message/delivery-status",
            recipients=recipient("nobody@example.org") + recipient("gone@example.net"),
        )
    )
    text = extract(path).text
    assert text.split("\n\n")[1:5] == [
        "This is the mail system.",
        "Reporting-MTA: dns; mx.example.com\n"
        "Arrival-Date: Sat, 28 Nov 2026 16:00:00 +0000",
        "Final-Recipient: rfc822; nobody@example.org\nAction: failed\nStatus: 5.1.1",
        "Final-Recipient: rfc822; gone@example.net\nAction: failed\nStatus: 5.1.1",
    ]
    assert "(unnamed message/delivery-status)" not in text


def test_a_global_bounce_reads_its_recipients_too(tmp_path: Path) -> None:
    # RFC 6533's UTF-8 report: the parser keeps its first block as headers, the
    # rest as that block's body.
    path = tmp_path / "bounce.eml"
    path.write_text(
        BOUNCE.format(
            status="message/global-delivery-status",
            recipients=recipient("zoë@example.org"),
        ),
        encoding="utf-8",
    )
    assert (
        "Reporting-MTA: dns; mx.example.com\n"
        "Arrival-Date: Sat, 28 Nov 2026 16:00:00 +0000\n\n"
        "Final-Recipient: rfc822; zoë@example.org\nAction: failed\nStatus: 5.1.1"
    ) in extract(path).text


def test_a_bounce_s_recipients_count_against_the_parts_limit(tmp_path: Path) -> None:
    # Each recipient's block is a part to the parser: past the limit on parts,
    # the rest are left out and the note says so, as for any other parts.
    path = tmp_path / "bounce.eml"
    many = "".join(recipient(f"r{n}@example.org") for n in range(600))
    path.write_text(BOUNCE.format(status="message/delivery-status", recipients=many))
    result = extract(path)
    assert "Final-Recipient: rfc822; r0@example.org" in result.text
    assert "r599@example.org" not in result.text
    assert "only the first ones were read" in result.note
