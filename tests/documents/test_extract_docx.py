"""Word files from other producers, and text files with NULs: each test is a defect an
outside audit found, with its file built here."""

from __future__ import annotations

import io
import re
import struct
from collections.abc import Callable
from pathlib import Path

import docx
import pytest
from docx.enum.style import WD_STYLE_TYPE
from docx.opc.packuri import PackURI
from docx.opc.part import Part
from docx.oxml import parse_xml
from docx.oxml.ns import nsdecls

from documents.extractors import (
    CorruptFileError,
    detect_format,
    detect_mime_type,
    extract,
    formats,
)
from tests.files import (
    docx_bytes,
    pptx_bytes,
    rezipped,
    with_doctype,
    with_member,
    write,
    xlsx_bytes,
)

DOCX = formats.DOCX.mime_type
WORD_ONLINE_RENAMES = {
    "word/document.xml": "word/document2.xml",
    "word/_rels/document.xml.rels": "word/_rels/document2.xml.rels",
}


def made_docx(build: Callable[[docx.document.Document], None]) -> bytes:
    """A .docx that python-docx makes after `build` has filled it."""
    document = docx.Document()
    build(document)
    saved = io.BytesIO()
    document.save(saved)
    return saved.getvalue()


def renamed(data: bytes, renames: dict[str, str], main_type: bytes = b"") -> bytes:
    """The same package with members renamed and the references to them changed, as
    Word Online saves it; `main_type` replaces the main part's content type."""

    def rename(name: str, content: bytes) -> tuple[str, bytes]:
        if name in ("[Content_Types].xml", "_rels/.rels"):
            for old, new in renames.items():
                content = content.replace(old.encode(), new.encode())
            if main_type:
                content = re.sub(
                    rb'(PartName="/word/document2.xml" ContentType=")[^"]+',
                    rb"\1" + main_type,
                    content,
                )
        return renames.get(name, name), content

    return rezipped(data, rename)


# --- 1. the main part named by the package's relationship ---------------------------------


def test_word_online_docx_with_main_part_document2_is_detected_and_read(
    tmp_path: Path,
) -> None:
    content = renamed(docx_bytes("Minutes of the board meeting"), WORD_ONLINE_RENAMES)
    path = write(tmp_path, "minutes.docx", content)
    assert detect_mime_type(path) == DOCX
    result = extract(path)
    assert result.extractor == "docx"
    assert result.text == "Minutes of the board meeting"


def test_main_part_decides_by_its_content_type_and_other_formats_keep_theirs(
    tmp_path: Path,
) -> None:
    # A main part in word/ that says it is a workbook is not a Word document.
    content = renamed(
        docx_bytes(),
        WORD_ONLINE_RENAMES,
        main_type=b"application/vnd.openxmlformats-officedocument.spreadsheetml"
        b".sheet.main+xml",
    )
    assert detect_format(write(tmp_path, "odd.docx", content)) is None
    workbook = write(tmp_path, "budget.xlsx", xlsx_bytes([["rent", 900]]))
    assert detect_format(workbook).key == "xlsx"
    slides = write(tmp_path, "deck.pptx", pptx_bytes("Title", "Point"))
    assert detect_format(slides).key == "pptx"
    assert detect_format(write(tmp_path, "plain.docx", docx_bytes())).key == "docx"


# --- 2. hidden text -------------------------------------------------------------------


def test_hidden_text_is_not_read_but_a_hidden_paragraph_mark_and_web_hidden_are(
    tmp_path: Path,
) -> None:
    def build(document: docx.document.Document) -> None:
        offer = document.add_paragraph("Offer price: ")
        offer.add_run("INTERNAL FLOOR PRICE 4,200 EUR ").font.hidden = True
        offer.add_run("5,000 EUR")
        secret = document.styles.add_style("Secret", WD_STYLE_TYPE.CHARACTER)
        secret.font.hidden = True
        styled = document.add_paragraph("Styled: ")
        styled.add_run("hidden by its style ", style="Secret")
        shown = styled.add_run("shown over its style")
        shown.style = "Secret"
        shown.font.hidden = False  # w:vanish w:val="0": direct formatting wins
        note = document.add_paragraph("Hidden style paragraph")
        note.style = document.styles.add_style("Note", WD_STYLE_TYPE.PARAGRAPH)
        note.style.font.hidden = True
        # A w:vanish on the paragraph mark hides the mark only, not the text.
        mark = document.add_paragraph("Paragraph mark hidden, text shown")
        mark._p.get_or_add_pPr().append(
            parse_xml(f"<w:rPr {nsdecls('w')}><w:vanish/></w:rPr>")
        )
        web = document.add_paragraph().add_run("Hidden on the web only")
        web._r.get_or_add_rPr().append(parse_xml(f"<w:webHidden {nsdecls('w')}/>"))

    path = write(tmp_path, "offer.docx", made_docx(build))
    assert extract(path).text == (
        "Offer price: 5,000 EUR\n"
        "Styled: shown over its style\n"
        "\n"
        "Paragraph mark hidden, text shown\n"
        "Hidden on the web only"
    )


