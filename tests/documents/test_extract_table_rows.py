"""Tables of Word (DOCX) and OpenDocument text (ODT) files: a row of data is a line,
its cells separated by tabs, as XLSX, ODS, PPTX and RTF tables are read; a row whose
cells hold several paragraphs (a page laid out in a table) is read cell after cell."""

from __future__ import annotations

import copy
import io
from collections.abc import Callable
from pathlib import Path

import docx
from docx.oxml import parse_xml
from docx.oxml.ns import nsdecls, qn
from docx.shared import Inches

from documents.extractors import extract
from tests.documents.test_extract_lists import docx_package
from tests.documents.test_extract_odf_epub import odf_package
from tests.files import write


def word(build: Callable[[docx.document.Document], None], tmp_path: Path) -> str:
    """The text of a .docx that python-docx makes after `build` has filled it."""
    document = docx.Document()
    build(document)
    saved = io.BytesIO()
    document.save(saved)
    return extract(write(tmp_path, "doc.docx", saved.getvalue())).text


def table(document: docx.document.Document, *rows: list[str]) -> docx.table.Table:
    """A table of these rows' cell texts, after the body's paragraphs."""
    made = document.add_table(rows=len(rows), cols=len(rows[0]))
    for cells, row in zip(rows, made.rows, strict=True):
        for text, cell in zip(cells, row.cells, strict=True):
            cell.text = text
    return made


def wrapped(el: object, wrapper: str) -> object:
    """Put `el` where it stands inside a content control ("sdt") or custom XML."""
    if wrapper == "sdt":
        outer = parse_xml(f"<w:sdt {nsdecls('w')}><w:sdtPr/><w:sdtContent/></w:sdt>")
        inner = outer[1]
    else:
        outer = inner = parse_xml(f'<w:customXml {nsdecls("w")} w:element="x"/>')
    el.addprevious(outer)
    inner.append(el)
    return outer


# --- DOCX -----------------------------------------------------------------------------


def test_docx_table_row_is_one_line_of_tab_separated_cells(tmp_path: Path) -> None:
    def build(document: docx.document.Document) -> None:
        document.add_paragraph("Before")
        table(document, ["Name", "Age"], ["Alice", "30"])
        document.add_paragraph("After")

    assert word(build, tmp_path) == "Before\nName\tAge\nAlice\t30\nAfter"


def test_docx_cell_breaks_and_tabs_are_spaces_and_a_cell_of_paragraphs_keeps_lines(
    tmp_path: Path,
) -> None:
    # In a row of data a cell's line breaks and tabs would read as the next row or
    # cell: spaces. A cell of several paragraphs (an address, a CV's column) is no
    # data: its row is read cell after cell, a line a paragraph, as a page is.
    def build(document: docx.document.Document) -> None:
        run = table(document, ["Ship to", ""]).cell(0, 1).paragraphs[0].add_run()
        run.add_text("Harbour")
        run.add_break()
        run.add_text("Town")
        run.add_tab()
        run.add_text("HT1")
        cell = table(document, ["Address", "", "Paid"]).cell(0, 1)
        cell.paragraphs[0].text = "1 Quay Street"
        cell.add_paragraph()  # an empty paragraph: no empty line
        cell.add_paragraph("Harbour Town")

    assert word(build, tmp_path).splitlines() == [
        "Ship to\tHarbour Town HT1",
        "Address",
        "1 Quay Street",
        "Harbour Town",
        "Paid",
    ]


def test_docx_empty_cells_keep_their_tabs_and_an_empty_row_gives_no_line(
    tmp_path: Path,
) -> None:
    def build(document: docx.document.Document) -> None:
        table(document, ["A", "", "C", ""], ["", "", "", ""], ["", "B", "", ""])

    assert word(build, tmp_path) == "A\t\tC\n\tB"


