"""PDF reading found wanting by an outside audit: two columns drawn a line of each
in turn, a line set sideways after an upright one, a text stamp on a scan, and a
PDF with no pages."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from PIL import Image

from documents.extractors import CorruptFileError
from documents.extractors import pdf as pdf_module
from documents.extractors.ocr import OcrPage
from documents.extractors.registry import extract
from tests.files import hand_made_pdf, placed_text_pdf, stamped_scan_pdf_bytes

ENGINES = ["auto", "pdfium"]

LEFT = (
    "The harbour board met on a wet Tuesday to decide whether the old lantern "
    "tower should be repaired or pulled down, and after a long debate about the "
    "cost of scaffolding and the state of the stone it agreed to ask two firms "
    "for a quote before the end of the month, so that the work could start in "
    "spring when the weather is kinder to masons and their mortar sets well."
)
RIGHT = (
    "Members also heard from the ferry company, which wants to move its ticket "
    "office closer to the slipway and asked for a lease on the empty net store; "
    "the board was willing in principle but wanted a plan for the cars that "
    "queue along the quay every summer weekend, and a promise that fishermen "
    "would keep the right to mend their nets on the hard as they always have."
)


def _lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def _joined(text: str) -> str:
    return " ".join(_lines(text))


def _two_columns_a_line_of_each_in_turn() -> list[tuple[float, float, str]]:
    left, right = textwrap.wrap(LEFT, 46), textwrap.wrap(RIGHT, 46)
    texts = [(57, 740, "Minutes of the harbour board, full width across the page")]
    for n in range(max(len(left), len(right))):
        y = 700 - 13 * n
        texts += [(57, y, left[n])] if n < len(left) else []
        texts += [(320, y, right[n])] if n < len(right) else []
    return [*texts, (57, 60, "Page 1 of 1, harbour board minutes, printed in full")]


@pytest.mark.parametrize("engine", ENGINES)
def test_two_columns_drawn_a_line_of_each_in_turn_read_column_by_column(
    tmp_path: Path, engine: str
) -> None:
    # Some print drivers write a baseline at a time: PDFium ran each left line into
    # the right one beside it, and every sentence was broken in two.
    path = tmp_path / "interleaved.pdf"
    path.write_bytes(placed_text_pdf(_two_columns_a_line_of_each_in_turn()))
    text = extract(path, pdf_engine=engine).text
    assert _joined(text) == " ".join(
        [
            "Minutes of the harbour board, full width across the page",
            LEFT,
            RIGHT,
            "Page 1 of 1, harbour board minutes, printed in full",
        ]
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_a_two_column_table_drawn_row_by_row_stays_row_by_row(
    tmp_path: Path, engine: str
) -> None:
    # Wide gaps at the same place on every line, as between columns: but the
    # cells are short and their rows stand apart, so it is no pair of columns.
    rows = [
        ("Consulting services for March", "1,800.00 EUR"),
        ("Travel expenses to the client site", "720.00 EUR"),
        ("Software licence, annual renewal fee", "990.00 EUR"),
        ("Workshop preparation and the materials", "960.00 EUR"),
        ("Translation of the user handbook", "1,250.00 EUR"),
        ("Hosting for the second half of the year", "480.00 EUR"),
    ]
    texts = []
    for n, (item, amount) in enumerate(rows):
        texts += [(57, 700 - 24 * n, item), (420, 700 - 24 * n, amount)]
    path = tmp_path / "table.pdf"
    path.write_bytes(placed_text_pdf(texts))
    assert _lines(extract(path, pdf_engine=engine).text) == [
        f"{item} {amount}" for item, amount in rows
    ]


def _upright_then_sideways() -> bytes:
    # Turned by the graphics state (``cm``), as ReportLab's canvas.rotate() does.
    content = (
        b"BT /F1 12 Tf 14.4 TL ET\n"
        b"BT 1 0 0 1 72 770 Tm (Upright heading before the sideways block.) Tj T* ET\n"
        b"q 0 1 -1 0 300 200 cm\n"
        b"BT 1 0 0 1 0 0 Tm (This sentence runs up the page sideways.) Tj T* ET\n"
        b"BT 1 0 0 1 0 -16 Tm (And this is its second sideways line.) Tj T* ET\nQ"
    )
    return hand_made_pdf(
        {
            1: b"<< /Type /Catalog /Pages 2 0 R >>",
            2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] "
            b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
            4: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            5: b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        }
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_a_line_set_sideways_after_an_upright_one_is_not_glued_to_it(
    tmp_path: Path, engine: str
) -> None:
    # "block.This sentence": PDFium put no line end where the letters turn (the
    # upright line ends over the sideways one).
    path = tmp_path / "sideways.pdf"
    path.write_bytes(_upright_then_sideways())
    assert _lines(extract(path, pdf_engine=engine).text) == [
        "Upright heading before the sideways block.",
        "This sentence runs up the page sideways.",
        "And this is its second sideways line.",
    ]


SCAN = [
    "Scanned letter from the municipal archive.",
    "Reference number 4471 dated March 2019.",
]


def _stamped_scan(tmp_path: Path, stamp: str) -> Path:
    path = tmp_path / "stamped.pdf"
    path.write_bytes(stamped_scan_pdf_bytes(SCAN, stamp))
    return path


class _FakeOcr:
    """Tesseract as it read the audit's page: the stamp's number split in two."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.seconds = 0.0

    def read(self, image: Image.Image) -> OcrPage:
        return OcrPage(self.text, [90] * len(self.text.split()))


@pytest.mark.parametrize(
    ("ocr_text", "expected"),
    [
        (
            "\n".join([*SCAN, "", "CONFIDENTIAL ABC-0001 23"]),
            [*SCAN, "CONFIDENTIAL ABC-000123"],
        ),
        ("\n".join(SCAN), [*SCAN, "CONFIDENTIAL ABC-000123"]),  # OCR missed it
    ],
    ids=["misread", "unread"],
)
def test_a_text_stamp_on_a_scan_keeps_its_exact_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ocr_text: str, expected: list[str]
) -> None:
    # The page was read from its image, and OCR's reading of the Bates number
    # replaced the number itself.
    monkeypatch.setattr(pdf_module, "reader", lambda options: _FakeOcr(ocr_text))
    result = extract(_stamped_scan(tmp_path, "CONFIDENTIAL ABC-000123"))
    assert _lines(result.text) == expected
    assert result.details["ocr_pages"] == "1"


def _no_pages(catalog: bytes) -> bytes:
    return hand_made_pdf({1: catalog, 2: b"<< /Type /Pages /Kids [] /Count 0 >>"})


@pytest.mark.parametrize("engine", ["auto", "pdfplumber"])
def test_a_pdf_with_no_pages_completes_without_text_and_says_so(
    tmp_path: Path, engine: str
) -> None:
    # Every page removed in an editor: nothing is damaged, yet it failed as such.
    path = tmp_path / "no-pages.pdf"
    path.write_bytes(_no_pages(b"<< /Type /Catalog /Pages 2 0 R >>"))
    result = extract(path, pdf_engine=engine)
    assert (result.text, result.page_count, result.confidence) == ("", 0, 0.0)
    assert result.note == "No text: this PDF has no pages."


def test_a_pdf_whose_page_tree_is_missing_is_still_damaged(tmp_path: Path) -> None:
    # A catalog that leads to no page tree: its pages are lost, not none.
    path = tmp_path / "no-tree.pdf"
    path.write_bytes(_no_pages(b"<< /Type /Catalog >>"))
    with pytest.raises(CorruptFileError):
        extract(path)