# --- 3. symbols and alignment tabs ----------------------------------------------------


def test_symbols_are_read_and_alignment_tabs_separate_words(tmp_path: Path) -> None:
    def sym(font: str, char: str) -> bytes:
        return f'<w:sym w:font="{font}" w:char="{char}"/>'.encode()

    def fill(xml: bytes) -> bytes:
        xml = xml.replace(
            b"<w:t>SYMBOLS</w:t>",
            b'<w:t xml:space="preserve">Angle </w:t>'
            + sym("Symbol", "F061")
            + b'<w:t xml:space="preserve"> = 30</w:t>'
            + sym("Symbol", "F0B0")
            + sym("Symbol", "F0F0")  # no character in Windows' Symbol font
            + b'<w:t xml:space="preserve"> </w:t>'
            + sym("Symbol", "F057")
            + sym("Wingdings", "F0FC"),  # a check mark: kept as it is
        )
        return xml.replace(
            b"<w:t>FOOTER</w:t>",
            b"<w:t>ACME Ltd</w:t>"
            b'<w:ptab w:relativeTo="margin" w:alignment="right" w:leader="none"/>'
            b"<w:t>Page 3</w:t>",
        )

    def build(document: docx.document.Document) -> None:
        document.add_paragraph("SYMBOLS")
        document.add_paragraph("FOOTER")

    content = with_member(made_docx(build), "word/document.xml", fill)
    path = write(tmp_path, "symbols.docx", content)
    assert extract(path).text == "Angle α = 30° Ω\uf0fc\nACME Ltd\tPage 3"


# --- 4. and 5. damaged and hostile parts ----------------------------------------------


def test_docx_without_a_body_is_damaged(tmp_path: Path) -> None:
    content = with_member(
        docx_bytes(),
        "word/document.xml",
        lambda xml: re.sub(rb"<w:body>.*</w:body>", b"", xml, flags=re.DOTALL),
    )
    path = write(tmp_path, "nobody.docx", content)
    with pytest.raises(CorruptFileError) as info:
        extract(path)
    assert str(info.value) == (
        "The file is damaged: its Word document has no body, the part that holds "
        "its text"
    )


@pytest.mark.parametrize("part", ["word/document.xml", "docProps/core.xml"])
def test_entity_bomb_in_a_docx_part_is_refused_in_plain_words(
    tmp_path: Path, part: str
) -> None:
    content = with_member(docx_bytes(), part, with_doctype)
    path = write(tmp_path, "laughs.docx", content)
    with pytest.raises(CorruptFileError) as info:
        extract(path)
    assert str(info.value) == (
        "The file is damaged: its XML cannot be parsed (a DOCTYPE or entity "
        "declaration, which is not allowed)"
    )


# --- 6. text with NULs ----------------------------------------------------------------

LOG = b"2024-05-01 12:00:00 INFO service started\n" * 50


@pytest.mark.parametrize(
    ("name", "content", "text"),
    [
        # logrotate's copytruncate: the writer goes on past a hole of NULs.
        ("copytruncate.log", bytes(4096) + LOG, LOG),
        ("long-hole.log", bytes(200_000) + LOG, LOG),
        # A crash leaves a hole inside or at the end.
        (
            "crash.log",
            LOG + bytes(300) + b"INFO restarted\n",
            LOG + b"INFO restarted\n",
        ),
        ("padded.csv", b"id,name\n1,Alice\n2,Bob\n\x00\x00\x00\x00", None),
    ],
    ids=["copytruncate", "long-hole", "crash", "padded-csv"],
)
def test_text_with_runs_of_nul_bytes_is_read_as_text(
    tmp_path: Path, name: str, content: bytes, text: bytes | None
) -> None:
    path = write(tmp_path, name, content)
    assert detect_mime_type(path) == "text/plain"
    expected = (text or content.replace(b"\x00", b"")).decode()
    assert extract(path).text == expected


