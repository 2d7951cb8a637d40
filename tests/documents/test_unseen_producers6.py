"""Documents as pandoc writes them (DOCX, ODT, EPUB, RTF, HTML, plain text), read
from outside: each test is a defect found, with its file built here (pandoc is not
needed to run them)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from documents.extractors import CorruptFileError, extract
from documents.uploads import check_upload
from tests.documents.test_extract_odf_epub import odf_package
from tests.files import write

# pandoc -t plain: UTF-8 text, smart quotes, other scripts, a footnote.
PLAIN = (
    "Pandoc Sample Title\n\n"
    "This is a \u201csmart quoted\u201d paragraph.[1]\n\n"
    "1.  First numbered item\n"
    "2.  Second numbered item\n\n"
    "Arabic: \u0645\u0631\u062d\u0628\u0627. CJK: \u4f60\u597d\u4e16\u754c. "
    "Emoji: \U0001f389.\n\n"
    "[1] The footnote text.\n"
)


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"], ids=["utf8", "utf8-bom"])
def test_plain_text_named_rtf_is_read_as_the_text_it_is(
    tmp_path: Path, bom: bytes
) -> None:
    # A text file under an .rtf name (renamed notes, `pandoc -o notes.rtf -t plain`)
    # is accepted as RTF by its name, and was read by the RTF reader: its line
    # breaks dropped, every letter beyond ASCII mojibake ("â\x80\x9csmart").
    data = bom + PLAIN.encode()
    checked = check_upload(SimpleUploadedFile("notes.rtf", data))
    path = write(tmp_path, "notes.rtf", data)
    assert extract(path, mime_type=checked.mime_type).text.strip() == PLAIN.strip()


def test_an_rtf_behind_a_utf8_bom_is_read_without_it(tmp_path: Path) -> None:
    # Read as "ï»¿Dear committee," when a tool wrote a BOM first.
    rtf = b"\xef\xbb\xbf{\\rtf1\\ansi{\\fonttbl{\\f0 Arial;}}\\f0 Dear committee,\\par}"
    path = write(tmp_path, "letter.rtf", rtf)
    assert extract(path, mime_type="application/rtf").text == "Dear committee,"


def test_binary_named_rtf_is_still_refused_as_damaged(tmp_path: Path) -> None:
    # Guard: bytes that are not text are not read as text for lacking {\rtf.
    path = write(tmp_path, "x.rtf", bytes(range(256)) * 16)
    with pytest.raises(CorruptFileError, match="not RTF"):
        extract(path, mime_type="application/rtf")


_XLINK = 'xmlns:xlink="http://www.w3.org/1999/xlink"'
# pandoc's ODT: inline math as a MathML sub-document "Formula-0/", its frame
# anchored as a character, as Writer anchors a formula typed in a sentence.
_E_MC2 = (
    "<?xml version='1.0' ?>"
    '<math display="inline" xmlns="http://www.w3.org/1998/Math/MathML"><mrow>'
    "<mi>E</mi><mo>=</mo><mi>m</mi><msup><mi>c</mi><mn>2</mn></msup></mrow></math>"
)


def _odt_with_formula(anchor: str) -> bytes:
    body = (
        "<text:p>Math: "
        f'<draw:frame draw:style-name="fr1" text:anchor-type="{anchor}">'
        f'<draw:object xlink:href="Formula-0/" xlink:type="simple" {_XLINK}/>'
        "</draw:frame> inline here.</text:p><text:p>Next</text:p>"
    )
    out = io.BytesIO(odf_package("text", body))
    with zipfile.ZipFile(out, "a") as archive:
        archive.writestr("Formula-0/content.xml", _E_MC2)
    return out.getvalue()


def test_an_odt_formula_standing_as_a_character_is_read_in_its_sentence(
    tmp_path: Path,
) -> None:
    # Was read after its paragraph ("Math: inline here." then "E=mc2"), the
    # sentence broken; a DOCX's inline equation (pandoc's DOCX of the same source)
    # is read where it stands.
    path = write(tmp_path, "maths.odt", _odt_with_formula("as-char"))
    assert extract(path).text == "Math: E=mc2 inline here.\nNext"


def test_an_odt_formula_anchored_to_its_paragraph_still_follows_it(
    tmp_path: Path,
) -> None:
    # Guard: a formula placed beside the text (anchored to the paragraph) is not
    # part of the sentence.
    path = write(tmp_path, "maths.odt", _odt_with_formula("paragraph"))
    assert extract(path).text == "Math: inline here.\nE=mc2\nNext"


def _master_page(name: str, footer: str, following: str = "") -> str:
    more = f' style:next-style-name="{following}"' if following else ""
    return (
        f'<style:master-page style:name="{name}"{more}>'
        f"<style:footer><text:p>{footer}</text:p></style:footer></style:master-page>"
    )


def test_an_odt_s_unused_master_pages_headers_and_footers_are_left_out(
    tmp_path: Path,
) -> None:
    # docutils' rst2odt defines "Page <n>" footers and headers on master pages no
    # page uses: every file ended in a stray "Page". A page style a paragraph
    # starts (a landscape table's), and the one it gives way to, are read.
    page_number = '<text:page-number text:select-page="current"/>'
    styles = (
        "<office:master-styles>"
        + _master_page("Standard", "Acme Ltd")
        + _master_page("rststyle-page-bottom", f"Page {page_number}")
        + _master_page("Template only", "Never shown")
        + _master_page("Landscape", "Wide footer", following="After wide")
        + _master_page("After wide", "Then this footer")
        + "</office:master-styles>"
    )
    automatic = (
        '<style:style style:name="P1" style:family="paragraph" '
        'style:master-page-name="Landscape"/>'
    )
    body = '<text:p>Body text.</text:p><text:p text:style-name="P1">Wide.</text:p>'
    package = odf_package("text", body, automatic_styles=automatic, styles=styles)
    text = extract(write(tmp_path, "manual.odt", package)).text
    assert text.splitlines() == [
        "Body text.",
        "Wide.",
        "Acme Ltd",
        "Wide footer",
        "Then this footer",
    ]


def test_a_mathml_formula_s_tex_annotation_is_not_read(tmp_path: Path) -> None:
    # pandoc --mathml (HTML, and EPUB) keeps each formula's TeX source in an
    # <annotation>, which browsers do not show: read "E=mc2E = mc^2".
    formula = (
        '<math display="inline" xmlns="http://www.w3.org/1998/Math/MathML">'
        "<semantics><mrow><mi>E</mi><mo>=</mo><mi>m</mi><msup><mi>c</mi><mn>2</mn>"
        '</msup></mrow><annotation encoding="application/x-tex">E = mc^2</annotation>'
        "</semantics></math>"
    )
    page = (
        "<!DOCTYPE html><html><head><title>Maths</title></head><body>"
        f"<p>Math: {formula} inline here.</p></body></html>"
    )
    path = write(tmp_path, "maths.html", page.encode())
    assert extract(path).text == "Maths\nMath: E=mc2 inline here."
