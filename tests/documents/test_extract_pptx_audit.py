"""PowerPoint findings of the second extraction audit: a deck of pictures only (F4),
text read in z-order instead of position (F6), SmartArt nodes in creation order
instead of the order shown (F7)."""

from __future__ import annotations

import io
from pathlib import Path

import pptx
from pptx.util import Inches

from documents.extractors import extract
from documents.extractors.base import EMPTY_NOTE
from tests.documents.test_extract_pptx import _A, _DGM, TITLE_ONLY, add_diagram, saved
from tests.files import image_bytes, text_image, words, write

BLANK = 6
COMPARISON = 4


def picture(slide, lines: list[str], top: int = 0) -> None:
    png = image_bytes(text_image(lines))
    slide.shapes.add_picture(io.BytesIO(png), Inches(1), top)


def text_box(shapes, text: str, left: float, top: float) -> None:
    shapes.add_textbox(Inches(left), Inches(top), Inches(3), Inches(0.5)).text = text


# --- F4: a deck of pictures only ------------------------------------------------------


def test_a_deck_of_scanned_slides_is_read_by_ocr(tmp_path: Path) -> None:
    # It completed with no text and no note.
    deck = pptx.Presentation()
    picture(deck.slides.add_slide(deck.slide_layouts[BLANK]), ["Harbour fees rise"])
    result = extract(write(tmp_path, "scans.pptx", saved(deck)))
    assert words(result.text) == {"harbour", "fees", "rise"}, result.text
    assert result.extractor == "pptx+tesseract"
    assert result.page_count == 1
    assert result.details["ocr_page_count"] == 1


def test_slide_pictures_are_read_in_slide_order_once_and_not_the_master_s_logo(
    tmp_path: Path,
) -> None:
    deck = pptx.Presentation()
    logo = image_bytes(text_image(["Company logo"]))
    master = deck.slide_master
    _, rid = master.part.get_or_add_image_part(io.BytesIO(logo))
    master.shapes._spTree.add_pic(99, "Logo", "", rid, 0, 0, Inches(1), Inches(1))
    first = deck.slides.add_slide(deck.slide_layouts[BLANK])
    picture(first, ["Opening remarks"])
    second = deck.slides.add_slide(deck.slide_layouts[BLANK])
    picture(second, ["Closing summary"])
    picture(second, ["Opening remarks"], top=Inches(3))  # the same picture again
    result = extract(write(tmp_path, "scans.pptx", saved(deck)))
    assert result.text.split() == ["Opening", "remarks", "Closing", "summary"]
    assert result.details["ocr_page_count"] == 2


def test_with_ocr_turned_off_a_deck_of_pictures_says_why_it_has_no_text(
    tmp_path: Path,
) -> None:
    deck = pptx.Presentation()
    picture(deck.slides.add_slide(deck.slide_layouts[BLANK]), ["Harbour fees rise"])
    result = extract(write(tmp_path, "scans.pptx", saved(deck)), ocr_mode="never")
    assert (result.text, result.confidence) == ("", 0.0)
    assert result.note == (
        "No text: the document holds only pictures. OCR is turned off "
        "(OCR_MODE=never), so its pictures were not read."
    )


def test_a_blank_deck_says_it_is_blank(tmp_path: Path) -> None:
    deck = pptx.Presentation()
    deck.slides.add_slide(deck.slide_layouts[BLANK])
    result = extract(write(tmp_path, "blank.pptx", saved(deck)))
    assert (result.text, result.note) == ("", EMPTY_NOTE)


def test_a_deck_with_text_does_not_read_its_pictures(tmp_path: Path) -> None:
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[TITLE_ONLY])
    slide.shapes.title.text = "Harbour fees"
    picture(slide, ["Chart of the fees"], top=Inches(2))
    result = extract(write(tmp_path, "deck.pptx", saved(deck)))
    assert (result.text, result.extractor) == ("Harbour fees", "pptx")


# --- F6: reading order ----------------------------------------------------------------


def test_text_boxes_are_read_top_to_bottom_not_in_z_order(tmp_path: Path) -> None:
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[BLANK])
    text_box(slide.shapes, "Conclusion at the bottom", 1, 6)
    text_box(slide.shapes, "Middle paragraph", 1, 3)
    text_box(slide.shapes, "Heading at the top", 1, 0.5)
    slide.notes_slide.notes_text_frame.text = "Speak slowly"
    text = extract(write(tmp_path, "deck.pptx", saved(deck))).text
    assert text == (
        "Heading at the top\nMiddle paragraph\nConclusion at the bottom\nSpeak slowly"
    )


def test_boxes_on_one_row_are_read_left_to_right_and_the_title_first(
    tmp_path: Path,
) -> None:
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[TITLE_ONLY])
    slide.shapes.title.text = "Two columns"
    text_box(slide.shapes, "Right column", 5, 2)
    text_box(slide.shapes, "Left column", 1, 2.2)  # not quite aligned: same row
    text_box(slide.shapes, "Above the columns", 1, 0.1)  # above the title
    title = slide.shapes.title.element
    title.getparent().append(title)  # "Bring to Front"
    text = extract(write(tmp_path, "deck.pptx", saved(deck))).text
    assert text == "Two columns\nAbove the columns\nLeft column\nRight column"


