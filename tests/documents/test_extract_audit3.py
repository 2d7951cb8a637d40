"""Findings of the third extraction audit: a Word or ODT file holding only a pasted
scan, blank files, short UTF-8 with a stray byte, HTML with an internal DTD subset."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import docx
import pytest

from documents.extractors import extract
from documents.extractors import image as image_module
from documents.extractors.base import EMPTY_NOTE
from documents.extractors.text import detect_encoding
from tests.files import image_bytes, odt_package, reads, text_image, write

LINES = ["Pasted scan inside a Word file,", "signed by the harbour master."]
TYPED = "Minutes of the allotment committee"


def word_file(*, text: str = "", pictures: int = 1) -> bytes:
    """A .docx with an optional paragraph of text and a pasted scan of LINES."""
    document = docx.Document()
    if text:
        document.add_paragraph(text)
    for n in range(pictures):  # each its own (python-docx stores a repeat once)
        lines = LINES if n == 0 else [*LINES, f"Copy {n}"]
        document.add_picture(io.BytesIO(image_bytes(text_image(lines))))
    saved = io.BytesIO()
    document.save(saved)
    return saved.getvalue()


ODT_WITH_PICTURE = (
    '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:'
    'office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:xlink="http://www.w3.org/1999/xlink"><office:body><office:text>'
    '<text:p><draw:frame draw:name="scan"><draw:image xlink:href="Pictures/scan.png"'
    ' xlink:type="simple"/></draw:frame></text:p>'
    "</office:text></office:body></office:document-content>"
)


def odt_with_picture() -> bytes:
    package = io.BytesIO(odt_package(ODT_WITH_PICTURE))
    with zipfile.ZipFile(package, "a") as odt:
        odt.writestr("Pictures/scan.png", image_bytes(text_image(LINES)))
    return package.getvalue()


# --- (a) Pictures and blank documents ---------------------------------------------------


def test_a_word_file_holding_only_a_pasted_scan_is_read_by_ocr(tmp_path: Path) -> None:
    # It completed with no text, no note, and nothing to tell why.
    result = extract(write(tmp_path, "scan.docx", word_file()))
    assert reads(result.text, LINES), result.text
    assert result.extractor == "docx+tesseract"
    assert 0.5 < result.confidence <= 1.0
    assert result.details["ocr_page_count"] == 1


def test_an_odt_holding_only_a_picture_is_read_by_ocr(tmp_path: Path) -> None:
    result = extract(write(tmp_path, "scan.odt", odt_with_picture()))
    assert reads(result.text, LINES), result.text
    assert result.extractor == "odt+tesseract"


def test_with_ocr_turned_off_a_picture_only_word_file_says_why_it_has_no_text(
    tmp_path: Path,
) -> None:
    result = extract(write(tmp_path, "scan.docx", word_file()), ocr_mode="never")
    assert result.text == ""
    assert result.confidence == 0.0
    assert result.note == (
        "No text: the document holds only pictures. OCR is turned off "
        "(OCR_MODE=never), so its pictures were not read."
    )


def test_without_language_data_a_picture_only_word_file_says_ocr_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "tessdata"
    empty.mkdir()
    monkeypatch.setenv("TESSDATA_PREFIX", str(empty))
    result = extract(write(tmp_path, "scan.docx", word_file()))
    assert result.text == ""
    assert result.note.startswith(
        "No text: the document holds only pictures. Its pictures were not read: "
        "OCR is unavailable on this server"
    )


def test_a_picture_over_the_pixel_limit_is_not_read_and_the_note_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(image_module, "MAX_PIXELS", 100)
    result = extract(write(tmp_path, "scan.docx", word_file()))
    assert result.text == ""
    assert "1 of its pictures were over the limit" in result.note
    assert result.note.startswith("No text: the document holds only pictures.")


def test_only_the_first_max_pages_pictures_are_read(tmp_path: Path) -> None:
    # Each picture is one image read, as a page: EXTRACTION_MAX_PAGES bounds them.
    result = extract(write(tmp_path, "scans.docx", word_file(pictures=2)), max_pages=1)
    assert result.details["ocr_page_count"] == 1
    assert "Only the first 1 of 2 pictures were read" in result.note


def test_pictures_beside_text_are_read_only_with_ocr_mode_always(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "letter.docx", word_file(text=TYPED))
    auto = extract(path)
    assert auto.text == TYPED
    assert auto.extractor == "docx"
    assert auto.note == ""
    always = extract(path, ocr_mode="always")
    assert always.text.startswith(TYPED + "\n\n")
    assert reads(always.text, LINES), always.text
    assert always.extractor == "docx+tesseract"


def test_a_blank_word_file_says_it_has_no_text(tmp_path: Path) -> None:
    saved = io.BytesIO()
    docx.Document().save(saved)
    result = extract(write(tmp_path, "blank.docx", saved.getvalue()))
    assert (result.text, result.confidence, result.note) == ("", 0.0, EMPTY_NOTE)


def test_a_text_file_of_blank_space_says_it_has_no_text(tmp_path: Path) -> None:
    # It completed with its blanks as the text, and no note.
    result = extract(write(tmp_path, "blank.txt", b"   \n\n\t  \n"))
    assert (result.text, result.confidence, result.note) == ("", 0.0, EMPTY_NOTE)


# --- (b) Short UTF-8 with one bad byte --------------------------------------------------


def test_short_utf8_with_one_bad_byte_stays_utf8(tmp_path: Path) -> None:
    # Read as cp1252 whole: "Ã¼nÃ¯code".
    data = "One bad byte: ? and more ünïcode after it.".encode().replace(b"?", b"\xff")
    result = extract(write(tmp_path, "short.txt", data))
    assert result.text == "One bad byte: \ufffd and more ünïcode after it."
    assert result.note == "Bytes that are not valid UTF-8 were replaced by � (1)."


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("„Fuß“ und „Spaß“ sind schön", "cp1252"),  # "ß“" is valid UTF-8
        ("“Fuß” is a word", "cp1252"),
        ("Café crème, naïve", "cp1252"),
        ("Ærø, Ålesund, Øre; ŽURNAL", "cp1252"),
        ("Größe™ and Maß–Zahl", "cp1252"),
        ("Ärger über Öl", "latin-1"),
        ("Zażółć gęślą jaźń, Łódź", "cp1250"),
        ("Привет, как дела?", "cp1251"),
    ],
)
def test_short_code_page_text_is_not_taken_for_utf8(text: str, encoding: str) -> None:
    found = detect_encoding(text.encode(encoding))[0]
    assert text.encode(encoding).decode(found) == text


# --- (c) HTML with an internal DTD subset -----------------------------------------------


def test_an_internal_dtd_subset_leaves_nothing_in_the_text(tmp_path: Path) -> None:
    # "]>" and "&a9;" were read as text; the entities stay unexpanded all the same.
    declared = '<!ENTITY a0 "ha">' + "".join(
        f'<!ENTITY a{n} "{f"&a{n - 1};" * 10}">' for n in range(1, 10)
    )
    page = (
        f"<!DOCTYPE html [{declared}<!ENTITY q 'a ] > b'>]>"
        "<html><body><p>&a9;</p><p>Real text &amp; more &q;</p></body></html>"
    )
    result = extract(write(tmp_path, "page.html", page.encode()))
    assert result.text == "Real text & more"


def test_a_doctype_without_a_subset_is_left_alone(tmp_path: Path) -> None:
    page = (
        '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" '
        '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">'
        "<html><body><p>Tom &amp; Jerry [1] &unknown;</p></body></html>"
    )
    result = extract(write(tmp_path, "page.html", page.encode()))
    assert result.text == "Tom & Jerry [1] &unknown;"
