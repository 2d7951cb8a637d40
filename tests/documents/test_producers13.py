"""Documents from producers the rest of the suite uses little: workbooks written by
openpyxl with the number formats of Excel's "Special" category (ZIP Code + 4,
Social Security Number, Phone Number) and other custom formats, checked against what
LibreOffice Calc shows for the same cells; the text boxes and charts an Excel
sheet's drawing holds, and charts on sheets of their own (xlsxwriter and openpyxl
write them); slides as LibreOffice Impress saves them (ODP), its shapes in the
order they were drawn; and e-mails written by Python's own email package."""

from __future__ import annotations

import io
from email.headerregistry import Address
from email.message import EmailMessage
from pathlib import Path

import openpyxl
from openpyxl.chart import BarChart, PieChart, Reference

from documents.extractors import extract
from tests.documents.test_extract_odf_epub import odf_package
from tests.files import with_member

# (stored value, number format, what Excel and LibreOffice Calc show)
SPECIAL = [
    (123456789, "00000-0000", "12345-6789"),  # ZIP Code + 4
    (98052, "00000-0000", "00009-8052"),
    (123456789, "000-00-0000", "123-45-6789"),  # Social Security Number
    (0, "000-00-0000", "000-00-0000"),
    (5551234, "[<=9999999]###-####;(###) ###-####", "555-1234"),  # Phone Number
    (2125551234, "[<=9999999]###-####;(###) ###-####", "(212) 555-1234"),
    (-5551234, "[<=9999999]###-####;(###) ###-####", "-555-1234"),
    (0, "###-####", "-"),
    (1234, "# ###", "1 234"),  # thousands spaced by hand
    (12, '0"x"0', "1x2"),
]

CONDITIONS = [
    (2500, '[<1000]0;0.0,"K"', "2.5K"),
    (-5000, '[<1000]0;0.0,"K"', "-5000"),
    (1500, '[>=1000000]0.0,,"M";[>=1000]0.0,"K";0', "1.5K"),
    (2500000, '[>=1000000]0.0,,"M";[>=1000]0.0,"K";0', "2.5M"),
    (15, '[>=1000000]0.0,,"M";[>=1000]0.0,"K";0', "15"),
    (-3, '[<0]"neg "0;[>0]"pos "0;"zero"', "neg 3"),  # the condition took the sign
    (0, '[<0]"neg "0;[>0]"pos "0;"zero"', "zero"),
    (-5, '[>=1000]0.0,"K";0', "5"),  # as in LibreOffice: only the first shows "-"
    (1, '[=1]"one";0', "one"),
    (-7, "[Red][<=100]0;[Blue][>100]0", "-7"),
]


def workbook_text(tmp_path: Path, cells: list[tuple[float, str, str]]) -> list[str]:
    book = openpyxl.Workbook()
    for row, (value, code, _) in enumerate(cells, 1):
        book.active.cell(row=row, column=1, value=value).number_format = code
    out = io.BytesIO()
    book.save(out)
    path = tmp_path / "formats.xlsx"
    path.write_bytes(out.getvalue())
    return extract(path).text.splitlines()[1:]  # after the sheet's name


def test_excel_special_formats_show_their_digits_split_as_excel_shows_them(
    tmp_path: Path,
) -> None:
    # Digits split by text came out as General: a ZIP+4 code read "123456789",
    # a phone number "2125551234", the leading zeros of a ZIP code lost.
    assert workbook_text(tmp_path, SPECIAL) == [shown for _, _, shown in SPECIAL]


def test_sections_chosen_by_their_conditions(tmp_path: Path) -> None:
    # A format whose sections carry conditions ([>=1000]) came out as General:
    # "2500" for 2.5K, "-3" for "neg 3".
    assert workbook_text(tmp_path, CONDITIONS) == [s for _, _, s in CONDITIONS]


SCALED = [
    (2500, '0.0,"K"', "2.5K"),
    (2500000, '#,##0.0,,"M"', "2.5M"),
    (-1234567, "#,##0.00,,;(#,##0.00,,)", "(1.23)"),
]


def test_thousands_scaled_after_the_decimals(tmp_path: Path) -> None:
    # A comma after the decimals (thousands) read as text: "2500.0,K" for 2.5K.
    assert workbook_text(tmp_path, SCALED) == [shown for _, _, shown in SCALED]


def placed(shape: str, text: str, x: str, y: str) -> str:
    """An Impress shape at (x, y) holding one paragraph."""
    return shaped(shape, text, f'svg:x="{x}" svg:y="{y}"')


def shaped(shape: str, text: str, where: str) -> str:
    return (
        f'<draw:{shape} svg:width="5cm" svg:height="1cm" {where}>'
        f"<text:p>{text}</text:p></draw:{shape}>"
    )