def test_docx_merged_cell_text_comes_once_and_its_columns_stay(
    tmp_path: Path,
) -> None:
    # python-docx merges as Word does: w:gridSpan across, w:vMerge down.
    def build(document: docx.document.Document) -> None:
        made = table(
            document,
            ["Region", "", "Total"],
            ["North", "Q1", "10"],
            ["", "Q2", "20"],
        )
        made.cell(0, 0).merge(made.cell(0, 1)).text = "Region"
        made.cell(1, 0).merge(made.cell(2, 0)).text = "North"

    assert word(build, tmp_path) == "Region\t\tTotal\nNorth\tQ1\t10\n\tQ2\t20"


def test_docx_older_merges_and_a_row_that_starts_further_right(
    tmp_path: Path,
) -> None:
    # w:hMerge (Word 97's merge across), w:gridBefore (a row that skips columns),
    # and a hostile span, counted as Word's widest table (63 columns) at most.
    def build(document: docx.document.Document) -> None:
        made = table(document, ["Wide", "", "End"], ["x", "y", ""], ["A", "B", ""])
        first, second = made.rows[0].cells[:2]
        first._tc.get_or_add_tcPr().append(
            parse_xml(f'<w:hMerge {nsdecls("w")} w:val="restart"/>')
        )
        second._tc.get_or_add_tcPr().append(parse_xml(f"<w:hMerge {nsdecls('w')}/>"))
        second.text = "stale"  # what a continuing cell still holds is not shown
        row = made.rows[1]._tr
        row.remove(row.tc_lst[-1])
        row.get_or_add_trPr().append(
            parse_xml(f'<w:gridBefore {nsdecls("w")} w:val="1"/>')
        )
        made.rows[2].cells[0]._tc.get_or_add_tcPr().append(
            parse_xml(f'<w:gridSpan {nsdecls("w")} w:val="999999999"/>')
        )

    assert word(build, tmp_path).splitlines() == [
        "Wide\t\tEnd",
        "\tx\ty",
        "A" + "\t" * 63 + "B",
    ]


def test_docx_merged_down_cell_is_not_repeated(tmp_path: Path) -> None:
    # A continuing cell that still holds text (as some writers leave it): Word
    # shows the merged cell's text once.
    def build(document: docx.document.Document) -> None:
        made = table(document, ["Team", "Ann"], ["stale", "Bob"])
        made.cell(0, 0)._tc.get_or_add_tcPr().append(
            parse_xml(f'<w:vMerge {nsdecls("w")} w:val="restart"/>')
        )
        made.cell(1, 0)._tc.get_or_add_tcPr().append(
            parse_xml(f"<w:vMerge {nsdecls('w')}/>")
        )

    assert word(build, tmp_path) == "Team\tAnn\n\tBob"


def test_docx_nested_table_is_read_in_its_cell(tmp_path: Path) -> None:
    # A nested table of one row is a line of the outer row's cell; of several, its
    # outer row is read cell after cell, the nested rows a line each.
    def build(document: docx.document.Document) -> None:
        outer = table(
            document, ["Item", "Size", "Note"], ["Box", "", "Fragile"], ["Tube", "", ""]
        )
        one = outer.cell(1, 1).add_table(rows=1, cols=2)
        one.cell(0, 0).text, one.cell(0, 1).text = "w", "10"
        two = outer.cell(2, 1).add_table(rows=2, cols=2)
        for (r, c), text in zip(
            [(0, 0), (0, 1), (1, 0), (1, 1)], ["d", "4", "l", "90"], strict=True
        ):
            two.cell(r, c).text = text

    assert word(build, tmp_path).splitlines() == [
        "Item\tSize\tNote",
        "Box\tw 10\tFragile",
        "Tube",
        "d\t4",
        "l\t90",
    ]


def test_docx_numbers_and_bullets_in_cells_count_on_with_the_body(
    tmp_path: Path,
) -> None:
    def build(document: docx.document.Document) -> None:
        made = table(document, ["", ""])
        first = made.cell(0, 0)
        first.paragraphs[0].text = "First"
        first.paragraphs[0].style = "List Number"
        first.add_paragraph("Second", style="List Number")
        made.cell(0, 1).paragraphs[0].text = "Point"
        made.cell(0, 1).paragraphs[0].style = "List Bullet"
        document.add_paragraph("Third", style="List Number")

    assert word(build, tmp_path) == "1.\tFirst\n2.\tSecond\n•\tPoint\n3.\tThird"


