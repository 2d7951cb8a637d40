"""List numbers and bullets in DOCX and ODT, as the page shows them; ruby readings
(furigana) left out; a Word footnote without the space after its number."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import docx
import pytest

from documents.extractors import extract
from documents.extractors.marks import letters, roman
from tests.files import odt_package

_W_NS = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PARTS = {  # part: (content type, relationship type)
    "numbering": ("numbering", "numbering"),
    "styles": ("styles", "styles"),
    "footnotes": ("footnotes", "footnotes"),
}


def docx_package(body: str, **parts: str) -> bytes:
    """A DOCX of this body (w:body's inner XML) and these parts of word/ (numbering,
    styles, footnotes: their root's inner XML)."""
    ml = "application/vnd.openxmlformats-officedocument.wordprocessingml"
    overrides = "".join(
        f'<Override PartName="/word/{name}.xml" ContentType="{ml}.{_PARTS[name][0]}+xml"/>'
        for name in parts
    )
    rels = "".join(
        f'<Relationship Id="rId{n}" Type="{_REL}/{_PARTS[name][1]}" Target="{name}.xml"/>'
        for n, name in enumerate(parts, 1)
    )
    roots = {"numbering": "numbering", "styles": "styles", "footnotes": "footnotes"}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as package:
        package.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/'
            'package/2006/content-types"><Default Extension="rels" ContentType='
            '"application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            f'<Override PartName="/word/document.xml" ContentType="{ml}.document.main'
            f'+xml"/>{overrides}</Types>',
        )
        package.writestr(
            "_rels/.rels",
            '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats'
            '.org/package/2006/relationships"><Relationship Id="rId1" Type="'
            f'{_REL}/officeDocument" Target="word/document.xml"/></Relationships>',
        )
        package.writestr(
            "word/_rels/document.xml.rels",
            '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats'
            f'.org/package/2006/relationships">{rels}</Relationships>',
        )
        package.writestr(
            "word/document.xml",
            f'<?xml version="1.0"?><w:document {_W_NS}><w:body>{body}</w:body>'
            "</w:document>",
        )
        for name, inner in parts.items():
            package.writestr(
                f"word/{name}.xml",
                f'<?xml version="1.0"?><w:{roots[name]} {_W_NS}>{inner}'
                f"</w:{roots[name]}>",
            )
    return out.getvalue()


def para(text: str, num: str | None = None, level: int | None = None, style="") -> str:
    """A w:p, in list `num` at `level` (either may be left to its style)."""
    numbered = ""
    if num is not None or level is not None:
        numbered = "<w:numPr>"
        numbered += f'<w:ilvl w:val="{level}"/>' if level is not None else ""
        numbered += f'<w:numId w:val="{num}"/>' if num is not None else ""
        numbered += "</w:numPr>"
    styled = f'<w:pStyle w:val="{style}"/>' if style else ""
    return f"<w:p><w:pPr>{styled}{numbered}</w:pPr><w:r><w:t>{text}</w:t></w:r></w:p>"


def level(n: int, fmt: str, text: str, *more: str, start: int = 1) -> str:
    return (
        f'<w:lvl w:ilvl="{n}"><w:start w:val="{start}"/><w:numFmt w:val="{fmt}"/>'
        f'<w:lvlText w:val="{text}"/>{"".join(more)}</w:lvl>'
    )


def abstract(key: int, *levels: str) -> str:
    return f'<w:abstractNum w:abstractNumId="{key}">{"".join(levels)}</w:abstractNum>'


def num(key: int, abstract_key: int, *overrides: str) -> str:
    return (
        f'<w:num w:numId="{key}"><w:abstractNumId w:val="{abstract_key}"/>'
        f"{''.join(overrides)}</w:num>"
    )


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


CLAUSES = abstract(
    1,
    level(0, "decimal", "%1."),
    level(1, "lowerLetter", "(%2)"),
    level(2, "lowerRoman", "%1.%2.%3", '<w:suff w:val="space"/>'),
    level(3, "upperLetter", "%4", '<w:lvlRestart w:val="0"/>'),
)