def test_impress_slide_shapes_read_by_position_as_powerpoint_ones(
    tmp_path: Path,
) -> None:
    # Impress keeps a slide's shapes in the order they were drawn (z-order): a
    # table drawn before the boxes above it was read before them, where the same
    # deck as PPTX reads top to bottom, a row left to right.
    table = (
        '<draw:frame svg:x="2.54cm" svg:y="7.62cm" svg:width="10cm" '
        'svg:height="3.8cm"><table:table><table:table-row><table:table-cell>'
        "<text:p>Tall</text:p></table:table-cell><table:table-cell><text:p>a</text:p>"
        "</table:table-cell></table:table-row></table:table></draw:frame>"
    )
    slide = (
        '<draw:page draw:name="page1">'
        + '<draw:frame presentation:class="title" svg:x="1.27cm" svg:y="0.76cm">'
        "<draw:text-box><text:p>Harbour plans</text:p></draw:text-box></draw:frame>"
        + table
        + placed("custom-shape", "Right box", "15.24cm", "2.54cm")
        + placed("custom-shape", "Left box", "5.65cm", "2.6cm")
        + "<draw:g>"
        + placed("rect", "Grouped below", "1in", "5in")
        + placed("rect", "Grouped beside", "3in", "5in")
        + "</draw:g>"
        # A turned shape has no svg:x and svg:y: its transform places it.
        + shaped(
            "custom-shape",
            "Turned note",
            'draw:transform="rotate (0.5) translate (1cm 18cm)"',
        )
        + "</draw:page>"
    )
    path = tmp_path / "deck.odp"
    path.write_bytes(odf_package("presentation", slide))
    assert extract(path).text.splitlines() == [
        "Harbour plans",
        "Left box",
        "Right box",
        "Tall\ta",
        "Grouped below",
        "Grouped beside",
        "Turned note",
    ]


# A text box anchored over the cells D2:H4 (openpyxl writes its drawing's elements
# unprefixed).
TEXT_BOX = (
    b"<twoCellAnchor><from><col>3</col><colOff>0</colOff><row>1</row>"
    b"<rowOff>0</rowOff></from><to><col>7</col><colOff>0</colOff><row>4</row>"
    b"<rowOff>0</rowOff></to><sp macro='' textlink=''><nvSpPr><cNvPr id='3' "
    b"name='TextBox 2'/><cNvSpPr txBox='1'/></nvSpPr><spPr/><txBody "
    b"xmlns:a='http://schemas.openxmlformats.org/drawingml/2006/main'><a:bodyPr/>"
    b"<a:p><a:r><a:t>Instructions: fill in the sales.</a:t></a:r></a:p><a:p><a:r>"
    b"<a:t>Do not edit</a:t></a:r><a:r><a:t> totals.</a:t></a:r></a:p></txBody>"
    b"</sp><clientData/></twoCellAnchor></wsDr>"
)


def test_a_sheet_s_text_boxes_and_charts_are_read_after_its_rows(
    tmp_path: Path,
) -> None:
    # An Excel sheet's drawing was never read: its text boxes (instructions,
    # notes) and its charts' titles were lost, and a chart on a sheet of its own
    # left only the sheet's name; DOCX, PPTX and ODS read theirs.
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Data"
    for row in [["Month", "Sales"], ["Jan", 10], ["Feb", 20]]:
        sheet.append(row)
    bars = BarChart()
    bars.title = "Monthly sales"
    bars.x_axis.title = "Month"
    bars.add_data(
        Reference(sheet, min_col=2, min_row=1, max_row=3), titles_from_data=True
    )
    sheet.add_chart(bars, "D6")
    pie = PieChart()
    pie.title = "Share by month"
    pie.add_data(Reference(sheet, min_col=2, min_row=2, max_row=3))
    book.create_chartsheet("Share").add_chart(pie)
    out = io.BytesIO()
    book.save(out)
    data = with_member(
        out.getvalue(),
        "xl/drawings/drawing1.xml",
        lambda xml: xml.replace(b"</wsDr>", TEXT_BOX),
    )
    path = tmp_path / "sales.xlsx"
    path.write_bytes(data)
    assert extract(path).text.splitlines() == [
        "Data",
        "Month\tSales",
        "Jan\t10",
        "Feb\t20",
        "Instructions: fill in the sales.",  # above the chart: read first
        "Do not edit totals.",
        "Monthly sales",
        "Month",
        "",
        "Share",
        "Share by month",
    ]


def test_addresses_python_s_email_package_quotes_read_as_addresses(
    tmp_path: Path,
) -> None:
    # EmailMessage writes an address after a name it encodes as <"j@example.de">:
    # it was read so, quotes and all.
    message = EmailMessage()
    message["From"] = Address("Jürgen Müller", "jm@example.de")
    message["To"] = [Address("Zoë Çelik", "z@example.tr"), Address("Ann", "a@x.org")]
    message["Subject"] = "Grüße"
    message.set_content("Hallo Zoë.\n")
    path = tmp_path / "mail.eml"
    path.write_bytes(bytes(message))
    assert b'<"jm@example.de">' in path.read_bytes()  # as the package writes it
    assert extract(path).text.splitlines()[:2] == [
        "From: Jürgen Müller <jm@example.de>",
        "To: Zoë Çelik <z@example.tr>, Ann <a@x.org>",
    ]
