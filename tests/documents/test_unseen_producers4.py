"""More documents from producers the rest of the suite does not use: a saved
page's drop-down lists and video players, a Word form's drop-down fields (in
DOCX and RTF, and in the ODT LibreOffice saves of it), a web page's floated
boxes in Chromium's PDF (drawn before the page's text), RTF tables with a cell
merged across columns (as Word and LibreOffice write them), and text files from
DOS in Greek (CP737) and Hebrew (CP862)."""

from __future__ import annotations

from pathlib import Path

import pytest

from documents.extractors import extract
from tests.files import odt_package, placed_text_pdf


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_a_drop_down_shows_only_its_chosen_option(tmp_path: Path) -> None:
    # Every option was read, a line each: a country list read as 200 names.
    page = b"""<html><body><form>
    <p>Country:<select><option>Austria</option><option selected>France</option>
    <option>Spain</option></select> (required)</p>
    <p>Size: <select><option disabled>Pick one</option><option>Small</option>
    <option>Large</option></select></p>
    <p>Shop: <select><optgroup label="Europe"><option label="Paris">Paris, rue
    de Rivoli</option></optgroup><option>Lyon</option></select></p>
    <p>Tags:<select multiple><option selected>Urgent</option><option>Later
    </option><option selected>Billing</option></select>end</p>
    <p>Pick:<select multiple size="3"><option>One</option></select>none</p>
    </form></body></html>"""
    text = extract(write(tmp_path, "form.html", page)).text
    assert text.splitlines() == [
        "Country: France (required)",
        "Size: Small",
        "Shop: Paris",
        "Tags:",
        "Urgent",
        "Billing",
        "end",
        "Pick: none",
    ]


def test_a_player_s_fallback_text_is_not_read(tmp_path: Path) -> None:
    # "Your browser does not support the video tag." was read on every page with
    # a video; no browser shows it (Chromium's PDF of the page has none of it).
    page = b"""<html><body><h1>Clip</h1><video controls><source src="a.mp4">
    Your browser does not support the video tag.</video><audio controls>Audio is
    not supported.</audio><canvas>Canvas fallback.</canvas><p>End.</p></body></html>"""
    assert extract(write(tmp_path, "clip.html", page)).text == "Clip\nEnd."


W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def drop_down_field(*entries: str, chosen: str = "") -> list[str]:
    """A legacy form's drop-down field, as Word and LibreOffice write it (no
    result text: the entry shown is named in its w:ffData)."""
    listed = "".join(f'<w:listEntry w:val="{entry}"/>' for entry in entries)
    return [
        f'<w:r {W}><w:fldChar w:fldCharType="begin"><w:ffData><w:name w:val="D"/>'
        f"<w:enabled/><w:ddList>{chosen}{listed}</w:ddList></w:ffData></w:fldChar></w:r>",
        f'<w:r {W}><w:instrText xml:space="preserve"> FORMDROPDOWN </w:instrText></w:r>',
        f'<w:r {W}><w:fldChar w:fldCharType="separate"/></w:r>',
        f'<w:r {W}><w:fldChar w:fldCharType="end"/></w:r>',
    ]


def test_a_word_form_s_drop_down_shows_its_entry(tmp_path: Path) -> None:
    # Read "Country:  (required)": the entry shown (Word's and LibreOffice's
    # PDF: "Country: France") is in the field's properties, not in its result.
    import docx
    from docx.oxml import parse_xml

    document = docx.Document()
    for label, field in [
        (
            "Country: ",
            drop_down_field("Austria", "France", chosen='<w:result w:val="1"/>'),
        ),
        ("Size: ", drop_down_field("Small", "Large", chosen='<w:default w:val="1"/>')),
        ("Colour: ", drop_down_field("Red", "Blue")),
    ]:
        paragraph = document.add_paragraph(label)
        for run in field:
            paragraph._p.append(parse_xml(run))
        paragraph.add_run(" (required)")
    saved = tmp_path / "form.docx"
    document.save(saved)
    assert extract(saved).text.splitlines() == [
        "Country: France (required)",
        "Size: Large (required)",
        "Colour: Red (required)",
    ]


