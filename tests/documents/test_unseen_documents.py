"""Documents the product had not seen: each test is a defect found by running real
files from other producers through the extraction, rebuilt here with Python alone."""

from __future__ import annotations

import base64
import io
import logging
import re
import struct
import zipfile
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from documents.extraction import ocr_problem
from documents.extractors import (
    CorruptFileError,
    UnsupportedFileError,
    detect_mime_type,
    extract,
)
from documents.extractors.text import detect_encoding
from tests.files import (
    image_bytes,
    odt_package,
    ole_bytes,
    scan_pdf_bytes,
    shaped_rtl_pdf,
    text_image,
    write,
)

# --- text in legacy code pages ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        # Short Polish, Czech and Hungarian text came out as Big5, UTF-16 or cp1252.
        ("Łódź", "cp1250"),
        ("Zażółć", "cp1250"),
        ("Łódź, ul. Piotrkowska 12\n", "cp1250"),
        ("Małgorzata Wiśniewska", "cp1250"),
        ("Szczęście", "cp1250"),
        ("imię;nazwisko;miasto\nJan;Kowalski;Kraków\nPaweł;Żak;Łódź\n", "cp1250"),
        ("Zażółć gęślą jaźń. Pchnąć w tę łódź jeża.\n", "iso-8859-2"),
        ("Praha, Česká republika", "cp1250"),
        # Other scripts' code pages: Cyrillic read as cp1125, Hebrew as Johab.
        ("Привет мир\n", "cp1251"),
        ("שלום עולם, מה שלומך?\n", "cp1255"),
        ("Şişli'de güzel bir gün geçirdik, ığdır.\n", "cp1254"),
        ("Съешь же ещё этих мягких французских булок.\n", "koi8-r"),
        # Western text stays Western, also when its only marks beyond ASCII are
        # symbols (chardetng alone read "£825" as cp1250's "Ł825").
        ("I stand to lift £825, not bad for a £2 bet.\n", "cp1252"),
        ("Area: 10 m², price £5, 20°C\n", "cp1252"),
        ("Cena netto: 100 zł\n", "cp1250"),
        ("½ cup sugar, ¼ tsp salt\n", "cp1252"),
        ("«Bonjour», dit-il.\n", "cp1252"),
        ("Où est la bibliothèque? Ça coûte 5 €.\n", "cp1252"),
        ("¿Qué tal? ¡Muy bien! El niño comió piña.\n", "cp1252"),
        ("name,city\nJosé,Zürich\nFrançois,Besançon\n", "cp1252"),
    ],
)
def test_legacy_code_pages_decode_to_the_written_text(
    tmp_path: Path, text: str, encoding: str
) -> None:
    result = extract(write(tmp_path, "notes.txt", text.encode(encoding)))
    assert result.text == text
    assert "(a best guess)" in result.note


def test_utf8_text_with_a_stray_byte_stays_utf8(tmp_path: Path) -> None:
    # Files joined, a line pasted from a cp1252 editor: one bad byte made the
    # whole text a guess (Chinese gb18030 here, Latin-1 before).
    text = "Zażółć gęślą jaźń. Grüße aus Köln. Привет мир.\n" * 20
    data = text.encode() + b"price 5 \x80\n" + text.encode()
    result = extract(write(tmp_path, "log.txt", data))
    assert result.text == text + "price 5 \ufffd\n" + text
    assert result.note == "Bytes that are not valid UTF-8 were replaced by � (1)."


def test_iso_2022_jp_text_is_decoded_not_shown_with_its_escapes(tmp_path: Path) -> None:
    # Seven bits, so valid UTF-8: it came out with ESC $ B sequences in it.
    text = "日本語のメールです。\n"
    result = extract(write(tmp_path, "mail.txt", text.encode("iso-2022-jp")))
    assert result.text == text


def test_detected_encodings_are_python_codecs_of_the_browsers_supersets() -> None:
    # Shift_JIS as Windows writes it (cp932: ① and NEC's symbols), not strict JIS.
    encoding, _ = detect_encoding("①番の資料を送ります。".encode("cp932"))
    assert encoding == "cp932"


# --- HTML -------------------------------------------------------------------------------


