"""Excel extraction: Strict Open XML, a damaged shared-string table, hidden sheets."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import openpyxl
import pytest

from documents.extractors import CorruptFileError, UnsupportedFileError, extract
from tests.files import replaced_everywhere, with_member, xlsx_bytes


def write(tmp_path: Path, content: bytes) -> Path:
    path = tmp_path / "book.xlsx"
    path.write_bytes(content)
    return path


def strict(data: bytes) -> bytes:
    """The workbook as Excel's "Strict Open XML Spreadsheet" writes it: the same
    parts under the purl.oclc.org namespaces."""
    pairs = [
        (
            b"http://schemas.openxmlformats.org/spreadsheetml/2006/main",
            b"http://purl.oclc.org/ooxml/spreadsheetml/main",
        ),
        (
            b"http://schemas.openxmlformats.org/officeDocument/2006/relationships",
            b"http://purl.oclc.org/ooxml/officeDocument/relationships",
        ),
    ]
    return replaced_everywhere(data, pairs)


def test_a_strict_open_xml_workbook_is_refused_in_words(tmp_path: Path) -> None:
    # openpyxl finds no sheet in it: the workbook came out empty, without a note.
    path = write(tmp_path, strict(xlsx_bytes([["Budget 2024", 1200]])))
    with pytest.raises(UnsupportedFileError) as refused:
        extract(path)
    assert str(refused.value) == (
        "This Excel file is saved as 'Strict Open XML', which is not supported; "
        "save it again as a regular Excel Workbook (.xlsx)."
    )


def test_a_cell_past_the_shared_strings_is_damage_not_a_crash(tmp_path: Path) -> None:
    # openpyxl raised IndexError: the queue took it for an unknown failure.
    # Excel keeps text in a shared table and the cell its index; "7" is past it.
    cell = b'<c r="A1" t="inlineStr"><is><t>hello</t></is></c>'
    book = xlsx_bytes([["hello"]])
    assert cell in zipfile.ZipFile(io.BytesIO(book)).read("xl/worksheets/sheet1.xml")
    damaged = with_member(
        book,
        "xl/worksheets/sheet1.xml",
        lambda xml: xml.replace(cell, b'<c r="A1" t="s"><v>7</v></c>'),
    )
    with pytest.raises(CorruptFileError) as refused:
        extract(write(tmp_path, damaged))
    assert str(refused.value) == (
        "The file is damaged: a cell refers to text the workbook does not hold "
        "(its shared-string table is incomplete)"
    )


def test_hidden_sheets_are_not_read_and_hidden_rows_and_columns_are(
    tmp_path: Path,
) -> None:
    # A person never sees a hidden or very hidden sheet; hidden rows and columns
    # often hold what people look up, so they stay.
    book = openpyxl.Workbook()
    prices = book.active
    prices.title = "Prices"
    prices.append(["Product", "Price", "Cost"])
    prices.append(["Widget", 50, 30])
    prices.row_dimensions[2].hidden = True
    prices.column_dimensions["C"].hidden = True
    book.create_sheet("Workings")["A1"] = "HIDDEN_SHEET_TEXT"
    book["Workings"].sheet_state = "hidden"
    book.create_sheet("Lookup")["A1"] = "VERY_HIDDEN_SHEET_TEXT"
    book["Lookup"].sheet_state = "veryHidden"
    book.create_sheet("Notes")["A1"] = "Shown again"
    saved = io.BytesIO()
    book.save(saved)
    result = extract(write(tmp_path, saved.getvalue()))
    assert result.text.splitlines() == [
        "Prices",
        "Product\tPrice\tCost",
        "Widget\t50\t30",
        "",
        "Notes",
        "Shown again",
    ]
    assert result.note == ""