def test_docx_list_numbers_by_level_restart_under_a_new_parent(tmp_path: Path) -> None:
    body = (
        para("Scope", "1", 0)
        + para("Parties", "1", 1)
        + para("Term", "1", 1)
        + para("Payment", "1", 0)
        + para("Net thirty days", "1", 1)
        + para("Late fees", "1", 2)
        + para("Never restarts", "1", 3)
        + para("Fees", "1", 0)
        + para("Goes on", "1", 3)
        + para("See clause 2(a) above.")
        + '<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr>'
        "</w:pPr><w:r><w:rPr><w:vanish/></w:rPr><w:t>Hidden item</w:t></w:r></w:p>"
    )
    numbering = CLAUSES + num(1, 1)
    path = write(tmp_path, "doc.docx", docx_package(body, numbering=numbering))
    assert extract(path).text == (
        "1.\tScope\n(a)\tParties\n(b)\tTerm\n2.\tPayment\n(a)\tNet thirty days\n"
        "2.a.i Late fees\nA\tNever restarts\n3.\tFees\nB\tGoes on\n"
        "See clause 2(a) above."
    )


def test_docx_lists_of_one_definition_count_on_unless_one_starts_over(
    tmp_path: Path,
) -> None:
    # As Word: a second w:num of the same definition goes on counting, one with a
    # w:startOverride starts at its value; w:lvlOverride may replace a level.
    numbering = (
        abstract(1, level(0, "upperRoman", "%1", '<w:suff w:val="nothing"/>'))
        + abstract(2, level(0, "bullet", "\uf0b7"), level(1, "decimal", "%2)"))
        + num(1, 1)
        + num(2, 1)
        + num(
            3,
            1,
            '<w:lvlOverride w:ilvl="0"><w:startOverride w:val="7"/></w:lvlOverride>',
        )
        + num(
            4,
            1,
            '<w:lvlOverride w:ilvl="0">'
            + level(0, "decimalZero", "%1:", start=8)
            + "</w:lvlOverride>",
        )
        + num(5, 2)
    )
    body = (
        para("One", "1", 0)
        + para("Two", "2", 0)
        + para("Seven", "3", 0)
        + para("Eight", "3", 0)
        + para("Three", "1", 0)
        + para("Zero eight", "4", 0)
        + para("Dot", "5", 0)
        + para("Under the dot", "5", 1)
        + para("Not in a list", "0", 0)
        + para("Unknown list", "99", 0)
    )
    path = write(tmp_path, "doc.docx", docx_package(body, numbering=numbering))
    assert extract(path).text.splitlines() == [
        "IOne",
        "IITwo",
        "VIISeven",
        "VIIIEight",
        "IIIThree",
        "08:\tZero eight",
        "•\tDot",
        "1)\tUnder the dot",
        "Not in a list",
        "Unknown list",
    ]


def test_docx_paragraph_styles_number_their_paragraphs(tmp_path: Path) -> None:
    # "List Number" names its list; a heading style names only the list, and the
    # level that names the style is its level; a style based on a numbered one is
    # numbered; a paragraph's numId 0 takes its style's numbering away.
    styles = (
        '<w:style w:type="paragraph" w:styleId="ListNumber"><w:pPr><w:numPr>'
        '<w:numId w:val="2"/></w:numPr></w:pPr></w:style>'
        '<w:style w:type="paragraph" w:styleId="Heading1"><w:pPr><w:numPr>'
        '<w:numId w:val="1"/></w:numPr></w:pPr></w:style>'
        '<w:style w:type="paragraph" w:styleId="Heading2"><w:basedOn w:val="Heading1"/>'
        "</w:style>"
        '<w:style w:type="paragraph" w:styleId="Loop"><w:basedOn w:val="Loop2"/>'
        '</w:style><w:style w:type="paragraph" w:styleId="Loop2">'
        '<w:basedOn w:val="Loop"/></w:style>'
    )
    numbering = (
        abstract(
            1,
            level(0, "decimal", "%1", '<w:pStyle w:val="Heading1"/>'),
            level(1, "decimal", "%1.%2", '<w:pStyle w:val="Heading2"/>'),
        )
        + abstract(2, level(0, "lowerLetter", "%1."))
        + num(1, 1)
        + num(2, 2)
    )
    body = (
        para("Definitions", style="Heading1")
        + para("Terms", style="Heading2")
        + para("First", style="ListNumber")
        + para("Second", style="ListNumber")
        + para("Plain", "0", style="ListNumber")
        + para("Payment", style="Heading1")
        + para("In a loop", style="Loop")
    )
    path = write(
        tmp_path,
        "doc.docx",
        docx_package(body, numbering=numbering, styles=styles),
    )
    assert extract(path).text.splitlines() == [
        "1\tDefinitions",
        "1.1\tTerms",
        "a.\tFirst",
        "b.\tSecond",
        "Plain",
        "2\tPayment",
        "In a loop",
    ]


