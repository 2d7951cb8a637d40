"""Review of day 23's extraction changes: crafted inputs that broke them."""

from __future__ import annotations

from pathlib import Path

from fpdf import FPDF

from documents.extractors import extract
from tests.documents.test_unseen_producers import placed_letters, write


def test_letter_spacing_with_a_kerned_pair_is_read_as_whole_words(
    tmp_path: Path,
) -> None:
    # PDFium spaces "Sp a c e d h e a d i n g wo r d s h e r e": where a pair
    # came closer (Chrome's letter-spacing of 0.12 em does it), the run of single
    # letters began after it, and the words were cut: "Sp aced heading wo rds".
    words = [["Sp", *"aced"], [*"heading"], ["wo", *"rds"], [*"here"]]
    # Each piece drawn on its own: a letter, or a pair a font kerns closer and
    # PDFium spaces no further apart.
    path = write(tmp_path, "tracked.pdf", placed_letters(words, 0.2))
    assert extract(path).text.splitlines() == [
        "Spaced heading words here",
        "Body text follows here.",
    ]


def narrow_columns_right_first(path: Path, count: int) -> Path:
    """One page of ``count`` narrow columns of two lines of prose each, side by
    side, drawn from the rightmost to the leftmost."""
    size, pitch = 1.0, 16.0
    pdf = FPDF(unit="pt", format=(count * pitch + 20, 60))
    pdf.set_auto_page_break(False)
    pdf.add_page()
    pdf.set_font("helvetica", size=size)
    for column in reversed(range(count)):
        x = 10 + column * pitch
        pdf.text(x, 20, "lorem ipsum dolor sit")
        pdf.text(x, 20 + size * 1.2, "consectetur adipiscing elit")
    pdf.output(str(path))
    return path


def test_a_page_of_a_thousand_columns_drawn_right_first_is_read(
    tmp_path: Path,
) -> None:
    # Each column was taken after the one to its left by a recursive call: past
    # about a thousand columns, a RecursionError failed the whole document (and
    # five thousand took seconds, each column compared with every other).
    path = narrow_columns_right_first(tmp_path / "columns.pdf", 1100)
    lines = extract(path).text.splitlines()
    assert lines.count("lorem ipsum dolor sit") == 1100
    assert lines.count("consectetur adipiscing elit") == 1100


def test_prose_past_ascii_after_a_begin_line_stays_text(tmp_path: Path) -> None:
    # The lines after "begin 644 name" were decoded as uuencoded data, and a
    # letter past ASCII made binascii raise a ValueError that is no binascii.Error:
    # the whole e-mail failed to extract.
    mail = (
        "From: Marie <marie@example.fr>\nTo: ops@example.com\nSubject: Plan\n"
        "Content-Type: text/plain; charset=utf-8\n\n"
        "Voici le plan.\nbegin 644 plan.txt\nÉtape un : tout vérifier\nend\nMerci.\n"
    )
    path = tmp_path / "plan.eml"
    path.write_bytes(mail.encode())
    assert extract(path).text.splitlines()[4:] == [
        "Voici le plan.",
        "begin 644 plan.txt",
        "Étape un : tout vérifier",
        "end",
        "Merci.",
    ]


MESSAGE = (
    b"From: Alice <alice@example.com>\nTo: bob@example.com\nSubject: Roof\n"
    b"Date: Mon, 2 Nov 2026 10:00:00 +0000\nMessage-ID: <1@example.com>\n\n"
    + b"".join(b"Line %d of the report about the roof.\n" % n for n in range(1, 11))
)
PLIST = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE plist PUBLIC "-//Apple//DTD'
    b' PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n'
    b'<plist version="1.0">\n<dict><key>flags</key><integer>8590195713</integer>'
    b"</dict>\n</plist>\n"
)


def test_an_emlx_whose_line_ends_were_converted_is_read_whole(tmp_path: Path) -> None:
    # Its length counts the message's bytes as Mail wrote them: a copy that turned
    # "\n" into "\r\n" lost a byte a line off the message's end ("Line 10 of the
    # report a"); one that turned "\r\n" into "\n" read on into the property list.
    emlx = b"%d\n" % len(MESSAGE) + MESSAGE + PLIST
    crlf = tmp_path / "crlf.emlx"
    crlf.write_bytes(emlx.replace(b"\n", b"\r\n"))
    written_crlf = MESSAGE.replace(b"\n", b"\r\n")
    lf = tmp_path / "lf.emlx"
    lf.write_bytes(b"%d\n" % len(written_crlf) + MESSAGE + PLIST)
    for path in (crlf, lf):
        lines = extract(path).text.splitlines()
        assert lines[-1] == "Line 10 of the report about the roof.", path.name
        assert lines[0] == "From: Alice <alice@example.com>"


def test_an_emlx_of_the_right_length_keeps_an_xml_line_of_its_message(
    tmp_path: Path,
) -> None:
    message = MESSAGE + b'<?xml version="1.0"?> is how the export starts.\n'
    path = tmp_path / "right.emlx"
    path.write_bytes(b"%d\n" % len(message) + message + PLIST)
    lines = extract(path).text.splitlines()
    assert lines[-1] == '<?xml version="1.0"?> is how the export starts.'
