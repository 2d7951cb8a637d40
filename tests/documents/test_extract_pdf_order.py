"""PDF reading order: pages drawn out of order, and pages turned by /Rotate."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from documents.extractors.registry import extract
from tests.files import placed_text_pdf, shaped_rtl_pdf

ENGINES = ["auto", "pdfium"]

INVOICE = [
    ["Consulting services for March project", "12 hours at 150.00 each", "1,800.00 EUR total amount"],
    ["Travel expenses to client site Berlin", "3 trips at 240.00 each", "720.00 EUR total amount"],
    ["Software license annual renewal fee", "1 license at 990.00 each", "990.00 EUR total amount"],
    ["Workshop preparation and materials", "8 hours at 120.00 each", "960.00 EUR total amount"],
]  # fmt: skip

COLUMN_ONE = [
    "The committee met on Monday to review",
    "the budget for the coming year and",
    "agreed that the new office should open",
    "before the summer, provided that the",
    "lease can be signed by the end of",
    "the month.",
]
COLUMN_TWO = [
    "Members asked for a second quote on",
    "the furniture, since the first one",
    "seemed high for what was offered, and",
    "the chair promised to circulate it",
    "before the next meeting in two",
    "weeks.",
]


def _pdf(
    tmp_path: Path, texts: list[tuple[float, float, str]], rotate: int = 0
) -> Path:
    path = tmp_path / "page.pdf"
    path.write_bytes(placed_text_pdf(texts, rotate=rotate))
    return path


def _lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_table_drawn_column_by_column_reads_row_by_row(
    tmp_path: Path, engine: str
) -> None:
    # Report engines fill a table a column at a time: read as drawn, every
    # description came first, then every quantity, then every amount.
    texts = [(57, 740, "INVOICE 2024-0042 from Example Consulting GmbH")]
    for column, x in enumerate((57, 270, 425)):
        texts += [(x, 700 - 23 * row, INVOICE[row][column]) for row in range(4)]
    path = _pdf(tmp_path, texts)
    assert _lines(extract(path, pdf_engine=engine).text) == [
        "INVOICE 2024-0042 from Example Consulting GmbH",
        *(" ".join(row) for row in INVOICE),
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_footer_drawn_first_and_a_title_drawn_late_read_from_the_top(
    tmp_path: Path, engine: str
) -> None:
    texts = [
        (57, 40, "Footer drawn first STREAMFOOTER"),
        (57, 620, "Third line visually THIRD"),
        (57, 735, "Title drawn late FIRST"),
        (57, 680, "Second line visually SECOND"),
    ]
    path = _pdf(tmp_path, texts)
    assert _lines(extract(path, pdf_engine=engine).text) == [
        "Title drawn late FIRST",
        "Second line visually SECOND",
        "Third line visually THIRD",
        "Footer drawn first STREAMFOOTER",
    ]


def _two_columns(heading_last: bool) -> list[tuple[float, float, str]]:
    heading = [(57, 740, "Minutes of the budget meeting")]
    columns = [(57, 700 - 14 * n, line) for n, line in enumerate(COLUMN_ONE)]
    columns += [(320, 700 - 14 * n, line) for n, line in enumerate(COLUMN_TWO)]
    return columns + heading if heading_last else heading + columns


@pytest.mark.parametrize("heading_last", [False, True])
@pytest.mark.parametrize("engine", ENGINES)
def test_two_columns_of_prose_still_read_column_by_column(
    tmp_path: Path, engine: str, heading_last: bool
) -> None:
    # Their lines share baselines as a table's cells do, but go on with each
    # other's sentences: read row by row, they would be interleaved.
    path = _pdf(tmp_path, _two_columns(heading_last))
    text = " ".join(_lines(extract(path, pdf_engine=engine).text))
    assert " ".join(COLUMN_ONE) + " " + " ".join(COLUMN_TWO) in text


def _table_rows() -> list[tuple[float, float, str]]:
    return [
        (57, 560, "Region"),
        (200, 560, "Revenue"),
        (340, 560, "Growth"),
        (57, 545, "North"),
        (200, 545, "1,234,567"),
        (340, 545, "12%"),
    ]


@pytest.mark.parametrize("rotate", [90, 180, 270])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_page_turned_by_rotate_reads_as_it_was_set(
    tmp_path: Path, engine: str, rotate: int
) -> None:
    # Someone turned the page in a viewer and saved it: PDFium ordered its lines
    # as turned, so the table's cells came out reversed or a line a cell, and the
    # columns' lines from the bottom up.
    texts = [
        *_two_columns(heading_last=False),
        *_table_rows(),
        (57, 40, "Page footer FOOTERWORD"),
    ]
    upright = extract(_pdf(tmp_path, texts), pdf_engine=engine).text
    turned = extract(_pdf(tmp_path, texts, rotate), pdf_engine=engine).text
    assert _lines(turned) == _lines(upright)
    assert "Region Revenue Growth\nNorth 1,234,567 12%" in upright
    assert " ".join(COLUMN_ONE) in " ".join(_lines(upright))


def _laid_out(line: str) -> str:
    """A right-to-left line's letters in the order they lie from left to right,
    as the bidi rules lay it out: words from the right, each right-to-left word's
    letters too; a run of left-to-right words (and a number after one) as it reads.
    """
    runs: list[tuple[bool, list[str]]] = []
    for word in reversed(line.split(" ")):
        rtl = any(unicodedata.bidirectional(c) in ("R", "AL") for c in word)
        if not rtl and runs and not runs[-1][0]:
            runs[-1][1].insert(0, word)
        else:
            runs.append((rtl, [word[::-1] if rtl else word]))
    return " ".join(" ".join(words) for _, words in runs)


@pytest.mark.parametrize("angle", [0, 90, 180])
def test_left_to_right_words_in_a_right_to_left_line_keep_their_order(
    tmp_path: Path, angle: int
) -> None:
    # PDFium gave such a run's words last first ("Word Microsoft"), or put the
    # right-to-left words around it the wrong way round.
    lines = [
        "זה מסמך Microsoft Word בעברית",
        "مرحبا Hello World بالعالم",
        "שלום New York City עולם",
        "הגרסה Windows 10 מותקנת",
        "שלום 123 עולם",
    ]
    path = tmp_path / "mixed.pdf"
    path.write_bytes(shaped_rtl_pdf(lines, angle, _laid_out))
    assert extract(path, pdf_engine="pdfium").text.splitlines() == lines


@pytest.mark.parametrize("engine", ENGINES)
def test_a_side_box_beside_a_paragraph_reads_as_a_block(
    tmp_path: Path, engine: str
) -> None:
    # A form's demo page: its navigation bar and title drawn late send the page
    # through the row-by-row reading, where a box in the margin, between two of a
    # paragraph's lines, came out between them.
    texts = [
        (57, 670, "You can open a PDF or create a blank PDF here."),
        (57, 650, "Here are the drawings the tool has created"),
        (57, 630, "for you to try out."),
        (57, 560, "Goto Page 2: Line Tool"),
        (57, 530, "Goto Page 3: Arrow Tool"),
        (60, 752, "First Page Previous Page Next Page Last Page"),
        (86, 601, "Please save into a new PDF to see the effect!"),
        (520, 660, "Online Help"),
        (520, 640, "and Support"),
        (57, 472, "Goto Page 5: Circle Tool"),
        (120, 706, "PDFill: PDF Drawing"),
        (57, 443, "Goto Page 6: Basic Shapes"),
    ]
    lines = _lines(extract(_pdf(tmp_path, texts), pdf_engine=engine).text)
    paragraph = lines.index("You can open a PDF or create a blank PDF here.")
    assert lines[paragraph + 1 : paragraph + 3] == [
        "Here are the drawings the tool has created",
        "for you to try out.",
    ]
    side = lines.index("Online Help")
    assert lines[side + 1] == "and Support"
    assert lines[:2] == [
        "First Page Previous Page Next Page Last Page",
        "PDFill: PDF Drawing",
    ]


LETTERHEAD = [
    (57, 760, "Example Consulting GmbH"),
    (57, 748, "Hauptstrasse 1, 10115 Berlin"),
]


@pytest.mark.parametrize("columns", [1, 2])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_letterhead_drawn_last_above_prose_reads_first(
    tmp_path: Path, engine: str, columns: int
) -> None:
    # Drawn after the body, it came out after it; the columns stay whole.
    body = _two_columns(heading_last=False)[1 : 1 + 6 * columns]
    path = _pdf(tmp_path, body + LETTERHEAD)
    lines = _lines(extract(path, pdf_engine=engine).text)
    assert lines[:2] == [text for _, _, text in LETTERHEAD]
    assert " ".join(COLUMN_ONE) in " ".join(lines)
    if columns == 2:
        assert " ".join(COLUMN_ONE + COLUMN_TWO) in " ".join(lines)


STOCK = [
    ["apples", "three crates", "sold out"],
    ["pears", "two crates", "in stock"],
    ["plums", "one crate", "on order"],
    ["cherries", "five crates", "in stock"],
]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_table_of_lowercase_cells_drawn_column_by_column_reads_row_by_row(
    tmp_path: Path, engine: str
) -> None:
    # Lowercase starts were taken for prose columns, and the table left as drawn.
    texts = [(57, 740, "stock list for the market stall")]
    for column, x in enumerate((57, 270, 425)):
        texts += [(x, 700 - 23 * row, STOCK[row][column]) for row in range(4)]
    path = _pdf(tmp_path, texts)
    assert _lines(extract(path, pdf_engine=engine).text) == [
        "stock list for the market stall",
        *(" ".join(row) for row in STOCK),
    ]


@pytest.mark.parametrize("rotate", [90, 180, 270])
def test_the_pdfplumber_engine_reads_a_page_turned_by_rotate_as_set(
    tmp_path: Path, rotate: int
) -> None:
    # pdfminer lays a turned page out turned: the table's cells came out a line
    # each, or backwards.
    texts = [(57, 740, "Quarterly figures"), *_table_rows()]
    upright = extract(_pdf(tmp_path, texts), pdf_engine="pdfplumber").text
    turned = extract(_pdf(tmp_path, texts, rotate), pdf_engine="pdfplumber").text
    assert _lines(turned) == _lines(upright)
    assert "Region Revenue Growth\nNorth 1,234,567 12%" in upright
