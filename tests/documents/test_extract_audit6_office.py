"""Office documents from an outside audit of Office, web, mail and text extraction
(the sixth): each test is a defect found, with its file built here."""

from __future__ import annotations

import io
from pathlib import Path

import openpyxl
import pptx

from documents.extractors import extract
from documents.extractors.detect import detect_format, read_prefix
from documents.extractors.formats import XLSX, by_extension, named_format
from tests.documents.test_extract_odf_epub import odf_package
from tests.files import write

_W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
_M = 'xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math"'


def _word_file(*paragraphs: str) -> bytes:
    """A Word file of these w:p elements."""
    import docx
    from docx.oxml import parse_xml

    document = docx.Document()
    body = document.element.body
    for at, paragraph in enumerate(paragraphs):
        body.insert(at, parse_xml(f"<w:p {_W} {_M}>{paragraph}</w:p>"))
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_deleted_runs_are_not_shown_whatever_holds_their_text(tmp_path: Path) -> None:
    # A deleted equation keeps its text in m:t (math has no delText), and some
    # writers put w:t in deleted runs: either showed as if never deleted.
    equation = (
        '<m:oMath><m:r><m:t>x=</m:t></m:r><w:del w:id="1" w:author="A">'
        "<m:r><m:t>OLDMATH</m:t></m:r></w:del><m:r><m:t>2</m:t></m:r></m:oMath>"
    )
    plain_t = (
        '<w:r><w:t xml:space="preserve">Kept </w:t></w:r>'
        '<w:del w:id="2" w:author="A"><w:r><w:t>OLDWORDS </w:t></w:r></w:del>'
        "<w:r><w:t>text</w:t></w:r>"
    )
    text = extract(write(tmp_path, "a.docx", _word_file(equation, plain_t))).text
    assert text.splitlines() == ["x=2", "Kept text"]


def _deck(*slides: tuple[str, bool]) -> bytes:
    """Title-only slides, (title, hidden) each."""
    presentation = pptx.Presentation()
    for title, hidden in slides:
        slide = presentation.slides.add_slide(presentation.slide_layouts[5])
        slide.shapes.title.text = title
        if hidden:
            slide.element.set("show", "0")  # Slide Show › Hide Slide
    saved = io.BytesIO()
    presentation.save(saved)
    return saved.getvalue()


def test_hidden_slides_are_not_read_as_hidden_sheets_are_not(tmp_path: Path) -> None:
    deck = _deck(("Shown first", False), ("BACKUP SLIDE", True), ("Shown last", False))
    result = extract(write(tmp_path, "a.pptx", deck))
    assert result.text.split() == ["Shown", "first", "Shown", "last"]
    assert result.page_count == 3  # the deck's slides, as the file has them


def test_a_deck_of_hidden_slides_says_so_not_that_it_is_blank(tmp_path: Path) -> None:
    result = extract(write(tmp_path, "a.pptx", _deck(("ALL HIDDEN", True))))
    assert result.text == ""
    assert "hidden" in result.note


def _impress_file(*slides: tuple[str, bool]) -> bytes:
    """An ODP of one text box per slide, (text, hidden) each, hidden by its page
    style as Impress writes it."""
    pages = "".join(
        f'<draw:page draw:style-name="{"dpHide" if hidden else "dp1"}">'
        f"<draw:frame><draw:text-box><text:p>{text}</text:p></draw:text-box>"
        "</draw:frame></draw:page>"
        for text, hidden in slides
    )
    return odf_package(
        "presentation",
        pages,
        automatic_styles='<style:style style:name="dp1" style:family="drawing-page"/>'
        '<style:style style:name="dpHide" style:family="drawing-page">'
        '<style:drawing-page-properties presentation:visibility="hidden"/>'
        "</style:style>",
    )


def test_hidden_impress_slides_are_not_read_as_powerpoints_are_not(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "a.odp", _impress_file(("Agenda", False), ("SPARE", True)))
    result = extract(path)
    assert result.text == "Agenda"
    assert result.page_count == 2
    hidden = extract(write(tmp_path, "b.odp", _impress_file(("SPARE", True))))
    assert hidden.text == "" and "hidden" in hidden.note


def test_excel_templates_are_named_as_excel_files(tmp_path: Path) -> None:
    # Word's and PowerPoint's templates were accepted by name, Excel's were not
    # offered by the upload form's file picker.
    book = openpyxl.Workbook()
    book.active["A1"] = "Template cell"
    saved = io.BytesIO()
    book.save(saved)
    path = write(tmp_path, "budget.xltx", saved.getvalue())
    assert by_extension("budget.xltx") is XLSX
    assert by_extension("budget.xltm") is XLSX
    assert named_format(detect_format(path), path.name, read_prefix(path)) is XLSX
    assert "Template cell" in extract(path).text


def test_a_content_control_showing_its_prompt_is_not_read(tmp_path: Path) -> None:
    """An unfilled form field shows Word's prompt; a filled one its answer."""

    def control(text: str, prompt: str) -> str:
        return (
            f'<w:r><w:t xml:space="preserve">Name: </w:t></w:r><w:sdt><w:sdtPr>{prompt}'
            f"</w:sdtPr><w:sdtContent><w:r><w:t>{text}</w:t></w:r></w:sdtContent></w:sdt>"
        )

    unfilled = control("Click or tap here to enter text.", "<w:showingPlcHdr/>")
    filled = control("Ada Lovelace", "")
    turned_off = control("Grace Hopper", '<w:showingPlcHdr w:val="0"/>')
    word = _word_file(unfilled, filled, turned_off)
    text = extract(write(tmp_path, "form.docx", word)).text
    lines = [line.rstrip() for line in text.splitlines()]
    assert lines == ["Name:", "Name: Ada Lovelace", "Name: Grace Hopper"]
