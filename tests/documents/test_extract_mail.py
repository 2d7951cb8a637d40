"""E-mail extraction: the body's text parts, raw 8-bit headers, broken multiparts."""

from __future__ import annotations

from pathlib import Path

import pytest

from documents.extractors import extract

HEAD = (
    b"From: Alice <alice@example.com>\r\nTo: bob@example.com\r\n"
    b"Subject: Photo of the site\r\nDate: Mon, 1 Jan 2024 10:00:00 +0000\r\n"
    b"MIME-Version: 1.0\r\n"
)
SHOWN_HEAD = [
    "From: Alice <alice@example.com>",
    "To: bob@example.com",
    "Subject: Photo of the site",
    "Date: Mon, 01 Jan 2024 10:00:00 +0000",
    "",
]


def write(tmp_path: Path, content: bytes) -> Path:
    path = tmp_path / "mail.eml"
    path.write_bytes(content)
    return path


def multipart(subtype: str, boundary: str, *parts: bytes) -> bytes:
    """A multipart entity (its Content-Type header, then its parts)."""
    b = boundary.encode()
    body = b"".join(b"--" + b + b"\r\n" + part + b"\r\n" for part in parts)
    return (
        f'Content-Type: multipart/{subtype}; boundary="{boundary}"\r\n\r\n'.encode()
        + body
        + b"--"
        + b
        + b"--\r\n"
    )


def part(content_type: str, body: str, *headers: str) -> bytes:
    lines = [f"Content-Type: {content_type}", *headers, "", body]
    return "\r\n".join(lines).encode()


PHOTO = part(
    "image/jpeg; name=IMG_0001.jpg",
    "/9j/4AAQSkZJRgABAQ==",
    "Content-Disposition: inline; filename=IMG_0001.jpg",
    "Content-Transfer-Encoding: base64",
)


def test_every_inline_text_part_is_read_in_order(tmp_path: Path) -> None:
    # Apple Mail puts an inline photo between two text parts, and list managers
    # add their footer as a part of its own: only the first part was read, the
    # rest listed as "(unnamed text/plain)".
    mail = HEAD + multipart(
        "mixed",
        "Apple-Mail=_1",
        part("text/plain; charset=us-ascii", "Hi Bob, here is the crack:"),
        PHOTO,
        part("text/plain; charset=us-ascii", "It is 3 metres long.\r\nAlice"),
        part("text/plain", "-- \r\nLIST footer", "Content-Disposition: inline"),
        part(
            "application/pdf; name=quote.pdf",
            "JVBERi0xLjQ=",
            "Content-Disposition: attachment; filename=quote.pdf",
            "Content-Transfer-Encoding: base64",
        ),
    )
    text = extract(write(tmp_path, mail)).text
    assert text.splitlines() == [
        *SHOWN_HEAD,
        "Hi Bob, here is the crack:",
        "",
        "It is 3 metres long.",
        "Alice",
        "",
        "-- ",
        "LIST footer",
        "",
        "Attachments: IMG_0001.jpg, quote.pdf",
    ]


def test_one_alternative_is_read_among_the_inline_parts(tmp_path: Path) -> None:
    # Of plain text and HTML saying the same, the plain text is read, once; an
    # HTML footer after the photo is read too.
    mail = HEAD + multipart(
        "mixed",
        "M",
        multipart(
            "alternative",
            "A",
            part("text/plain", "The crack is 3 metres long."),
            part("text/html", "<p>The crack is <b>3 metres</b> long.</p>"),
        ),
        PHOTO,
        part("text/html", "<p>Sent from my phone</p>"),
    )
    text = extract(write(tmp_path, mail)).text
    assert text.splitlines() == [
        *SHOWN_HEAD,
        "The crack is 3 metres long.",
        "",
        "Sent from my phone",
        "",
        "Attachments: IMG_0001.jpg",
    ]


@pytest.mark.parametrize(
    "content_type",
    [b"Content-Type: text/plain; charset=windows-1251\r\n", b""],
    ids=["body-charset", "detected"],
)
def test_raw_8bit_headers_are_decoded_as_the_body_is(
    tmp_path: Path, content_type: bytes
) -> None:
    # Old Russian mailers write the Subject and the From name as raw windows-1251
    # bytes: they came out as U+FFFD while the body beside them was read.
    mail = (
        "From: Иван Петров <ivan@example.ru>\r\nTo: bob@example.com\r\n"
        "Subject: Счёт за май\r\nDate: Mon, 1 Jan 2024 10:00:00 +0000\r\n"
    ).encode("cp1251") + content_type
    mail += "\r\nДобрый день, счёт во вложении.\r\n".encode("cp1251")
    text = extract(write(tmp_path, mail)).text
    assert text.splitlines() == [
        "From: Иван Петров <ivan@example.ru>",
        "To: bob@example.com",
        "Subject: Счёт за май",
        "Date: Mon, 01 Jan 2024 10:00:00 +0000",
        "",
        "Добрый день, счёт во вложении.",
    ]


@pytest.mark.parametrize(
    "content_type",
    ["multipart/mixed", 'multipart/mixed; boundary="XYZ"'],
    ids=["no-boundary", "boundary-never-used"],
)
def test_a_multipart_without_parts_is_read_as_text_and_says_so(
    tmp_path: Path, content_type: str
) -> None:
    # The parser keeps such a body as one string: it was dropped without a word.
    mail = HEAD + f"Content-Type: {content_type}\r\n\r\n".encode()
    mail += b"Please pay invoice 4711\r\nby Friday.\r\n"
    result = extract(write(tmp_path, mail))
    assert result.text.splitlines() == [
        *SHOWN_HEAD,
        "Please pay invoice 4711",
        "by Friday.",
    ]
    assert result.note == (
        "Its MIME structure is broken (a multipart message without its boundary, "
        "or with a wrong one): its body was read as plain text."
    )


