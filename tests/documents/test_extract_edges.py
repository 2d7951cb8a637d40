"""Extraction at the edges of layout: preformatted HTML, icons, Japanese set in
columns (tategaki) and right-to-left lines printed upside down. Each test failed
before the change it covers."""

from __future__ import annotations

import math
import unicodedata
from pathlib import Path

import pytest

from documents.extractors import UnsupportedFileError, detect_format, extract
from tests.files import hand_made_pdf, image_bytes, shaped_rtl_pdf, text_image, write

ENGINES = ["auto", "pdfium", "pdfplumber"]


def pdf_text(tmp_path: Path, content: bytes, engine: str = "auto") -> str:
    path = write(tmp_path, "page.pdf", content)
    return extract(path, pdf_engine=engine, ocr_mode="never").text


# --- HTML: text shown as written ------------------------------------------------------


def test_html_pre_keeps_its_indentation_and_line_breaks(tmp_path: Path) -> None:
    # A code block came out as lines stripped of their indentation, its blank line
    # dropped. The line break right after <pre> is not shown (HTML's rule).
    page = (
        b"<html><body><p>Run   this:</p><pre>\n"
        b"def total(items):\n"
        b"    if not items:\n"
        b"        return 0\n"
        b"\n"
        b"\treturn sum(items)\n"
        b"</pre><p>Then <b>done</b>.</p></body></html>"
    )
    text = extract(write(tmp_path, "code.html", page)).text
    assert text.splitlines() == [
        "Run this:",
        "def total(items):",
        "    if not items:",
        "        return 0",
        "",
        "\treturn sum(items)",
        "Then done.",
    ]


@pytest.mark.parametrize(
    ("markup", "lines"),
    [
        pytest.param(
            '<div style="color: red; WHITE-SPACE: pre-wrap">a   b\n  c</div>',
            ["a   b", "  c"],
            id="pre-wrap",
        ),
        pytest.param(
            '<p>Total:<span style="white-space:pre">   42</span></p>',
            ["Total:   42"],
            id="inline-pre",
        ),
        pytest.param(
            '<p style="white-space: pre-line">one   two\n   three</p>',
            ["one two", "three"],
            id="pre-line-keeps-breaks-only",
        ),
        pytest.param(
            "<textarea>\n  first\n  second</textarea>",
            ["  first", "  second"],
            id="textarea",
        ),
        pytest.param(
            "<listing>\n  x = 1</listing><xmp>  <b>bold</b></xmp>",
            ["  x = 1", "  <b>bold</b>"],
            id="listing-and-xmp",
        ),
        pytest.param(
            "<pre><code>  a\n    b</code>\n</pre>",
            ["  a", "    b"],
            id="code-inside-pre",
        ),
    ],
)
def test_html_whitespace_kept_where_browsers_keep_it(
    tmp_path: Path, markup: str, lines: list[str]
) -> None:
    page = f"<html><body>{markup}<p>End</p></body></html>".encode()
    assert extract(write(tmp_path, "p.html", page)).text.splitlines() == [
        *lines,
        "End",
    ]


# --- Windows icons --------------------------------------------------------------------


def test_windows_icon_is_refused_by_name(tmp_path: Path) -> None:
    # An icon got "Its contents are not PDF, Word (DOCX), ..." as if it were noise.
    icon = image_bytes(text_image(["Hi"], size=12), "ICO", sizes=[(32, 32)])
    path = write(tmp_path, "favicon.ico", icon)
    assert detect_format(path) is not None
    with pytest.raises(UnsupportedFileError, match=r"(?i)\bicon\b"):
        extract(path)


# --- PDF: Japanese set in columns -----------------------------------------------------


def _to_unicode(codes: dict[str, int], width: int) -> bytes:
    """A ToUnicode CMap: each code (``width`` bytes) to its character."""
    digits = 2 * width
    pairs = "".join(f"<{c:0{digits}X}> <{ord(u):04X}>\n" for u, c in codes.items())
    return (
        "/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n"
        "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n"
        "/CMapName /Adobe-Identity-UCS def /CMapType 2 def\n"
        f"1 begincodespacerange <{'00' * width}> <{'FF' * width}> "
        "endcodespacerange\n"
        f"{len(codes)} beginbfchar\n{pairs}endbfchar\n"
        "endcmap CMapName currentdict /CMap defineresource pop end end\n"
    ).encode()


def _page_pdf(content: str, font: bytes, to_unicode: bytes, *extra: bytes) -> bytes:
    stream = content.encode()
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 600 800] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        4: b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        5: font,
        6: b"<< /Length %d >>\nstream\n%s\nendstream" % (len(to_unicode), to_unicode),
    }
    objects.update({7 + n: obj for n, obj in enumerate(extra)})
    return hand_made_pdf(objects)


