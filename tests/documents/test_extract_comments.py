"""Reviewers' comments are read in every format that has them, after the text they
are on, as "Comment: …" ("Comment on B3: …" on a spreadsheet's cell): a word a
reviewer wrote finds the document, as it did for PDF and XLSX only."""

from __future__ import annotations

import io
from pathlib import Path

import docx
import pptx
from lxml import etree
from pptx.opc.package import Part
from pptx.opc.packuri import PackURI

from documents.extractors import extract
from tests.documents.test_extract_odf_epub import cell, frame, odf_package, row, sheet
from tests.documents.test_extractors import page_with_annotations
from tests.files import odt_package, rezipped, write

_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_A = "http://schemas.openxmlformats.org/drawingml/2006/main"
_P = "http://schemas.openxmlformats.org/presentationml/2006/main"
_P188 = "http://schemas.microsoft.com/office/powerpoint/2018/8/main"
_R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def saved(document) -> bytes:
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


# --- PDF ------------------------------------------------------------------------------


def test_a_pdf_comment_is_worded_as_every_format_s_a_text_box_as_it_shows(
    tmp_path: Path,
) -> None:
    # A free-text box (Acrobat's typewriter, Preview's text) shows on the page, as
    # what fills a form in: it is read as it shows, not as a comment.
    annotations = [
        b"/Subtype /Text /Contents (Check with\rfinance.)",
        b"/Subtype /FreeText /Contents (Paid on 12 May)",
    ]
    path = write(tmp_path, "review.pdf", page_with_annotations(annotations))
    assert extract(path).text.splitlines() == [
        "Body.",
        "Comment: Check with finance.",
        "Paid on 12 May",
    ]


# --- Word (DOCX) -------------------------------------------------------------------


def test_docx_comments_are_read_at_the_end_not_those_on_deleted_text(
    tmp_path: Path,
) -> None:
    # word/comments.xml was never read.
    document = docx.Document()
    document.sections[0].footer.paragraphs[0].text = "Page footer"
    kept = document.add_paragraph("Payment is due in 30 days.")
    document.add_comment(kept.runs, text="Should be 45?\nAsk finance.", author="Ann")
    gone = document.add_paragraph("Old clause.")
    document.add_comment(gone.runs, text="Drop this", author="Bob")
    document.add_paragraph("Signed.")
    # The second paragraph's text, and the comment on it, deleted with tracked
    # changes on: both go once the changes are accepted, as Word shows it then.
    deleted = etree.SubElement(gone._p, f"{{{_W}}}del")
    for run in gone._p.findall(f"{{{_W}}}r"):
        deleted.append(run)
        for text in run.iter(f"{{{_W}}}t"):
            text.tag = f"{{{_W}}}delText"
    path = write(tmp_path, "review.docx", saved(document))
    assert extract(path).text.splitlines() == [
        "Payment is due in 30 days.",
        "",  # the paragraph stays, its mark was not deleted
        "Signed.",
        "Page footer",
        "Comment: Should be 45? Ask finance.",
    ]


def test_a_hundred_thousand_docx_comments_stop_at_the_text_limit(
    tmp_path: Path,
) -> None:
    document = docx.Document()
    paragraph = document.add_paragraph("Body.")
    document.add_comment(paragraph.runs, text="first", author="Ann")
    many = (
        f'<w:comments xmlns:w="{_W}">'
        + "".join(
            f'<w:comment w:id="{n}"><w:p><w:r><w:t>remark {n}</w:t></w:r></w:p>'
            "</w:comment>"
            for n in range(100_000)
        )
        + "</w:comments>"
    ).encode()
    data = rezipped(
        saved(document),
        lambda name, data: (name, many if name == "word/comments.xml" else data),
    )
    result = extract(write(tmp_path, "many.docx", data), max_chars=200)
    assert result.text.startswith("Body.\nComment: remark 0\nComment: remark 1\n")
    assert len(result.text) == 200
    assert "cut at 200 characters" in result.note


# --- OpenDocument (ODT, ODS, ODP) ---------------------------------------------------


def comment(*paragraphs: str, tag: str = "office:annotation") -> str:
    """An ODF comment as LibreOffice writes it: author, date, paragraphs."""
    inner = "".join(f"<text:p>{p}</text:p>" for p in paragraphs)
    return (
        f"<{tag}><dc:creator>Ann</dc:creator>"
        f"<dc:date>2024-05-01T10:00:00</dc:date>{inner}</{tag}>"
    )


