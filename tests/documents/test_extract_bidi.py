"""PDF lines that mix right-to-left and left-to-right words read in logical order:
English paragraphs with an Arabic or Hebrew phrase, Hebrew and Arabic paragraphs
with a product name or a number, drawn with fpdf2 (DejaVu Sans) and printed by
LibreOffice when it is there."""

from __future__ import annotations

import shutil
import subprocess
import unicodedata
from pathlib import Path

import pytest
from fpdf import FPDF

from documents.extractors.registry import extract

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
needs_font = pytest.mark.skipif(
    not FONT.exists(), reason="needs DejaVu Sans (fonts-dejavu)"
)

ENGLISH = [
    "Arabic: مرحبا بالعالم العربي",
    "Hebrew: שלום עולם",
    "The word שלום עולם means hello world.",
    "The price is السعر 100 دينار today.",
    "A plain English line.",
    "Another plain English line of text.",
]
HEBREW_ARABIC = [
    "זה מסמך Microsoft Word בעברית",
    "Microsoft Word הוא מעבד תמלילים",
    "הגרסה Windows 10 מותקנת",
    "مرحبا Hello World بالعالم",
    "שלום עולם",
    "מחיר 100 שקלים",
    "السعر 100 دينار",
]


def _rtl(word: str) -> bool:
    return any(unicodedata.bidirectional(c) in ("R", "AL") for c in word)


def _ltr(word: str) -> bool:
    return not _rtl(word) and any(unicodedata.bidirectional(c) == "L" for c in word)


def _laid_out(line: str, *, rtl: bool) -> str:
    """A line's letters in the order they lie from left to right, as the bidi rules
    lay it out in a paragraph running ``rtl`` or not: the words from the
    paragraph's start edge, a run of words of the other direction as it reads (a
    number after a left-to-right word, or between two right-to-left ones, goes
    with them); right-to-left words spelt backwards."""
    words = line.split(" ")
    strong = [n for n, word in enumerate(words) if _rtl(word) or _ltr(word)]
    other = [_ltr(word) if rtl else _rtl(word) for word in words]
    for n, word in enumerate(words):
        before = [k for k in strong if k < n]
        after = [k for k in strong if k > n]
        if n in strong or not before:
            continue
        if rtl:
            other[n] = other[before[-1]] and any(c.isdigit() for c in word)
        else:
            other[n] = bool(after) and other[before[-1]] and other[after[0]]
    runs: list[tuple[bool, list[str]]] = []
    for word, inner in zip(words, other, strict=True):
        if inner and runs and runs[-1][0]:
            runs[-1][1].append(word)
        else:
            runs.append((inner, [word]))
    if rtl:
        runs.reverse()  # a run of left-to-right words keeps its order
    else:
        runs = [(inner, run[::-1] if inner else run) for inner, run in runs]
    return " ".join(w[::-1] if _rtl(w) else w for _, run in runs for w in run)


def _page(lines: list[str], *, rtl: bool) -> bytes:
    """An A4 page of ``lines`` in DejaVu Sans, laid out as in a paragraph running
    ``rtl`` or not: against the right margin or the left one."""
    pdf = FPDF()
    pdf.add_page()
    pdf.add_font("dejavu", fname=str(FONT))
    pdf.set_font("dejavu", size=12)
    for n, line in enumerate(lines):
        shown = _laid_out(line, rtl=rtl)
        x = pdf.w - 20 - pdf.get_string_width(shown) if rtl else 20
        pdf.text(x, 30 + 8 * n, shown)
    return bytes(pdf.output())


def test_the_laid_out_helper_is_the_bidi_layout() -> None:
    # Guard: the fixtures draw what a word processor shows.
    assert _laid_out("Arabic: مرحبا بالعالم", rtl=False) == "Arabic: ملاعلاب ابحرم"
    assert _laid_out("a שלום 100 עולם b", rtl=False) == "a םלוע 100 םולש b"
    assert _laid_out("זה Microsoft Word 10 טוב", rtl=True) == "בוט Microsoft Word 10 הז"


# --- drawn with fpdf2 ---------------------------------------------------------------


