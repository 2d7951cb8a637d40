"""Unusual but valid office documents from an outside audit of DOCX, ODT, ODP and
PPTX extraction: each test is a defect found, with its file built here."""

from __future__ import annotations

from pathlib import Path

from documents.extractors import extract
from tests.documents.test_extract_odf_epub import frame, odf_package, with_chart
from tests.files import write

_XLINK = 'xmlns:xlink="http://www.w3.org/1999/xlink"'
# As LibreOffice Math saves a²+b²: MathML, with its StarMath source in an annotation.
FORMULA = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<math xmlns="http://www.w3.org/1998/Math/MathML" display="block"><semantics>'
    '<mrow><msup><mi>a</mi><mn>2</mn></msup><mo stretchy="false">+</mo>'
    "<msup><mi>b</mi><mn>2</mn></msup><mo>&#x2061;</mo></mrow>"
    '<annotation encoding="StarMath 5.0">a^2 + b^2</annotation></semantics></math>'
)
FORMULA_FRAME = (
    f'<draw:frame><draw:object xlink:href="./Object 1" {_XLINK}/>'
    f'<draw:image xlink:href="./ObjectReplacements/Object 1" {_XLINK}/></draw:frame>'
)


def test_an_odt_formula_is_read_after_its_paragraph_as_docx_equations_are(
    tmp_path: Path,
) -> None:
    # A LibreOffice Math object lives in a sub-document, which was not read; Word's
    # equations (m:oMath) are.
    body = f"<text:p>Pythagoras: {FORMULA_FRAME} holds.</text:p><text:p>Next</text:p>"
    package = with_chart(odf_package("text", body), FORMULA)
    text = extract(write(tmp_path, "maths.odt", package)).text
    assert text == "Pythagoras: holds.\na2+b2\nNext"


def test_an_odp_formula_is_read_after_the_slide_text(tmp_path: Path) -> None:
    slide = (
        '<draw:page draw:name="p1">'
        + FORMULA_FRAME
        + frame("<text:p>Pythagoras</text:p>", "title")
        + "</draw:page>"
    )
    package = with_chart(odf_package("presentation", slide), FORMULA)
    text = extract(write(tmp_path, "maths.odp", package)).text
    assert text == "Pythagoras\na2+b2"
