"""PowerPoint extraction: decks from other producers, shows and templates, line
breaks, and damaged or hostile packages. Each file is built here with python-pptx,
then its XML edited the way the producer writes it."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pptx
import pytest
from lxml import etree
from pptx.chart.data import CategoryChartData
from pptx.enum.chart import XL_CHART_TYPE
from pptx.opc.package import Part
from pptx.opc.packuri import PackURI
from pptx.oxml import parse_xml
from pptx.util import Inches

from documents.extractors import (
    CorruptFileError,
    UnsupportedFileError,
    classify,
    extract,
)
from tests.files import (
    pptx_bytes,
    replaced_everywhere,
    with_doctype,
    with_member,
    write,
)

_A = "http://schemas.openxmlformats.org/drawingml/2006/main"
_P = "http://schemas.openxmlformats.org/presentationml/2006/main"
_MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
_DGM = "http://schemas.openxmlformats.org/drawingml/2006/diagram"
_R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
TITLE_ONLY = 5


def saved(deck) -> bytes:
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def deck_with_text_box(title: str, text: str):
    """A deck of one title-only slide with a text box; returns (deck, text box)."""
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[TITLE_ONLY])
    slide.shapes.title.text = title
    box = slide.shapes.add_textbox(Inches(1), Inches(2), Inches(6), Inches(1))
    box.text_frame.text = text
    return deck, box


# --- shapes from other producers -----------------------------------------------------


def test_a_shape_without_geometry_is_read_with_the_rest_of_the_deck(
    tmp_path: Path,
) -> None:
    # Google Slides, LibreOffice and Keynote write p:sp with an empty p:spPr; asking
    # python-pptx its shape_type raised NotImplementedError and lost the whole deck.
    deck, box = deck_with_text_box("Quarterly results", "Revenue grew 12%")
    sp = box.element
    del sp.nvSpPr.cNvSpPr.attrib["txBox"]
    for child in list(sp.spPr):
        sp.spPr.remove(child)
    deck.slides.add_slide(deck.slide_layouts[TITLE_ONLY]).shapes.title.text = "Costs"
    result = extract(write(tmp_path, "deck.pptx", saved(deck)))
    assert result.text == "Quarterly results\nRevenue grew 12%\n\nCosts"
    assert result.page_count == 2


def test_a_damaged_shape_costs_its_own_text_not_the_deck(tmp_path: Path) -> None:
    deck, _ = deck_with_text_box("Agenda", "Welcome")
    slide = deck.slides[0]
    # A graphic frame without its a:graphic: python-pptx raises on has_table.
    slide.shapes._spTree.append(
        parse_xml(
            f'<p:graphicFrame xmlns:p="{_P}" xmlns:a="{_A}"><p:nvGraphicFramePr>'
            '<p:cNvPr id="9" name="Broken"/><p:cNvGraphicFramePr/><p:nvPr/>'
            '</p:nvGraphicFramePr><p:xfrm><a:off x="0" y="0"/><a:ext cx="1" cy="1"/>'
            "</p:xfrm></p:graphicFrame>"
        )
    )
    box = slide.shapes.add_textbox(Inches(1), Inches(4), Inches(6), Inches(1))
    box.text_frame.text = "Questions"
    text = extract(write(tmp_path, "deck.pptx", saved(deck))).text
    assert text == "Agenda\nWelcome\nQuestions"


def alternate_content(sp, fallback_text: str) -> None:
    """Wrap the shape as PowerPoint wraps a text box holding an equation: the box in
    mc:Choice, a text box standing in for it in mc:Fallback."""
    alternate = etree.Element(f"{{{_MC}}}AlternateContent", nsmap={"mc": _MC})
    sp.addprevious(alternate)
    choice = etree.SubElement(
        alternate,
        f"{{{_MC}}}Choice",
        Requires="a14",
        nsmap={"a14": "http://schemas.microsoft.com/office/drawing/2010/main"},
    )
    choice.append(sp)
    fallback = etree.SubElement(alternate, f"{{{_MC}}}Fallback")
    fallback.append(
        parse_xml(
            f'<p:sp xmlns:p="{_P}" xmlns:a="{_A}"><p:nvSpPr><p:cNvPr id="9" '
            'name="Equation picture"/><p:cNvSpPr txBox="1"/><p:nvPr/></p:nvSpPr>'
            f"<p:spPr/><p:txBody><a:bodyPr/><a:p><a:r><a:t>{fallback_text}</a:t>"
            "</a:r></a:p></p:txBody></p:sp>"
        )
    )


def test_a_text_box_inside_alternate_content_is_read_once(tmp_path: Path) -> None:
    deck, box = deck_with_text_box(
        "Kinetic energy", "The energy of a moving body is one half m v squared"
    )
    alternate_content(box.element, "Fallback copy")
    text = extract(write(tmp_path, "deck.pptx", saved(deck))).text
    assert text == (
        "Kinetic energy\nThe energy of a moving body is one half m v squared"
    )


def test_alternate_content_inside_a_group_is_read(tmp_path: Path) -> None:
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[TITLE_ONLY])
    slide.shapes.title.text = "Physics"
    group = slide.shapes.add_group_shape()
    box = group.shapes.add_textbox(Inches(1), Inches(2), Inches(6), Inches(1))
    box.text_frame.text = "Momentum is mass times velocity"
    other = group.shapes.add_textbox(Inches(1), Inches(3), Inches(6), Inches(1))
    other.text_frame.text = "Units: kg m/s"
    alternate_content(box.element, "Fallback copy")
    text = extract(write(tmp_path, "deck.pptx", saved(deck))).text
    assert text == "Physics\nMomentum is mass times velocity\nUnits: kg m/s"


# --- shows and templates -------------------------------------------------------------

MAIN = b"application/vnd.openxmlformats-officedocument.presentationml.presentation"


@pytest.mark.parametrize(
    "content_type",
    [
        b"application/vnd.openxmlformats-officedocument.presentationml.slideshow",
        b"application/vnd.ms-powerpoint.slideshow.macroEnabled",
        b"application/vnd.openxmlformats-officedocument.presentationml.template",
        b"application/vnd.ms-powerpoint.template.macroEnabled",
    ],
    ids=["ppsx", "ppsm", "potx", "potm"],
)
def test_shows_and_templates_are_read_as_presentations(
    tmp_path: Path, content_type: bytes
) -> None:
    content = with_member(
        pptx_bytes("Welcome to the show", "Doors open at eight", "Smile"),
        "[Content_Types].xml",
        lambda xml: xml.replace(MAIN + b".main+xml", content_type + b".main+xml"),
    )
    result = extract(write(tmp_path, "show.bin", content))
    assert result.text == "Welcome to the show\nDoors open at eight\nSmile"
    assert result.page_count == 1


# --- line breaks ---------------------------------------------------------------------


def smartart(slide, text_xml: str) -> None:
    """A SmartArt diagram on the slide with one point whose a:p is `text_xml`."""
    add_diagram(
        slide,
        f'<dgm:dataModel xmlns:dgm="{_DGM}" xmlns:a="{_A}"><dgm:ptLst>'
        f'<dgm:pt modelId="1"><dgm:t><a:bodyPr/><a:p>{text_xml}</a:p></dgm:t>'
        "</dgm:pt></dgm:ptLst></dgm:dataModel>",
    )


def add_diagram(slide, data: str, top: int = 0) -> None:
    """A SmartArt frame at ``top`` (EMU) on the slide, of the data model ``data``."""
    part = Part(
        PackURI("/ppt/diagrams/data1.xml"),
        "application/vnd.openxmlformats-officedocument.drawingml.diagramData+xml",
        slide.part.package,
        data.encode(),
    )
    rid = slide.part.relate_to(part, f"{_R}/diagramData")
    slide.shapes._spTree.append(
        parse_xml(
            f'<p:graphicFrame xmlns:p="{_P}" xmlns:a="{_A}" xmlns:r="{_R}">'
            '<p:nvGraphicFramePr><p:cNvPr id="10" name="Diagram 1"/>'
            "<p:cNvGraphicFramePr/><p:nvPr/></p:nvGraphicFramePr><p:xfrm>"
            f'<a:off x="0" y="{top}"/><a:ext cx="100" cy="100"/></p:xfrm><a:graphic>'
            f'<a:graphicData uri="{_DGM}"><dgm:relIds xmlns:dgm="{_DGM}" '
            f'r:dm="{rid}" r:lo="" r:qs="" r:cs=""/></a:graphicData></a:graphic>'
            "</p:graphicFrame>"
        )
    )


def test_line_breaks_are_newlines_in_slides_tables_notes_and_smartart(
    tmp_path: Path,
) -> None:
    # python-pptx gives a:br (Shift+Enter) as U+000B; SmartArt's was dropped.
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Contact"
    slide.placeholders[1].text_frame.text = "ACME Ltd\v1 Main Street"  # \v: a:br
    table = slide.shapes.add_table(1, 2, 0, 0, Inches(4), Inches(1)).table
    table.cell(0, 0).text = "Opening\vhours"
    table.cell(0, 1).text = "9 to 5"
    # A cell of several paragraphs: its row is read cell after cell.
    layout = slide.shapes.add_table(1, 2, 0, 0, Inches(4), Inches(1)).table
    layout.cell(0, 0).text = "Address"
    layout.cell(0, 1).text = "1 Quay Street\nHarbour Town"  # \n: a new paragraph
    smartart(slide, "<a:r><a:t>Plan</a:t></a:r><a:br/><a:r><a:t>ahead</a:t></a:r>")
    slide.notes_slide.notes_text_frame.text = "Say hello\vthen the address"
    text = extract(write(tmp_path, "deck.pptx", saved(deck))).text
    # The table and the diagram are placed at the slide's top-left, above the body.
    # A table's row of data stays a line: a break in its cell is a space.
    assert text == (
        "Contact\nOpening hours\t9 to 5\nAddress\n1 Quay Street\nHarbour Town\n"
        "Plan\nahead\nACME Ltd\n1 Main Street\n"
        "Say hello\nthen the address"
    )


# --- variants we do not read, damaged and hostile files ------------------------------

STRICT = [
    (_P.encode(), b"http://purl.oclc.org/ooxml/presentationml/main"),
    (_A.encode(), b"http://purl.oclc.org/ooxml/drawingml/main"),
    (_R.encode(), b"http://purl.oclc.org/ooxml/officeDocument/relationships"),
]


def test_strict_open_xml_is_refused_with_what_to_do(tmp_path: Path) -> None:
    # PowerPoint's "Strict Open XML Presentation": every namespace under purl.oclc.org.
    strict = replaced_everywhere(pptx_bytes("Budget 2024", "Figures"), STRICT)
    with pytest.raises(UnsupportedFileError) as info:
        extract(write(tmp_path, "strict.pptx", strict))
    assert str(info.value) == (
        "This PowerPoint file is saved as 'Strict Open XML', which is not supported; "
        "save it again as a regular PowerPoint Presentation (.pptx)."
    )
    assert classify(info.value) == "unsupported"


def without_common_slide_data(xml: bytes) -> bytes:
    return re.sub(rb"<p:cSld>.*</p:cSld>", b"", xml, flags=re.DOTALL)


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (
            "ppt/slides/slide2.xml",
            "The file is damaged: slide 2 cannot be read "
            "(required <p:cSld> child element not present)",
        ),
        (
            "ppt/notesSlides/notesSlide1.xml",
            "The file is damaged: the notes of slide 2 cannot be read "
            "(required <p:cSld> child element not present)",
        ),
    ],
    ids=["slide", "notes"],
)
def test_a_part_without_its_shape_tree_is_damaged(
    tmp_path: Path, member: str, message: str
) -> None:
    deck = pptx.Presentation()
    deck.slides.add_slide(deck.slide_layouts[TITLE_ONLY]).shapes.title.text = "One"
    second = deck.slides.add_slide(deck.slide_layouts[TITLE_ONLY])
    second.shapes.title.text = "Two"
    second.notes_slide.notes_text_frame.text = "Speak up"
    content = with_member(saved(deck), member, without_common_slide_data)
    with pytest.raises(CorruptFileError) as info:
        extract(write(tmp_path, "deck.pptx", content))
    assert str(info.value) == message
    assert classify(info.value) == "corruption"


@pytest.mark.parametrize(
    "member",
    ["ppt/slides/slide1.xml", "docProps/core.xml", "ppt/_rels/presentation.xml.rels"],
)
def test_an_entity_bomb_is_refused_in_plain_words(tmp_path: Path, member: str) -> None:
    content = with_member(pptx_bytes("Report", "Figures"), member, with_doctype)
    with pytest.raises(CorruptFileError) as info:
        extract(write(tmp_path, "bomb.pptx", content))
    assert str(info.value) == (
        "The file is damaged: its XML cannot be parsed "
        "(a DOCTYPE or entity declaration, which is not allowed)"
    )


# --- charts ---------------------------------------------------------------------------


def chart_slide(deck, categories: list[str], series: dict[str, list[float]]):
    """A title-only slide "Sales" with a clustered column chart; returns the chart."""
    slide = deck.slides.add_slide(deck.slide_layouts[TITLE_ONLY])
    slide.shapes.title.text = "Sales"
    data = CategoryChartData()
    data.categories = categories
    for name, values in series.items():
        data.add_series(name, values)
    frame = slide.shapes.add_chart(
        XL_CHART_TYPE.COLUMN_CLUSTERED, 0, 0, Inches(6), Inches(4), data
    )
    return frame.chart


def test_a_chart_s_title_axis_titles_series_and_categories_follow_the_slide_text(
    tmp_path: Path,
) -> None:
    # The chart's words are in its own part (c:chartSpace), which was not read.
    deck = pptx.Presentation()
    chart = chart_slide(deck, ["East", "West"], {"Revenue": [1, 2], "Costs": [3, 4]})
    chart.has_title = True
    chart.chart_title.text_frame.text = "Sales by region"
    chart.category_axis.has_title = True
    chart.category_axis.axis_title.text_frame.text = "Region"
    chart.value_axis.has_title = True
    chart.value_axis.axis_title.text_frame.text = "Millions"
    slide = deck.slides[0]
    slide.shapes.add_textbox(0, Inches(5), Inches(6), Inches(1)).text = "Source: ERP"
    slide.notes_slide.notes_text_frame.text = "West is new"
    text = extract(write(tmp_path, "deck.pptx", saved(deck))).text
    assert text == (
        "Sales\nSource: ERP\nSales by region\nRegion\nMillions\nRevenue\tCosts\n"
        "East\tWest\nWest is new"
    )


def test_a_chart_with_ten_thousand_categories_gives_the_first_hundred(
    tmp_path: Path,
) -> None:
    deck = pptx.Presentation()
    labels = [f"Day {n}" for n in range(10_000)]
    chart_slide(deck, labels, {"Visits": [1.0] * len(labels)})
    text = extract(write(tmp_path, "deck.pptx", saved(deck))).text
    assert text == "Sales\nVisits\n" + "\t".join([*labels[:100], "…"])


@pytest.mark.parametrize(
    ("member", "damage"),
    [
        (
            "ppt/slides/slide1.xml",
            lambda xml: re.sub(rb'(<c:chart [^>]*r:id=")[^"]+', rb"\1rId99", xml),
        ),
        (
            "ppt/charts/chart1.xml",
            lambda xml: xml.replace(b"c:chartSpace", b"c:userShapes"),
        ),
    ],
    ids=["dangling-reference", "not-a-chart"],
)
def test_a_damaged_chart_costs_its_own_labels_not_the_deck(
    tmp_path: Path, member: str, damage
) -> None:
    deck = pptx.Presentation()
    chart_slide(deck, ["East"], {"Revenue": [1]})
    deck.slides[0].notes_slide.notes_text_frame.text = "Speak up"
    content = with_member(saved(deck), member, damage)
    text = extract(write(tmp_path, "deck.pptx", content)).text
    assert text == "Sales\nSpeak up"


def test_an_entity_bomb_in_a_chart_part_is_refused(tmp_path: Path) -> None:
    deck = pptx.Presentation()
    chart_slide(deck, ["East"], {"Revenue": [1]})
    content = with_member(saved(deck), "ppt/charts/chart1.xml", with_doctype)
    with pytest.raises(CorruptFileError) as info:
        extract(write(tmp_path, "bomb.pptx", content))
    assert "DOCTYPE" in str(info.value)