def test_docx_hidden_and_deleted_cell_text_leaves_its_column_empty(
    tmp_path: Path,
) -> None:
    def build(document: docx.document.Document) -> None:
        made = table(
            document,
            ["Name", "", "City"],
            ["Ann", "", "Oslo"],
            ["Gone", "Gone too", ""],
        )
        made.cell(0, 1).paragraphs[0].add_run("Secret").font.hidden = True
        deleted = parse_xml(
            f'<w:del {nsdecls("w")} w:id="1" w:author="a"><w:r>'
            "<w:delText>Old</w:delText></w:r></w:del>"
        )
        made.cell(1, 1).paragraphs[0]._p.append(deleted)
        # A row deleted with tracked changes: its runs are deleted, so no line.
        row = made.rows[2]._tr
        row.get_or_add_trPr().append(
            parse_xml(f'<w:del {nsdecls("w")} w:id="2" w:author="a"/>')
        )
        for run in row.iter(qn("w:r")):
            run.addprevious(wrapper := copy.deepcopy(deleted))
            wrapper.remove(wrapper[0])
            wrapper.append(run)

    assert word(build, tmp_path) == "Name\t\tCity\nAnn\t\tOslo"


def test_docx_cells_and_rows_in_content_controls_and_custom_xml(
    tmp_path: Path,
) -> None:
    def build(document: docx.document.Document) -> None:
        made = table(document, ["A", "B", "C"], ["D", "E", "F"], ["G", "H", "I"])
        first, second, third = (row._tr for row in made.rows)
        _, b, c = first.tc_lst
        wrapped(b, "sdt")
        wrapped(c, "customXml")
        wrapped(second, "sdt")  # a repeating section's row
        wrapped(third, "customXml")
        wrapped(made._tbl, "sdt")  # the whole table

    assert word(build, tmp_path) == "A\tB\tC\nD\tE\tF\nG\tH\tI"


def test_docx_cell_showing_its_prompt_stays_an_empty_column(tmp_path: Path) -> None:
    def build(document: docx.document.Document) -> None:
        made = table(document, ["Name", "Click or tap here to enter text.", "City"])
        control = wrapped(made.rows[0]._tr.tc_lst[1], "sdt")
        control[0].append(parse_xml(f"<w:showingPlcHdr {nsdecls('w')}/>"))

    assert word(build, tmp_path) == "Name\t\tCity"


def test_docx_table_in_a_text_box(tmp_path: Path) -> None:
    box = (
        f'<w:r {nsdecls("w")} xmlns:v="urn:schemas-microsoft-com:vml"><w:pict>'
        "<v:shape><v:textbox><w:txbxContent>"
        "<w:p><w:r><w:t>In the box</w:t></w:r></w:p>"
        "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>X</w:t></w:r></w:p></w:tc>"
        "<w:tc><w:p><w:r><w:t>Y</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"
        "</w:txbxContent></v:textbox></v:shape></w:pict></w:r>"
    )

    def build(document: docx.document.Document) -> None:
        document.add_paragraph("Anchor")._p.append(parse_xml(box))
        document.add_paragraph("After")

    assert word(build, tmp_path) == "Anchor\nIn the box\nX\tY\nAfter"


def test_docx_tables_in_headers_and_footnotes(tmp_path: Path) -> None:
    def build(document: docx.document.Document) -> None:
        document.add_paragraph("Body")
        header = document.sections[0].header
        made = header.add_table(rows=1, cols=2, width=Inches(6))
        made.cell(0, 0).text, made.cell(0, 1).text = "Ref 12", "Page"

    # The header's own empty paragraph, then its table.
    assert word(build, tmp_path) == "Body\n\nRef 12\tPage"
    row = (
        "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Source</w:t></w:r></w:p></w:tc>"
        "<w:tc><w:p><w:r><w:t>2024</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"
    )
    footnotes = (
        f'<w:footnote w:id="1"><w:p><w:r><w:t>Note</w:t></w:r></w:p>{row}</w:footnote>'
    )
    path = write(
        tmp_path,
        "notes.docx",
        docx_package("<w:p><w:r><w:t>Body</w:t></w:r></w:p>", footnotes=footnotes),
    )
    assert extract(path).text == "Body\nNote\nSource\t2024"