def test_html_deeper_than_libxml2s_default_depth_keeps_all_its_text(
    tmp_path: Path,
) -> None:
    # Old pages never close their <font> or <div> tags: text past 255 levels was
    # dropped without a word (confidence 1.0, no note).
    page = (
        b"<html><body>"
        + b"".join(b"<div>Section %d\n" % n for n in range(400))
        + b"</body></html>"
    )
    result = extract(write(tmp_path, "old.html", page))
    assert "Section 0" in result.text and "Section 399" in result.text


def test_html_text_a_browser_hides_is_not_read(tmp_path: Path) -> None:
    # Hidden markup (menus, e-mail preheaders, text stuffed for search engines)
    # was read as if shown.
    page = b"""<html><head><title>Notice</title></head><body>
    <p>Shown.</p><p hidden>Hidden.</p><p hidden="until-found">Found on search.</p>
    <div style="color: red; DISPLAY : none !important">Styled away.</div>
    <span style="visibility:hidden">Invisible.</span><p style="display:block">Block.</p>
    <dialog>Closed dialog.</dialog><dialog open>Open dialog.</dialog>
    <div hidden><p>Nested <b hidden>twice</b> hidden.</p></div>
    <p>Tail <span style="display:none">gone</span>stays.</p>
    <select><option>Chosen</option></select><datalist><option>Suggested</option>
    </datalist><iframe>Fallback</iframe></body></html>"""
    text = extract(write(tmp_path, "hidden.html", page)).text
    assert text.split("\n") == [
        "Notice",
        "Shown.",
        "Found on search.",
        "Block.",
        "Open dialog.",
        "Tail stays.",
        "Chosen",
    ]


def test_html_soft_hyphens_and_ruby_readings_leave_words_whole(tmp_path: Path) -> None:
    # "infor&shy;mation" kept U+00AD inside the word, and ruby's readings were run
    # into the words they gloss ("漢kan字ji"): neither word could be found.
    page = (
        "<html><body><p>infor&shy;mation</p>"
        "<p><ruby>漢<rp>(</rp><rt>kan</rt><rp>)</rp>字<rt>ji</rt></ruby></p>"
        "</body></html>"
    )
    text = extract(write(tmp_path, "page.html", page.encode())).text
    assert text.split("\n") == ["information", "漢字"]


def test_html_too_deep_to_parse_says_so(tmp_path: Path) -> None:
    page = b"<html><body><p>Top.</p>" + b"<div>" * 5000 + b"Deep" + b"</div>" * 5000
    result = extract(write(tmp_path, "deep.html", page + b"</body></html>"))
    assert "nested too deeply" in result.note


def test_html_latin1_label_is_read_as_windows_1252_like_browsers(
    tmp_path: Path,
) -> None:
    # Browsers read "iso-8859-1" as windows-1252; Python's latin-1 gave C1 controls.
    page = (
        b"<html><head><meta charset='iso-8859-1'></head><body><p>5 \x80 \x93ok\x94</p>"
    )
    assert extract(write(tmp_path, "p.html", page)).text == "5 € “ok”"


def test_html_in_utf8_labelled_latin1_is_read_as_utf8(tmp_path: Path) -> None:
    page = "<html><head><meta charset='iso-8859-1'></head><body><p>Zażółć gęślą</p>"
    assert extract(write(tmp_path, "p.html", page.encode())).text == "Zażółć gęślą"


def test_html_in_utf16_is_html_not_plain_text(tmp_path: Path) -> None:
    # Notepad's and Word's "Unicode" HTML: the tags came out as text.
    page = "<html><body><p>Zoë's page</p></body></html>".encode("utf-16")
    path = write(tmp_path, "page.html", page)
    assert detect_mime_type(path) == "text/html"
    assert extract(path).text == "Zoë's page"


# --- PDF --------------------------------------------------------------------------------