def test_odt_comments_are_read_at_the_end_not_those_on_deleted_text(
    tmp_path: Path,
) -> None:
    # Comments were left out on purpose.
    body = (
        "<text:tracked-changes><text:changed-region text:id='c1'><text:deletion>"
        "<office:change-info><dc:creator>Bob</dc:creator>"
        "<dc:date>2024-01-01T00:00:00</dc:date></office:change-info>"
        f"<text:p>Old clause{comment('Drop this')}</text:p></text:deletion>"
        "</text:changed-region></text:tracked-changes>"
        f"<text:p>Payment{comment('Should be 45?', 'Ask finance.')} is due."
        "<text:change text:change-id='c1'/></text:p>"
        "<text:p>Signed<text:note text:note-class='footnote'><text:note-citation>1"
        "</text:note-citation><text:note-body><text:p>A note</text:p>"
        "</text:note-body></text:note>.</text:p>"
    )
    styles = (
        '<office:master-styles><style:master-page style:name="Standard">'
        f"<style:footer><text:p>Page footer{comment('Bigger logo')}</text:p>"
        "</style:footer></style:master-page></office:master-styles>"
    )
    package = odf_package("text", body, styles=styles)
    assert extract(write(tmp_path, "review.odt", package)).text.splitlines() == [
        "Payment is due.",
        "Signed.",
        "A note",
        "Page footer",
        "Comment: Should be 45? Ask finance.",
        "Comment: Bigger logo",
    ]


def test_ods_comments_follow_their_sheets_rows_with_their_cells(
    tmp_path: Path,
) -> None:
    commented = (
        f"<table:table-cell><text:p>1200</text:p>{comment('Incl.', 'VAT')}"
        "</table:table-cell>"
    )
    # A comment on a cell repeated to the sheet's edge is read once, at its place.
    repeated = (
        '<table:table-cell table:number-columns-repeated="16383">'
        f"{comment('Everywhere')}</table:table-cell>"
    )
    body = sheet(
        "Budget",
        row(cell("Item"), cell("Cost")),
        row(cell("Rent"), commented),
        row(cell(), repeat=1000),
        row(cell("x"), repeated, repeat=1000),
    ) + sheet("Plan", row(cell("Later")))
    path = write(tmp_path, "budget.ods", odf_package("spreadsheet", body))
    assert extract(path).text.splitlines() == [
        "Budget",
        "Item\tCost",
        "Rent\t1200",
        *["x"] * 1000,
        "Comment on B2: Incl. VAT",
        "Comment on B1003: Everywhere",
        "",
        "Plan",
        "Later",
    ]


def test_odp_comments_follow_their_slides_notes(tmp_path: Path) -> None:
    # LibreOffice's own element, and ODF 1.4's.
    slides = (
        '<draw:page draw:name="page1">'
        + frame("<text:p>Harbour plans</text:p>", "title")
        + comment("Add the budget", tag="officeooo:annotation")
        + "<presentation:notes>"
        + frame("<text:p>Say it slowly</text:p>")
        + "</presentation:notes></draw:page>"
        '<draw:page draw:name="page2">'
        + frame("<text:p>Budget</text:p>", "title")
        + comment("Too small")
        + "</draw:page>"
    )
    path = write(tmp_path, "deck.odp", odf_package("presentation", slides))
    assert extract(path).text.splitlines() == [
        "Harbour plans",
        "Say it slowly",
        "Comment: Add the budget",
        "",
        "Budget",
        "Comment: Too small",
    ]


# --- PowerPoint (PPTX) ----------------------------------------------------------------


def add_comments(slide, name: str, xml: str, modern: bool) -> None:
    """A comments part for the slide: classic (ppt/comments/comment1.xml) or
    modern (PowerPoint 365's, with replies)."""
    if modern:
        content_type = "application/vnd.ms-powerpoint.comments+xml"
        reltype = "http://schemas.microsoft.com/office/2018/10/relationships/comments"
    else:
        content_type = (
            "application/vnd.openxmlformats-officedocument.presentationml.comments+xml"
        )
        reltype = f"{_R}/comments"
    part = Part(PackURI(name), content_type, slide.part.package, xml.encode())
    slide.part.relate_to(part, reltype)