def test_docx_made_with_python_docx_list_styles(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_paragraph("First item", style="List Number")
    document.add_paragraph("Second item", style="List Number")
    document.add_paragraph("A point", style="List Bullet")
    saved = io.BytesIO()
    document.save(saved)
    path = write(tmp_path, "doc.docx", saved.getvalue())
    assert extract(path).text == "1.\tFirst item\n2.\tSecond item\n•\tA point"


def test_docx_ruby_reading_is_left_out_and_a_footnote_has_no_leading_space(
    tmp_path: Path,
) -> None:
    ruby = (
        "<w:p><w:r><w:t>私は</w:t></w:r><w:r><w:ruby><w:rubyPr/>"
        "<w:rt><w:r><w:t>とうきょう</w:t></w:r></w:rt>"
        "<w:rubyBase><w:r><w:t>東京</w:t></w:r></w:rubyBase></w:ruby></w:r>"
        "<w:r><w:t>に住んでいます。</w:t></w:r></w:p>"
    )
    footnotes = (
        '<w:footnote w:id="1"><w:p><w:r><w:footnoteRef/></w:r>'
        '<w:r><w:t xml:space="preserve"> Footnote text</w:t></w:r></w:p></w:footnote>'
    )
    path = write(tmp_path, "doc.docx", docx_package(ruby, footnotes=footnotes))
    assert extract(path).text == "私は東京に住んでいます。\nFootnote text"


# --- ODT ----------------------------------------------------------------------------

_ODF_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
    'xmlns:xml="http://www.w3.org/XML/1998/namespace" office:version="1.3"'
)


def write_odt(tmp_path: Path, body: str, automatic: str = "", common: str = "") -> Path:
    content = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {_ODF_NS}>'
        f"<office:automatic-styles>{automatic}</office:automatic-styles>"
        f"<office:body><office:text>{body}</office:text></office:body>"
        "</office:document-content>"
    )
    styles = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-styles {_ODF_NS}>'
        f"<office:styles>{common}</office:styles></office:document-styles>"
    )
    path = tmp_path / "doc.odt"
    path.write_bytes(odt_package(content, styles if common else ""))
    return path


def number_level(n: int, fmt: str, *, follow: str = "", **attributes: str) -> str:
    more = "".join(
        f" {'text' if key in ('display_levels', 'start_value') else 'style'}:"
        f'{key.replace("_", "-")}="{value}"'
        for key, value in attributes.items()
    )
    alignment = (
        f"<style:list-level-properties><style:list-level-label-alignment "
        f'text:label-followed-by="{follow}"/></style:list-level-properties>'
        if follow
        else ""
    )
    return (
        f'<text:list-level-style-number text:level="{n}" style:num-format="{fmt}"'
        f"{more}>{alignment}</text:list-level-style-number>"
    )


OUTLINE = (
    '<text:list-style style:name="L1">'
    + number_level(1, "1", num_suffix=".")
    + number_level(2, "1", num_suffix=".", display_levels="2")
    + number_level(3, "a", num_prefix="(", num_suffix=")", follow="space")
    + number_level(4, "I", start_value="4")
    + "</text:list-style>"
    '<text:list-style style:name="B1"><text:list-level-style-bullet text:level="1" '
    'text:bullet-char="\uf095"/></text:list-style>'
)


def items(*entries: str) -> str:
    return "".join(f"<text:list-item>{entry}</text:list-item>" for entry in entries)


def p(text: str, style: str = "") -> str:
    styled = f' text:style-name="{style}"' if style else ""
    return f"<text:p{styled}>{text}</text:p>"


