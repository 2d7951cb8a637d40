"""RTF extraction: each test builds its RTF here and pins the exact text read.
The defects were found by an outside audit."""

from __future__ import annotations

from pathlib import Path

import pytest

from documents.extractors import extract


def read_rtf(tmp_path: Path, rtf: bytes) -> str:
    path = tmp_path / "document.rtf"
    path.write_bytes(rtf)
    return extract(path).text


def test_many_fields_on_one_long_line_are_read_in_one_pass(tmp_path: Path) -> None:
    # 300 KB on one line took striprtf seconds, and 1 MB 51 s: its hyperlink pattern
    # backtracked to the line's end at every field (and put the URL after the link).
    page_field = rb"{\field{\*\fldinst{ PAGE }}{\fldrslt{1}}} some text here and there "
    link = rb'{\field{\*\fldinst{HYPERLINK "http://example.org"}}{\fldrslt{our link}}}'
    # The link on a line of its own: on the long line, a match cut the backtracking short.
    rtf = rb"{\rtf1\ansi " + page_field * 4500 + b"\r\n" + link + rb"\par}"
    assert len(rtf) > 300_000
    assert read_rtf(tmp_path, rtf) == "1 some text here and there " * 4500 + "our link"


def test_characters_beyond_u_ffff_are_whole_not_surrogate_halves(
    tmp_path: Path,
) -> None:
    # Word writes U+1F600 as \u-10179?\u-8704?, the two halves of its UTF-16 form.
    rtf = (
        rb"{\rtf1\ansi\ansicpg1252\uc1 Great job \u-10179?\u-8704? and "
        rb"\u-10176?\u-9205? done, {\uc0 \u-10179\u-8704} too\par}"
    )
    assert (
        read_rtf(tmp_path, rtf)
        == "Great job \U0001f600 and \U0002000b done, \U0001f600 too"
    )
    # A half without its other half is no character: it is shown as U+FFFD.
    lone = read_rtf(tmp_path, rb"{\rtf1\ansi Cut \u-10179? short\par}")
    assert lone == "Cut \ufffd short"


def test_hidden_text_is_not_read(tmp_path: Path) -> None:
    rtf = (
        rb"{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0 Calibri;}}\f0 Offer price: "
        rb"{\v INTERNAL FLOOR PRICE 4200 }5000 EUR\par "
        rb"Next \v SECRET\v0  line\par "
        rb"\v hidden \'e9\u233?\tab\plain shown\par}"
    )
    assert read_rtf(tmp_path, rtf) == "Offer price: 5000 EUR\nNext  line\nshown"


def test_optional_hyphens_are_dropped_and_hard_ones_are_plain(
    tmp_path: Path,
) -> None:
    rtf = rb"{\rtf1\ansi\ansicpg1252 Informa\-tion, Donau\-dampf\-schiff, e\_mail\par}"
    assert read_rtf(tmp_path, rtf) == "Information, Donaudampfschiff, e-mail"


def test_a_hyperlink_shows_only_its_text(tmp_path: Path) -> None:
    rtf = (
        rb'{\rtf1\ansi See {\field{\*\fldinst{HYPERLINK "http://a.example/"}}'
        rb"{\fldrslt{our terms}}} and {\field{\*\fldinst{HYPERLINK "
        rb'"http://b.example/"}}{\fldrslt{the price list}}} today.\par}'
    )
    assert read_rtf(tmp_path, rtf) == "See our terms and the price list today."


@pytest.mark.parametrize(
    "rtf",
    [
        rb"{\rtf1\mac\deff0{\fonttbl{\f0 Geneva;}}\f0 Caf\'8e cr\'8fme br\'9el\'8ee\par}",
        rb"{\rtf1\pc\deff0{\fonttbl{\f0 Courier;}}\f0 Caf\'82 cr\'8ame br\'96l\'82e\par}",
        rb"{\rtf1\pca\deff0{\fonttbl{\f0 Courier;}}\f0 Caf\'82 cr\'8ame br\'96l\'82e\par}",
    ],
    ids=["mac", "pc", "pca"],
)
def test_mac_and_dos_character_sets_are_read(tmp_path: Path, rtf: bytes) -> None:
    assert read_rtf(tmp_path, rtf) == "Café crème brûlée"


def test_footnotes_headers_and_footers_follow_the_body(tmp_path: Path) -> None:
    # As DOCX and ODT: the body, then the notes, then headers and footers, each
    # header once though every section and page side repeats it.
    rtf = (
        rb"{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0 Times New Roman;}}"
        rb"{\header\pard\plain\f0 ACME Confidential Header\par}"
        rb"{\footer\pard\plain\f0 Page footer text\par}"
        rb"\pard\plain\f0 The court ruled in our favour.{\super\chftn}"
        rb"{\footnote\pard\plain\f0{\super\chftn} See case 12-345, decided 2023.}"
        rb" Costs follow.{\super\chftn}{\*\footnote\ftnalt{\super\chftn} An endnote.}"
        rb"\par\sect\sectd{\headerl ACME Confidential Header\par}"
        rb"{\headerr ACME Confidential Header\par}Second section.\par}"
    )
    assert read_rtf(tmp_path, rtf) == (
        "The court ruled in our favour. Costs follow.\n\n\nSecond section.\n"
        "See case 12-345, decided 2023.\nAn endnote.\n"
        "ACME Confidential Header\nPage footer text"
    )