def test_an_odt_s_drop_down_field_shows_its_entry(tmp_path: Path) -> None:
    # LibreOffice keeps a Word form's drop-down as a fieldmark, which holds no text.
    content = (
        '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:'
        'xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"'
        ' xmlns:field="urn:openoffice:names:experimental:ooo-ms-interop:xmlns:field:1.0"'
        "><office:body><office:text><text:p>Country: <field:fieldmark text:name="
        '"F1" field:type="vnd.oasis.opendocument.field.FORMDROPDOWN"><field:param '
        'field:name="Dropdown_ListEntry" field:value="Austria"/><field:param '
        'field:name="Dropdown_ListEntry" field:value="France"/><field:param '
        'field:name="Dropdown_Selected" field:value="1"/></field:fieldmark>'
        "<text:s/>(required)</text:p></office:text></office:body>"
        "</office:document-content>"
    )
    path = write(tmp_path, "form.odt", odt_package(content))
    assert extract(path).text == "Country: France (required)"


def test_boxes_floated_beside_a_page_s_text_are_read_where_they_lie(
    tmp_path: Path,
) -> None:
    # Chromium draws a page's floats (a sidebar, an infobox, a quote) before its
    # text: the sidebar came before the page's title, the quote with it. Drawn
    # here in that order, each box beside the lines that wrap round it.
    floats = [
        (330, 716, "Sidebar: the boxed note at the right"),
        (330, 704, "explains the abbreviations used."),
        (34, 608, "A quote set apart,"),
        (34, 596, "floated left."),
    ]
    text = [
        (34, 750, "Field notes"),
        (34, 716, "The main text starts here and flows around the"),
        (34, 704, "sidebar for several lines, because the float takes"),
        (34, 692, "the right side of the page while this paragraph"),
        (
            34,
            668,
            "A second paragraph, under the sidebar, takes the whole width of the page",
        ),
        (34, 656, "again, as paragraphs do after a float ends."),
        (216, 608, "The third paragraph wraps round the quote on"),
        (216, 596, "its left for a line or two, and then it goes on"),
        (
            34,
            584,
            "under the quote, across the whole width of the page, as browsers do.",
        ),
    ]
    path = write(tmp_path, "page.pdf", placed_text_pdf(floats + text))
    assert extract(path, ocr_mode="never").text.splitlines() == [
        "Field notes",
        "Sidebar: the boxed note at the right",
        "explains the abbreviations used.",
        "The main text starts here and flows around the",
        "sidebar for several lines, because the float takes",
        "the right side of the page while this paragraph",
        "A second paragraph, under the sidebar, takes the whole width of the page",
        "again, as paragraphs do after a float ends.",
        "A quote set apart,",
        "floated left.",
        "The third paragraph wraps round the quote on",
        "its left for a line or two, and then it goes on",
        "under the quote, across the whole width of the page, as browsers do.",
    ]


def test_a_menu_beside_a_page_s_column_is_read_as_drawn(tmp_path: Path) -> None:
    # Guard: a column beside the text (a report's menu of its sections) has no
    # text under it across its width: no float, read as drawn, before the body.
    menu = [
        (34, 700, "Our ambition"),
        (34, 688, "Our approach"),
        (34, 676, "Measuring our footprint"),
    ]
    body = [
        (200, 750, "Net-zero carbon"),
        (200, 716, "The panel on climate change is unequivocal: climate"),
        (200, 704, "change is an urgent threat to human well-being and"),
        (200, 692, "the health of the planet, and the world is not on"),
        (200, 680, "track to meet the targets of the Paris Agreement."),
        (200, 656, "At Google, we are working to accelerate the move to a"),
    ]
    path = write(tmp_path, "report.pdf", placed_text_pdf(menu + body))
    lines = extract(path, ocr_mode="never").text.splitlines()
    assert lines == [text for _, _, text in menu + body]


