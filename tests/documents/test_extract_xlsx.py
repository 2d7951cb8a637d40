"""Excel extraction: Strict Open XML, a damaged shared-string table, hidden sheets,
cells as Excel shows them and formulas without a cached result."""

from __future__ import annotations

import datetime
import io
import zipfile
from pathlib import Path

import openpyxl
import pytest
from openpyxl.comments import Comment

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


def saved(book: openpyxl.Workbook) -> bytes:
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


# (stored value, number format, what Excel shows)
SHOWN = [
    (0.125, "0.0%", "12.5%"),
    (0.125, "0%", "13%"),
    (1234.5, '"$"#,##0.00', "$1,234.50"),
    (1234.5, "#,##0.00 [$€-407]", "1,234.50 €"),
    (72.5, '0.00" kg"', "72.50 kg"),
    (-1234.5, "#,##0.00;(#,##0.00)", "(1,234.50)"),
    (-1234.5, "[Red]#,##0.00_);[Blue]\\(#,##0.00\\)", "(1,234.50)"),
    (-5, "0.00", "-5.00"),
    (0, '#,##0.00;-#,##0.00;"-"', "-"),
    (1.005, "0.00", "1.01"),  # Excel rounds its 15 digits, not the binary float
    (1234567, "#,##0,", "1,235"),
    (0.5, "#.00", ".50"),
    (12.0, "0.0#", "12.0"),
    (12.345, "0.0#", "12.35"),
    (0.1 * 3, "General", "0.3"),
    (1 / 3, "General", "0.333333333333333"),
    (12345678901.0, "General", "12345678901"),
    (True, "General", "TRUE"),
    (False, "General", "FALSE"),
    (datetime.timedelta(hours=30), "[h]:mm", "30:00"),
    (datetime.timedelta(hours=30, seconds=5), "[h]:mm:ss", "30:00:05"),
    (datetime.timedelta(minutes=90), "[mm]:ss", "90:00"),
    (datetime.datetime(2024, 3, 15, 13, 45), "yyyy-mm-dd", "2024-03-15"),
    (datetime.datetime(2024, 3, 15, 13, 45), "yyyy-mm-dd hh:mm", "2024-03-15 13:45"),
    # Dates as the sheet spells them: they came out as ISO dates whatever the format.
    (datetime.datetime(2026, 11, 28), "dd.mm.yyyy", "28.11.2026"),
    (datetime.datetime(2026, 11, 28), "dd/mm/yyyy", "28/11/2026"),
    (datetime.datetime(2026, 11, 28), "m/d/yy", "11/28/26"),
    (datetime.datetime(2026, 11, 28), "mmm d, yyyy", "Nov 28, 2026"),
    (
        datetime.datetime(2026, 11, 28),
        "[$-F800]dddd, mmmm dd, yyyy",
        "Saturday, November 28, 2026",
    ),
    (datetime.datetime(2026, 11, 28), "d-mmm-yy", "28-Nov-26"),
    (datetime.datetime(2026, 11, 28), "mmmm yyyy", "November 2026"),
    (datetime.datetime(2026, 11, 28), 'ddd d" of "mmmm', "Sat 28 of November"),
    (datetime.datetime(2026, 11, 28, 9, 5), "dd/mm/yyyy hh:mm", "28/11/2026 09:05"),
    (datetime.datetime(2026, 11, 28, 13, 5, 29, 600000), "h:mm:ss AM/PM", "1:05:30 PM"),
    (datetime.datetime(2026, 11, 28, 13, 5, 29, 600000), "mm:ss.0", "05:29.6"),
    (datetime.time(7, 30), "h:mm am/pm", "7:30 am"),
    (datetime.time(7, 30), "hh:mm", "07:30"),
    # Excel's built-in short dates follow the reader's locale: ISO says which is which.
    (datetime.datetime(2026, 11, 28), "mm-dd-yy", "2026-11-28"),
    (datetime.datetime(2026, 11, 28, 13, 45), "m/d/yy h:mm", "2026-11-28 13:45"),
    (1e300, "#,##0.00", "1E+300"),  # past what Decimal rounds: General
    (0.5, "# ?/?", "0.5"),  # fractions are not rendered: General
    (12345.678, "0.00E+00", "12345.678"),  # nor scientific
]


def test_cells_read_as_excel_shows_them(tmp_path: Path) -> None:
    # The stored value came out: 0.125 for 12.5%, 1234.5 for $1,234.50, True,
    # 0.30000000000000004, and "1 day, 6:00:00" for 30 hours.
    book = openpyxl.Workbook()
    for row, (value, code, _) in enumerate(SHOWN, 1):
        book.active.cell(row=row, column=1, value=value).number_format = code
    text = extract(write(tmp_path, saved(book))).text
    assert text.splitlines()[1:] == [shown for _, _, shown in SHOWN]


def test_a_date_stored_as_one_under_a_number_format_reads_as_an_iso_date(
    tmp_path: Path,
) -> None:
    # A cell typed as a date (t="d") under General read "G2026n2026ral": its letters
    # taken for a date's codes; under "0.00", the date was lost.
    book = openpyxl.Workbook(iso_dates=True)
    when = datetime.datetime(2026, 11, 28, 13, 45)
    for row, code in enumerate(["General", "0.00"], 1):
        book.active.cell(row=row, column=1, value=when).number_format = code
    text = extract(write(tmp_path, saved(book))).text
    assert text.splitlines()[1:] == ["2026-11-28T13:45:00"] * 2


