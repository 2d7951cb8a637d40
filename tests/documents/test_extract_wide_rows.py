"""Spreadsheet rows (XLSX, ODS): a long run of empty cells is not dozens of tabs,
a short one keeps a table's columns aligned, and trailing empty cells are not
written."""

from __future__ import annotations

import io
from pathlib import Path

import openpyxl

from documents.extractors import extract
from tests.files import odt_package, rezipped

# (column of each value, 1-based), then the line expected: up to three empty cells
# are written (MAX_EMPTY_CELLS), a longer run as three.
ROWS = [
    ([1, 2, 3], "a\tb\tc"),
    ([1, 3], "a\t\tb"),  # a table's blank cell: aligned
    ([1, 5], "a\t\t\t\tb"),  # three empty cells, as many tabs as before
    ([1, 6], "a\t\t\t\tb"),  # four: shortened to three
    ([1, 40, 41, 16_384], "a\t\t\t\tb\tc\t\t\t\td"),  # a form across a wide sheet
    ([30, 31], "\t\t\ta\tb"),  # empty cells before the first value too
]


def test_xlsx_rows_shorten_long_runs_of_empty_cells(tmp_path: Path) -> None:
    # A report laid out across a wide sheet came out as a few words between
    # hundreds (up to 16,383) of tabs.
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Report"
    for row, (columns, _) in enumerate(ROWS, 1):
        for n, column in enumerate(columns):
            sheet.cell(row=row, column=column, value="abcd"[n])
    # A formatted cell without a value, past the last one: nothing after "b".
    sheet["Z2"].number_format = "0.00"
    sheet["AA2"] = ""
    saved = io.BytesIO()
    book.save(saved)
    path = tmp_path / "report.xlsx"
    path.write_bytes(saved.getvalue())
    assert extract(path).text.splitlines() == ["Report", *(line for _, line in ROWS)]


_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'office:version="1.3"'
)


def ods(body: str) -> bytes:
    """An ODS package around an office:spreadsheet body."""
    content = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {_NS}>'
        f"<office:body><office:spreadsheet>{body}</office:spreadsheet></office:body>"
        "</office:document-content>"
    )
    mimetype = b"application/vnd.oasis.opendocument.spreadsheet"
    return rezipped(
        odt_package(content),
        lambda name, data: (name, mimetype if name == "mimetype" else data),
    )


def ods_row(columns: list[int]) -> str:
    cells, at = [], 1
    for n, column in enumerate(columns):
        if column > at:
            cells.append(
                f'<table:table-cell table:number-columns-repeated="{column - at}"/>'
            )
        cells.append(
            f"<table:table-cell><text:p>{'abcd'[n]}</text:p></table:table-cell>"
        )
        at = column + 1
    # LibreOffice pads each row with empty cells to the sheet's last column.
    cells.append(
        f'<table:table-cell table:number-columns-repeated="{16_384 - at + 1}"/>'
        if at <= 16_384
        else ""
    )
    return f"<table:table-row>{''.join(cells)}</table:table-row>"


def test_ods_rows_follow_the_same_rule(tmp_path: Path) -> None:
    rows = "".join(ods_row(columns) for columns, _ in ROWS)
    path = tmp_path / "report.ods"
    path.write_bytes(ods(f'<table:table table:name="Report">{rows}</table:table>'))
    assert extract(path).text.splitlines() == ["Report", *(line for _, line in ROWS)]
