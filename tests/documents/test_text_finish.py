"""Where text leaves the extractors: line-end hyphenation undone, parsers kept quiet."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fpdf import FPDF

from documents.extractors import extract
from documents.extractors.base import EMPTY_NOTE
from documents.extractors.hyphens import join_hyphenated
from tests.conftest import REPO_ROOT

# A page whose /MediaBox is missing: pdfminer says so on stderr, and reads it anyway.
NO_MEDIABOX_PDF = b"""%PDF-1.4
1 0 obj <</Type/Catalog/Pages 2 0 R>> endobj
2 0 obj <</Type/Pages/Kids[3 0 R]/Count 1>> endobj
3 0 obj <</Type/Page/Parent 2 0 R/Contents 4 0 R>> endobj
4 0 obj <</Length 20>> stream
BT 72 720 Td ET
endstream endobj
trailer <</Root 1 0 R>>
%%EOF
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("We com-\npile it.", "We compile it."),  # English word list
        (
            "The Wider-\nspruch ... ein Widerspruch.",
            "The Widerspruch ... ein Widerspruch.",
        ),
        (
            "Send an e-\nmail; every e-mail counts.",
            "Send an e-mail; every e-mail counts.",
        ),
        ("Write e-mail and state-of-the-art.", "Write e-mail and state-of-the-art."),
        ("a state-of-the-\nart plan", "a state-of-the-\nart plan"),  # a compound
        ("the commander-\nin-chief", "the commander-\nin-chief"),
        ("a well-\nknown plan", "a well-\nknown plan"),  # "wellknown" is no word
        ("Anglo-\nSaxon", "Anglo-\nSaxon"),  # a name goes on in capitals
        ("page 12-\n13", "page 12-\n13"),
        ("ef- \n  ficient", "efficient"),
        ("avail\u2010\nable", "available"),  # Chrome prints a soft hyphen as U+2010
    ],
)
def test_line_end_hyphens_are_joined_only_into_words(text: str, expected: str) -> None:
    assert join_hyphenated(text) == expected


def test_the_word_lists_follow_the_documents_languages() -> None:
    text = "mit unterschiedli-\nchem Ergebnis"
    assert join_hyphenated(text, "eng") == text  # no German list, no evidence
    assert join_hyphenated(text, "eng+deu") == "mit unterschiedlichem Ergebnis"
    assert join_hyphenated("We com-\npile.", "xyz") == "We compile."  # English fallback


def test_extracted_text_comes_out_joined_from_every_format(tmp_path: Path) -> None:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(
        0, 8, "The com-\npiler reads the e-mail and the state-of-the-art code."
    )
    pdf.output(str(tmp_path / "page.pdf"))
    (tmp_path / "page.txt").write_text("The com-\npiler reads the e-mail.\n")
    for name in ("page.pdf", "page.txt"):
        text = extract(tmp_path / name).text
        assert "The compiler reads the e-mail" in text, name
        assert "com-" not in text


def test_parser_noise_stays_out_of_stderr(tmp_path: Path) -> None:
    path = tmp_path / "no-mediabox.pdf"
    path.write_bytes(NO_MEDIABOX_PDF)
    code = (
        "import sys\n"
        "from documents.extractors import extract, ExtractionError\n"
        "try:\n"
        f"    extract({str(path)!r}, pdf_engine='pdfplumber')\n"
        "except ExtractionError as exc:\n"
        "    print(exc.error_type)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert run.stderr == ""
    # The same library, unquieted, does print it: the test would see the noise.
    loud = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import pdfplumber; pdfplumber.open({str(path)!r}).pages",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "MediaBox missing" in loud.stderr


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\uf0b7 Word's Symbol bullet", "• Word's Symbol bullet"),
        ("\uf095 LibreOffice's OpenSymbol bullet", "• LibreOffice's OpenSymbol bullet"),
        ("Inside \uf0b7 a line", "Inside • a line"),
        ("Intro\n  \uf0a7\tWingdings square\n\uf0d8 arrow", "Intro\n  •\tWingdings square\n• arrow"),
        # The same Wingdings codes are Symbol-font signs inside a line: kept, as are
        # private-use characters that are no bullets (Symbol's ν, an icon font's).
        ("x \uf0a7 y \uf0d8 z", "x \uf0a7 y \uf0d8 z"),
        ("\uf06e = 3 and \ue001", "\uf06e = 3 and \ue001"),
    ],
)  # fmt: skip
def test_symbol_font_bullets_come_out_as_bullets(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = tmp_path / "list.txt"
    path.write_text(text, encoding="utf-8")
    assert extract(path).text == expected


def test_an_rtf_list_bullet_of_a_symbol_font_is_a_bullet(tmp_path: Path) -> None:
    # As LibreOffice writes a bulleted list: OpenSymbol's bullet as U+F095.
    path = tmp_path / "list.rtf"
    path.write_bytes(
        b"{\\rtf1\\ansi{\\fonttbl{\\f0 Liberation Serif;}}\\f0 "
        b"{\\listtext\\pard\\plain \\u61589\\'3f\\tab}First entry\\par}"
    )
    assert extract(path).text == "•\tFirst entry"


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("blank.rtf", b"{\\rtf1\\ansi }"),
        ("blank.html", b"<html><head><title></title></head><body> </body></html>"),
        ("blank.txt", b" \n\t\n"),
    ],
)
def test_a_document_with_no_text_says_so_whatever_its_format(
    tmp_path: Path, name: str, data: bytes
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    result = extract(path)
    assert result.text == ""
    assert result.note == EMPTY_NOTE