def per_character_pdf(lines: list[str], rotate: int = 0) -> bytes:
    """Text placed character by character, as Chrome's "Save as PDF" does, on a
    page turned by /Rotate (as a viewer's "rotate page" saves it)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=14)
    for n, line in enumerate(lines):
        x = 20.0
        for char in line:
            pdf.text(x, 30 + n * 12, char)
            x += pdf.get_string_width(char)
    document = pdfium.PdfDocument(bytes(pdf.output()))
    document[0].set_rotation(rotate)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


@pytest.mark.parametrize("rotate", [0, 90])
def test_a_pdf_placed_character_by_character_keeps_its_lines(
    tmp_path: Path, rotate: int
) -> None:
    # Commas and full stops hang below the line: taken for lines of their own,
    # they made the page look like a grid of labels read out of order, and
    # pdfplumber's reading replaced PDFium's: on a turned page, a word a line,
    # the lines last to first.
    lines = ["Invoice 2024-117", "Bill to: John Smith, 12 Main St., Springfield."]
    path = write(tmp_path, "chrome.pdf", per_character_pdf(lines, rotate))
    assert extract(path).text == "\n".join(lines)


@pytest.mark.parametrize("rotate", [0, 90])
def test_lines_set_sideways_keep_their_line_ends(tmp_path: Path, rotate: int) -> None:
    # A table or a margin note turned 90°, or a landscape page stored turned (as
    # pdflscape and OCRmyPDF write it): each line's last word was glued to the next
    # line's first ("costs ofthe").
    from fpdf import FPDF

    lines = [
        "Memorandum of understanding",
        "the parties share the costs of",
        "the road",
    ]
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=14)
    with pdf.rotation(90, x=40, y=250):
        for n, line in enumerate(lines):
            pdf.text(40, 250 + 8 * n, line)
    document = pdfium.PdfDocument(bytes(pdf.output()))
    document[0].set_rotation(rotate)
    out = io.BytesIO()
    document.save(out)
    document.close()
    path = write(tmp_path, "sideways.pdf", out.getvalue())
    assert extract(path).text == "\n".join(lines)


@pytest.mark.parametrize("angle", [0, 90, 270])
def test_right_to_left_words_drawn_glyph_by_glyph_read_in_order(
    tmp_path: Path, angle: int
) -> None:
    # PDFium gave each such word's letters in drawing order: every Arabic, Persian
    # or Hebrew word of a page printed from Chrome came out reversed.
    lines = ["مرحبا بالعالم", "این یک سند فارسی است", "שלום עולם"]
    path = write(tmp_path, "chrome-arabic.pdf", shaped_rtl_pdf(lines, angle))
    assert extract(path).text == "\n".join(lines)


def test_lam_alef_drawn_as_one_glyph_keeps_its_letters_in_order(tmp_path: Path) -> None:
    # Chrome draws lam-alef (لا, لأ) as one glyph naming both letters: turning the
    # word round turned them round too, and "لا" came out "ال".
    lines = ["لا بأس", "كلام الأطفال"]
    glyphs = lambda line: re.findall("ل[اأإآ]|.", line)[::-1]  # noqa: E731
    path = write(tmp_path, "lam-alef.pdf", shaped_rtl_pdf(lines, visual=glyphs))
    assert extract(path).text == "\n".join(lines)


def test_a_number_s_punctuation_on_a_right_to_left_line_reads_after_it(
    tmp_path: Path,
) -> None:
    # Laid out right to left, a sentence's full stop after a year and a colon after
    # a chapter's number lie left of them: they came out first (".2024", ":3").
    lines = ["صدرت النسخة في عام 2024.", "الفصل 3: المقدمة", "بنسبة 50% فقط"]
    lines.append("הגרסה יצאה ב-2024.")  # within a word: "ב.2024-"

    def laid_out(line: str) -> list[str]:  # digits left to right, the rest turned
        return re.findall(r"\d+%?|.", line)[::-1]

    pdf = shaped_rtl_pdf(lines, visual=lambda line: "".join(laid_out(line)))
    assert extract(write(tmp_path, "numbers.pdf", pdf)).text == "\n".join(lines)


def test_lam_alef_named_alef_first_reads_lam_first(tmp_path: Path) -> None:
    # LibreOffice names the two letters of its lam-alef glyph alef first: every
    # "لا" came out "ال", "السلام" as "السالم". No glyph holds alef then lam.
    lines = ["السلام عليكم ولا شيء", "الإسلام"]

    def glyphs(line: str) -> list[str]:
        return [g[::-1] for g in re.findall("ل[اأإآ]|.", line)][::-1]

    pdf = shaped_rtl_pdf(lines, visual=glyphs)
    assert extract(write(tmp_path, "alef-first.pdf", pdf)).text == "\n".join(lines)


# --- DOCX -------------------------------------------------------------------------------


def test_docx_equations_are_read_and_moved_text_is_read_once(tmp_path: Path) -> None:
    # An equation's text is in the math namespace (m:t), not in w:t: it was lost.
    # Text moved with tracked changes on is kept at its old place in w:moveFrom,
    # which Word shows struck out: it was read twice.
    import docx
    from docx.oxml import parse_xml

    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    m = 'xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math"'
    document = docx.Document()
    document.add_paragraph("Energy: ")._p.append(
        parse_xml(f"<m:oMath {m}><m:r><m:t>E=mc²</m:t></m:r></m:oMath>")
    )
    document.add_paragraph("Alpha. ")._p.append(
        parse_xml(f'<w:moveFrom {w} w:id="1"><w:r><w:t>Moved.</w:t></w:r></w:moveFrom>')
    )
    document.add_paragraph("Beta. ")._p.append(
        parse_xml(f'<w:moveTo {w} w:id="2"><w:r><w:t>Moved.</w:t></w:r></w:moveTo>')
    )
    out = io.BytesIO()
    document.save(out)
    text = extract(write(tmp_path, "paper.docx", out.getvalue())).text
    assert text.splitlines() == ["Energy: E=mc²", "Alpha. ", "Beta. Moved."]


def test_html_blocks_of_old_pages_and_forms_do_not_glue_words(tmp_path: Path) -> None:
    # <center> (old pages), summaries and text areas show on lines of their own;
    # their words ran into the next: "Annual ReportBody", "MoreDetail". A drop-down
    # shows only its first option, in its box (test_unseen_producers4).
    page = (
        b"<html><body><center><b>Annual Report</b></center>Body text."
        b"<select><option>First</option><option>Second</option></select>"
        b"<details><summary>More</summary>Detail</details><textarea>Note</textarea>"
        b"</body></html>"
    )
    text = extract(write(tmp_path, "old.html", page)).text
    assert text.splitlines() == [
        "Annual Report",
        "Body text. First",
        "More",
        "Detail",
        "Note",
    ]


def test_html_labelled_utf8_but_written_in_cp1252_is_read(tmp_path: Path) -> None:
    page = '<html><head><meta charset="utf-8"></head><body><p>Crème brûlée</p>'
    assert extract(write(tmp_path, "p.html", page.encode("cp1252"))).text == (
        "Crème brûlée"
    )


def test_utf8_with_one_damaged_byte_stays_utf8(tmp_path: Path) -> None:
    page = '<html><head><meta charset="utf-8"></head><body><p>Zażółć '.encode()
    text = extract(write(tmp_path, "p.html", page + b"\xff</p>")).text
    assert text == "Zażółć \ufffd"


@pytest.mark.parametrize(
    ("content_type", "chunk"),
    [
        # Word shows no page title.
        (
            "application/xhtml+xml",
            b"<html><head><title>Export</title></head>"
            b"<body><p>Chunk paragraph.</p></body></html>",
        ),
        # html-docx-js writes the chunk as MHT: a MIME message holding the page.
        (
            "message/rfc822",
            b"MIME-Version: 1.0\r\nContent-Type: multipart/related; boundary=B\r\n"
            b"\r\n--B\r\nContent-Type: text/html; charset=utf-8\r\n"
            b"Content-Transfer-Encoding: quoted-printable\r\n\r\n"
            b"<html><body><p>Chunk paragraph.</p></body></html>\r\n--B--\r\n",
        ),
    ],
    ids=["xhtml", "mht"],
)
def test_docx_made_of_an_html_chunk_is_read(
    tmp_path: Path, content_type: str, chunk: bytes
) -> None:
    # Tools that turn HTML into Word (html-docx-js, CRMs) embed the page whole as
    # an "alternative format chunk": Word shows it, its text came out empty.
    import docx
    from docx.opc.constants import RELATIONSHIP_TYPE
    from docx.opc.packuri import PackURI
    from docx.opc.part import Part
    from docx.oxml import parse_xml

    document = docx.Document()
    document.add_paragraph("Before.")
    part = Part(
        PackURI("/word/afchunk.mht"), content_type, chunk, document.part.package
    )
    rid = document.part.relate_to(part, RELATIONSHIP_TYPE.A_F_CHUNK)
    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    r = 'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"'
    document.element.body.insert(1, parse_xml(f'<w:altChunk {w} {r} r:id="{rid}"/>'))
    document.add_paragraph("After.")
    out = io.BytesIO()
    document.save(out)
    text = extract(write(tmp_path, "made.docx", out.getvalue())).text
    assert text.splitlines() == ["Before.", "Chunk paragraph.", "After."]


# --- e-mail -----------------------------------------------------------------------------

MAIL_HEAD = (
    b"From: jose@example.es\r\nTo: maria@example.es\r\nSubject: Reunion\r\n"
    b"Date: Thu, 7 Nov 2024 09:00:00 +0100\r\n"
)


@pytest.mark.parametrize(
    ("headers", "body", "expected"),
    [
        # No MIME headers at all (us-ascii by the RFC), the body in UTF-8.
        (b"", "See you at the café, Zoë.".encode(), "See you at the café, Zoë."),
        # Declared text/plain without a charset, the body in Latin-1.
        (
            b"MIME-Version: 1.0\r\nContent-Type: text/plain\r\n"
            b"Content-Transfer-Encoding: 8bit\r\n",
            "Hola María, la reunión es mañana.".encode("latin-1"),
            "Hola María, la reunión es mañana.",
        ),
        # A charset Python does not know.
        (
            b"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=x-unknown\r\n",
            "Grüße aus Köln".encode("cp1252"),
            "Grüße aus Köln",
        ),
        # iso-8859-1 as Outlook labels windows-1252 text.
        (
            b"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=iso-8859-1\r\n",
            b"\x93Quoted\x94 costs 5 \x80",
            "“Quoted” costs 5 €",
        ),
        # Labelled UTF-8, written in cp1252 (not one character of it is UTF-8).
        (
            b"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n",
            "Grüße aus Köln, ça va?".encode("cp1252"),
            "Grüße aus Köln, ça va?",
        ),
    ],
    ids=[
        "no-mime-utf8",
        "no-charset-latin1",
        "unknown-charset",
        "latin1-label",
        "utf8-label-on-cp1252",
    ],
)
def test_mail_bodies_without_a_usable_charset_are_decoded(
    tmp_path: Path, headers: bytes, body: bytes, expected: str
) -> None:
    path = write(tmp_path, "m.eml", MAIL_HEAD + headers + b"\r\n" + body + b"\r\n")
    text = extract(path).text
    assert expected in text and "\ufffd" not in text


def test_a_message_saved_by_thunderbird_is_mail_not_text(tmp_path: Path) -> None:
    # Thunderbird keeps mbox's "From " line and its status headers in a saved
    # message: read as plain text, its MIME parts and encoded words showed raw.
    saved = (
        b"From - Thu Nov  7 09:00:00 2024\r\nX-Mozilla-Status: 0001\r\n"
        + MAIL_HEAD
        + b"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n"
        + b"Content-Transfer-Encoding: base64\r\n\r\n"
        + base64.encodebytes("Hola María.".encode())
    )
    path = write(tmp_path, "saved", saved)
    assert detect_mime_type(path) == "message/rfc822"
    assert "Hola María." in extract(path).text


def test_a_forwarded_message_is_named_by_its_subject(tmp_path: Path) -> None:
    # Outlook's "Forward as attachment": a message/rfc822 part has no file name,
    # and came out as "(unnamed message/rfc822)".
    inner = b"From: a@example.com\r\nSubject: Budget 2025\r\n\r\nInner text.\r\n"
    mail = (
        MAIL_HEAD
        + b"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=B\r\n"
        b"\r\n--B\r\nContent-Type: text/plain\r\n\r\nSee below.\r\n"
        b"--B\r\nContent-Type: message/rfc822\r\n\r\n" + inner + b"\r\n--B--\r\n"
    )
    text = extract(write(tmp_path, "fw.eml", mail)).text
    assert text.endswith("Attachments: Budget 2025.eml")


def test_an_outlook_message_is_named_as_such_not_an_old_office_file(
    tmp_path: Path,
) -> None:
    # A .msg is an OLE2 container like .doc: users were told to save it as DOCX,
    # XLSX or PPTX.
    path = write(
        tmp_path,
        "mail.msg",
        ole_bytes("__properties_version1.0", "__substg1.0_0037001F"),
    )
    with pytest.raises(UnsupportedFileError) as refused:
        extract(path)
    assert "Outlook message" in str(refused.value)
    assert "DOCX" not in str(refused.value)


# --- OpenDocument text as LibreOffice writes it -----------------------------------------

_ODF = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" '
    'xmlns:dc="http://purl.org/dc/elements/1.1/" '
    'xmlns:xlink="http://www.w3.org/1999/xlink" office:version="1.3"'
)


def odt_with_body(body: str, styles: str = "") -> bytes:
    """An ODT package around an office:text body, as LibreOffice lays it out."""
    content = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {_ODF}>'
        f"<office:body><office:text>{body}</office:text></office:body>"
        "</office:document-content>"
    )
    manifest = (
        '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest '
        'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
        '<manifest:file-entry manifest:full-path="/" '
        'manifest:media-type="application/vnd.oasis.opendocument.text"/>'
        '<manifest:file-entry manifest:full-path="content.xml" '
        'manifest:media-type="text/xml"/></manifest:manifest>'
    )
    return odt_package(content, styles, manifest)


def test_odt_comment_without_a_date_does_not_fail_the_document(
    tmp_path: Path,
) -> None:
    # LibreOffice writes 0000-00-00 for a comment without a date: odfdo's text
    # of the paragraph parsed it, and the whole file ended "damaged".
    body = (
        "<text:p>Comment here<office:annotation><dc:creator>Ann</dc:creator>"
        "<dc:date>0000-00-00T00:00:00</dc:date><text:p>A remark</text:p>"
        "</office:annotation> and after.</text:p>"
    )
    result = extract(write(tmp_path, "c.odt", odt_with_body(body)))
    assert result.text == "Comment here and after.\nComment: A remark"


def test_odt_text_is_what_the_page_shows(tmp_path: Path) -> None:
    body = (
        "<text:tracked-changes><text:changed-region text:id='c1'><text:deletion>"
        "<office:change-info><dc:creator>Bob</dc:creator>"
        "<dc:date>2024-01-01T00:00:00</dc:date></office:change-info>"
        "<text:p>Deleted words</text:p></text:deletion></text:changed-region>"
        "</text:tracked-changes>"
        "<text:h text:outline-level='1'>Contract</text:h>"
        "<text:p>Keep this<text:change text:change-id='c1'/> text.</text:p>"
        "<text:p>Noted<office:annotation><dc:creator>Ann</dc:creator>"
        "<dc:date>2024-01-01T10:00:00</dc:date><text:p>A remark</text:p>"
        "</office:annotation> here.</text:p>"
        "<text:p>Visit <text:a xlink:href='https://example.com'>our site</text:a>"
        " today.</text:p>"
        "<text:p>Tab<text:tab/>then<text:line-break/>next,<text:s text:c='3'/>gap"
        "<text:note text:id='n1' text:note-class='footnote'>"
        "<text:note-citation>1</text:note-citation><text:note-body>"
        "<text:p>The footnote.</text:p></text:note-body></text:note>.</text:p>"
    )
    text = extract(write(tmp_path, "t.odt", odt_with_body(body))).text
    assert text.splitlines() == [
        "Contract",
        "Keep this text.",
        "Noted here.",
        "Visit our site today.",
        "Tab\tthen",
        "next,   gap.",
        "The footnote.",
        "Comment: A remark",
    ]


def test_odt_headers_and_footers_are_read_as_docx_ones_are(tmp_path: Path) -> None:
    # They live in styles.xml's master pages: a Word file's came out, an ODT's not.
    styles = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-styles {_ODF} '
        'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0">'
        "<office:master-styles><style:master-page style:name='Standard'>"
        "<style:header><text:p>ACME Confidential</text:p></style:header>"
        "<style:footer><text:p>Page <text:page-number>1</text:page-number></text:p>"
        "</style:footer></style:master-page></office:master-styles>"
        "</office:document-styles>"
    )
    odt = odt_with_body("<text:p>Body text.</text:p>", styles=styles)
    text = extract(write(tmp_path, "h.odt", odt)).text
    assert text.splitlines() == ["Body text.", "ACME Confidential", "Page 1"]


def test_odt_shape_text_is_read_once(tmp_path: Path) -> None:
    # A drawn shape's label sits inside its anchor paragraph: it was read there
    # and again as a paragraph of its own.
    body = (
        "<text:p>Anchor.<draw:custom-shape draw:name='s1'>"
        "<text:p>Shape label</text:p></draw:custom-shape></text:p>"
    )
    text = extract(write(tmp_path, "s.odt", odt_with_body(body))).text
    assert text.splitlines() == ["Anchor.", "Shape label"]


# --- XLSX -------------------------------------------------------------------------------


def test_a_workbook_whose_sheet_understates_its_size_is_read_whole(
    tmp_path: Path,
) -> None:
    # Streaming writers (Apache POI's SXSSF among them) cannot know a sheet's size
    # and write <dimension ref="A1"/>: openpyxl's read-only mode trusted it and
    # only A1 came out.
    import openpyxl

    book = openpyxl.Workbook()
    for row in range(1, 4):
        book.active.append([f"r{row}c{col}" for col in range(1, 4)])
    saved = io.BytesIO()
    book.save(saved)
    with (
        zipfile.ZipFile(saved) as source,
        zipfile.ZipFile(out := io.BytesIO(), "w") as streamed,
    ):
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename == "xl/worksheets/sheet1.xml":
                data = re.sub(
                    rb'<dimension ref="[^"]*"/>', b'<dimension ref="A1"/>', data
                )
            streamed.writestr(info, data)
    text = extract(write(tmp_path, "report.xlsx", out.getvalue())).text
    assert text.splitlines()[1:] == [
        "r1c1\tr1c2\tr1c3",
        "r2c1\tr2c2\tr2c3",
        "r3c1\tr3c2\tr3c3",
    ]


# --- PPTX -------------------------------------------------------------------------------

_DGM = "http://schemas.openxmlformats.org/drawingml/2006/diagram"
_A = "http://schemas.openxmlformats.org/drawingml/2006/main"


def smartart_pptx(items: list[str]) -> bytes:
    """A slide with a SmartArt diagram: its text lives in the diagram's data part."""
    import pptx
    from pptx.opc.package import Part
    from pptx.opc.packuri import PackURI
    from pptx.oxml import parse_xml

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Process"
    points = "".join(
        f'<dgm:pt modelId="{n}"><dgm:t><a:bodyPr/><a:p><a:r><a:t>{item}</a:t></a:r>'
        "</a:p></dgm:t></dgm:pt>"
        for n, item in enumerate(items, 1)
    )
    data = (
        f'<dgm:dataModel xmlns:dgm="{_DGM}" xmlns:a="{_A}"><dgm:ptLst>'
        '<dgm:pt modelId="0" type="doc"><dgm:t><a:bodyPr/><a:p/></dgm:t></dgm:pt>'
        f"{points}</dgm:ptLst><dgm:cxnLst/></dgm:dataModel>"
    )
    part = Part(
        PackURI("/ppt/diagrams/data1.xml"),
        "application/vnd.openxmlformats-officedocument.drawingml.diagramData+xml",
        slide.part.package,
        data.encode(),
    )
    rid = slide.part.relate_to(
        part,
        "http://schemas.openxmlformats.org/officeDocument/2006/relationships/diagramData",
    )
    slide.shapes._spTree.append(
        parse_xml(
            '<p:graphicFrame xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" '
            f'xmlns:a="{_A}" '
            'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
            '<p:nvGraphicFramePr><p:cNvPr id="10" name="Diagram 1"/><p:cNvGraphicFramePr/>'
            '<p:nvPr/></p:nvGraphicFramePr><p:xfrm><a:off x="0" y="0"/>'
            '<a:ext cx="100" cy="100"/></p:xfrm><a:graphic>'
            f'<a:graphicData uri="{_DGM}"><dgm:relIds xmlns:dgm="{_DGM}" r:dm="{rid}" '
            'r:lo="" r:qs="" r:cs=""/></a:graphicData></a:graphic></p:graphicFrame>'
        )
    )
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def test_smartart_text_is_read(tmp_path: Path) -> None:
    # python-pptx sees a SmartArt diagram as a graphic frame without text: a
    # process chart's steps were lost.
    path = write(tmp_path, "deck.pptx", smartart_pptx(["Plan", "Build", "Ship"]))
    assert extract(path).text.splitlines() == ["Process", "Plan", "Build", "Ship"]