def test_an_rtf_form_s_drop_down_shows_its_entry(tmp_path: Path) -> None:
    # Word's and LibreOffice's RTF keep the entries in the field's code, and no
    # result: "Country:  (required)". \ffres25 is Word's "none chosen".
    rtf = (
        rb"{\rtf1\ansi Country: {\field{\*\fldinst { FORMDROPDOWN }{\*\formfield"
        rb"{\fftype2\ffres1\ffhaslistbox{\*\ffname D1}{\*\ffl Austria}{\*\ffl France}}}}"
        rb"{\fldrslt }} (required)\par Size: {\field{\*\fldinst FORMDROPDOWN "
        rb"{\*\formfield{\fftype2\ffres25\ffdefres1{\*\ffl Small}{\*\ffl Gro\u223?e}}}}"
        rb"{\fldrslt {}}}\par Name: {\field{\*\fldinst FORMTEXT {\*\formfield"
        rb"{\fftype0{\*\ffdeftext Jane}}}}{\fldrslt Jane Doe}}\par}"
    )
    text = extract(write(tmp_path, "form.rtf", rtf)).text
    assert text.splitlines() == [
        "Country: France (required)",
        "Size: Große",
        "Name: Jane Doe",
    ]


# A table whose first row has a cell as wide as the first two of the row below,
# as LibreOffice writes a merged cell (one \cellx), with its row definitions.
WIDE_CELL_RTF = (
    rb"{\rtf1\ansi\deff0{\fonttbl{\f0 Arial;}}"
    rb"\trowd\trql\cellx4000\cellx6000\pard\intbl Wide head\cell"
    rb"\pard\intbl C\cell\row"
    rb"\trowd\trql\cellx2000\cellx4000\cellx6000\pard\intbl a1\cell"
    rb"\pard\intbl b1\cell\pard\intbl c1\cell\row"
    rb"\trowd\trql\cellx2000\cellx6000\pard\intbl a2\cell"
    rb"\pard\intbl wide tail\cell\row\pard After.\par}"
)


def test_an_rtf_cell_wide_as_two_keeps_the_columns_in_line(tmp_path: Path) -> None:
    # Read "Wide head⇥C": C stood in the column of b1. DOCX and ODT read
    # "Wide head⇥⇥C" (its empty column kept), and so does RTF now.
    text = extract(write(tmp_path, "wide.rtf", WIDE_CELL_RTF)).text
    assert text.splitlines() == [
        "Wide head\t\tC",
        "a1\tb1\tc1",
        "a2\twide tail",
        "After.",
    ]


def test_an_rtf_cell_merged_with_clmgf_keeps_the_columns_in_line(
    tmp_path: Path,
) -> None:
    # \clmgf/\clmrg: the merged cell may or may not have a \cell of its own;
    # Word's row definition may come again before \row, in a group.
    rtf = (
        rb"{\rtf1\ansi\trowd\clmgf\cellx2000\clmrg\cellx4000\cellx6000"
        rb"\pard\intbl Merged\cell\pard\intbl C\cell"
        rb"\pard\intbl{\trowd\clmgf\cellx2000\clmrg\cellx4000\cellx6000\row}"
        rb"\trowd\clmgf\cellx2000\clmrg\cellx4000\cellx6000"
        rb"\pard\intbl Both\cell\pard\intbl\cell\pard\intbl D\cell\row"
        rb"\trowd\cellx2000\cellx4000\cellx6000"
        rb"\pard\intbl a\cell b\cell c\cell\row\pard After.\par}"
    )
    text = extract(write(tmp_path, "merged.rtf", rtf)).text
    assert text.splitlines() == ["Merged\t\tC", "Both\t\tD", "a\tb\tc", "After."]