def test_odt_list_numbers_by_level_from_its_list_style(tmp_path: Path) -> None:
    body = (
        '<text:list text:style-name="L1" xml:id="list1">'
        + items(
            p("Scope"),
            p("Payment")
            + p("Second paragraph, not numbered")
            + "<text:list><text:list-header><text:p>A header</text:p>"
            "</text:list-header>"
            + items(
                p("Net thirty days")
                + "<text:list>"
                + items(
                    p("Late fees"),
                    p("Interest") + "<text:list>" + items(p("Roman")) + "</text:list>",
                )
                + "</text:list>",
                p("Disputes"),
            )
            + "</text:list>",
        )
        + "</text:list>"
        + p("See clause 2.1(a) above.")
        + '<text:list text:style-name="L1" text:continue-numbering="true">'
        + items(p("Goes on"))
        + '</text:list><text:list text:continue-list="list1">'
        + items(p("Goes on by name"))
        + '</text:list><text:list text:style-name="L1">'
        + items(p("Starts over"), "<text:p><text:number>9.</text:number>Kept</text:p>")
        + '</text:list><text:list text:style-name="L1">'
        + '<text:list-item text:start-value="5"><text:p>Five</text:p></text:list-item>'
        + '</text:list><text:list text:style-name="B1">'
        + items(p("A point"))
        + "</text:list>"
    )
    path = write_odt(tmp_path, body, OUTLINE)
    assert extract(path).text.splitlines() == [
        "1.\tScope",
        "2.\tPayment",
        "Second paragraph, not numbered",
        "A header",
        "2.1.\tNet thirty days",
        "(a) Late fees",
        "(b) Interest",
        "IV\tRoman",
        "2.2.\tDisputes",
        "See clause 2.1(a) above.",
        "3.\tGoes on",
        "4.\tGoes on by name",
        "1.\tStarts over",
        "9.Kept",
        "5.\tFive",
        "•\tA point",
    ]


def test_odt_list_style_of_the_paragraph_and_heading_numbering(
    tmp_path: Path,
) -> None:
    # A list without a style takes its paragraph's (through the style it is based
    # on); headings are numbered by the outline style when it has a format.
    common = (
        '<style:style style:name="Numbered" style:family="paragraph" '
        'style:list-style-name="L1"/>'
        + OUTLINE
        + '<text:outline-style style:name="Outline">'
        + number_level(1, "1", num_suffix=")")
        + number_level(2, "1", display_levels="2")
        + number_level(3, "")
        + "</text:outline-style>"
    )
    automatic = (
        '<style:style style:name="P1" style:family="paragraph" '
        'style:parent-style-name="Numbered"/>'
    )
    body = (
        '<text:h text:outline-level="1">Terms</text:h>'
        '<text:h text:outline-level="2">Payment</text:h>'
        '<text:h text:outline-level="3">Unnumbered level</text:h>'
        "<text:list>" + items(p("By its paragraph style", "P1")) + "</text:list>"
        '<text:h text:outline-level="2">Delivery</text:h>'
        '<text:h text:outline-level="1" text:is-list-header="true">Annex</text:h>'
        '<text:h text:outline-level="1">Signatures</text:h>'
    )
    path = write_odt(tmp_path, body, automatic, common)
    assert extract(path).text.splitlines() == [
        "1)\tTerms",
        "1.1\tPayment",
        "Unnumbered level",
        "1.\tBy its paragraph style",
        "1.2\tDelivery",
        "Annex",
        "2)\tSignatures",
    ]


def test_odt_without_list_styles_reads_as_before(tmp_path: Path) -> None:
    body = "<text:list>" + items(p("Plain item")) + "</text:list>"
    assert extract(write_odt(tmp_path, body)).text == "Plain item"


def test_odt_ruby_reading_is_left_out(tmp_path: Path) -> None:
    body = p(
        "私は<text:ruby><text:ruby-base>東京</text:ruby-base>"
        "<text:ruby-text>とうきょう</text:ruby-text></text:ruby>に住んでいます。"
    )
    assert extract(write_odt(tmp_path, body)).text == "私は東京に住んでいます。"


@pytest.mark.parametrize(
    ("number", "repeat", "expected"),
    [(1, True, "a"), (26, True, "z"), (27, True, "aa"), (28, True, "bb"),
     (27, False, "aa"), (28, False, "ab"), (703, False, "aaa"), (0, True, "0"),
     (10**6, False, "1000000")],
)  # fmt: skip
def test_list_letters(number: int, repeat: bool, expected: str) -> None:
    assert letters(number, repeat=repeat) == expected


def test_roman_numerals() -> None:
    assert [roman(n) for n in (1, 4, 9, 14, 40, 90, 400, 1994, 3999, 4000, 0)] == [
        "i", "iv", "ix", "xiv", "xl", "xc", "cd", "mcmxciv", "mmmcmxcix", "4000", "0"
    ]  # fmt: skip