def test_a_formula_without_a_cached_result_reads_as_its_formula(
    tmp_path: Path,
) -> None:
    # openpyxl writes no result (<v></v>): the cell came out empty.
    book = openpyxl.Workbook()
    book.active.append(["Qty", "Price", "Total"])
    book.active.append([3, 9.99, "=A2*B2"])
    text = extract(write(tmp_path, saved(book))).text
    assert text.splitlines()[1:] == ["Qty\tPrice\tTotal", "3\t9.99\t=A2*B2"]


def formulas(cached: bytes, *, recalculate: bool, kind: bytes = b"") -> bytes:
    """A workbook whose C1 holds =A1*B1 with the given cached result, asking for a
    recalculation on opening (as xlsxwriter and openpyxl do) or not (as Excel)."""
    book = openpyxl.Workbook()
    book.active.append([3, 9.99, "=A1*B1", "after"])
    data = with_member(
        saved(book),
        "xl/worksheets/sheet1.xml",
        lambda xml: xml.replace(
            b'<c r="C1"><f>A1*B1</f><v></v></c>',
            b'<c r="C1"' + kind + b"><f>A1*B1</f><v>" + cached + b"</v></c>",
        ),
    )
    if not recalculate:
        data = with_member(
            data,
            "xl/workbook.xml",
            lambda xml: xml.replace(b' fullCalcOnLoad="1"', b""),
        )
    return data


@pytest.mark.parametrize(
    ("cached", "recalculate", "kind", "shown"),
    [
        # xlsxwriter caches 0 for every formula and asks Excel to recalculate:
        # the 0 is a placeholder (Excel shows 29.97). It read "0".
        (b"0", True, b"", "=A1*B1"),
        # A result given to the writer on purpose is kept.
        (b"29.97", True, b"", "29.97"),
        # Excel calculated it: 0 is the result.
        (b"0", False, b"", "0"),
        # A formula whose result is the empty string ("" from IF) shows nothing.
        (b"", False, b' t="str"', ""),
    ],
    ids=["placeholder-zero", "given-result", "excel-zero", "empty-string"],
)
def test_a_cached_result_is_shown_unless_it_is_a_placeholder(
    tmp_path: Path, cached: bytes, recalculate: bool, kind: bytes, shown: str
) -> None:
    data = formulas(cached, recalculate=recalculate, kind=kind)
    assert b"<f>A1*B1</f><v>" + cached in zipfile.ZipFile(io.BytesIO(data)).read(
        "xl/worksheets/sheet1.xml"
    )
    text = extract(write(tmp_path, data)).text
    assert text.splitlines()[1] == f"3\t9.99\t{shown}\tafter"


def test_a_placeholder_under_a_date_format_reads_as_its_formula(
    tmp_path: Path,
) -> None:
    # pandas and xlsxwriter cache 0 for a due date "=A1+30": it read "00:00:00",
    # the placeholder's 0 as a time of day.
    book = openpyxl.Workbook()
    book.active.append([datetime.datetime(2026, 11, 28), "=A1+30"])
    book.active["A1"].number_format = "yyyy-mm-dd"
    book.active["B1"].number_format = "dd/mm/yyyy"
    data = with_member(
        saved(book),
        "xl/worksheets/sheet1.xml",
        lambda xml: xml.replace(b"<f>A1+30</f><v></v>", b"<f>A1+30</f><v>0</v>"),
    )
    assert b"<f>A1+30</f><v>0</v>" in zipfile.ZipFile(io.BytesIO(data)).read(
        "xl/worksheets/sheet1.xml"
    )
    assert extract(write(tmp_path, data)).text.splitlines()[1] == "2026-11-28\t=A1+30"


def test_comments_are_read_after_their_sheets_rows(tmp_path: Path) -> None:
    # Notes were not read: what a sheet says on hover could not be found.
    book = openpyxl.Workbook()
    book.active.title = "Budget"
    book.active.append(["Item", "Cost"])
    book.active.append(["Rent", 1200])
    book.active["B2"].comment = Comment("Includes the\nservice charge", "Ann")
    # Excel 365 writes a threaded comment as a note too, behind a notice.
    book.create_sheet("Plan")["C5"].comment = Comment(
        "[Threaded comment]\n\nYour version of Excel allows you to read this "
        "threaded comment; however, any edits to it will get removed if the file "
        "is opened in a newer version of Excel. Learn more: "
        "https://go.microsoft.com/fwlink/?linkid=870924\n\nComment:\n"
        "    Check with legal\nReply:\n    Done",
        "Bob",
    )
    text = extract(write(tmp_path, saved(book))).text
    assert text.splitlines() == [
        "Budget",
        "Item\tCost",
        "Rent\t1200",
        "Comment on B2: Includes the service charge",
        "",
        "Plan",
        "Comment on C5: Check with legal Reply: Done",
    ]