@pytest.mark.parametrize(
    "content",
    [
        b"text with a \x00 NUL byte in it",
        bytes(4096),
        # Laid out as UTF-32 (three zero bytes in four) but no words: numbers 32-126.
        struct.pack("<1050I", *(32 + n * 37 % 95 for n in range(1050))),
        # Binary records: short runs of NULs all through.
        b"".join(struct.pack("<IIH", n, n * 7, 3) for n in range(1000)),
        b"\x7fELF\x02\x01\x01" + bytes(100_000) + b"\x02\x00\x3e\x00" + bytes(64),
        bytes(100_000) + b"\x7fELF\x02\x01\x01\x00\x00" + bytes(64),
        # Text broken by more holes than a crash leaves.
        b"".join(b"record %d" % n + bytes(32) for n in range(20)),
    ],
    ids=[
        "nul-in-a-sentence",
        "zeros",
        "int32-printable",
        "records",
        "elf",
        "hole-then-elf",
        "holes",
    ],
)
def test_binary_data_with_nul_bytes_is_still_not_text(
    tmp_path: Path, content: bytes
) -> None:
    assert detect_format(write(tmp_path, "upload.bin", content)) is None


# --- 7. SmartArt and charts -----------------------------------------------------------

_CHART_NS = "http://schemas.openxmlformats.org/drawingml/2006/chart"
_DIAGRAM_NS = "http://schemas.openxmlformats.org/drawingml/2006/diagram"
_RELATIONSHIPS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
DIAGRAM_DATA = f"""<dgm:dataModel {nsdecls("dgm", "a")}><dgm:ptLst>
<dgm:pt modelId="0" type="doc"><dgm:t><a:p><a:r><a:t>not shown</a:t></a:r></a:p></dgm:t>
</dgm:pt><dgm:pt modelId="1"><dgm:t><a:bodyPr/><a:p><a:r><a:t>Plan</a:t></a:r></a:p>
</dgm:t></dgm:pt><dgm:pt modelId="2"><dgm:t><a:p><a:r><a:t>Execute</a:t></a:r><a:br/>
<a:r><a:t>and check</a:t></a:r></a:p></dgm:t></dgm:pt></dgm:ptLst></dgm:dataModel>"""


def points(*values: str) -> str:
    return "".join(
        f'<c:pt idx="{n}"><c:v>{v}</c:v></c:pt>' for n, v in enumerate(values)
    )


def strings(tag: str, *values: str) -> str:
    """A chart's cached strings (c:strRef) in a `tag` element."""
    cache = f"<c:strCache>{points(*values)}</c:strCache>"
    return f"<{tag}><c:strRef><c:f>Sheet1!A1</c:f>{cache}</c:strRef></{tag}>"


# Titles as rich text and as a cell's text; series named by a cell and literally;
# categories as strings and in two levels (region, then year); values not read.
CHART = f"""<c:chartSpace {nsdecls("c", "a")}><c:chart><c:title><c:tx><c:rich>
<a:bodyPr/><a:p><a:r><a:t>Sales by region</a:t></a:r></a:p></c:rich></c:tx></c:title>
<c:plotArea><c:barChart><c:ser>{strings("c:tx", "Revenue")}
{strings("c:cat", "East", "West")}<c:val><c:numRef><c:numCache>{points("1234")}
</c:numCache></c:numRef></c:val></c:ser><c:ser><c:tx><c:v>Costs</c:v></c:tx><c:cat>
<c:multiLvlStrRef><c:multiLvlStrCache><c:lvl>{points("East", "West")}</c:lvl>
<c:lvl>{points("2024")}</c:lvl></c:multiLvlStrCache></c:multiLvlStrRef></c:cat></c:ser>
</c:barChart><c:catAx><c:title>{strings("c:tx", "Region")}</c:title></c:catAx>
<c:valAx><c:title><c:tx><c:rich><a:p><a:r><a:t>Millions</a:t></a:r></a:p></c:rich>
</c:tx></c:title></c:valAx></c:plotArea></c:chart></c:chartSpace>"""


def with_graphic(paragraph, kind: str, content: str, n: int) -> None:
    """A SmartArt diagram ("diagramData") or a chart ("chart") in the paragraph, its
    XML `content` in a part of its own, as Word saves them."""
    document_part = paragraph.part
    part = Part(
        PackURI(f"/word/{kind}s/{kind}{n}.xml"),
        f"application/vnd.openxmlformats-officedocument.drawingml.{kind}+xml",
        content.encode(),
        document_part.package,
    )
    rid = document_part.relate_to(part, f"{_RELATIONSHIPS}/{kind}")
    if kind == "chart":
        uri, reference = _CHART_NS, f'<c:chart {nsdecls("c")} r:id="{rid}"/>'
    else:
        uri = _DIAGRAM_NS
        reference = (
            f'<dgm:relIds {nsdecls("dgm")} r:dm="{rid}" r:lo="" r:qs="" r:cs=""/>'
        )
    paragraph.add_run()._r.append(
        parse_xml(
            f"<w:drawing {nsdecls('w', 'wp', 'a', 'r')}><wp:inline>"
            f'<wp:extent cx="1" cy="1"/><wp:docPr id="{n}" name="Graphic {n}"/>'
            f'<a:graphic><a:graphicData uri="{uri}">{reference}</a:graphicData>'
            "</a:graphic></wp:inline></w:drawing>"
        )
    )