@pytest.mark.parametrize(
    ("rtf", "text"),
    [
        pytest.param(
            rb"{\rtf1\ansi\uc2 \u1055\'cf\'cf\u1088??, \uc0 \u1080\u1090 !\par}",
            "Пр, ит!",
            id="unicode-with-fallbacks",
        ),
        pytest.param(
            rb"{\rtf1\ansi\ansicpg932\deff0{\fonttbl{\f0\froman\fcharset0 Times;}"
            rb"{\f1\fnil\fcharset128 MS Mincho;}}\f1 \'93\'fa\'96\'7b\f0  caf\'e9\par}",
            "日本 café",
            id="double-byte-and-per-font-code-pages",
        ),
        pytest.param(
            rb"{\rtf1\ansi\ansicpg1251 \'cf\'f0\'e8\'e2\'e5\'f2\par}",
            "Привет",
            id="ansicpg",
        ),
        pytest.param(
            rb"{\rtf1\ansi Before{\pict\pngblip 89504e47}{\pict\wmetafile8\bin4 "
            rb"\x01\x02\x03\x04}After\par}",
            "BeforeAfter",
            id="pictures",
        ),
        pytest.param(
            rb"{\rtf1\ansi\trowd\cellx1000\cellx2000\intbl A1\cell B1\cell\row"
            rb"\pard After\par}",
            "A1\tB1\nAfter",
            id="table",
        ),
        pytest.param(
            rb"{\rtf1\ansi{\info{\title Not shown}}{\*\bkmkstart x}Path C:\\dir\{x\}"
            rb"\tab\ldblquote q\rdblquote\emdash\par}ignored after the document",
            "Path C:\\dir{x}\t\u201cq\u201d\u2014",
            id="destinations-and-escapes",
        ),
    ],
)
def test_what_striprtf_read_is_still_read(
    tmp_path: Path, rtf: bytes, text: str
) -> None:
    assert read_rtf(tmp_path, rtf) == text


def test_binary_data_is_skipped_whatever_bytes_it_holds(tmp_path: Path) -> None:
    # \binN is followed by N raw bytes, braces and backslashes included.
    rtf = rb"{\rtf1\ansi Before{\*\objdata \bin6 }}{\'x}After\par}"
    assert read_rtf(tmp_path, rtf) == "BeforeAfter"


def test_table_cells_are_tab_separated_and_rows_end_lines(tmp_path: Path) -> None:
    # As the other formats: a tab between cells, none after the last one. Word
    # repeats the row's properties between the last \cell and \row; empty last
    # cells are left out, as a Word table's are.
    rtf = (
        rb"{\rtf1\ansi\trowd\cellx1000\cellx2000\cellx3000"
        rb"\pard\intbl Region\cell Revenue\cell Growth\cell"
        rb"{\trowd\cellx1000\cellx2000\cellx3000\row}"
        rb"\pard\intbl North\cell 1,234\cell\cell\row\pard After\par}"
    )
    assert read_rtf(tmp_path, rtf) == "Region\tRevenue\tGrowth\nNorth\t1,234\nAfter"


def test_a_nested_tables_rows_end_lines_too(tmp_path: Path) -> None:
    # Word ends a nested row in {\*\nesttableprops ... \nestrow}. Two rows in a
    # cell: the outer row is read cell after cell, as a Word table's.
    rtf = (
        rb"{\rtf1\ansi\trowd\cellx5000\cellx9000\pard\intbl\itap1 Outer\cell "
        rb"\pard\intbl\itap2 A\nestcell B\nestcell{\*\nesttableprops\trowd"
        rb"\cellx1000\cellx2000\nestrow}{\nonesttables\par}\pard\intbl\itap2 "
        rb"C\nestcell D\nestcell{\*\nesttableprops\trowd\nestrow}"
        rb"{\nonesttables\par}\pard\intbl\itap1\cell\trowd\row\pard After\par}"
    )
    assert read_rtf(tmp_path, rtf) == "Outer\nA\tB\nC\tD\nAfter"


def test_a_row_of_paragraphs_is_read_cell_after_cell(tmp_path: Path) -> None:
    # A cell of several paragraphs (an address) is no data: its row was one line
    # broken in the middle ("Address\t1 Quay Street\nHarbour Town\tPaid"). A
    # line break in a cell of a data row is a space: the row stays a line.
    rtf = (
        rb"{\rtf1\ansi\trowd\cellx1000\cellx2000\cellx3000"
        rb"\pard\intbl Ship to\cell Harbour\line Town\cell Paid\cell\row"
        rb"\pard\intbl Address\cell 1 Quay Street\par Harbour Town\cell Paid\cell\row"
        rb"\pard After\par}"
    )
    assert read_rtf(tmp_path, rtf).splitlines() == [
        "Ship to\tHarbour Town\tPaid",
        "Address",
        "1 Quay Street",
        "Harbour Town",
        "Paid",
        "After",
    ]


