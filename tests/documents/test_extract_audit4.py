"""Defects an outside audit found in RTF, OCR and OpenDocument extraction: a
double-byte character split by a line end in RTF, faxes with pixels twice as tall as
wide, dark-mode screenshots read out of order, and LibreOffice's flat XML files."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from documents.extractors import CorruptFileError, detect_format, extract, image
from documents.extractors.detect import read_prefix
from documents.extractors.formats import TEXT, by_extension, named_format
from tests.files import image_bytes, text_image, words, write

LINES = ["Delivery note 4471 for the", "harbour office, signed Monday."]


# --- RTF: a double-byte character across a line end -------------------------------


def cp932_rtf(text: str, wrap_after: int) -> bytes:
    """Japanese RTF as WordPad writes it: each byte as \\'hh, the source line broken
    after `wrap_after` bytes (between the two bytes of a character there)."""
    hexes = [f"\\'{b:02x}" for b in text.encode("cp932")]
    body = "".join(hexes[:wrap_after]) + "\r\n" + "".join(hexes[wrap_after:])
    return (
        r"{\rtf1\ansi\ansicpg932\deff0{\fonttbl{\f0\fnil\fcharset128 MS Mincho;}}"
        "\r\n" + r"\f0 " + body + r"\par}"
    ).encode("ascii")


def test_a_line_end_between_the_two_bytes_of_a_character_is_not_text(
    tmp_path: Path,
) -> None:
    # "の" came out as U+FFFD and a half-width "ﾌ": the line end flushed its lead byte.
    text = "日本語のリッチテキスト文書です。"
    rtf = cp932_rtf(text, wrap_after=7)  # after the lead byte of "の"
    assert extract(write(tmp_path, "jp.rtf", rtf)).text == text


def test_a_paragraph_mark_still_ends_pending_bytes(tmp_path: Path) -> None:
    # A backslash before the line end is a paragraph mark: text, unlike the line end.
    rtf = rb"{\rtf1\ansi\ansicpg1252 caf\'e9" + b"\\\r\n" + rb"\'e8re\par}"
    assert extract(write(tmp_path, "p.rtf", rtf)).text == "café\nère"


# --- OCR: pixels taller than wide (a standard-resolution fax) ----------------------


SERIF = Path("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf")


@pytest.mark.skipif(not SERIF.exists(), reason="needs DejaVu Serif (fonts-dejavu)")
def test_a_standard_resolution_fax_is_read_with_square_pixels(tmp_path: Path) -> None:
    # A page typed at 300 dpi, sent at 204 dpi across and 98 down (a fax machine's
    # standard mode): the print squashed to half its height, in black and white.
    # Read as it was: "Delivery note 44717 for the barton office".
    lines = ["Delivery note 4471 for the harbour office.", LINES[1]]
    font = ImageFont.truetype(str(SERIF), 42)
    page = Image.new("L", (int(font.getlength(lines[0])) + 84, 210), 255)
    for n, line in enumerate(lines):
        ImageDraw.Draw(page).text((42, 42 + n * 63), line, font=font, fill=0)
    fax = page.convert("1").resize((page.width * 204 // 300, page.height * 98 // 300))
    tiff = image_bytes(fax, "TIFF", compression="group3", dpi=(204, 98))
    result = extract(write(tmp_path, "fax.tif", tiff))
    assert words(" ".join(lines)) <= words(result.text), result.text


def test_each_tiff_page_is_squared_by_its_own_resolution(tmp_path: Path) -> None:
    square = Image.new("L", (400, 200), 255)
    fax = Image.new("L", (400, 100), 255)
    fax.encoderinfo = {"dpi": (204, 98)}
    path = tmp_path / "pages.tif"
    square.save(path, "TIFF", save_all=True, append_images=[fax], dpi=(300, 300))
    with Image.open(path) as tiff:
        assert image.upright_grey(tiff).size == (400, 200)
        tiff.seek(1)
        assert image.upright_grey(tiff).size == (400, round(100 * 204 / 98))


def test_a_fax_stored_turned_is_squared_along_its_upright_axes(tmp_path: Path) -> None:
    # Pillow loads a TIFF stored turned (Orientation 6) upright: its rows, 98 dpi
    # apart as stored, are then its columns.
    stored = Image.new("L", (400, 100), 255)
    path = tmp_path / "turned.tif"
    stored.save(path, "TIFF", compression="tiff_lzw", dpi=(204, 98), tiffinfo={274: 6})
    with Image.open(path) as tiff:
        assert image.upright_grey(tiff).size == (round(100 * 204 / 98), 400)


@pytest.mark.parametrize(
    ("dpi", "size"),
    [
        ((150, 300), (800, 200)),  # the lower resolution across: widened
        ((200, 196), (400, 200)),  # a fine fax, square enough
        ((72, 1), (400, 200)),  # past 4 times: a bogus resolution, not believed
    ],
)
def test_uneven_resolutions_of_other_formats(
    tmp_path: Path, dpi: tuple[int, int], size: tuple[int, int]
) -> None:
    path = write(tmp_path, "p.png", image_bytes(Image.new("L", (400, 200)), dpi=dpi))
    with Image.open(path) as png:
        assert image.upright_grey(png).size == size


def test_squaring_stays_within_the_pixel_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Enlarged, 400 × 416 would pass the limit: the wider side is reduced instead.
    monkeypatch.setattr(image, "MAX_PIXELS", 100_000)
    path = write(tmp_path, "fax.tif", image_bytes(Image.new("L", (400, 200)), "TIFF"))
    with Image.open(path) as tiff:
        tiff.tag_v2[282], tiff.tag_v2[283] = 204, 98
        assert image.upright_grey(tiff).size == (round(400 * 98 / 204), 200)


# --- OCR: light print on a dark page ------------------------------------------------


def test_a_dark_mode_screenshot_keeps_its_lines_in_order(tmp_path: Path) -> None:
    # As it was, Tesseract read the second line first; lightened, in order. The
    # second reading, which had it right, only replaced a strictly better first.
    shot = Image.new("RGB", (1400, 260), (30, 30, 30))
    draw = ImageDraw.Draw(shot)
    font = ImageFont.load_default(size=20)
    first = "Build failed: missing dependency libfoo version 2.3."
    second = "Warning: deprecated option --legacy-mode ignored."
    draw.text((20, 30), first, fill=(212, 212, 212), font=font)
    draw.text((20, 80), second, fill=(220, 220, 120), font=font)
    text = extract(write(tmp_path, "shot.png", image_bytes(shot))).text
    assert text.index("Build") < text.index("Warning"), text


# --- Flat XML OpenDocument (.fodt, .fods, .fodp) -----------------------------------

ODF = "application/vnd.oasis.opendocument"
NAMESPACES = " ".join(
    f'xmlns:{prefix}="{uri}"'
    for prefix, uri in {
        "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
        "style": "urn:oasis:names:tc:opendocument:xmlns:style:1.0",
        "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
        "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
        "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
        "fo": "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0",
        "xlink": "http://www.w3.org/1999/xlink",
        "meta": "urn:oasis:names:tc:opendocument:xmlns:meta:1.0",
        "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
        "svg": "urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0",
        "math": "http://www.w3.org/1998/Math/MathML",
    }.items()
)


def flat(kind: str, body: str, *, head: str = "", doctype: str = "") -> bytes:
    """A flat OpenDocument file as LibreOffice saves one: every part in one XML
    document, on lines of their own."""
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n{doctype}\n'
        f'<office:document {NAMESPACES} office:version="1.3" '
        f'office:mimetype="{ODF}.{kind}">\n{head}\n'
        f"<office:body><office:{kind}>{body}</office:{kind}></office:body>\n"
        "</office:document>\n"
    ).encode()


TEXT_HEAD = (
    '<office:meta><meta:document-statistic meta:page-count="2"/></office:meta>'
    '<office:styles><style:style style:name="Quiet" style:family="paragraph">'
    '<style:text-properties text:display="none"/></style:style></office:styles>'
    '<office:automatic-styles><style:style style:name="P1" style:family="paragraph" '
    'style:parent-style-name="Quiet"/></office:automatic-styles>'
    '<office:master-styles><style:master-page style:name="Standard">'
    "<style:header><text:p>Harbour Office</text:p></style:header>"
    "</style:master-page></office:master-styles>"
)


def test_a_flat_text_document_is_read_as_an_odt(tmp_path: Path) -> None:
    # It was accepted as plain text and indexed as its XML, with no note.
    body = (
        '<text:h text:outline-level="1">Delivery notes</text:h>'
        "<text:p>Note 4471 for the harbour.</text:p>"
        '<text:p text:style-name="P1">Hidden by its style.</text:p>'
        "<text:p>Formula: <draw:frame><draw:object>"
        "<math:math><math:mi>x</math:mi><math:mo>+</math:mo><math:mn>1</math:mn>"
        "</math:math></draw:object></draw:frame></text:p>"
    )
    path = write(tmp_path, "notes.fodt", flat("text", body, head=TEXT_HEAD))
    assert detect_format(path).key == "fodt"
    result = extract(path)
    assert result.text == (
        "Delivery notes\nNote 4471 for the harbour.\nFormula:\nx+1\nHarbour Office"
    )
    assert (result.extractor, result.page_count) == ("odt", 2)


def test_flat_spreadsheets_and_presentations_are_read(tmp_path: Path) -> None:
    sheet = (
        '<table:table table:name="Stock"><table:table-row>'
        "<table:table-cell><text:p>Ladders</text:p></table:table-cell>"
        '<table:table-cell office:value-type="float" office:value="7">'
        "<text:p>7</text:p></table:table-cell></table:table-row></table:table>"
    )
    slides = (
        '<draw:page draw:name="One"><draw:frame><draw:text-box>'
        "<text:p>Harbour plan</text:p></draw:text-box></draw:frame>"
        "<presentation:notes><draw:frame><draw:text-box><text:p>Say hello</text:p>"
        "</draw:text-box></draw:frame></presentation:notes></draw:page>"
    )
    ods = write(tmp_path, "stock.fods", flat("spreadsheet", sheet))
    odp = write(tmp_path, "plan.fodp", flat("presentation", slides))
    assert (detect_format(ods).key, detect_format(odp).key) == ("fods", "fodp")
    assert extract(ods).text == "Stock\nLadders\t7"
    presentation = extract(odp)
    assert "Harbour plan" in presentation.text and "Say hello" in presentation.text
    assert presentation.page_count == 1


def test_a_flat_file_is_recognised_whatever_its_name(tmp_path: Path) -> None:
    path = write(tmp_path, "notes.fodt", flat("text", "<text:p>Hi</text:p>"))
    fmt, prefix = detect_format(path), read_prefix(path)
    for name in ("notes.fodt", "notes.xml", "notes.txt", "notes"):
        assert named_format(fmt, name, prefix).key == "fodt"
    assert by_extension("x.fods").key == "fods"
    other = write(tmp_path, "other.xml", b'<?xml version="1.0"?><note>Hi</note>')
    assert detect_format(other) == TEXT


def test_a_flat_file_with_a_doctype_is_refused_as_damaged(tmp_path: Path) -> None:
    doctype = '<!DOCTYPE office:document [<!ENTITY boom "boom">]>'
    content = flat("text", "<text:p>&boom;</text:p>", doctype=doctype)
    path = write(tmp_path, "bomb.fodt", content)
    assert detect_format(path).key == "fodt"
    with pytest.raises(CorruptFileError, match="cannot be parsed"):
        extract(path)


def test_a_flat_text_of_pictures_only_has_them_read(tmp_path: Path) -> None:
    # Its pictures are inline, in base64; a header's logo is not read.
    scan = base64.b64encode(image_bytes(text_image(LINES))).decode()
    logo = base64.b64encode(image_bytes(text_image(["Logo"]))).decode()
    head = (
        "<office:master-styles><style:master-page><style:header><text:p>"
        f"<draw:frame><draw:image><office:binary-data>{logo}</office:binary-data>"
        "</draw:image></draw:frame></text:p></style:header></style:master-page>"
        "</office:master-styles>"
    )
    body = (
        "<text:p><draw:frame><draw:image><office:binary-data>"
        f"{scan}</office:binary-data></draw:image></draw:frame></text:p>"
    )
    result = extract(write(tmp_path, "scan.fodt", flat("text", body, head=head)))
    assert words(" ".join(LINES)) <= words(result.text), result.text
    assert "logo" not in words(result.text)
    assert result.extractor == "odt+tesseract"
