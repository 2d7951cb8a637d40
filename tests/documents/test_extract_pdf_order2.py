"""PDF reading order, drawn with fpdf2: a running header drawn last with its
page's footer, and a table of long lowercase cells drawn column by column."""

from __future__ import annotations

from pathlib import Path

import pytest
from fpdf import FPDF

from documents.extractors.registry import extract

ENGINES = ["auto", "pdfium"]
PAGE_HEIGHT = 792  # Letter, in points


def _pdf(tmp_path: Path, texts: list[tuple[float, float, str]]) -> Path:
    """A Letter page drawing each ``(x, y, text)`` (points, y up from the bottom
    as in PDF) in Helvetica 10, in the order given: the content stream's order."""
    pdf = FPDF(unit="pt", format="letter")
    pdf.set_auto_page_break(auto=False)
    pdf.add_page()
    pdf.set_font("helvetica", size=10)
    for x, y, text in texts:
        pdf.text(x, PAGE_HEIGHT - y, text)
    path = tmp_path / "page.pdf"
    pdf.output(str(path))
    return path


def _lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


BODY = [
    "Command code BMFOL displays the tax modules of a business account,",
    "those on the master file and those moved to the retention register,",
    "and command code BMFOR brings a module back from the register when",
    "an employee needs it for an adjustment or a payment that was made",
    "to the wrong period. The screens below are described line by line.",
]
HEADER = [
    (57, 752, "Part 2"),
    (57, 739, "Chapter 3 Terminal Responses"),
    (440, 752, "IRM 2.3.59"),
]
FOOTER = [
    (57, 40, "Cat. No. 28171E (12-12-2022) Internal Revenue Manual 2.3.59"),
    (57, 28, "Any line marked with a # is for Official Use Only"),
]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_running_header_drawn_last_with_the_footer_reads_first(
    tmp_path: Path, engine: str
) -> None:
    # A manual's pages: the body is drawn first, then the running header, the
    # right part of it followed by the footer. Going on down from the header to
    # the footer, that last block reached across the whole page, and the header
    # stayed at the end of the page's text.
    body = [(57, 690 - 14 * n, line) for n, line in enumerate(BODY)]
    path = _pdf(tmp_path, body + HEADER + FOOTER)
    lines = _lines(extract(path, pdf_engine=engine).text)
    assert lines == [
        "Part 2",
        "Chapter 3 Terminal Responses",
        "IRM 2.3.59",
        *BODY,
        *(text for _, _, text in FOOTER),
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_running_header_drawn_last_then_a_margin_mark_and_the_footer(
    tmp_path: Path, engine: str
) -> None:
    # After the header, a mark in the margin beside the body ("#": a line for
    # official use only), then the footer: the header still goes first.
    body = [(57, 690 - 14 * n, line) for n, line in enumerate(BODY)]
    texts = [*body, *HEADER, (30, 648, "#"), *FOOTER]
    lines = _lines(extract(_pdf(tmp_path, texts), pdf_engine=engine).text)
    assert lines[:4] == [
        "Part 2",
        "Chapter 3 Terminal Responses",
        "IRM 2.3.59",
        BODY[0],
    ]
    assert lines[-2:] == [text for _, _, text in FOOTER]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_running_header_drawn_last_reads_first_over_a_hyphenated_body(
    tmp_path: Path, engine: str
) -> None:
    # PDFium joins a line ending in a hyphen to the next, marking the hyphen one
    # way in the page's plain text and another in its laid-out text: the two
    # differed, and the page was left as drawn.
    body = [
        "The register keeps the modules of seven years, and an inter-",
        "national account is kept there as any other one is kept, until",
        "an employee brings it back for an adjustment or a payment.",
    ]
    texts = [(57, 690 - 14 * n, line) for n, line in enumerate(body)]
    path = _pdf(tmp_path, texts + HEADER + FOOTER)
    text = extract(path, pdf_engine=engine).text
    lines = _lines(text)
    assert lines[:3] == ["Part 2", "Chapter 3 Terminal Responses", "IRM 2.3.59"]
    assert lines[-2:] == [text for _, _, text in FOOTER]
    assert "\ufffe" not in text and "international account" in " ".join(lines)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_title_block_drawn_last_with_the_footer_reads_first(
    tmp_path: Path, engine: str
) -> None:
    # A transmittal's first page: its title block, and a date level with its
    # last lines, drawn after the body, the date followed by the footer.
    body = [(57, 640 - 14 * n, line) for n, line in enumerate(BODY)]
    title = [
        (137, 745, "MANUAL TRANSMITTAL 2.3.59"),
        (137, 722, "Department of the Treasury"),
        (137, 710, "Internal Revenue Service"),
        (470, 722, "DECEMBER 12, 2022"),
    ]
    path = _pdf(tmp_path, body + title + FOOTER)
    assert _lines(extract(path, pdf_engine=engine).text) == [
        *(text for _, _, text in title),
        *BODY,
        *(text for _, _, text in FOOTER),
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_two_prose_columns_with_a_header_and_footer_drawn_last_stay_whole(
    tmp_path: Path, engine: str
) -> None:
    # The header goes first; the columns are still read one after the other.
    left = [(57, 690 - 14 * n, line[:34].strip()) for n, line in enumerate(BODY)]
    right = [(320, 690 - 14 * n, line[34:].strip()) for n, line in enumerate(BODY)]
    path = _pdf(tmp_path, left + right + HEADER + FOOTER)
    lines = _lines(extract(path, pdf_engine=engine).text)
    assert lines[:3] == ["Part 2", "Chapter 3 Terminal Responses", "IRM 2.3.59"]
    assert lines[3:13] == [text for _, _, text in left + right]
    assert lines[13:] == [text for _, _, text in FOOTER]


ORCHARD = [
    ["apples from the north orchard", "picked early on monday morning", "sold at the saturday market"],
    ["pears from the old farm", "picked late on tuesday", "kept in the cold store"],
    ["plums from the hill", "picked on thursday", "sent to the jam factory"],
    ["cherries from the south slope", "picked by hand on friday", "sold at the market"],
]  # fmt: skip


@pytest.mark.parametrize("engine", ENGINES)
def test_a_table_of_long_lowercase_cells_drawn_column_by_column_reads_row_by_row(
    tmp_path: Path, engine: str
) -> None:
    # Cells of several words, all lowercase, took the columns for prose: every
    # first cell came first, then every second one.
    texts = [(57, 740, "where the fruit for the market stall comes from")]
    for column, x in enumerate((57, 240, 420)):
        texts += [(x, 700 - 23 * row, ORCHARD[row][column]) for row in range(4)]
    path = _pdf(tmp_path, texts)
    assert _lines(extract(path, pdf_engine=engine).text) == [
        "where the fruit for the market stall comes from",
        *(" ".join(row) for row in ORCHARD),
    ]


WRAPPED = [
    [["apples from the north", "orchard by the lake"], ["picked early on a", "monday morning"], ["sold at the saturday", "market in town"]],
    [["pears from the old", "river farm"], ["picked late on a", "tuesday evening"], ["kept in the cold", "store for a week"]],
    [["plums from the hill", "gardens"], ["picked early on a", "thursday"], ["sent to the jam", "factory"]],
    [["cherries from the", "south slope"], ["picked by hand on", "friday afternoon"], ["sold at the saturday", "market in town"]],
]  # fmt: skip


@pytest.mark.parametrize("engine", ENGINES)
def test_a_table_of_wrapped_lowercase_cells_drawn_column_by_column_reads_row_by_row(
    tmp_path: Path, engine: str
) -> None:
    # Each cell wraps onto a second line: a column's lines pair up into cells,
    # level with the cells beside them, and each row is read whole before the next.
    texts = [(57, 740, "where the fruit for the market stall comes from")]
    for column, x in enumerate((57, 240, 420)):
        for row in range(4):
            top = 700 - 36 * row
            cell = WRAPPED[row][column]
            texts += [(x, top - 12 * k, line) for k, line in enumerate(cell)]
    path = _pdf(tmp_path, texts)
    lines = _lines(extract(path, pdf_engine=engine).text)
    assert lines == [
        "where the fruit for the market stall comes from",
        *(
            " ".join(cell[k] for cell in row if len(cell) > k)
            for row in WRAPPED
            for k in range(2)
        ),
    ]


MINUTES = (
    "the committee met on monday to review the budget for the coming year and "
    "agreed that the new office should open before the summer, provided that the "
    "lease can be signed by the end of the month; members asked for a second "
    "quote on the furniture, since the first one seemed high for what was "
    "offered, and the chair promised to circulate it before the next meeting in "
    "two weeks, when the matter will be decided once and for all by a vote."
)


def _wrapped(text: str, width: float) -> list[str]:
    """``text`` broken into lines no wider than ``width`` points in Helvetica 10,
    as a word processor breaks them."""
    pdf = FPDF(unit="pt")
    pdf.set_font("helvetica", size=10)
    lines = [""]
    for word in text.split():
        line = f"{lines[-1]} {word}".strip()
        if pdf.get_string_width(line) > width:
            lines.append(word)
        else:
            lines[-1] = line
    return lines


@pytest.mark.parametrize("pitch", [14, 23])
@pytest.mark.parametrize("engine", ENGINES)
def test_two_columns_of_lowercase_prose_still_read_column_by_column(
    tmp_path: Path, engine: str, pitch: int
) -> None:
    # Lines of several words, lowercase, level across the columns as a table's
    # cells are, and double spaced too: sentences running down each column.
    lines = _wrapped(MINUTES, 220)
    half = len(lines) // 2
    texts = [(57, 740, "minutes of the budget meeting")]
    texts += [(57, 700 - pitch * n, line) for n, line in enumerate(lines[:half])]
    texts += [(320, 700 - pitch * n, line) for n, line in enumerate(lines[half:])]
    path = _pdf(tmp_path, texts)
    text = " ".join(_lines(extract(path, pdf_engine=engine).text))
    assert " ".join(lines) in text