def placed_glyphs_pdf(glyphs: list[tuple[str, float, float, float]]) -> bytes:
    """A page of characters each drawn on its own at (x, y), turned ``angle``
    degrees counter-clockwise, 20 points in a font of square glyphs (as Chrome
    prints vertical CSS writing): its Unicode from a ToUnicode map, so no Japanese
    font is needed."""
    codes = {char: 0x21 + n for n, char in enumerate(sorted({g[0] for g in glyphs}))}
    ops = []
    for char, x, y, angle in glyphs:
        cos = round(math.cos(math.radians(angle)), 4)
        sin = round(math.sin(math.radians(angle)), 4)
        matrix = f"{cos} {sin} {-sin} {cos} {x} {y}"
        ops.append(f"BT /F1 20 Tf {matrix} Tm <{codes[char]:02X}> Tj ET")
    font = (
        b"<< /Type /Font /Subtype /Type1 /BaseFont /MS-Mincho /FirstChar 32 "
        b"/LastChar 255 /Widths [%s] /ToUnicode 6 0 R >>" % b" ".join([b"1000"] * 224)
    )
    return _page_pdf("\n".join(ops), font, _to_unicode(codes, 1))


def column_glyphs(
    columns: list[str], right: float, top: float
) -> list[tuple[str, float, float, float]]:
    """Columns of upright characters from ``right`` leftwards, 30 points apart,
    each character 20 points below the one before."""
    return [
        (char, right - 30 * n, top - 20 * k, 0)
        for n, column in enumerate(columns)
        for k, char in enumerate(column)
    ]


def vertical_font_pdf(columns: list[str]) -> bytes:
    """Columns in a vertical CID font (Identity-V: the pen moves down the page), one
    string a column, drawn from the left one: as typesetting programs write
    tategaki."""
    codes = {char: 1 + n for n, char in enumerate(sorted(set("".join(columns))))}
    ops = [
        f"BT /F1 20 Tf 1 0 0 1 {300 - 30 * n} 700 Tm "
        f"<{''.join(f'{codes[c]:04X}' for c in column)}> Tj ET"
        for n, column in reversed(list(enumerate(columns)))
    ]
    font = (
        b"<< /Type /Font /Subtype /Type0 /BaseFont /HeiseiMin-W3 "
        b"/Encoding /Identity-V /DescendantFonts [7 0 R] /ToUnicode 6 0 R >>"
    )
    cid_font = (
        b"<< /Type /Font /Subtype /CIDFontType0 /BaseFont /HeiseiMin-W3 "
        b"/CIDSystemInfo << /Registry (Adobe) /Ordering (Japan1) /Supplement 2 >> "
        b"/FontDescriptor 8 0 R /DW 1000 >>"
    )
    descriptor = (
        b"<< /Type /FontDescriptor /FontName /HeiseiMin-W3 /Flags 6 "
        b"/FontBBox [0 -141 1000 859] /ItalicAngle 0 /Ascent 859 /Descent -141 "
        b"/CapHeight 700 /StemV 80 >>"
    )
    return _page_pdf("\n".join(ops), font, _to_unicode(codes, 2), cid_font, descriptor)


HAIKU = ["春の海", "ひねもす", "のたりかな"]


@pytest.mark.parametrize("engine", ENGINES)
def test_japanese_columns_are_read_from_the_right(tmp_path: Path, engine: str) -> None:
    # PDFium read the columns from the left ("のたりかな\nひねもす春の海"), and
    # pdfplumber (which "auto" preferred for such a sparse page) across them, row by
    # row: "の ひ 春\nた ね の\n...".
    assert pdf_text(tmp_path, vertical_font_pdf(HAIKU), engine) == "\n".join(HAIKU)


def heisei_columns_pdf(columns: list[range]) -> bytes:
    """Columns of kana (Adobe-Japan1 CIDs: no Unicode map needed) set down the page
    in Heisei Mincho, not embedded, as Japanese PDFs of Acrobat's era are, from the
    right; and a page number in Helvetica."""
    ops = [
        f"BT /F1 24 Tf 1 0 0 1 {400 - 40 * n} 700 Tm "
        f"<{''.join(f'{cid:04X}' for cid in cids)}> Tj ET"
        for n, cids in enumerate(columns)
    ]
    stream = "\n".join([*ops, "BT /F2 10 Tf 1 0 0 1 290 40 Tm (12) Tj ET"]).encode()
    return hand_made_pdf(
        {
            1: b"<< /Type /Catalog /Pages 2 0 R >>",
            2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 600 800] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R /F2 8 0 R >> >> >>",
            4: b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
            5: b"<< /Type /Font /Subtype /Type0 /BaseFont /HeiseiMin-W3 "
            b"/Encoding /Identity-V /DescendantFonts [6 0 R] >>",
            6: b"<< /Type /Font /Subtype /CIDFontType0 /BaseFont /HeiseiMin-W3 "
            b"/CIDSystemInfo << /Registry (Adobe) /Ordering (Japan1) /Supplement 2 >> "
            b"/FontDescriptor 7 0 R /DW 1000 >>",
            7: b"<< /Type /FontDescriptor /FontName /HeiseiMin-W3 /Flags 32 "
            b"/FontBBox [0 -141 1000 859] /ItalicAngle 0 /Ascent 859 /Descent -141 "
            b"/CapHeight 700 /StemV 80 >>",
            8: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        }
    )