def test_placeholders_keep_the_layout_s_order_with_boxes_placed_between(
    tmp_path: Path,
) -> None:
    # A comparison reads each heading with its own list, not both headings first.
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[COMPARISON])
    for idx, text in enumerate(["Options", "Rent", "Cheap", "Buy", "Lasting"]):
        slide.placeholders[idx].text = text
    text_box(slide.shapes, "Figures from 2024", 0.5, 1.2)  # under the title
    text_box(slide.shapes, "Decide by May", 0.5, 6.5)
    text = extract(write(tmp_path, "deck.pptx", saved(deck))).text
    assert (
        text == "Options\nFigures from 2024\nRent\nCheap\nBuy\nLasting\nDecide by May"
    )


def test_a_group_s_children_are_read_together_and_in_position_order(
    tmp_path: Path,
) -> None:
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[BLANK])
    text_box(slide.shapes, "After the group", 5, 2)
    group = slide.shapes.add_group_shape()
    text_box(group.shapes, "Group bottom", 1, 3)
    text_box(group.shapes, "Group top", 1, 1)
    text = extract(write(tmp_path, "deck.pptx", saved(deck))).text
    assert text == "Group top\nGroup bottom\nAfter the group"


def test_where_a_position_is_unknown_the_slide_keeps_z_order(tmp_path: Path) -> None:
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[BLANK])
    text_box(slide.shapes, "Drawn first", 1, 5)
    text_box(slide.shapes, "No geometry", 1, 3)
    text_box(slide.shapes, "Drawn last", 1, 1)
    sp_pr = slide.shapes[1].element.spPr
    for child in list(sp_pr):  # as Google Slides and LibreOffice write some shapes
        sp_pr.remove(child)
    text = extract(write(tmp_path, "deck.pptx", saved(deck))).text
    assert text == "Drawn first\nNo geometry\nDrawn last"


# --- F7: SmartArt in the order shown --------------------------------------------------


def diagram(slide, points: dict[str, str], links: list[tuple[str, str, int]]) -> None:
    """A SmartArt diagram: `points` maps model ids to text ("" for the document
    point), `links` are parOf connections (parent, child, srcOrd)."""
    pts = "".join(
        f'<dgm:pt modelId="{mid}" type="doc"/>'
        if not text
        else f'<dgm:pt modelId="{mid}"><dgm:t><a:bodyPr/><a:p><a:r><a:t>{text}'
        "</a:t></a:r></a:p></dgm:t></dgm:pt>"
        for mid, text in points.items()
    )
    cxns = "".join(
        f'<dgm:cxn modelId="c{n}" srcId="{src}" destId="{dest}" srcOrd="{order}" '
        'destOrd="0"/>'
        for n, (src, dest, order) in enumerate(links)
    )
    add_diagram(
        slide,
        f'<dgm:dataModel xmlns:dgm="{_DGM}" xmlns:a="{_A}"><dgm:ptLst>{pts}'
        f"</dgm:ptLst><dgm:cxnLst>{cxns}</dgm:cxnLst></dgm:dataModel>",
        top=2_000_000,
    )


def smartart_text(tmp_path: Path, points, links) -> str:
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[TITLE_ONLY])
    slide.shapes.title.text = "Process"
    diagram(slide, points, links)
    return extract(write(tmp_path, "deck.pptx", saved(deck))).text


def test_smartart_nodes_follow_their_connections_order_after_move_up(
    tmp_path: Path,
) -> None:
    # "Move Up" changes the connections' srcOrd, not the order of the points.
    points = {"0": "", "1": "Plan", "2": "Build", "3": "Ship"}
    links = [("0", "1", 2), ("0", "2", 0), ("0", "3", 1)]
    assert smartart_text(tmp_path, points, links) == "Process\nBuild\nShip\nPlan"


def test_a_smartart_node_s_children_follow_it(tmp_path: Path) -> None:
    points = {"5": "Testing", "0": "", "1": "Design", "2": "Build", "4": "Review"}
    links = [("0", "1", 0), ("0", "2", 1), ("2", "4", 1), ("2", "5", 0)]
    text = smartart_text(tmp_path, points, links)
    assert text == "Process\nDesign\nBuild\nTesting\nReview"


def test_smartart_without_connections_or_with_a_cycle_reads_every_node_once(
    tmp_path: Path,
) -> None:
    points = {"1": "One", "2": "Two", "3": "Three"}
    assert smartart_text(tmp_path, points, []) == "Process\nOne\nTwo\nThree"
    cycle = [("1", "2", 0), ("2", "3", 0), ("3", "1", 0)]  # a damaged file
    assert smartart_text(tmp_path, points, cycle) == "Process\nOne\nTwo\nThree"