def test_docx_cells_are_never_joined_as_a_hyphenated_word(tmp_path: Path) -> None:
    # One cell per line, "inter-" then "national" read as a word broken at a line's
    # end, and joined.
    def build(document: docx.document.Document) -> None:
        table(document, ["Pre-", "inter-", "national"])

    assert word(build, tmp_path) == "Pre-\tinter-\tnational"


def test_docx_paragraph_that_runs_on_and_an_embedded_page_in_a_cell(
    tmp_path: Path,
) -> None:
    # What a paragraph did before still does in a cell: a deleted mark joins it to
    # the next; an alternative format chunk (HTML) is read where it stands.
    from docx.opc.constants import RELATIONSHIP_TYPE
    from docx.opc.packuri import PackURI
    from docx.opc.part import Part

    def build(document: docx.document.Document) -> None:
        made = table(document, ["Terms", ""])
        cell = made.cell(0, 1)
        cell.paragraphs[0].text = "Net "
        mark = parse_xml(
            f'<w:rPr {nsdecls("w")}><w:del w:id="3" w:author="a"/></w:rPr>'
        )
        cell.paragraphs[0]._p.get_or_add_pPr().append(mark)
        cell.add_paragraph("thirty days.")
        html = b"<html><body><p>See annex</p><p>B.</p></body></html>"
        part = Part(
            PackURI("/word/afchunk1.htm"), "text/html", html, document.part.package
        )
        rid = document.part.relate_to(part, RELATIONSHIP_TYPE.A_F_CHUNK)
        cell._tc.append(parse_xml(f'<w:altChunk {nsdecls("w", "r")} r:id="{rid}"/>'))
        cell.add_paragraph()

    assert word(build, tmp_path) == "Terms\nNet thirty days.\nSee annex\nB."


# --- ODT ------------------------------------------------------------------------------


def odt(tmp_path: Path, body: str, automatic: str = "", styles: str = "") -> str:
    """The text of an ODT of this office:text body, automatic styles and
    styles.xml (their inner XML)."""
    package = odf_package("text", body, automatic, styles=styles)
    return extract(write(tmp_path, "doc.odt", package)).text


def cell(*paragraphs: str, attributes: str = "") -> str:
    inner = "".join(f"<text:p>{p}</text:p>" for p in paragraphs)
    return f"<table:table-cell{attributes}>{inner}</table:table-cell>"


def row(*cells: str, attributes: str = "") -> str:
    return f"<table:table-row{attributes}>{''.join(cells)}</table:table-row>"


def odt_table(*rows: str) -> str:
    return (
        '<table:table table:name="T1"><table:table-column '
        f'table:number-columns-repeated="3"/>{"".join(rows)}</table:table>'
    )


def test_odt_table_row_is_one_line_of_tab_separated_cells(tmp_path: Path) -> None:
    body = (
        "<text:p>Before</text:p>"
        + odt_table(
            "<table:table-header-rows>"
            + row(cell("Name"), cell("Age"))
            + "</table:table-header-rows>",
            row(cell("Alice"), cell("30")),
        )
        + "<text:p>After</text:p>"
    )
    assert odt(tmp_path, body) == "Before\nName\tAge\nAlice\t30\nAfter"