# --- images -----------------------------------------------------------------------------


def tiff(*pages: tuple[int, ...], side: int = 4) -> bytes:
    """A valid TIFF with a page per tuple of bits per sample: (8,) is 8-bit grey,
    (16, 16) 16-bit grey with alpha, which Pillow has no mode for (ImageMagick
    writes it for a grey PNG with transparency)."""
    out = bytearray(b"II*\x00\x00\x00\x00\x00")
    link = 4  # where the offset of the next page's directory goes
    for bits in pages:
        pixels = bytes(side * side * sum(bits) // 8)
        strip = len(out)
        out += pixels
        entries = [
            (256, 3, 1, side),
            (257, 3, 1, side),
            (258, 3, len(bits), bits[0] | (bits[-1] << 16 if len(bits) == 2 else 0)),
            (259, 3, 1, 1),
            (262, 3, 1, 1),
            (273, 4, 1, strip),
            (277, 3, 1, len(bits)),
            (278, 3, 1, side),
            (279, 4, 1, len(pixels)),
        ]
        if len(bits) == 2:
            entries.append((338, 3, 1, 2))  # the second sample is alpha
        struct.pack_into("<I", out, link, len(out))
        out += struct.pack("<H", len(entries))
        for tag, kind, count, value in entries:
            out += struct.pack("<HHII", tag, kind, count, value)
        link = len(out)
        out += b"\x00\x00\x00\x00"
    return bytes(out)


def test_an_image_in_a_pixel_format_pillow_lacks_is_unsupported_not_damaged(
    tmp_path: Path,
) -> None:
    for name, content in (
        ("scan.tif", tiff((16, 16))),
        ("pages.tif", tiff((8,), (16, 16))),  # the second page: "damaged" before
    ):
        with pytest.raises(UnsupportedFileError, match="pixel format"):
            extract(write(tmp_path, name, content))
    assert extract(write(tmp_path, "grey.tif", tiff((8,), (8,)))).page_count == 2
    cut = write(tmp_path, "cut.tif", image_bytes(text_image(["Cut"]), "TIFF")[:60])
    with pytest.raises(CorruptFileError):
        extract(cut)


# --- RTF --------------------------------------------------------------------------------


def test_an_rtf_cut_short_is_not_an_empty_success(tmp_path: Path) -> None:
    head = b"{\\rtf1\\ansi\\deff0{\\fonttbl{\\f0 Times New Roman;}}"
    body = b"{\\pard First paragraph of the letter.\\par}{\\pard Second"
    cut = extract(write(tmp_path, "cut.rtf", head + body))
    assert "First paragraph of the letter." in cut.text
    assert "incomplete" in cut.note
    with pytest.raises(CorruptFileError, match="incomplete"):
        extract(write(tmp_path, "header-only.rtf", head[:40]))
    whole = extract(write(tmp_path, "whole.rtf", head + body + b".\\par}}"))
    assert whole.note == ""


# --- OCR unavailable: no server paths for users -----------------------------------------


def test_ocr_unavailable_names_no_server_folder_but_logs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "srv-secret-tessdata"
    folder.mkdir()
    monkeypatch.setenv("TESSDATA_PREFIX", str(folder))
    lines = ["Scanned page"]
    with caplog.at_level(logging.WARNING):
        photo = extract(write(tmp_path, "p.png", image_bytes(text_image(lines))))
        scan = extract(write(tmp_path, "s.pdf", scan_pdf_bytes([text_image(lines)])))
    for note in (photo.note, scan.note, ocr_problem()):
        assert "OCR is unavailable" in note and "tesseract-ocr-eng" in note
        assert "srv-secret-tessdata" not in note and str(tmp_path) not in note
    assert str(folder) in caplog.text