def test_unicode_half_of_upr_is_read_and_ansi_half_skipped(tmp_path: Path) -> None:
    # Word writes text outside the code page twice: for old readers, then in \ud.
    rtf = (
        rb"{\rtf1\ansi\ansicpg1251\uc1 Start {\upr{\'cf\'f0 ansi}"
        rb"{\*\ud{\u1055\'3f\u1088\'3f unicode}}} end\par}"
    )
    assert read_rtf(tmp_path, rtf) == "Start \u041f\u0440 unicode end"


def test_text_boxes_follow_the_paragraph_they_are_anchored_in(
    tmp_path: Path,
) -> None:
    # As DOCX: a text box's paragraphs come after its anchor's paragraph, so they
    # do not cut a sentence in two. The shape's properties (\sp) and the copy
    # for old readers (\shprslt) are not text.
    box = (
        rb"{\shp{\*\shpinst\shpleft0\shpright2000{\sp{\sn shapeType}{\sv 202}}"
        rb"{\shptxt \pard\plain Box one\par Box two\par}}"
        rb"{\shprslt{\*\do\dobxcolumn{\dptxbx{\dptxbxtext\pard Box one\par}}}}}"
    )
    group = (
        rb"{\shpgrp{\*\shpinst{\sp{\sn groupLeft}{\sv 0}}"
        rb"{\shp{\*\shpinst{\shptxt In group}}}}}"
    )
    rtf = (
        rb"{\rtf1\ansi The figure "
        + box
        + rb" shows it.\par Then "
        + group
        + rb"more.\par{\header Head"
        + box
        + rb"\par}Last "
        + box
        + rb"}"
    )
    assert read_rtf(tmp_path, rtf) == (
        "The figure  shows it.\nBox one\nBox two\nThen more.\nIn group\n"
        "Last \nBox one\nBox two\nHead\nBox one\nBox two"
    )


def test_list_labels_lose_their_layout_space_and_empty_labels(
    tmp_path: Path,
) -> None:
    # LibreOffice writes a space before each number or bullet, and a lone tab
    # for a heading without a number; as DOCX, the label is the mark and its tab.
    rtf = (
        rb"{\rtf1\ansi\uc1{\listtext\pard\plain \tab}Heading\par"
        rb"{\listtext\pard\plain  \u8226\'3f\tab}Item\par"
        rb"{\listtext\pard\plain  1.\tab}One\par"
        rb"{\listtext\pard\plain \tab 2.\tab}Two\par}"
    )
    assert read_rtf(tmp_path, rtf) == "Heading\n\u2022\tItem\n1.\tOne\n2.\tTwo"


def test_text_deleted_with_tracked_changes_is_left_out(tmp_path: Path) -> None:
    # Word writes a tracked deletion as \deleted text; DOCX and ODT leave it out.
    rtf = (
        rb"{\rtf1\ansi Kept {\deleted\revauthdel1 Deleted text }"
        rb"{\revised\revauth1 Inserted }word.\par}"
    )
    assert read_rtf(tmp_path, rtf) == "Kept Inserted word."


def test_older_writers_list_labels_are_read(tmp_path: Path) -> None:
    # WordPad, Word 95 and PowerPoint write the label in \pntext, not \listtext.
    rtf = (
        rb"{\rtf1\ansi{\fonttbl{\f0 Arial;}{\f1\fcharset0 Arial;}}"
        rb"{\pntext\f1 1.\tab}{\*\pn\pnlvlbody\pndec{\pntxta .}}One\par"
        rb"{\pntext\f1 2.\tab}{\*\pn\pnlvlbody\pndec{\pntxta .}}Two\par}"
    )
    assert read_rtf(tmp_path, rtf) == "1.\tOne\n2.\tTwo"


def test_symbol_font_characters_are_read_as_the_font_draws_them(
    tmp_path: Path,
) -> None:
    # Word's bullet is the Symbol font's 0xB7, which cp1252 reads as "·"; letters
    # typed in Symbol are Greek. Wingdings, another symbol-charset font, differs.
    rtf = (
        rb"{\rtf1\ansi\deff0{\fonttbl{\f0\fswiss Arial;}"
        rb"{\f3\froman\fcharset2\fprq2{\*\panose 05050102010706020507}Symbol;}"
        rb"{\f4\fnil\fcharset2 Wingdings;}}"
        rb"{\listtext\pard\plain\f3\fs20 \'b7\tab}Item\par"
        rb"{\pntext\f3\'B7\tab}Old item\par"
        rb"{\f3 p}r {\f3\'b3} 3 and {\f4 J}\par}"
    )
    assert read_rtf(tmp_path, rtf) == "\u2022\tItem\n\u2022\tOld item\nπr ≥ 3 and J"