def test_a_multipart_with_a_wrong_boundary_is_read_by_the_one_its_parts_use(
    tmp_path: Path,
) -> None:
    body = multipart(
        "mixed",
        "REAL",
        part("text/plain; charset=utf-8", "Please pay invoice 4711.\r\n-- \r\nBob"),
        part(
            "application/pdf; name=invoice.pdf",
            "JVBERi0xLjQ=",
            "Content-Disposition: attachment; filename=invoice.pdf",
            "Content-Transfer-Encoding: base64",
        ),
    )
    # The header names another boundary; the preamble is not the message's text.
    body = body.replace(b'boundary="REAL"', b'boundary="LOST"').replace(
        b"\r\n\r\n", b"\r\n\r\nThis is a multi-part message in MIME format.\r\n", 1
    )
    result = extract(write(tmp_path, HEAD + body))
    assert result.text.splitlines() == [
        *SHOWN_HEAD,
        "Please pay invoice 4711.",
        "-- ",
        "Bob",
        "",
        "Attachments: invoice.pdf",
    ]
    assert result.note.startswith(
        "Its MIME structure is broken (a multipart message without its boundary, "
        "or with a wrong one): its parts were found by the boundary they use. "
        # The attachment is 8 bytes of a PDF's header: noted, not read.
        "Attachments not read: invoice.pdf (The file is damaged: "
    )


def test_a_forwarded_message_and_an_invitation_are_read(tmp_path: Path) -> None:
    # "Forward as attachment": the inner message is read as a message is (its own
    # forwarded one too, up to a depth); an invitation by its summary, location
    # and description, not its alarm's.
    innermost = b"From: d@example.com\r\nSubject: Deepest\r\n\r\nDEEPEST BODY\r\n"
    inner = (
        b"From: c@example.com\r\nTo: a@example.com\r\n"
        b"Subject: Meeting notes\r\nMIME-Version: 1.0\r\n"
        + multipart(
            "mixed",
            "IN",
            part("text/plain; charset=utf-8", "Inner body text"),
            part("message/rfc822", innermost.decode()),
        )
    )
    calendar = (
        "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nSUMMARY:Budget review\r\n"
        "LOCATION:Room 4\\, first floor\r\nDESCRIPTION:Bring the figures.\\nAnd\r\n"
        "  coffee.\r\nBEGIN:VALARM\r\nDESCRIPTION:Reminder\r\nEND:VALARM\r\n"
        "END:VEVENT\r\nEND:VCALENDAR"
    )
    body = multipart(
        "mixed",
        "OUT",
        part("text/plain; charset=utf-8", "See below."),
        part("message/rfc822", inner.decode(), "Content-Disposition: attachment"),
        part("text/calendar; charset=utf-8; method=REQUEST", calendar),
    )
    result = extract(write(tmp_path, HEAD + body))
    assert result.text.splitlines() == [
        *SHOWN_HEAD,
        "See below.",
        "",
        "From: c@example.com",
        "To: a@example.com",
        "Subject: Meeting notes",
        "",
        "Inner body text",
        "",
        "From: d@example.com",
        "Subject: Deepest",
        "",
        "DEEPEST BODY",
        "",
        "Attachments: Deepest.eml",
        "",
        "Budget review",
        "Room 4, first floor",
        "Bring the figures.",
        "And coffee.",
        "",
        "Attachments: Meeting notes.eml, (unnamed text/calendar)",
    ]


def test_forwarded_messages_are_read_only_so_deep(tmp_path: Path) -> None:
    message = b"From: x@example.com\r\nSubject: Level 9\r\n\r\nLEVEL 9 BODY\r\n"
    for depth in range(8, -1, -1):
        message = (
            f"From: x@example.com\r\nSubject: Level {depth}\r\n".encode()
            + b"MIME-Version: 1.0\r\n"
            + multipart("mixed", f"B{depth}", part("message/rfc822", message.decode()))
        )
    text = extract(write(tmp_path, message)).text
    assert "Subject: Level 3" in text
    assert "Subject: Level 4" not in text  # named only
    assert "Attachments: Level 4.eml" in text


def test_format_flowed_text_is_unwrapped(tmp_path: Path) -> None:
    # RFC 3676: a line ending in a space goes on in the next; delsp=yes takes that
    # space away (a word broken across lines); a sender's space-stuffing is taken
    # away; quoted lines join their own depth only; "-- " stays a signature line.
    flowed = (
        "This is a long line that was wrapped by the mail client at seventy-eigh \r\n"
        "t characters.\r\n"
        " From the start\r\n"
        "> Quoted and \r\n"
        ">wrapped\r\n"
        "> \r\n"
        "Not quoted\r\n"
        "-- \r\n"
        "Bob"
    )
    for delsp, broken, quoted in (
        ("yes", "seventy-eight", "Quoted andwrapped"),
        ("no", "seventy-eigh t", "Quoted and wrapped"),
    ):
        content_type = f"text/plain; charset=utf-8; format=flowed; delsp={delsp}"
        text = extract(write(tmp_path, HEAD + part(content_type, flowed))).text
        assert text.splitlines()[len(SHOWN_HEAD) :] == [
            f"This is a long line that was wrapped by the mail client at {broken} "
            "characters.",
            "From the start",
            f"> {quoted}",
            ">",
            "Not quoted",
            "-- ",
            "Bob",
        ]