@needs_font
@pytest.mark.parametrize("engine", ["auto", "pdfium"])
def test_right_to_left_phrases_in_left_to_right_lines_read_in_order(
    tmp_path: Path, engine: str
) -> None:
    # A line with more Arabic or Hebrew letters than English ones was read from
    # the right ("مرحبا بالعالم العربي :Arabic"), and a phrase of two words or
    # more in an English line came out in the order it lies ("עולם שלום").
    path = tmp_path / "english.pdf"
    path.write_bytes(_page(ENGLISH, rtl=False))
    assert extract(path, pdf_engine=engine).text.splitlines() == ENGLISH


@needs_font
def test_a_page_of_one_such_line_reads_in_order(tmp_path: Path) -> None:
    # No other line to tell the paragraph's direction: it starts at the left margin.
    path = tmp_path / "one-line.pdf"
    path.write_bytes(_page(ENGLISH[:1], rtl=False))
    assert extract(path).text == ENGLISH[0]


@needs_font
@pytest.mark.parametrize("engine", ["auto", "pdfium"])
def test_left_to_right_words_in_right_to_left_lines_read_in_order(
    tmp_path: Path, engine: str
) -> None:
    # Guard: a Hebrew or Arabic paragraph's lines read from the right, a product
    # name and a number in their own order, even where the line starts with one.
    path = tmp_path / "hebrew.pdf"
    path.write_bytes(_page(HEBREW_ARABIC, rtl=True))
    assert extract(path, pdf_engine=engine).text.splitlines() == HEBREW_ARABIC


# --- printed by LibreOffice -----------------------------------------------------------

LONG_ENGLISH = (
    "The Hebrew greeting שלום עולם and the Arabic greeting مرحبا بالعالم are written "
    "from right to left, while the English words around them run from left to "
    "right as usual, and the line wraps here and there."
)
LONG_HEBREW = (
    "מערכת ההפעלה Windows 11 של חברת Microsoft כוללת את הדפדפן Edge ואת תוכנת "
    "Office 365 לעבודה משרדית, ובגרסה 23H2 נוספו תכונות חדשות רבות למשתמשים "
    "בישראל ובעולם כולו"
)


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Word documents of English paragraphs, of right-to-left ones (Word's "bidi"
    paragraphs) and of the one line, printed to PDF by LibreOffice."""
    if shutil.which("soffice") is None:
        pytest.skip("LibreOffice is missing")
    import docx
    from docx.oxml import OxmlElement

    folder = tmp_path_factory.mktemp("printed")
    documents = {
        "english": (ENGLISH + [LONG_ENGLISH], False),
        "hebrew": (HEBREW_ARABIC + [LONG_HEBREW], True),
        "one-line": (ENGLISH[:1], False),
    }
    for name, (paragraphs, rtl) in documents.items():
        document = docx.Document()
        for text in paragraphs:
            paragraph = document.add_paragraph(text)
            if rtl:
                paragraph._p.get_or_add_pPr().append(OxmlElement("w:bidi"))
        document.save(folder / f"{name}.docx")
    subprocess.run(
        ["soffice", "--headless", "--convert-to", "pdf", "--outdir", str(folder),
         *(str(folder / f"{name}.docx") for name in documents)],
        env={"HOME": str(folder), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        timeout=120,
        check=True,
    )  # fmt: skip
    return folder


@pytest.mark.parametrize(
    ("name", "paragraphs"),
    [
        ("english", [*ENGLISH, LONG_ENGLISH]),
        ("hebrew", [*HEBREW_ARABIC, LONG_HEBREW]),
        ("one-line", ENGLISH[:1]),
    ],
)
def test_libreoffice_prints_read_in_order(
    printed: Path, name: str, paragraphs: list[str]
) -> None:
    # Besides the order of the words: PDFium gave a number's digits before a
    # letter in a Hebrew line backwards ("32H2"). No lam-alef here: LibreOffice
    # draws it as one glyph, whose two letters PDFium gives swapped ("دوالر").
    lines = extract(printed / f"{name}.pdf").text.splitlines()
    assert lines[: len(paragraphs) - 1] == paragraphs[:-1]
    assert (
        " ".join(line.strip() for line in lines[len(paragraphs) - 1 :])
        == (paragraphs[-1])
    )
    assert len(lines) > len(paragraphs) or name == "one-line"  # the last one wraps
