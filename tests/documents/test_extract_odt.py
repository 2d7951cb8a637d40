"""OpenDocument text extraction: hidden text, and white space as ODF collapses it."""

from __future__ import annotations

from pathlib import Path

from documents.extractors import extract
from tests.files import odt_package

_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
    'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" '
    'office:version="1.3"'
)


def write_odt(tmp_path: Path, content: str, styles: str = "") -> Path:
    """An ODT package of the given content.xml and styles.xml (their inner XML)."""
    path = tmp_path / "doc.odt"
    path.write_bytes(
        odt_package(
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<office:document-content {_NS}>{content}</office:document-content>",
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<office:document-styles {_NS}>{styles}</office:document-styles>"
            if styles
            else "",
        )
    )
    return path


def hidden_style(name: str, family: str, attribute: str = "text:display") -> str:
    return (
        f'<style:style style:name="{name}" style:family="{family}">'
        f'<style:text-properties {attribute}="none"/></style:style>'
    )


def test_hidden_text_is_not_read(tmp_path: Path) -> None:
    # LibreOffice shows none of it: a hidden section, characters and paragraphs
    # formatted Hidden (directly or by the style they inherit), and the
    # hidden-paragraph and hidden-text fields whose condition held.
    styles = (
        "<office:styles>"
        + hidden_style("Secret", "text")
        + hidden_style("Draft_20_note", "paragraph")
        + "</office:styles><office:automatic-styles>"
        + hidden_style("MT1", "text")
        + "</office:automatic-styles><office:master-styles>"
        '<style:master-page style:name="Standard"><style:header>'
        '<text:p>ACME <text:span text:style-name="MT1">HIDDEN_HEADER</text:span>'
        "Ltd</text:p></style:header></style:master-page></office:master-styles>"
    )
    content = (
        "<office:automatic-styles>"
        + hidden_style("T1", "text")
        + hidden_style("T2", "text", "fo:display")
        + '<style:style style:name="T3" style:family="text" '
        'style:parent-style-name="Secret"/>'
        '<style:style style:name="P1" style:family="paragraph" '
        'style:parent-style-name="Draft_20_note"/>'
        "</office:automatic-styles><office:body><office:text>"
        '<text:p>Visible <text:span text:style-name="T1">HIDDEN_T1</text:span>'
        'text <text:span text:style-name="T2">HIDDEN_T2</text:span>and '
        '<text:span text:style-name="T3">HIDDEN_T3</text:span>more.</text:p>'
        '<text:section text:name="Draft" text:display="none">'
        "<text:p>HIDDEN_SECTION</text:p></text:section>"
        '<text:section text:name="Final"><text:p>Shown section</text:p></text:section>'
        '<text:p><text:hidden-paragraph text:condition="ooow:1" '
        'text:is-hidden="true"/>HIDDEN_PARAGRAPH</text:p>'
        '<text:p><text:hidden-paragraph text:condition="ooow:0" '
        'text:is-hidden="false"/>Paragraph shown</text:p>'
        '<text:p text:style-name="P1">HIDDEN_STYLED_PARAGRAPH</text:p>'
        '<text:p>Field <text:hidden-text text:condition="ooow:1" '
        'text:string-value="HIDDEN_FIELD" text:is-hidden="true">HIDDEN_FIELD'
        "</text:hidden-text>end.</text:p>"
        "</office:text></office:body>"
    )
    text = extract(write_odt(tmp_path, content, styles)).text
    assert text.splitlines() == [
        "Visible text and more.",
        "Shown section",
        "Paragraph shown",
        "Field end.",
        "ACME Ltd",
    ]


def test_white_space_collapses_as_odf_says(tmp_path: Path) -> None:
    # Pretty-printed XML came out on indented lines with runs of spaces, and
    # every pandoc ODT ended in its footer's indentation around the page number.
    content = """<office:body><office:text>
  <text:p>
    The meeting
    <text:span>starts</text:span>
    at noon.
  </text:p>
  <text:p>Second    paragraph</text:p>
  <text:p>
    Line one
    <text:line-break/>
    line two
  </text:p>
  <text:p>Tab<text:tab/>then,<text:s text:c="2"/>two spaces, a <text:s/>pair</text:p>
</office:text></office:body>"""
    # The footer as pandoc 3 writes it.
    styles = """
  <office:master-styles>
    <style:master-page style:name="Standard" style:page-layout-name="Mpm1">
      <style:footer>
        <text:p text:style-name="MP1">
          <text:page-number text:select-page="current">
          1</text:page-number>
        </text:p>
      </style:footer>
    </style:master-page>
  </office:master-styles>
"""
    text = extract(write_odt(tmp_path, content, styles)).text
    assert text == (
        "The meeting starts at noon.\n"
        "Second paragraph\n"
        "Line one\nline two\n"
        "Tab\tthen,  two spaces, a  pair\n"
        "1"
    )
