"""OpenDocument spreadsheets and presentations (ODS, ODP, their templates) and EPUB
e-books: detected by their bytes, read as XLSX, PPTX and HTML are, within bounds."""

from __future__ import annotations

import io
import time
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from documents.extractors import (
    CorruptFileError,
    EncryptedFileError,
    UnsupportedFileError,
    archive,
    detect_format,
    epub,
    extract,
)
from documents.extractors.detect import unsupported_reason
from documents.extractors.formats import accept_attribute, by_extension, by_mime_type
from documents.models import Document
from tests.files import odt_package, rezipped, with_doctype, with_member, write

UPLOAD_URL = "/documents/upload/"
API_URL = "/api/documents/"
ODF = "application/vnd.oasis.opendocument"
_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" '
    'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" '
    'xmlns:dc="http://purl.org/dc/elements/1.1/" '
    'xmlns:officeooo="http://openoffice.org/2009/office" office:version="1.3"'
)
ENCRYPTED_MANIFEST = (
    '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest '
    'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
    '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml">'
    "<manifest:encryption-data manifest:checksum-type='SHA1'/></manifest:file-entry>"
    "</manifest:manifest>"
)


def odf_package(
    kind: str,
    body: str,
    automatic_styles: str = "",
    manifest: str = "",
    styles: str = "",
) -> bytes:
    """An ODF package whose mimetype names `kind` ("spreadsheet"), around an
    office:`kind` body (its first word: "spreadsheet-template" has a spreadsheet);
    `styles`: styles.xml's inner XML (master pages, their headers), if any."""
    element = kind.split("-")[0]
    content = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {_NS}>'
        f"<office:automatic-styles>{automatic_styles}</office:automatic-styles>"
        f"<office:body><office:{element}>{body}</office:{element}></office:body>"
        "</office:document-content>"
    )
    styles_xml = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-styles {_NS}>'
        f"{styles}</office:document-styles>"
        if styles
        else ""
    )
    mimetype = f"{ODF}.{kind}".encode()
    return rezipped(
        odt_package(content, styles_xml, manifest=manifest),
        lambda name, data: (name, mimetype if name == "mimetype" else data),
    )


def cell(text: str = "", repeat: int | str = 0, **attributes: str) -> str:
    """A table:table-cell; `office_value_type="float"` is office:value-type="float"."""
    more = f' table:number-columns-repeated="{repeat}"' if repeat else ""
    for name, value in attributes.items():
        more += f' {name.replace("_", ":", 1).replace("_", "-")}="{value}"'
    return f"<table:table-cell{more}>{text and f'<text:p>{text}</text:p>'}</table:table-cell>"


def row(*cells: str, repeat: int | str = 0) -> str:
    more = f' table:number-rows-repeated="{repeat}"' if repeat else ""
    return f"<table:table-row{more}>{''.join(cells)}</table:table-row>"


def sheet(name: str, *rows: str, style: str = "") -> str:
    more = f' table:style-name="{style}"' if style else ""
    return f'<table:table table:name="{name}"{more}>{"".join(rows)}</table:table>'


# --- Spreadsheets (ODS) ----------------------------------------------------------------


