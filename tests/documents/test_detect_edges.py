"""Detection at its edges: a format is told from its bytes, never its name. The
defects were found by an outside audit; each file is built here."""

from __future__ import annotations

import codecs
import gzip
import io
import random
import re
import tarfile
import zipfile
from pathlib import Path

import pytest

from documents.extractors import (
    CorruptFileError,
    UnsupportedFileError,
    classify,
    detect_format,
    extract,
)
from tests.files import eml_bytes, image_bytes, pdf_bytes, rtf_bytes, text_image

PROSE = b"The committee met on Tuesday and agreed the budget for next year. "


def write(tmp_path: Path, content: bytes, name: str = "upload.bin") -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


def key(path: Path) -> str | None:
    fmt = detect_format(path)
    return fmt.key if fmt else None


def test_an_rtf_opening_with_a_picture_s_raw_bytes_is_read(tmp_path: Path) -> None:
    # Word and WordPad write a picture as \binN and N raw bytes, NULs and all: the
    # file was refused as "not a format we read" for the bytes after {\rtf.
    picture = bytes(range(256)) * 8
    rtf = (
        b"{\\rtf1\\ansi\\deff0{\\fonttbl{\\f0 Calibri;}}"
        b"{\\pict\\wmetafile8\\picw100\\pich100\\bin%d %s}"
        b"\\par Hello from WordPad\\par}" % (len(picture), picture)
    )
    path = write(tmp_path, rtf, "letter.rtf")
    assert key(path) == "rtf"
    assert extract(path).text == "Hello from WordPad"


def test_binary_holding_an_rtf_signature_later_is_not_an_rtf(tmp_path: Path) -> None:
    # Only a signature at the start is sure; further in it is anyone's bytes.
    binary = random.Random(1).randbytes(2048) + rtf_bytes("Embedded")
    assert key(write(tmp_path, binary)) is None
    prose = PROSE + b"\nIt quoted {\\rtf1 as an example.\n"
    assert key(write(tmp_path, prose)) == "text"


def test_an_rtf_damaged_past_its_signature_is_an_rtf(tmp_path: Path) -> None:
    # It was refused as "unsupported": whatever is wrong with it, it is an RTF.
    damaged = b"{\\rtf1\\ansi " + random.Random(2).randbytes(4096)
    assert key(write(tmp_path, damaged, "damaged.rtf")) == "rtf"
    with pytest.raises(CorruptFileError, match="RTF is incomplete"):
        extract(write(tmp_path, b"{\\rtf1\\ansi{\\fonttbl\x00\x01\x02", "cut.rtf"))


def test_an_rtf_of_garbage_is_damaged(tmp_path: Path) -> None:
    path = write(tmp_path, b"{\\rtf1 " + random.Random(3).randbytes(4096) + b"}")
    with pytest.raises(CorruptFileError):
        extract(path)


def test_an_inline_svg_that_html_follows_is_html(tmp_path: Path) -> None:
    # A fragment opening with an icon was read as plain text, markup and all.
    page = (
        b'<svg width="16" height="16" viewBox="0 0 16 16"><circle r="4"/></svg>\n'
        b'<svg class="logo"><svg x="2"><rect/></svg></svg>\n'
        b"<h1>Opening hours</h1><p>Monday to <b>Friday</b>, nine to five.</p>"
    )
    path = write(tmp_path, page, "hours.html")
    assert key(path) == "html"
    assert extract(path).text == "Opening hours\nMonday to Friday, nine to five."


