"""Office files from LibreOffice that the product had not seen, rebuilt in Python: a
word broken by a hyphen at a line break inside a table cell, soft hyphens written as
the character, and a footnote whose number LibreOffice follows with a tab."""

from __future__ import annotations

import io
from pathlib import Path

import docx
import openpyxl
import pytest
from pptx import Presentation
from pptx.util import Inches

from documents.extractors import extract
from documents.extractors.base import table_row_lines
from tests.documents.test_extract_lists import docx_package
from tests.files import odt_package, write

_ODF = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" office:version="1.3"'
)


def _odt(body: str) -> bytes:
    return odt_package(
        f'<?xml version="1.0"?><office:document-content {_ODF}><office:body>'
        f"<office:text>{body}</office:text></office:body></office:document-content>"
    )


# --- a hyphen at a line break inside a cell ------------------------------------------


@pytest.mark.parametrize(
    ("cell", "shown"),
    [
        ("e-\nmail only", "email only"),  # as a paragraph's "e-\nmail" reads
        ("Anglo-\nSaxon", "Anglo-Saxon"),  # a name: the hyphen stays, no space
        ("state-of-the-\nart", "state-of-the-art"),  # a compound, likewise
        ("phone\nfax", "phone fax"),  # no hyphen: a space, as before
        ("10 -\n20", "10 - 20"),  # a dash between numbers, not a broken word
    ],
)
def test_a_cell_line_break_after_a_hyphen_gains_no_space(cell: str, shown: str) -> None:
    assert list(table_row_lines([["Anna"], [cell]])) == [f"Anna\t{shown}"]


def test_docx_cell_reads_a_broken_word_as_a_paragraph_does(tmp_path: Path) -> None:
    document = docx.Document()
    paragraph = document.add_paragraph("Write an e-")
    paragraph.add_run().add_break()
    paragraph.add_run("mail to us.")
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "Anna"
    cell = table.cell(0, 1).paragraphs[0]
    cell.add_run("e-").add_break()
    cell.add_run("mail only")
    saved = io.BytesIO()
    document.save(saved)
    text = extract(write(tmp_path, "contacts.docx", saved.getvalue())).text
    assert text == "Write an email to us.\nAnna\temail only"


def test_odt_cell_line_break_after_a_hyphen_gains_no_space(tmp_path: Path) -> None:
    row = (
        "<table:table-row><table:table-cell><text:p>Region</text:p></table:table-cell>"
        "<table:table-cell><text:p>Anglo-<text:line-break/>Saxon</text:p>"
        "</table:table-cell></table:table-row>"
    )
    body = f"<table:table><table:table-column/>{row}</table:table>"
    text = extract(write(tmp_path, "regions.odt", _odt(body))).text
    assert text == "Region\tAnglo-Saxon"


def test_xlsx_cell_line_break_after_a_hyphen_gains_no_space(tmp_path: Path) -> None:
    workbook = openpyxl.Workbook()
    workbook.active.title = "Contacts"
    workbook.active.append(["Anna", "e-\nmail only", "Anglo-\nSaxon"])
    saved = io.BytesIO()
    workbook.save(saved)
    text = extract(write(tmp_path, "contacts.xlsx", saved.getvalue())).text
    assert text == "Contacts\nAnna\temail only\tAnglo-Saxon"


# --- soft hyphens written as the character -------------------------------------------


def test_odt_soft_hyphens_are_not_inside_the_words(tmp_path: Path) -> None:
    body = "<text:p>Soft hy\u00adphen\u00adation is invisible.</text:p>"
    text = extract(write(tmp_path, "soft.odt", _odt(body))).text
    assert text == "Soft hyphenation is invisible."


def test_pptx_soft_hyphens_are_not_inside_the_words(tmp_path: Path) -> None:
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])
    box = slide.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1))
    box.text_frame.text = "Hire engi\u00adneers"
    table = slide.shapes.add_table(1, 1, Inches(1), Inches(3), Inches(4), Inches(1))
    table.table.cell(0, 0).text = "Con\u00adtract"
    slide.notes_slide.notes_text_frame.text = "Bud\u00adget"
    saved = io.BytesIO()
    deck.save(saved)
    text = extract(write(tmp_path, "deck.pptx", saved.getvalue())).text
    assert text == "Hire engineers\nContract\nBudget"


def test_docx_soft_hyphen_characters_are_not_inside_the_words(tmp_path: Path) -> None:
    body = "<w:p><w:r><w:t>Soft hy\u00adphen\u00adation</w:t></w:r></w:p>"
    path = write(tmp_path, "soft.docx", docx_package(body))
    assert extract(path).text == "Soft hyphenation"


def test_a_soft_hyphen_that_ends_a_line_joins_the_word(tmp_path: Path) -> None:
    # Shown as a hyphen only where the line breaks: there the word goes on.
    path = write(
        tmp_path, "soft.txt", "Soft hy\u00ad\nphenation, and an\u00adother.\n".encode()
    )
    assert extract(path).text.strip() == "Soft hyphenation, and another."


# --- notes -----------------------------------------------------------------------------


def test_docx_footnote_has_no_tab_after_its_number(tmp_path: Path) -> None:
    # LibreOffice writes a tab between the note's number and its text.
    body = '<w:p><w:r><w:t>Met.</w:t></w:r><w:r><w:footnoteReference w:id="2"/></w:r></w:p>'
    footnotes = (
        '<w:footnote w:id="2"><w:p><w:r><w:footnoteRef/></w:r>'
        "<w:r><w:tab/><w:t>Minutes were taken.</w:t></w:r></w:p></w:footnote>"
    )
    path = write(tmp_path, "notes.docx", docx_package(body, footnotes=footnotes))
    assert extract(path).text == "Met.\nMinutes were taken."
