"""OpenDocument embedded objects: a spreadsheet's charts are read as a text's and a
slide's are, and only the objects the body names are read."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from documents.extractors import extract
from tests.files import BILLION_LAUGHS, odt_package, rezipped

_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:xlink="http://www.w3.org/1999/xlink" '
    'xmlns:chart="urn:oasis:names:tc:opendocument:xmlns:chart:1.0" '
    'office:version="1.3"'
)


def package(kind: str, body: str, objects: dict[str, str]) -> bytes:
    """An ODF package of `kind` ("spreadsheet") around `body`, with embedded
    objects by folder ("Object 1": its content.xml)."""
    content = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {_NS}>'
        f"<office:body><office:{kind}>{body}</office:{kind}></office:body>"
        "</office:document-content>"
    )
    mimetype = f"application/vnd.oasis.opendocument.{kind}".encode()
    data = rezipped(
        odt_package(content),
        lambda name, data: (name, mimetype if name == "mimetype" else data),
    )
    out = io.BytesIO(data)
    with zipfile.ZipFile(out, "a") as archive:
        for name, xml in objects.items():
            archive.writestr(f"{name}/content.xml", xml)
    return out.getvalue()


def cell(text: str) -> str:
    return f'<table:table-cell office:value-type="string"><text:p>{text}</text:p></table:table-cell>'


def number(value: str) -> str:
    return (
        f'<table:table-cell office:value-type="float" office:value="{value}">'
        f"<text:p>{value}</text:p></table:table-cell>"
    )


def frame(name: str) -> str:
    return f'<draw:frame><draw:object xlink:href="./{name}"/></draw:frame>'


def chart(title: str, table: str = "Sales", axis: str = "Region") -> str:
    """A chart as LibreOffice Calc saves one: its ranges name the sheet's cells
    ("Sales.$B$1"), and its own table caches the data laid out otherwise, the
    series' names in its first row, whatever their place on the sheet."""
    return f"""<?xml version="1.0" encoding="UTF-8"?><office:document-content {_NS}>
<office:body><office:chart><chart:chart chart:class="chart:bar">
<chart:title><text:p>{title}</text:p></chart:title>
<chart:plot-area table:cell-range-address="{table}.$A$3:.$B$5">
<chart:axis chart:dimension="x"><chart:title><text:p>{axis}</text:p></chart:title>
<chart:categories table:cell-range-address="{table}.$A$4:.$A$5"/></chart:axis>
<chart:axis chart:dimension="y"/>
<chart:series chart:values-cell-range-address="{table}.$B$4:.$B$5"
 chart:label-cell-address="{table}.$B$3"/>
</chart:plot-area><table:table table:name="local-table">
<table:table-header-rows><table:table-row><table:table-cell/>{cell("CACHED NAME")}
</table:table-row></table:table-header-rows><table:table-rows>
<table:table-row>{cell("CACHED EAST")}{number("1")}</table:table-row>
<table:table-row>{cell("CACHED WEST")}{cell("CACHED B3")}</table:table-row>
<table:table-row>{cell("CACHED A4")}{number("4")}</table:table-row>
<table:table-row>{cell("CACHED A5")}{number("5")}</table:table-row>
</table:table-rows></table:table></chart:chart></office:chart></office:body>
</office:document-content>"""


def sheet(name: str, *rows: str, shapes: str = "") -> str:
    shapes = f"<table:shapes>{shapes}</table:shapes>" if shapes else ""
    return f'<table:table table:name="{name}">{shapes}{"".join(rows)}</table:table>'


def row(*cells: str) -> str:
    return f"<table:table-row>{''.join(cells)}</table:table-row>"


def write(tmp_path: Path, body: str, objects: dict[str, str]) -> Path:
    path = tmp_path / "sales.ods"
    path.write_bytes(package("spreadsheet", body, objects))
    return path


def test_an_ods_chart_s_titles_follow_its_sheet(tmp_path: Path) -> None:
    # ODT and ODP charts were read; a spreadsheet's were not. Its series names and
    # categories are the sheet's own cells, read with it: not looked up in the
    # chart's cache, whose cells stand elsewhere.
    body = sheet(
        "Sales",
        row(cell("Sales 2024")),
        row(),
        row(cell("Region"), cell("Revenue")),
        row(cell("East"), number("1")),
        # A chart anchored in a cell, as on the sheet (table:shapes).
        row(
            cell("West"),
            number("2"),
            f"<table:table-cell>{frame('Object 2')}</table:table-cell>",
        ),
        shapes=frame("Object 1"),
    ) + sheet("Notes", row(cell("done")))
    objects = {
        "Object 1": chart("Revenue by region"),
        "Object 2": chart("Second chart", table="'Sales'", axis="Where"),
    }
    text = extract(write(tmp_path, body, objects)).text
    assert text.splitlines() == [
        "Sales",
        "Sales 2024",
        "Region\tRevenue",
        "East\t1",
        "West\t2",
        "Revenue by region",
        "Region",
        "Second chart",
        "Where",
        "",
        "Notes",
        "done",
    ]


def test_a_chart_s_own_table_is_still_read_in_a_text(tmp_path: Path) -> None:
    # A text's chart names its own table ("local-table"): its labels are read there.
    body = f"<text:p>Figure 1{frame('Object 1')}</text:p>"
    path = tmp_path / "report.odt"
    path.write_bytes(
        package("text", body, {"Object 1": chart("Revenue", table="local-table")})
    )
    assert extract(path).text.splitlines() == [
        "Figure 1",
        "Revenue",
        "Region",
        "CACHED B3",
        "CACHED A4\tCACHED A5",
    ]


@pytest.mark.parametrize("kind", ["spreadsheet", "text"])
def test_only_the_objects_the_body_names_are_read(tmp_path: Path, kind: str) -> None:
    # Every object's content.xml was read and checked up front: one the body does
    # not show (left over from an edit) refused the whole file for its DOCTYPE.
    bomb = (BILLION_LAUGHS + b"<office:document-content/>").decode()
    body = (
        sheet("S", row(cell("shown")), shapes=frame("Object 1"))
        if kind == "spreadsheet"
        else f"<text:p>shown{frame('Object 1')}</text:p>"
    )
    path = tmp_path / "doc.bin"
    path.write_bytes(
        package(kind, body, {"Object 1": chart("Named"), "Object 9": bomb})
    )
    text = extract(path).text
    assert "shown" in text and "Named" in text