def modern_text(text: str) -> str:
    return (
        f"<p188:txBody><a:bodyPr/><a:p><a:r><a:t>{text[:3]}</a:t></a:r>"
        f"<a:r><a:t>{text[3:]}</a:t></a:r></a:p></p188:txBody>"
    )


def test_pptx_comments_classic_and_modern_follow_their_slides_notes(
    tmp_path: Path,
) -> None:
    deck = pptx.Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[5])
    first.shapes.title.text = "Harbour plans"
    first.notes_slide.notes_text_frame.text = "Say it slowly"
    add_comments(
        first,
        "/ppt/comments/comment1.xml",
        f'<p:cmLst xmlns:p="{_P}"><p:cm authorId="0" idx="1"><p:pos x="10" y="10"/>'
        "<p:text>Add the\nbudget</p:text></p:cm></p:cmLst>",
        modern=False,
    )
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Budget"
    # A resolved comment, then its reply; the reply comes first in the XML.
    add_comments(
        second,
        "/ppt/comments/modernComment_101_1.xml",
        f'<p188:cmLst xmlns:p188="{_P188}" xmlns:a="{_A}">'
        '<p188:cm id="{1}" authorId="{2}" status="resolved"><p188:unknownAnchor/>'
        f'<p188:replyLst><p188:reply id="{{3}}" authorId="{{2}}">{modern_text("Fixed now")}'
        f"</p188:reply></p188:replyLst>{modern_text('Too small')}</p188:cm>"
        "</p188:cmLst>",
        modern=True,
    )
    path = write(tmp_path, "deck.pptx", saved(deck))
    assert extract(path).text.splitlines() == [
        "Harbour plans",
        "Say it slowly",
        "Comment: Add the budget",
        "",
        "Budget",
        "Comment: Too small",
        "Comment: Fixed now",
    ]


def test_a_damaged_pptx_comments_part_costs_its_comments_only(
    tmp_path: Path,
) -> None:
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Harbour plans"
    add_comments(slide, "/ppt/comments/comment1.xml", "<p:cmLst", modern=False)
    path = write(tmp_path, "deck.pptx", saved(deck))
    assert extract(path).text == "Harbour plans"


# --- RTF ------------------------------------------------------------------------------


def test_rtf_annotations_are_read_at_the_end_not_those_on_deleted_text(
    tmp_path: Path,
) -> None:
    # As LibreOffice and Word write them: the author and date are destinations of
    # their own; the \annotation group was skipped whole.
    rtf = (
        rb"{\rtf1\ansi\deff0{\fonttbl{\f0 Times;}}"
        rb"\pard Payment {\*\atrfstart 1}is due{\*\atrfend 1}{\*\atnid AB}"
        rb"{\*\atnauthor Ann Boyd}\chatn{\*\annotation{\*\atnref 1}{\*\atndate 1}"
        rb"\pard\plain {\field{\*\fldinst {\chatn }}{\fldrslt }}Should be 45?\par"
        rb" Ask finance.} in 30 days.\par"
        # On text deleted with tracked changes on: it goes with it.
        rb"{\deleted Old clause{\*\atnauthor Bob}\chatn{\*\annotation \pard\plain "
        rb"Drop this}}"
        rb"{\footer \pard Page footer\par}"
        rb"Signed.\par}"
    )
    assert extract(write(tmp_path, "review.rtf", rtf)).text.splitlines() == [
        "Payment is due in 30 days.",
        "Signed.",
        "Page footer",
        "Comment: Should be 45? Ask finance.",
    ]


def test_every_format_words_a_comment_alike(tmp_path: Path) -> None:
    # One rule: "Comment: ", then the comment on one line, without its author.
    content = (
        '<?xml version="1.0" encoding="UTF-8"?><office:document-content '
        'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
        'xmlns:dc="http://purl.org/dc/elements/1.1/" office:version="1.3">'
        "<office:body><office:text><text:p>Body"
        "<office:annotation><dc:creator>Ann</dc:creator><text:p>Check   the</text:p>"
        "<text:p>totals</text:p></office:annotation>"
        "</text:p></office:text></office:body></office:document-content>"
    )
    odt = extract(write(tmp_path, "a.odt", odt_package(content))).text
    document = docx.Document()
    paragraph = document.add_paragraph("Body")
    document.add_comment(paragraph.runs, text="Check the\ntotals", author="Ann")
    word = extract(write(tmp_path, "a.docx", saved(document))).text
    assert odt == word == "Body\nComment: Check the totals"