def test_ods_sheets_read_as_xlsx_ones_are(tmp_path: Path) -> None:
    body = sheet(
        "Budget",
        '<table:table-column table:number-columns-repeated="1024"/>',
        "<table:table-header-rows>"
        + row(cell("item"), cell("amount"), cell(repeat=1022))
        + "</table:table-header-rows>",
        row(
            cell("rent"),
            # A number as the sheet shows it, not as it is stored.
            cell("1 200,00 €", office_value_type="currency", office_value="1200"),
            cell(repeat=16382),  # LibreOffice pads each row to its last column
        ),
        row(cell(repeat=1024), repeat=3),  # empty rows are left out
        "<table:table-row-group>"
        + row(cell("gap"), cell(repeat=3), cell("far"))  # empty cells between count
        + row(cell("<text:span>two</text:span>"), cell("x", repeat=3))
        + "</table:table-row-group>",
        row(cell("same"), repeat=2),
        row(
            # Two paragraphs of a cell on its line; a merged-over cell's leftovers
            # are not shown; a comment follows the sheet's rows, as XLSX's.
            "<table:table-cell><text:p>first</text:p><text:p>second\tpart</text:p>"
            "<office:annotation><dc:creator>Ann</dc:creator>"
            "<text:p>COMMENT</text:p></office:annotation></table:table-cell>",
            "<table:covered-table-cell><text:p>COVERED</text:p>"
            "</table:covered-table-cell>",
            # A value written without a paragraph (as some generators do).
            '<table:table-cell office:value-type="float" office:value="42"/>',
        ),
        row(cell(repeat=1024), repeat=1048570),  # and up to the sheet's last row
    ) + sheet("Notes", row(cell("done")))
    path = write(tmp_path, "upload.bin", odf_package("spreadsheet", body))
    assert detect_format(path).key == "ods"
    result = extract(path)
    assert result.text == (
        "Budget\n"
        "item\tamount\n"
        "rent\t1 200,00 €\n"
        "gap\t\t\t\tfar\n"
        "two\tx\tx\tx\n"
        "same\nsame\n"
        "first second part\t\t42\n"
        "Comment on A10: COMMENT\n"
        "\n"
        "Notes\n"
        "done"
    )
    assert (result.extractor, result.page_count, result.confidence) == (
        "ods",
        None,
        1.0,
    )


def test_a_hidden_sheet_is_not_read(tmp_path: Path) -> None:
    styles = (
        '<style:style style:name="ta1" style:family="table">'
        '<style:table-properties table:display="true"/></style:style>'
        '<style:style style:name="ta2" style:family="table">'
        '<style:table-properties table:display="false"/></style:style>'
    )
    body = (
        sheet("Shown", row(cell("visible")), style="ta1")
        + sheet("Secret", row(cell("SALARIES")), style="ta2")
        + sheet("Last", row(cell("end")), style="ta1")
    )
    path = write(tmp_path, "s.ods", odf_package("spreadsheet", body, styles))
    assert extract(path).text == "Shown\nvisible\n\nLast\nend"