@pytest.mark.parametrize(
    "svg",
    [
        b'<svg xmlns="http://www.w3.org/2000/svg"><text x="1" y="9">Map</text></svg>',
        b'<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'
        b"<!-- Created with Inkscape (http://www.inkscape.org/) -->\n"
        b'<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/'
        b'Graphics/SVG/1.1/DTD/svg11.dtd" [<!ENTITY ns_x "http://x/">]>\n'
        b'<svg width="210mm"><g><svg><text>Nested</text></svg></g></svg>\n<!-- end -->\n',
        "<svg><text>Unicode</text></svg>".encode("utf-16"),
        b"<svg viewBox='0 0 9 9'>" + b"<path d='M0 0L9 9'/>" * 5000,  # ends past 64 KiB
    ],
    ids=["plain", "inkscape", "utf16", "long"],
)
def test_an_svg_picture_is_refused_saying_what_it_is(tmp_path: Path, svg) -> None:
    # Read as HTML, the lines of an SVG's text (placed one by one) run together,
    # and most drawings hold their words as outlines: refused, as PSD or ICO are.
    path = write(tmp_path, svg, "drawing.html")
    assert key(path) == "svg"
    with pytest.raises(UnsupportedFileError, match=r"This is an SVG image.*PNG"):
        extract(path)


def test_a_page_with_a_doctype_and_an_svg_is_html(tmp_path: Path) -> None:
    page = b"<!DOCTYPE html><svg><text>ACME</text></svg><p>Body</p>"
    assert key(write(tmp_path, page)) == "html"


def test_a_stray_nul_in_long_text_is_text(tmp_path: Path) -> None:
    # One NUL in 6 KB of text (a bad copy) had the file refused as binary.
    text = PROSE * 45 + b"\x00" + PROSE * 45
    path = write(tmp_path, text, "minutes.txt")
    assert key(path) == "text"
    assert extract(path).text == (PROSE * 90).decode()


@pytest.mark.parametrize(
    "content",
    [
        b"text with a \x00 NUL byte in it",  # one in a sentence
        b"\x00".join([PROSE[:40]] * 200),  # a NUL after each string
        (PROSE * 100)[:6000] + b"\x00\x01" * 8,  # a few, with other controls
    ],
    ids=["sentence", "strings", "record"],
)
def test_nuls_strewn_through_text_are_still_binary(tmp_path: Path, content) -> None:
    assert key(write(tmp_path, content)) is None


def test_a_coloured_log_with_a_form_feed_is_text(tmp_path: Path) -> None:
    # Its escape codes were one character in ten: refused as binary.
    log = (
        b"\x1b[1;31mERROR\x1b[0m disk full\n\f\x1b[32mOK\x1b[0m retried\n"
        b"\x1b]0;backup\x07done\n"
    )
    path = write(tmp_path, log, "backup.log")
    assert key(path) == "text"
    assert "disk full" in extract(path).text


def test_a_dos_end_of_file_mark_is_text(tmp_path: Path) -> None:
    assert key(write(tmp_path, b"Hello DOS\r\n\x1a")) == "text"


@pytest.mark.parametrize(
    "bom",
    [codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_LE],
    ids=["utf8", "utf16le", "utf16be", "utf32le"],
)
def test_a_byte_order_mark_before_binary_is_not_text(tmp_path: Path, bom) -> None:
    # The mark alone made it text: random bytes came out as "text" of every script.
    path = write(tmp_path, bom + random.Random(4).randbytes(4096))
    assert key(path) is None
    assert classify(_error(path)) == "unsupported"
    text = "Grüße, 你好, привет\n" * 20
    encoding = {4: "utf-32", 3: "utf-8-sig"}.get(len(bom), "utf-16")
    if len(bom) == 2:
        encoding += "-le" if bom == codecs.BOM_UTF16_LE else "-be"
    path = write(tmp_path, bom + text.encode(encoding.removesuffix("-sig")))
    assert key(path) == "text"
    assert extract(path).text == text


def _error(path: Path) -> Exception:
    try:
        extract(path)
    except Exception as exc:  # noqa: BLE001 - the error is what is looked at
        return exc
    raise AssertionError("extracted")


def _zip() -> bytes:
    saved = io.BytesIO()
    with zipfile.ZipFile(saved, "w") as archive:
        archive.writestr("readme.txt", "hello")
    return saved.getvalue()