def test_columns_in_a_font_the_host_lacks_are_not_lost(tmp_path: Path) -> None:
    # Without a Japanese font on the host, PDFium's stand-in has no glyphs for
    # them: each column is a text object of no width, which PDFium leaves out of the
    # page's text, and "auto" took the page number for all of it.
    columns = [range(843, 851), range(851, 859), range(859, 867)]
    text = pdf_text(tmp_path, heisei_columns_pdf(columns))
    assert text == "あぃいぅうぇえぉ\nおかがきぎくぐけ\nげこごさざしじす\n12"


@pytest.mark.parametrize("engine", ENGINES)
def test_japanese_columns_glyph_by_glyph_with_head_tiers_and_page_number(
    tmp_path: Path, engine: str
) -> None:
    # A running head, two tiers (dan) of columns, a column with two digits set
    # across it and a word set sideways, and a page number: tier by tier from the
    # top, each tier's columns from the right, each column downwards.
    glyphs = [("序", 280, 760, 0), ("章", 300, 760, 0)]
    glyphs += column_glyphs(["春の海", "ひねもす"], right=500, top=700)
    glyphs += [("第", 440, 700, 0), ("1", 440, 680, 0), ("2", 450, 680, 0)]
    glyphs += [("回", 440, 660, 0)]
    glyphs += [(c, 445, 656 - 10 * k, -90) for k, c in enumerate("PDF")]
    glyphs += [("を", 440, 606, 0)]
    glyphs += column_glyphs(["のたり", "かな"], right=500, top=500)
    glyphs += [("1", 300, 40, 0), ("2", 312, 40, 0)]
    text = pdf_text(tmp_path, placed_glyphs_pdf(glyphs), engine)
    assert text == "序章\n春の海\nひねもす\n第12回PDFを\nのたり\nかな\n12"


@pytest.mark.parametrize("engine", ENGINES)
def test_japanese_set_across_the_page_keeps_its_lines(
    tmp_path: Path, engine: str
) -> None:
    # Guard: lines of Japanese across the page, and a list of one character a line,
    # are not taken for columns.
    lines = ["東京都の天気は晴れ", "明日は雨が降るでしょう", "気温は二十度です"]
    glyphs = [
        (char, 50 + 20 * k, 700 - 26 * n, 0)
        for n, line in enumerate(lines)
        for k, char in enumerate(line)
    ]
    text = pdf_text(tmp_path, placed_glyphs_pdf(glyphs), engine)
    assert "".join(text.split()) == "".join(lines)  # read along the lines
    days = [(day, 50, 700 - 25 * n, 0) for n, day in enumerate("月火水木金土日")]
    text = pdf_text(tmp_path, placed_glyphs_pdf(days), "pdfplumber")
    assert text.splitlines() == list("月火水木金土日")


# --- PDF: right-to-left lines upside down ---------------------------------------------


def _visual(line: str) -> str:
    """A right-to-left line in the order its glyphs lie from left to right (a run
    of left-to-right words keeps its order)."""
    words, runs = line.split(" "), []
    for word in reversed(words):
        rtl = any(unicodedata.bidirectional(c) in ("R", "AL") for c in word)
        if not rtl and runs and not runs[-1][0]:
            runs[-1][1].insert(0, word)
        else:
            runs.append((rtl, [word[::-1] if rtl else word]))
    return " ".join(" ".join(run) for _, run in runs)


def test_upside_down_right_to_left_lines_keep_their_word_order(
    tmp_path: Path,
) -> None:
    # Each word's letters were right, but the words came last first:
    # "بالعالم مرحبا"; a left-to-right word or a number among them came backwards.
    lines = [
        "مرحبا بالعالم",
        "این یک سند فارسی است",
        "שלום עולם",
        "זה מסמך Microsoft Word בעברית",
        "שלום 123 עולם",
    ]
    assert pdf_text(
        tmp_path, shaped_rtl_pdf(lines, 180, _visual), "pdfium"
    ) == "\n".join(lines)