@pytest.mark.timeout(60)
def test_huge_repeats_neither_hang_nor_fill_memory(tmp_path: Path) -> None:
    # A few hundred bytes asking for a billion columns and rows: expanded, they
    # would take hours and terabytes.
    billion = 10**9
    body = sheet(
        "Bomb",
        row(cell(repeat=billion), cell("after")),  # past the sheet's last column
        row(cell("wide", repeat=billion)),
        row(cell("tall"), repeat=billion),
    )
    path = write(tmp_path, "bomb.ods", odf_package("spreadsheet", body))
    started = time.monotonic()
    tracemalloc.start()
    try:
        result = extract(path, max_chars=2_000_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 30
    assert peak < 100 * 1024 * 1024
    lines = result.text.split("\n")
    assert lines[0] == "Bomb"
    # A row is a sheet's width at most (16,384 columns), a sheet its height.
    assert lines[1] == "\t".join(["wide"] * 16_384)
    assert "after" not in result.text
    assert lines[2:5] == ["tall"] * 3
    # Cut at the limit (a line break there is stripped with the text's end).
    assert 2_000_000 - 1 <= len(result.text) <= 2_000_000
    assert "cut at 2,000,000" in result.note
    # Alone, the tall row is read to the sheet's last row (1,048,576) and no further.
    body = sheet("Tall", row(cell("t"), repeat=billion))
    path = write(tmp_path, "tall.ods", odf_package("spreadsheet", body))
    assert extract(path).text.count("t\n") == 1_048_576 - 1


def test_a_count_no_number_parser_takes_is_one(tmp_path: Path) -> None:
    # int() refuses "²" (a digit to str.isdigit()) and 5,000 digits: the file
    # failed as an unknown error.
    body = (
        "<text:p>a<text:s text:c='²'/>b<text:s text:c='" + "9" * 5000 + "'/>c</text:p>"
    )
    path = write(tmp_path, "t.odt", odf_package("text", body))
    text = extract(path).text
    assert text.startswith("a b") and text.endswith(" " * 1024 + "c")
    body = sheet(
        "S", row(cell("v", repeat="²"), cell("w")), row(cell("r"), repeat="9" * 5000)
    )
    path = write(tmp_path, "s.ods", odf_package("spreadsheet", body))
    assert extract(path, max_chars=20).text == "S\nv\tw" + "\nr" * 7


@pytest.mark.parametrize(
    "damage",
    [lambda xml: xml[: len(xml) // 2], with_doctype],
    ids=["cut-in-half", "billion-laughs"],
)
def test_a_damaged_ods_is_corruption(tmp_path: Path, damage) -> None:
    ods = odf_package("spreadsheet", sheet("S", row(cell("damaged"))))
    path = write(tmp_path, "d.ods", with_member(ods, "content.xml", damage))
    with pytest.raises(CorruptFileError) as info:
        extract(path)
    assert str(info.value).startswith("The file is damaged: its XML cannot be parsed (")
    assert info.value.error_type == "corruption"


@pytest.mark.parametrize("kind", ["spreadsheet", "presentation"])
def test_a_password_protected_ods_or_odp_is_named_encrypted(
    tmp_path: Path, kind: str
) -> None:
    package = odf_package(kind, "", manifest=ENCRYPTED_MANIFEST)
    path = write(tmp_path, "locked.bin", package)
    with pytest.raises(EncryptedFileError, match="protected by a password") as info:
        extract(path)
    assert info.value.error_type == "corruption"


# --- Presentations (ODP) ---------------------------------------------------------------


def frame(inner: str, cls: str = "") -> str:
    more = f' presentation:class="{cls}"' if cls else ""
    return f"<draw:frame{more}><draw:text-box>{inner}</draw:text-box></draw:frame>"


def test_odp_slides_then_their_notes_as_pptx_ones(tmp_path: Path) -> None:
    styles = (
        '<style:style style:name="T1" style:family="text">'
        '<style:text-properties text:display="none"/></style:style>'
    )
    slide_one = (
        '<draw:page draw:name="page1">'
        + frame("<text:p>Harbour plans</text:p>", "title")
        + frame(
            "<text:list><text:list-item><text:p>Dredge   the channel</text:p>"
            "</text:list-item><text:list-item><text:p/></text:list-item>"
            "<text:list-item><text:p>Line<text:line-break/>break"
            '<text:span text:style-name="T1">HIDDEN</text:span></text:p>'
            "</text:list-item></text:list>",
            "outline",
        )
        + "<draw:g><draw:custom-shape><text:p>In a group</text:p></draw:custom-shape>"
        "<draw:rect><text:p>Second shape</text:p></draw:rect></draw:g>"
        "<draw:frame><table:table>"
        + row(cell("Mon"), cell("06:12"))
        + row(cell(), cell())
        + row(cell("Tue"), cell("07:01"))
        + "</table:table></draw:frame>"
        "<officeooo:annotation><dc:creator>Ann</dc:creator>"
        "<text:p>REVIEW COMMENT</text:p></officeooo:annotation>"
        "<presentation:notes><draw:page-thumbnail/>"
        + frame("<text:p>Say it slowly</text:p><text:p/><text:p>then pause</text:p>")
        + "</presentation:notes></draw:page>"
    )
    slide_two = (
        '<draw:page draw:name="page2">'
        + frame("<text:p>Budget</text:p>", "title")
        + "<presentation:notes>"
        + frame("<text:p/>", "notes")
        + "</presentation:notes></draw:page>"
    )
    package = odf_package("presentation", slide_one + slide_two, styles)
    path = write(tmp_path, "upload.bin", package)
    assert detect_format(path).key == "odp"
    result = extract(path)
    assert result.text == (
        "Harbour plans\n"
        "Dredge the channel\n"
        "Line\nbreak\n"
        "In a group\n"
        "Second shape\n"
        "Mon\t06:12\n"
        "Tue\t07:01\n"
        "Say it slowly\n"
        "then pause\n"
        "Comment: REVIEW COMMENT\n"
        "\n"
        "Budget"
    )
    assert (result.extractor, result.page_count) == ("odp", 2)


def test_odp_layout_placeholders_and_empty_page_numbers_are_not_read(
    tmp_path: Path,
) -> None:
    # Converted from PowerPoint: the notes page's slide-number placeholder holds
    # the field's "<number>", and a slide's footer and date placeholders show the
    # master's; a page-number field elsewhere is read only with a value.
    number = "<text:p><text:page-number>&lt;number&gt;</text:page-number></text:p>"
    slide = (
        '<draw:page draw:name="page1">'
        + frame("<text:p>Harbour plans</text:p>", "title")
        + frame("<text:p>Footer text</text:p>", "footer")
        + frame("<text:p>01/02/2024</text:p>", "date-time")
        + frame("<text:p>Slide <text:page-number>3</text:page-number></text:p>")
        + frame(
            "<text:p>Slide <text:page-number>&lt;number&gt;</text:page-number></text:p>"
        )
        + "<presentation:notes>"
        + frame("<text:p>Speaker notes</text:p>", "notes")
        + frame(number, "page-number")
        + frame("<text:p>Header text</text:p>", "header")
        + "</presentation:notes></draw:page>"
    )
    path = write(tmp_path, "deck.odp", odf_package("presentation", slide))
    assert extract(path).text == "Harbour plans\nSlide 3\nSlide\nSpeaker notes"


# --- Charts (ODP, ODT) ----------------------------------------------------------------

_CHART_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:chart="urn:oasis:names:tc:opendocument:xmlns:chart:1.0"'
)


def text_cell(text: str) -> str:
    return f'<table:table-cell office:value-type="string"><text:p>{text}</text:p></table:table-cell>'


def number_cell(value: str) -> str:
    return (
        f'<table:table-cell office:value-type="float" office:value="{value}">'
        f"<text:p>{value}</text:p></table:table-cell>"
    )


# As LibreOffice saves a bar chart: titles, then the series and categories by
# address into the chart's own table, whose first row names the series. The
# numbers, and a third column no series uses, are not read.
CHART = f"""<?xml version="1.0" encoding="UTF-8"?><office:document-content {_CHART_NS}>
<office:body><office:chart><chart:chart chart:class="chart:bar">
<chart:title><text:p>Sales by region</text:p></chart:title>
<chart:subtitle><text:p>2024</text:p></chart:subtitle><chart:legend/>
<chart:plot-area table:cell-range-address="local-table.$A$1:.$C$4">
<chart:axis chart:dimension="x" chart:name="primary-x">
<chart:title><text:p>Region</text:p></chart:title>
<chart:categories table:cell-range-address="local-table.$A$2:.$A$4"/></chart:axis>
<chart:axis chart:dimension="y" chart:name="primary-y">
<chart:title><text:p>Millions</text:p></chart:title></chart:axis>
<chart:series chart:values-cell-range-address="local-table.$B$2:.$B$4"
 chart:label-cell-address="local-table.$B$1" chart:class="chart:bar"/>
<chart:series chart:values-cell-range-address="local-table.$C$2:.$C$4"
 chart:label-cell-address="local-table.$C$1" chart:class="chart:bar"/>
</chart:plot-area><table:table table:name="local-table">
<table:table-header-rows><table:table-row><table:table-cell/>
{text_cell("Revenue")}{text_cell("Costs")}{text_cell("Unused")}</table:table-row>
</table:table-header-rows><table:table-rows>
<table:table-row>{text_cell("East")}{number_cell("1")}{number_cell("2")}</table:table-row>
<table:table-row>{text_cell("West")}{number_cell("3")}{number_cell("4")}</table:table-row>
<table:table-row>{number_cell("2025")}{number_cell("5")}{number_cell("6")}</table:table-row>
</table:table-rows></table:table></chart:chart></office:chart></office:body>
</office:document-content>"""
CHART_LINES = "Sales by region\n2024\nRegion\nMillions\nRevenue\tCosts\nEast\tWest"
CHART_FRAME = (
    '<draw:frame><draw:object xlink:href="./Object 1" '
    'xmlns:xlink="http://www.w3.org/1999/xlink"/></draw:frame>'
)


def with_chart(package: bytes, chart: str = CHART) -> bytes:
    """The package with `chart` as its embedded object "Object 1"."""
    out = io.BytesIO(package)
    with zipfile.ZipFile(out, "a") as archive:
        archive.writestr("Object 1/content.xml", chart)
    return out.getvalue()


def test_an_odp_chart_s_labels_follow_the_slide_text_as_pptx_ones(
    tmp_path: Path,
) -> None:
    # The chart's words are in its own sub-document, which was not read.
    slide = (
        '<draw:page draw:name="page1">'
        + frame("<text:p>Sales</text:p>", "title")
        + CHART_FRAME
        + frame("<text:p>Source: ERP</text:p>")
        + "<presentation:notes>"
        + frame("<text:p>West is new</text:p>", "notes")
        + "</presentation:notes></draw:page>"
    )
    package = with_chart(odf_package("presentation", slide))
    text = extract(write(tmp_path, "deck.odp", package)).text
    assert text == f"Sales\nSource: ERP\n{CHART_LINES}\nWest is new"


def test_an_odt_chart_s_labels_follow_its_paragraph_as_docx_ones(
    tmp_path: Path,
) -> None:
    body = (
        "<text:p>Figures</text:p>"
        f"<text:p>Figure 1{CHART_FRAME}</text:p>"
        "<text:p>Comments</text:p>"
    )
    package = with_chart(odf_package("text", body))
    text = extract(write(tmp_path, "report.odt", package)).text
    assert text == f"Figures\nFigure 1\n{CHART_LINES}\nComments"


@pytest.mark.parametrize(
    "chart",
    ["<office:document-content", CHART.replace("chart:chart", "chart:none")],
    ids=["damaged", "not-a-chart"],
)
def test_a_damaged_odf_chart_costs_its_own_labels(tmp_path: Path, chart) -> None:
    slide = '<draw:page draw:name="p">' + frame("<text:p>Sales</text:p>") + CHART_FRAME
    package = with_chart(odf_package("presentation", slide + "</draw:page>"), chart)
    assert extract(write(tmp_path, "deck.odp", package)).text == "Sales"


def test_an_entity_bomb_in_an_odf_chart_is_refused(tmp_path: Path) -> None:
    slide = f'<draw:page draw:name="p">{CHART_FRAME}</draw:page>'
    chart = with_doctype(CHART.encode()).decode()
    package = with_chart(odf_package("presentation", slide), chart)
    with pytest.raises(CorruptFileError) as info:
        extract(write(tmp_path, "bomb.odp", package))
    assert "DOCTYPE" in str(info.value)


# --- Templates, detection, uploads -----------------------------------------------------


def spreadsheet(kind: str = "spreadsheet") -> bytes:
    return odf_package(kind, sheet("Budget", row(cell("rent"), cell("900"))))


def presentation(kind: str = "presentation") -> bytes:
    slide = '<draw:page draw:name="p1">' + frame("<text:p>Harbour plans</text:p>")
    notes = "<presentation:notes>" + frame("<text:p>Say it slowly</text:p>")
    return odf_package(kind, slide + notes + "</presentation:notes></draw:page>")


def text_template() -> bytes:
    return odf_package("text-template", "<text:p>Dear committee,</text:p>")


FORMATS = [
    ("budget.ods", spreadsheet, f"{ODF}.spreadsheet", "Budget\nrent\t900"),
    ("budget.ots", lambda: spreadsheet("spreadsheet-template"), f"{ODF}.spreadsheet",
     "Budget\nrent\t900"),
    ("deck.odp", presentation, f"{ODF}.presentation", "Harbour plans\nSay it slowly"),
    ("deck.otp", lambda: presentation("presentation-template"),
     f"{ODF}.presentation", "Harbour plans\nSay it slowly"),
    ("letter.ott", text_template, f"{ODF}.text", "Dear committee,"),
    ("book.epub", lambda: epub_bytes(), "application/epub+zip",
     "The Harbour\n\nChapter One\nThe tide came in."),
]  # fmt: skip


@pytest.mark.parametrize(("name", "make", "mime", "expected"), FORMATS)
def test_each_is_detected_uploaded_and_read(
    user_client, tmp_path: Path, name, make, mime, expected
) -> None:
    content = make()
    path = write(tmp_path, "upload.bin", content)  # the name says nothing
    assert detect_format(path).mime_type == mime
    assert extract(path).text.startswith(expected)
    assert extract(path, mime_type=mime).text.startswith(expected)
    response = user_client.post(UPLOAD_URL, {"file": SimpleUploadedFile(name, content)})
    assert response.status_code == 302, response.content.decode()
    api = user_client.post(
        API_URL,
        {"file": SimpleUploadedFile(f"copy-{name}", content), "allow_duplicates": "1"},
    )
    assert api.status_code == 202, api.content
    assert list(Document.objects.values_list("mime_type", flat=True)) == [mime, mime]


def test_templates_are_offered_by_name_and_mime_type() -> None:
    # A template was read once uploaded (its mimetype starts as the document's),
    # but the form did not offer it, nor did its MIME type name a format.
    offered = accept_attribute().split(",")
    for key, kind, extension in [
        ("odt", "text", ".ott"),
        ("ods", "spreadsheet", ".ots"),
        ("odp", "presentation", ".otp"),
    ]:
        assert {f".{key}", extension, f"{ODF}.{kind}-template"} <= set(offered)
        assert by_extension(f"x{extension}").key == key
        assert by_mime_type(f"{ODF}.{kind}-template").key == key
    assert ".epub" in offered and by_mime_type("application/epub+zip").key == "epub"


@pytest.mark.parametrize("make", [spreadsheet, presentation, lambda: epub_bytes()])
def test_a_cut_short_one_is_damaged_not_unsupported(tmp_path: Path, make) -> None:
    content = make()
    path = write(tmp_path, "half", content[: len(content) // 2])
    assert detect_format(path) is not None
    with pytest.raises(CorruptFileError, match="not a complete ZIP archive"):
        extract(path)


def test_another_zip_names_the_new_formats_among_those_read(tmp_path: Path) -> None:
    path = tmp_path / "other.zip"
    with zipfile.ZipFile(path, "w") as other:
        other.writestr("readme.txt", "hello")
    reason = unsupported_reason(path)
    for label in (
        "OpenDocument spreadsheet (ODS)",
        "OpenDocument presentation (ODP)",
        "E-book (EPUB)",
    ):
        assert label in reason
    with pytest.raises(UnsupportedFileError, match=r"not an E-book \(\.epub\) file"):
        extract(path, mime_type="application/epub+zip")


# --- EPUB ------------------------------------------------------------------------------

XHTML = (
    '<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html>\n'
    '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>{title}</title>'
    '<link rel="stylesheet" href="style.css"/></head><body>{body}</body></html>'
)
CHAPTERS = {
    "ch1": ("Text/chapter%201.xhtml", "<h1>Chapter One</h1><p>The tide came in.</p>"),
    "ch2": ("Text/ch2.xhtml", "<h1>Chapter Two</h1><p>The boats went out.</p>"),
}


def epub_bytes(
    chapters: dict[str, tuple[str, str]] = CHAPTERS,
    spine: tuple[str, ...] = ("ch1", "ch2"),
    encryption: str = "",
    title: str = "The Harbour",
    extra_spine: str = "",
) -> bytes:
    """An EPUB 3 whose package lists `chapters` (id: href, body) and reads `spine`;
    the chapters are stored in the ZIP last to first."""
    items = "".join(
        f'<item id="{key}" href="{href}" media-type="application/xhtml+xml"/>'
        for key, (href, _) in chapters.items()
    )
    refs = "".join(f'<itemref idref="{key}"/>' for key in spine)
    package = (
        '<?xml version="1.0" encoding="UTF-8"?><package '
        'xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
        f'<dc:identifier id="id">urn:uuid:1</dc:identifier><dc:title>{title}</dc:title>'
        "<dc:language>en</dc:language></metadata>"
        f'<manifest><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" '
        f'properties="nav"/><item id="css" href="Text/style.css" media-type="text/css"/>'
        f"{items}</manifest><spine>{refs}{extra_spine}</spine></package>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr(
            zipfile.ZipInfo("mimetype"),
            "application/epub+zip",
            compress_type=zipfile.ZIP_STORED,
        )
        book.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" '
            'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
            '<rootfile full-path="OEBPS/content.opf" '
            'media-type="application/oebps-package+xml"/></rootfiles></container>',
        )
        if encryption:
            book.writestr("META-INF/encryption.xml", encryption)
        book.writestr("OEBPS/content.opf", package)
        book.writestr("OEBPS/nav.xhtml", XHTML.format(title="Nav", body="<p>NAV</p>"))
        for key, (href, body) in reversed(chapters.items()):
            name = "OEBPS/" + href.replace("%20", " ")
            book.writestr(name, XHTML.format(title=f"{title} {key}", body=body))
    return out.getvalue()


def test_epub_chapters_are_read_in_spine_order_not_zip_order(tmp_path: Path) -> None:
    # Stored ch2 first; the spine reads ch1 (its href percent-encoded) first. Each
    # chapter's <title> (the book's again) is not read, the book's title once.
    path = write(tmp_path, "upload.bin", epub_bytes())
    assert detect_format(path).key == "epub"
    result = extract(path)
    assert result.text == (
        "The Harbour\n\n"
        "Chapter One\nThe tide came in.\n\n"
        "Chapter Two\nThe boats went out."
    )
    assert (result.extractor, result.note, result.confidence) == ("epub", "", 1.0)
    path = write(tmp_path, "reversed.epub", epub_bytes(spine=("ch2", "ch1")))
    assert extract(path).text.index("Chapter Two") < extract(path).text.index(
        "Chapter One"
    )


def test_epub_spine_oddities_are_read_once_and_noted(tmp_path: Path) -> None:
    chapters = {
        **CHAPTERS,
        "notes": ("Text/notes.xhtml", "<p>Endnote one.</p>"),
        "gone": ("Text/gone.xhtml", "<p>never stored</p>"),
        "blank": ("Text/blank.xhtml", ""),
    }
    content = epub_bytes(
        chapters,
        # Out of the reading order (linear="no"): after it; twice: once.
        spine=("ch2",),
        extra_spine='<itemref idref="notes" linear="no"/><itemref idref="ch1"/>'
        + '<itemref idref="ch2"/>' * 1000
        + '<itemref idref="gone"/><itemref idref="nosuchid"/><itemref idref="blank"/>',
    )
    # One chapter stored elsewhere, another with no document in it.
    content = rezipped(
        content,
        lambda name, data: (
            name.replace("gone", "elsewhere"),
            b"<!-- nothing -->" if name.endswith("blank.xhtml") else data,
        ),
    )
    result = extract(write(tmp_path, "b.epub", content))
    assert result.text == (
        "The Harbour\n\n"
        "Chapter Two\nThe boats went out.\n\n"
        "Chapter One\nThe tide came in.\n\n"
        "Endnote one."
    )
    assert result.note == (
        "1 of the chapters the book lists are missing from it. "
        "A chapter (OEBPS/Text/blank.xhtml) could not be read."
    )


def test_epub_reading_is_bounded(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(epub, "_MAX_CHAPTERS", 1)
    result = extract(write(tmp_path, "a.epub", epub_bytes()))
    assert "Chapter One" in result.text and "Chapter Two" not in result.text
    assert "Only the first 1 chapters" in result.note
    monkeypatch.setattr(epub, "_MAX_CHAPTERS", 10_000)
    monkeypatch.setattr(epub, "_MAX_CHAPTER_BYTES", 300)
    big = {**CHAPTERS, "ch2": ("Text/ch2.xhtml", "<p>" + "words " * 100 + "</p>")}
    result = extract(write(tmp_path, "b.epub", epub_bytes(big)))
    assert "Chapter One" in result.text and "words" not in result.text
    assert "(OEBPS/Text/ch2.xhtml) was not read." in result.note
    # The archive's own guard, as for every ZIP format: a zip bomb is refused.
    monkeypatch.setattr(archive, "MAX_UNCOMPRESSED_BYTES", 64 * 1024)
    huge = {**CHAPTERS, "ch2": ("Text/ch2.xhtml", " " * 100_000)}
    with pytest.raises(CorruptFileError, match="zip bomb"):
        extract(write(tmp_path, "c.epub", epub_bytes(huge)))


ENCRYPTION = (
    '<?xml version="1.0"?><encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:'
    'container" xmlns:enc="http://www.w3.org/2001/04/xmlenc#">{}</encryption>'
)


def encrypted(uri: str, algorithm: str) -> str:
    return (
        f'<enc:EncryptedData><enc:EncryptionMethod Algorithm="{algorithm}"/>'
        f'<enc:CipherData><enc:CipherReference URI="{uri}"/></enc:CipherData>'
        "</enc:EncryptedData>"
    )


def test_a_drm_encrypted_epub_is_named_encrypted(tmp_path: Path) -> None:
    # Adobe's DRM lists every chapter, encrypted with AES.
    aes = "http://www.w3.org/2001/04/xmlenc#aes128-cbc"
    drm = ENCRYPTION.format(
        encrypted("OEBPS/Text/chapter%201.xhtml", aes)
        + encrypted("OEBPS/Text/ch2.xhtml", aes)
    )
    path = write(tmp_path, "locked.epub", epub_bytes(encryption=drm))
    with pytest.raises(EncryptedFileError, match="protected by DRM") as info:
        extract(path)
    assert info.value.error_type == "corruption"
    # Fonts obfuscated to tie them to the book lock no text.
    fonts = ENCRYPTION.format(
        encrypted("OEBPS/Fonts/serif.otf", "http://www.idpf.org/2008/embedding")
        + encrypted("OEBPS/Text/ch2.xhtml", "http://ns.adobe.com/pdf/enc#RC")
    )
    path = write(tmp_path, "fonts.epub", epub_bytes(encryption=fonts))
    assert "Chapter Two" in extract(path).text


def test_a_damaged_epub_package_is_corruption(tmp_path: Path) -> None:
    content = with_member(epub_bytes(), "OEBPS/content.opf", lambda xml: xml[:200])
    with pytest.raises(CorruptFileError, match="its XML cannot be parsed"):
        extract(write(tmp_path, "d.epub", content))


def test_an_old_epub_is_read_as_its_tools_wrote_it(tmp_path: Path) -> None:
    # container.xml pointing to the wrong place (the archive's .opf is read), the
    # title in OEB 1's dc-metadata, a chapter in Latin-1 with an XHTML 1.1 DOCTYPE.
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as book:
        book.writestr("mimetype", "application/epub+zip")
        book.writestr(
            "META-INF/container.xml",
            '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="OPS/book.opf"/></rootfiles></container>',
        )
        book.writestr(
            "content.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf">'
            '<metadata><dc-metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
            "<dc:title>Old  Book</dc:title></dc-metadata></metadata><manifest>"
            '<item id="a" href="text/a.html" media-type="application/xhtml+xml"/>'
            '</manifest><spine><itemref idref="a"/></spine></package>',
        )
        book.writestr(
            "text/a.html",
            '<?xml version="1.0" encoding="iso-8859-1"?><!DOCTYPE html PUBLIC '
            '"-//W3C//DTD XHTML 1.1//EN" "http://www.w3.org/TR/xhtml11/DTD/'
            'xhtml11.dtd"><html xmlns="http://www.w3.org/1999/xhtml"><head><title>'
            "Old Book</title></head><body><p>Caf\xe9&nbsp;au lait</p>"
            '<p hidden="">HIDDEN</p></body></html>'.encode("latin-1"),
        )
    result = extract(write(tmp_path, "old.epub", out.getvalue()))
    assert result.text == "Old Book\n\nCafé au lait"


def with_zip_password_flag(data: bytes, member: str) -> bytes:
    """The same ZIP with `member` flagged as encrypted in the central directory (a
    ZIP password on the member itself; zipfile writes none)."""
    out = bytearray(data)
    start = 0
    while (start := out.find(b"PK\x01\x02", start)) != -1:
        length = int.from_bytes(out[start + 28 : start + 30], "little")
        if out[start + 46 : start + 46 + length] == member.encode():
            out[start + 8] |= 0x1
        start += 46
    return bytes(out)


def test_an_epub_whose_chapters_have_a_zip_password_is_named_encrypted(
    tmp_path: Path,
) -> None:
    content = with_zip_password_flag(epub_bytes(), "OEBPS/Text/ch2.xhtml")
    with pytest.raises(EncryptedFileError, match="protected by DRM"):
        extract(write(tmp_path, "zip-locked.epub", content))


def test_epub_placeholder_title_is_not_read(tmp_path: Path) -> None:
    # LibreOffice's export names a document without a title "Unknown Title".
    path = write(tmp_path, "book.epub", epub_bytes(title="Unknown Title"))
    assert extract(path).text.startswith("Chapter One\nThe tide came in.")