def _tar() -> bytes:
    saved = io.BytesIO()
    data = b"Hello tar\n" * 300
    member = tarfile.TarInfo("notes.txt")
    member.size = len(data)
    with tarfile.open(fileobj=saved, mode="w") as archive:
        archive.addfile(member, io.BytesIO(data))
    return saved.getvalue()


RUSSIAN = "Съешь же ещё этих мягких французских булок, да выпей чаю. "
JAPANESE = "日本語のテキストです。今日は良い天気ですね。"
PDF = pdf_bytes("After the junk")
# (name, bytes, detected format, text read or error type)
STRESS = [
    ("ru.txt", RUSSIAN.encode("cp1251"), "text", RUSSIAN),
    ("ru-koi8.txt", RUSSIAN.encode("koi8-r"), "text", RUSSIAN),
    ("ja.txt", JAPANESE.encode("shift_jis"), "text", JAPANESE),
    ("ja-euc.txt", JAPANESE.encode("euc_jp"), "text", JAPANESE),
    ("el.txt", "Όλοι οι άνθρωποι γεννιούνται ελεύθεροι. ".encode("cp1253"), "text",
     "Όλοι οι άνθρωποι γεννιούνται ελεύθεροι. "),
    ("ko.txt", "모든 인간은 태어날 때부터 자유롭다. ".encode("euc_kr"), "text",
     "모든 인간은 태어날 때부터 자유롭다. "),
    ("utf16le.txt", "Plain notes.\nLine two.\n".encode("utf-16-le"), "text",
     "Plain notes.\nLine two.\n"),
    ("utf16be.txt", RUSSIAN.encode("utf-16-be"), "text", RUSSIAN),
    ("one.txt", b"a", "text", "a"),
    ("two.txt", b"ok", "text", "ok"),
    ("nul.txt", b"\x00", None, "unsupported"),
    ("esc.txt", b"\x1b", None, "unsupported"),
    ("latin.txt", b"\xe9t\xe9", "text", "été"),
    ("ten.txt", b"1234567890", "text", "1234567890"),
    ("controls.txt", b"\x01\x02\x03", None, "unsupported"),
    ("junk.pdf", b"Mail header junk\n" * 50 + PDF, "pdf", "After the junk (page 1)"),
    ("junk-binary.pdf", random.Random(5).randbytes(900) + PDF, "pdf",
     "After the junk (page 1)"),
    ("archive.zip", _zip(), None, "unsupported"),
    ("notes.gz", gzip.compress(b"Hello\n" * 50, mtime=0), None, "unsupported"),
    ("notes.tar", _tar(), None, "unsupported"),
    ("program", b"\x7fELF\x02\x01\x01" + bytes(57) + b"\x01\x00" * 500, None,
     "unsupported"),
    ("scan.txt", image_bytes(text_image(["Invoice 42"])), "png", "Invoice 42"),
    ("mail.eml", eml_bytes(None, "<p>Hello <b>Bob</b></p>", ()), "eml", "Hello Bob"),
    ("notes.md", b"---\ntitle: Notes\nfrom: me\n---\n\n# Notes\n", "text", "# Notes"),
    ("table.csv", codecs.BOM_UTF8 + "name,sum\ncafé,3\n".encode(), "text",
     "name,sum\ncafé,3\n"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "content", "detected", "read"), STRESS, ids=[s[0] for s in STRESS]
)
def test_odd_files_are_detected_sensibly(
    tmp_path: Path, name: str, content: bytes, detected: str | None, read: str
) -> None:
    path = write(tmp_path, content, name)
    assert key(path) == detected
    if detected is None:
        assert classify(_error(path)) == read
    else:
        assert read in extract(path).text


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (gzip.compress(b"Hello\n", mtime=0), "(gzip), not a document"),
        (_tar(), "(tar), not a document"),
        (_zip(), "This ZIP archive is not a document we can read"),
    ],
    ids=["gzip", "tar", "zip"],
)
def test_archives_are_refused_saying_what_they_are(
    tmp_path: Path, content: bytes, said: str
) -> None:
    with pytest.raises(UnsupportedFileError, match=re.escape(said)):
        extract(write(tmp_path, content))