def test_smartart_is_read_after_its_paragraph_s_text(tmp_path: Path) -> None:
    # Only "Process overview:" was read; PowerPoint's SmartArt was.
    def build(document: docx.document.Document) -> None:
        with_graphic(
            document.add_paragraph("Process overview:"), "diagramData", DIAGRAM_DATA, 1
        )
        with_graphic(document.add_paragraph(), "diagramData", DIAGRAM_DATA, 2)
        document.add_paragraph("Next steps")

    text = extract(write(tmp_path, "smartart.docx", made_docx(build))).text
    assert text == (
        "Process overview:\nPlan\nExecute\nand check\n"
        "Plan\nExecute\nand check\nNext steps"
    )


def test_a_chart_s_titles_series_and_categories_are_read_after_its_paragraph(
    tmp_path: Path,
) -> None:
    def build(document: docx.document.Document) -> None:
        document.add_paragraph("Figures")
        with_graphic(document.add_paragraph("Figure 1"), "chart", CHART, 1)
        document.add_paragraph("Comments")

    text = extract(write(tmp_path, "chart.docx", made_docx(build))).text
    assert text == (
        "Figures\nFigure 1\nSales by region\nRegion\nMillions\nRevenue\tCosts\n"
        "East\tWest\t2024\nComments"
    )


def test_an_entity_bomb_in_a_chart_part_is_refused(tmp_path: Path) -> None:
    def build(document: docx.document.Document) -> None:
        with_graphic(document.add_paragraph("Figure 1"), "chart", CHART, 1)

    content = with_member(made_docx(build), "word/charts/chart1.xml", with_doctype)
    with pytest.raises(CorruptFileError) as info:
        extract(write(tmp_path, "laughs.docx", content))
    assert "DOCTYPE" in str(info.value)


# --- 8. tracked changes: paragraph marks ----------------------------------------------


def mark_change(paragraph, kind: str) -> None:
    """Track the paragraph's mark as deleted ("del"), inserted ("ins") or moved away
    ("moveFrom"), as Word does in w:pPr/w:rPr."""
    paragraph._p.get_or_add_pPr().append(
        parse_xml(f'<w:rPr {nsdecls("w")}><w:{kind} w:id="9" w:author="a"/></w:rPr>')
    )


def test_a_deleted_paragraph_mark_joins_the_paragraph_to_the_next(
    tmp_path: Path,
) -> None:
    # Word shows the accepted state: a deleted mark runs the text on into the next
    # paragraph (which keeps the first's number); an inserted one splits them.
    def build(document: docx.document.Document) -> None:
        mark_change(document.add_paragraph("First half, "), "del")
        document.add_paragraph("second half.")
        mark_change(document.add_paragraph("Inserted split"), "ins")
        document.add_paragraph("stays.")
        mark_change(document.add_paragraph("Item one, ", "List Number"), "del")
        mark_change(document.add_paragraph("run on, ", "List Number"), "del")
        document.add_paragraph("and on.", "List Number")
        document.add_paragraph("Item two", "List Number")
        deleted = document.add_paragraph()  # a whole paragraph deleted
        deleted._p.append(
            parse_xml(
                f'<w:del {nsdecls("w")} w:id="8" w:author="a"><w:r>'
                "<w:delText>Gone</w:delText></w:r></w:del>"
            )
        )
        mark_change(deleted, "del")
        mark_change(document.add_paragraph(), "moveFrom")  # moved away, empty
        document.add_paragraph("After")
        cell = document.add_table(rows=1, cols=1).cell(0, 0)
        mark_change(cell.paragraphs[0], "del")
        cell.paragraphs[0].add_run("In a cell, ")
        cell.add_paragraph("joined.")

    text = extract(write(tmp_path, "tracked.docx", made_docx(build))).text
    assert text == (
        "First half, second half.\nInserted split\nstays.\n"
        "1.\tItem one, run on, and on.\n2.\tItem two\nAfter\nIn a cell, joined."
    )
