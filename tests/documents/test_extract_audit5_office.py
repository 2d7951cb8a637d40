"""Office documents from an outside audit of DOCX, XLSX and RTF extraction (the
fifth): each test is a defect found, with its file built here."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from documents.extractors import extract
from tests.files import docx_bytes, write, xlsx_bytes

_W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
_R = 'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"'
_DOCX_TYPE = (
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
)


def _run(text: str) -> str:
    return f'<w:r><w:t xml:space="preserve">{text}</w:t></w:r>'


def _field(code: str, *result: str) -> str:
    """A complex field: begin, its code, separate, its result runs, end."""
    return (
        '<w:r><w:fldChar w:fldCharType="begin"/></w:r>'
        f'<w:r><w:instrText xml:space="preserve">{code}</w:instrText></w:r>'
        '<w:r><w:fldChar w:fldCharType="separate"/></w:r>'
        + "".join(result)
        + '<w:r><w:fldChar w:fldCharType="end"/></w:r>'
    )


def _word_file(*paragraphs: str, chunk: tuple[str, bytes] | None = None) -> bytes:
    """A Word file of these w:p elements; with `chunk` (content type, bytes), an
    alternative format chunk between the first paragraph and the others."""
    import docx
    from docx.opc.constants import RELATIONSHIP_TYPE
    from docx.opc.packuri import PackURI
    from docx.opc.part import Part
    from docx.oxml import parse_xml

    document = docx.Document()
    body = document.element.body
    for at, paragraph in enumerate(paragraphs):
        body.insert(at, parse_xml(f"<w:p {_W}>{paragraph}</w:p>"))
    if chunk is not None:
        content_type, content = chunk
        part = Part(
            PackURI("/word/afchunk1.bin"), content_type, content, document.part.package
        )
        rid = document.part.relate_to(part, RELATIONSHIP_TYPE.A_F_CHUNK)
        body.insert(1, parse_xml(f'<w:altChunk {_W} {_R} r:id="{rid}"/>'))
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_a_field_in_another_field_s_code_shows_only_the_outer_result(
    tmp_path: Path,
) -> None:
    # A mail merge's { IF { MERGEFIELD Gender } = "F" "Madam" "Sir" } keeps the
    # inner field's last result inside the outer one's code, which Word does not
    # show: "Dear «Gender»Sir," was read.
    salutation = (
        '<w:r><w:fldChar w:fldCharType="begin"/></w:r>'
        '<w:r><w:instrText xml:space="preserve"> IF </w:instrText></w:r>'
        + _field(" MERGEFIELD Gender ", _run("«Gender»"))
        + '<w:r><w:instrText xml:space="preserve"> = "F" "Madam" "Sir" </w:instrText></w:r>'
        '<w:r><w:fldChar w:fldCharType="separate"/></w:r>'
        + _run("Sir")
        + '<w:r><w:fldChar w:fldCharType="end"/></w:r>'
    )
    contents = (  # a table of contents: one field over several paragraphs
        '<w:r><w:fldChar w:fldCharType="begin"/></w:r>'
        '<w:r><w:instrText xml:space="preserve"> TOC \\o "1-3" </w:instrText></w:r>'
        '<w:r><w:fldChar w:fldCharType="separate"/></w:r>'
        + _run("Introduction ")
        + _field(" PAGEREF _Toc1 \\h ", _run("1"))
    )
    package = _word_file(
        _run("Dear ") + salutation + _run(","),
        contents,
        _run("Methods ")
        + _field(" PAGEREF _Toc2 \\h ", _run("2"))
        + '<w:r><w:fldChar w:fldCharType="end"/></w:r>',
        _run("See ") + _field(' HYPERLINK "https://example.org" ', _run("our site")),
    )
    text = extract(write(tmp_path, "merged letter.docx", package)).text
    assert text.splitlines() == [
        "Dear Sir,",
        "Introduction 1",
        "Methods 2",
        "See our site",
    ]


@pytest.mark.parametrize(
    ("content_type", "chunk"),
    [
        (_DOCX_TYPE, docx_bytes("Merged section")),
        (
            "application/rtf",
            rb"{\rtf1\ansi{\fonttbl{\f0 Arial;}}\f0 Merged section\par}",
        ),
    ],
    ids=["docx", "rtf"],
)
def test_a_document_merged_in_as_a_chunk_is_read_in_its_place(
    tmp_path: Path, content_type: str, chunk: bytes
) -> None:
    # Tools that merge documents (Open XML SDK's AltChunk) embed a whole .docx,
    # or an RTF: the .docx failed the file as damaged XML, the RTF was left out.
    package = _word_file(_run("Cover"), _run("Appendix"), chunk=(content_type, chunk))
    text = extract(write(tmp_path, "merged.docx", package)).text
    assert text.splitlines() == ["Cover", "Merged section", "Appendix"]


def test_a_damaged_word_chunk_costs_its_own_text(tmp_path: Path) -> None:
    package = _word_file(
        _run("Cover"), _run("Appendix"), chunk=(_DOCX_TYPE, b"PK\x03\x04cut")
    )
    text = extract(write(tmp_path, "merged.docx", package)).text
    assert text.splitlines() == ["Cover", "Appendix"]


def test_excel_s_escaped_control_characters_are_not_read_as_text(
    tmp_path: Path,
) -> None:
    # Excel writes the CR of a cell's line end (Alt+Enter, pasted text) as
    # _x000D_, in shared and inline strings alike; it was read as it stands.
    package = xlsx_bytes([["Ship to:_x000D_\nHarbour Road 4", "Net_x0009_total"]])
    text = extract(write(tmp_path, "orders.xlsx", package)).text
    assert text.splitlines() == ["Budget", "Ship to: Harbour Road 4\tNet total"]
