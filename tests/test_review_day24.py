"""Review of day 24's changes: what the tests written with them did not try."""

from __future__ import annotations

import base64
from email.message import EmailMessage
from pathlib import Path

import pytest

from documents.extractors import mail
from documents.extractors.base import ExtractOptions
from documents.extractors.mail import extract_email
from documents.extractors.text import detect_encoding

PARTS_NOTE = "It has more than 500 parts (attachments and body parts)"


@pytest.fixture
def parts_made(monkeypatch) -> list[int]:
    """How many messages and parts the e-mail parser makes, counted as it does."""
    made = [0]
    init = EmailMessage.__init__

    def counted(self, *args, **kwargs) -> None:
        made[0] += 1
        init(self, *args, **kwargs)

    monkeypatch.setattr(EmailMessage, "__init__", counted)
    return made


def _multipart(parts: bytes, *, boundary: bool = True) -> bytes:
    kind = b'multipart/mixed; boundary="b"' if boundary else b"multipart/mixed"
    return (
        b"From: a@example.com\r\nSubject: many\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: " + kind + b"\r\n\r\n" + parts + b"--b--\r\n"
    )


def _read(tmp_path: Path, data: bytes):
    path = tmp_path / "message.eml"
    path.write_bytes(data)
    return extract_email(path, ExtractOptions())


def test_parts_without_headers_are_not_parsed_past_the_limit(
    tmp_path: Path, parts_made: list[int]
) -> None:
    # A boundary line and a line of text make a part: the limit counted only
    # boundary lines followed by a header, and 200,000 such parts (1.4 MB) took
    # the parser 22 s (8 million in an upload of 50 MB).
    result = _read(tmp_path, _multipart(b"--b\r\nx\r\n" * 30_000))
    assert PARTS_NOTE in result.note
    assert parts_made[0] < 5_000


@pytest.mark.parametrize("attached_as", ["message/rfc822", "application/octet-stream"])
def test_a_forwarded_message_of_thousands_of_parts_is_read_in_part(
    tmp_path: Path, parts_made: list[int], attached_as: str
) -> None:
    # A forwarded message sent in base64 (as Exchange does), or an attached .eml,
    # is parsed from its own bytes: the limit did not look into it (2 MB, 50,000
    # parts: 18 s as a file, 56 s as message/rfc822, parsed twice), nor noted it.
    inner = _multipart(b"--b\r\nContent-Type: text/plain\r\n\r\nx\r\n" * 3_000)
    outer = (
        b"From: b@example.com\r\nSubject: outer\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/mixed; boundary="o"\r\n\r\n'
        b"--o\r\nContent-Type: text/plain\r\n\r\nSee below.\r\n"
        b"--o\r\nContent-Type: " + attached_as.encode() + b'; name="fw.eml"\r\n'
        b'Content-Disposition: attachment; filename="fw.eml"\r\n'
        b"Content-Transfer-Encoding: base64\r\n\r\n"
        + base64.encodebytes(inner)
        + b"--o--\r\n"
    )
    result = _read(tmp_path, outer)
    assert "See below." in result.text
    assert PARTS_NOTE in result.note
    assert parts_made[0] < 5_000


def test_parts_found_by_their_boundary_are_bounded_too(
    tmp_path: Path, parts_made: list[int]
) -> None:
    # A multipart without its boundary is parsed again with the one its lines use:
    # every part of it was read.
    parts = (
        b"--b\r\nContent-Type: text/plain\r\n\r\nfirst\r\n" + b"--b\r\nx\r\n" * 30_000
    )
    result = _read(tmp_path, _multipart(parts, boundary=False))
    assert "first" in result.text
    assert PARTS_NOTE in result.note
    assert parts_made[0] < 5_000


def test_once_parsing_stops_a_body_is_not_parsed_again_for_each_boundary(
    tmp_path: Path, monkeypatch
) -> None:
    # A multipart without its boundary is parsed again with each boundary its
    # lines use until one gives parts: once the parts are spent none does, and
    # each try copied the body (3 MB: 20 s).
    parsed = []
    parse = mail._parse
    monkeypatch.setattr(mail, "_parse", lambda data: parsed.append(1) or parse(data))
    broken = (
        b"--o\r\nContent-Type: multipart/mixed\r\n\r\n" + b"--c\r\nX: y\r\n" * 5_000
    )
    data = (
        b"From: a@example.com\r\nSubject: s\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/mixed; boundary="o"\r\n\r\n'
        + broken
        + b"--o\r\nx\r\n" * 3_000
        + b"--o--\r\n"
    )
    result = _read(tmp_path, data)
    assert PARTS_NOTE in result.note
    assert len(parsed) < 10


BOX = "╔══════════╗\n║ Report ║\n╚══════════╝\n"


@pytest.mark.parametrize(
    ("text", "code_page"),
    [
        # Read as CP737 Greek ("ωρλξέ, ςις νξτι?") since CP737 was tried, then CP852.
        (BOX + "Как дела, всё хорошо?\n", "cp866"),
        (BOX + "Отчёт готов. Завтра встретимся в восемь.\n", "cp866"),
        (BOX + "Το γρήγορο καφέ είναι έτοιμο για σένα.\n", "cp737"),
        (BOX + "Zażółć gęślą jaźń, dobrze.\n", "cp852"),
        (BOX + "Müller, café, señor.\n", "cp437"),
    ],
)
def test_dos_text_with_boxes_is_read_in_its_own_code_page(text, code_page):
    data = text.encode(code_page)
    found, _ = detect_encoding(data)
    assert data.decode(found) == text, found


def test_a_forwarded_message_is_parsed_once(tmp_path: Path, monkeypatch) -> None:
    """Its name (its subject, for a message/rfc822 part without a file name) and its
    text each parsed it from its bytes: twice the time, twice the part budget."""
    parsed: list[int] = []
    parse = mail._parse

    def counted(data: bytes):
        parsed.append(len(data))
        return parse(data)

    monkeypatch.setattr(mail, "_parse", counted)
    inner = b"From: c@example.com\r\nSubject: Minutes\r\n\r\nThe minutes.\r\n"
    outer = (
        b"From: b@example.com\r\nSubject: outer\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/mixed; boundary="o"\r\n\r\n'
        b"--o\r\nContent-Type: text/plain\r\n\r\nSee below.\r\n"
        b"--o\r\nContent-Type: message/rfc822\r\n"
        b"Content-Transfer-Encoding: base64\r\n\r\n"
        + base64.encodebytes(inner)
        + b"--o--\r\n"
    )
    result = _read(tmp_path, outer)
    assert "The minutes." in result.text
    assert "Minutes.eml" in result.text
    assert len(parsed) == 2  # the e-mail, then the forwarded message