def test_odt_cells_on_one_line_empty_and_covered_cells_keep_their_columns(
    tmp_path: Path,
) -> None:
    merged = ' table:number-columns-spanned="2"'
    body = odt_table(
        row(
            cell("Region", attributes=merged),
            "<table:covered-table-cell/>",
            cell("Total"),
        ),
        row(cell("Harbour<text:line-break/>Town<text:tab/>HT1"), cell(), cell("C")),
        row(cell("1 Quay Street", "", "Harbour Town"), cell(), cell("Paid")),
        row(cell(), cell(), cell()),
        row(cell(), cell("B"), cell()),
        row(cell("x", attributes=' table:number-columns-repeated="2"')),
        row(cell("again"), attributes=' table:number-rows-repeated="2"'),
    )
    assert odt(tmp_path, body).splitlines() == [
        "Region\t\tTotal",
        "Harbour Town HT1\t\tC",
        "1 Quay Street",
        "Harbour Town",
        "Paid",
        "\tB",
        "x\tx",
        "again",
        "again",
    ]


def test_odt_nested_table_is_read_in_its_cell(tmp_path: Path) -> None:
    inner = (
        "<table:table>"
        + row(cell("w"), cell("10"))
        + row(cell("h"), cell("20"))
        + "</table:table>"
    )
    body = odt_table(
        row(cell("Item"), cell("Size"), cell("Note")),
        row(
            cell("Box"),
            f"<table:table-cell><text:p>cm:</text:p>{inner}</table:table-cell>",
            cell("Fragile"),
        ),
    )
    assert odt(tmp_path, body).splitlines() == [
        "Item\tSize\tNote",
        "Box",
        "cm:",
        "w\t10",
        "h\t20",
        "Fragile",
    ]


def test_odt_numbers_in_cells_hidden_comments_and_notes(tmp_path: Path) -> None:
    automatic = (
        '<text:list-style style:name="L1"><text:list-level-style-number '
        'text:level="1" style:num-format="1" style:num-suffix="."/></text:list-style>'
        '<style:style style:name="H" style:family="text">'
        '<style:text-properties text:display="none"/></style:style>'
    )
    numbered = (
        '<table:table-cell><text:list text:style-name="L1">'
        "<text:list-item><text:p>First</text:p></text:list-item>"
        "<text:list-item><text:p>Second</text:p></text:list-item>"
        "</text:list></table:table-cell>"
    )
    body = (
        odt_table(
            row(
                numbered,
                cell(
                    'Seen<text:span text:style-name="H">Secret</text:span>'
                    "<office:annotation><dc:creator>a</dc:creator>"
                    "<text:p>A comment</text:p></office:annotation>"
                ),
                cell(
                    'Priced<text:note text:note-class="footnote"><text:note-citation>1'
                    "</text:note-citation><text:note-body><text:p>Excl. VAT</text:p>"
                    "</text:note-body></text:note>"
                ),
            ),
        )
        # A note's table: its rows follow the body, with the note.
        + '<text:p>Body ends<text:note text:note-class="footnote"><text:note-citation>'
        + "2</text:note-citation><text:note-body>"
        + odt_table(row(cell("Rate"), cell("20%")))
        + "</text:note-body></text:note></text:p>"
    )
    # The comment in a cell is read at the end, as every comment of a text is.
    assert odt(tmp_path, body, automatic) == (
        "1.\tFirst\n2.\tSecond\nSeen\nPriced\nBody ends\nExcl. VAT\nRate\t20%\n"
        "Comment: A comment"
    )


def test_odt_tables_in_a_text_box_and_in_a_header(tmp_path: Path) -> None:
    boxed = odt_table(row(cell("X"), cell("Y")))
    body = (
        "<text:p>Anchor<draw:frame><draw:text-box><text:p>In the box</text:p>"
        f"{boxed}</draw:text-box></draw:frame></text:p><text:p>After</text:p>"
    )
    header = odt_table(row(cell("Ref 12"), cell("Page")))
    styles = (
        '<office:master-styles><style:master-page style:name="Standard">'
        # A comment in a header was read as a line of its own: it comes at the
        # end, as every comment of a text does.
        f"<style:header>{header}<text:p>Draft<office:annotation><dc:creator>a"
        "</dc:creator><text:p>A comment</text:p></office:annotation></text:p>"
        "</style:header></style:master-page>"
        "</office:master-styles>"
    )
    assert odt(tmp_path, body, styles=styles) == (
        "Anchor\nIn the box\nX\tY\nAfter\nRef 12\tPage\nDraft\nComment: A comment"
    )