def test_tables_apart_keep_their_own_columns(tmp_path: Path) -> None:
    # Guard: a paragraph between two tables: the second's wide cells are not
    # spread over the first's columns, nor a nested table's over its cell's.
    rtf = (
        rb"{\rtf1\ansi\trowd\cellx2000\cellx4000\cellx6000"
        rb"\pard\intbl a\cell b\cell c\cell\row\pard Between.\par"
        rb"\trowd\cellx3000\cellx6000\pard\intbl x\cell y\cell\row"
        rb"\trowd\cellx3000\cellx6000\pard\intbl\itap1 Outer\cell"
        rb"\pard\intbl\itap2 n1\nestcell n2\nestcell{\*\nesttableprops\trowd"
        rb"\cellx1000\cellx1500\cellx3000\nestrow}{\nonesttables\par}"
        rb"\pard\intbl\itap1\cell\row\pard After.\par}"
    )
    text = extract(write(tmp_path, "apart.rtf", rtf)).text
    assert text.splitlines() == [
        "a\tb\tc",
        "Between.",
        "x\ty",
        "Outer\tn1 n2",
        "After.",
    ]


GREEK = (
    "Αγαπητέ κύριε Παπαδόπουλε, σας στέλνουμε το τιμολόγιο του μηνός.\n"
    "Ο κατάλογος των πελατών ενημερώθηκε σήμερα.\n"
)
HEBREW = "שלום עולם. זהו מכתב לבדיקה של קידוד התווים בקובץ טקסט ישן מתקופת דוס.\n"


@pytest.mark.parametrize(
    ("text", "code_page"),
    [
        (GREEK, "cp737"),
        ("Η γρήγορη καφέ αλεπού\n", "cp737"),
        (HEBREW, "cp862"),
        ("רשימת לקוחות: משה כהן, תל אביב; שרה לוי, ירושלים.\n", "cp862"),
        # DOS's visual Hebrew: stored in the order shown, each word backwards.
        (" ".join(word[::-1] for word in HEBREW[:-1].split(" ")) + "\n", "cp862"),
        ("╔══════════╗\n║ " + HEBREW[:9] + " ║\n╚══════════╝\n", "cp862"),
    ],
    ids=["greek", "greek-short", "hebrew", "hebrew-list", "hebrew-visual", "box"],
)
def test_dos_greek_and_hebrew_texts_are_read(
    tmp_path: Path, text: str, code_page: str
) -> None:
    # Greek was read as cp1252 ("€š˜§ž«â ¡ç¨œ"), Hebrew as CP866 capitals
    # ("ЩМЕН ТЕМН").
    path = write(tmp_path, "dos.txt", text.encode(code_page))
    assert extract(path).text == text


@pytest.mark.parametrize(
    ("text", "code_page"),
    [
        ("ОТЧЕТ О ДВИЖЕНИИ ДЕНЕЖНЫХ СРЕДСТВ ЗА МАРТ\n", "cp866"),
        ("ДОМ КОТ ПОРТ\nБАНК ОТДЕЛ: ИВАН\n", "cp866"),
        ("Уважаемый господин, прошу рассмотреть мое заявление.\n", "cp866"),
        ("ИТОГО: КАССА НОМЕР ОДИН, ПРИХОД И РАСХОД\n", "mac-cyrillic"),
        (GREEK, "cp1253"),
        (HEBREW, "cp1255"),
        (
            "Le garçon a mangé une crème brûlée à la fenêtre. Où est l'hôpital?\n",
            "cp850",
        ),
        ("Sehr geehrte Damen und Herren, bitte überprüfen Sie die Größe.\n", "cp1252"),
        ("El niño comió piña en el año pasado. Señor Muñoz.\n", "cp437"),
    ],
    ids=["ru-caps", "ru-short-caps", "ru", "ru-mac", "el-win", "he-win", "fr-dos"]
    + ["de-win", "es-dos"],
)
def test_other_texts_are_not_taken_for_dos_greek_or_hebrew(
    tmp_path: Path, text: str, code_page: str
) -> None:
    # Guard: Russian in capitals is CP866's, not Hebrew; Windows' Greek and
    # Hebrew and DOS's Latin texts stay in theirs.
    path = write(tmp_path, "other.txt", text.encode(code_page))
    assert extract(path).text == text
