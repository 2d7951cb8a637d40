"""E-mail extraction: Outlook's winmail.dat (TNEF), which Outlook and Exchange send
in place of the attachments (and of the body, in rich text) when rich text is on."""

from __future__ import annotations

import struct
from email.message import EmailMessage
from pathlib import Path

import pytest

from documents.extractors import attachments, extract
from tests.files import docx_bytes, mail_message, pdf_bytes, rtf_bytes, tnef_bytes

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
HEAD = [
    "From: Alice <alice@example.com>",
    "To: bob@example.com",
    "Subject: Site visit",
    "",
]


def rich_text_mail(winmail: bytes) -> EmailMessage:
    """A message as Exchange sends one written in rich text: no body of its own,
    only winmail.dat."""
    msg = EmailMessage()
    msg["From"] = "Alice <alice@example.com>"
    msg["To"] = "bob@example.com"
    msg["Subject"] = "Site visit"
    msg.add_attachment(
        winmail, maintype="application", subtype="ms-tnef", filename="winmail.dat"
    )
    return msg


def write(tmp_path: Path, msg: EmailMessage) -> Path:
    path = tmp_path / "mail.eml"
    path.write_bytes(bytes(msg))
    return path


def test_the_body_and_files_inside_winmail_dat_are_read(tmp_path: Path) -> None:
    # Only "winmail.dat" was named: neither the body nor the invoice in it could
    # be found by a search.
    winmail = tnef_bytes(
        ("invoice.pdf", pdf_bytes("Invoice 4711 due Friday")),
        ("minutes.docx", docx_bytes("Roof repair agreed")),
        ("photo.png", PNG),  # a picture: named only, as any attached one
        rtf=rtf_bytes("Hi Bob, the papers are attached."),
    )
    result = extract(write(tmp_path, rich_text_mail(winmail)))
    assert result.text.splitlines() == [
        *HEAD,
        "Hi Bob, the papers are attached.",
        "",
        "Attachment: invoice.pdf",
        "Invoice 4711 due Friday (page 1)",
        "",
        "Attachment: minutes.docx",
        "Roof repair agreed",
        "",
        "Attachments: invoice.pdf, minutes.docx, photo.png",
    ]
    assert result.note == ""


def test_a_body_of_the_e_mail_s_own_is_not_repeated(tmp_path: Path) -> None:
    winmail = tnef_bytes(
        ("notes.txt", b"Meter reading 4711"), body="Hi Bob, the papers are attached."
    )
    msg = mail_message(("winmail.dat", "application/ms-tnef", winmail))
    result = extract(write(tmp_path, msg))
    assert result.text.splitlines() == [
        *HEAD,
        "Hi Bob, the papers are attached.",
        "",
        "Attachment: notes.txt",
        "Meter reading 4711",
        "",
        "Attachments: notes.txt",
    ]


def test_files_inside_winmail_dat_count_toward_the_attachments_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(attachments, "MAX_READ_ATTACHMENTS", 2)
    monkeypatch.setattr(attachments, "MAX_ATTACHMENT_BYTES", 2**20)
    winmail = tnef_bytes(("note2.txt", b"Note 2"), ("note3.txt", b"Note 3"))
    msg = mail_message(
        ("note1.txt", "text/plain", b"Note 1"),
        ("huge.txt", "text/plain", b"x" * (2 * 2**20)),
        ("winmail.dat", "application/octet-stream", winmail),  # known by its name
    )
    result = extract(write(tmp_path, msg))
    assert "Note 1" in result.text and "Note 2" in result.text
    assert "Note 3" not in result.text and "xxxx" not in result.text
    assert result.text.endswith(
        "Attachments: note1.txt, huge.txt, note2.txt, note3.txt"
    )
    assert result.note == (
        "Attachments not read: huge.txt (over 1 MB). Only the first 2 attachments "
        "that are documents were read; 1 more are named only."
    )


def without_rendering(tnef: bytes) -> bytes:
    """The attributes of an attachment without the one that opens it (its rendering,
    level 2, 0x9002, 14 bytes of data)."""
    start = tnef.index(b"\x02\x02\x90\x06\x00")
    return tnef[:start] + tnef[start + 9 + 14 + 2 :]


@pytest.mark.parametrize("damage", [lambda tnef: b"MZ" + tnef[2:], without_rendering])
def test_a_damaged_winmail_dat_is_named_and_noted(tmp_path: Path, damage) -> None:
    winmail = damage(tnef_bytes(("notes.txt", b"Meter reading 4711")))
    msg = mail_message(("winmail.dat", "application/ms-tnef", winmail))
    result = extract(write(tmp_path, msg))
    assert result.text.splitlines() == [
        *HEAD,
        "Hi Bob, the papers are attached.",
        "",
        "Attachments: winmail.dat",
    ]
    assert result.note == (
        "Attachments not read: winmail.dat (The file is damaged: its Outlook "
        "contents (TNEF) cannot be read)."
    )


def test_a_winmail_dat_cut_short_loses_the_files_it_cut(tmp_path: Path) -> None:
    winmail = tnef_bytes(
        ("notes.txt", b"Meter reading 4711"),
        ("report.pdf", pdf_bytes("Report of the site visit")),
    )
    msg = mail_message(("winmail.dat", "application/ms-tnef", winmail[:-300]))
    result = extract(write(tmp_path, msg))
    assert "Attachment: notes.txt\nMeter reading 4711" in result.text
    assert result.text.endswith("Attachments: notes.txt, report.pdf")
    assert result.note.startswith("Attachments not read: report.pdf (The file is da")


def attribute(name: int, data: bytes, level: int = 1) -> bytes:
    """A TNEF attribute of byte type: level, id, length, data, checksum."""
    head = struct.pack("<BHHI", level, name, 0x0006, len(data))
    return head + data + struct.pack("<H", sum(data) & 0xFFFF)


SIGNATURE = struct.pack("<IH", 0x223E9F78, 0x0001)
MAPI_PROPERTIES = 0x9003


@pytest.mark.parametrize(
    "winmail",
    [
        # 21 bytes: a count of properties that tnefparse would loop on for hours.
        SIGNATURE + attribute(MAPI_PROPERTIES, struct.pack("<I", 0xFFFFFFFF)),
        # One property of many short integers, its count as large.
        SIGNATURE
        + attribute(
            MAPI_PROPERTIES, struct.pack("<IHHI", 1, 0x1002, 0x3A00, 2**32 - 1)
        ),
        # 200,000 empty attributes: tnefparse copies the rest of the file for each.
        SIGNATURE + attribute(0x0001, b"") * 200_000,
    ],
    ids=["property count", "multi-value count", "attributes"],
)
@pytest.mark.timeout(60)  # a hang guard, not a speed claim
def test_a_winmail_dat_of_impossible_counts_is_noted_at_once(
    tmp_path: Path, winmail: bytes
) -> None:
    msg = mail_message(("winmail.dat", "application/ms-tnef", winmail))
    result = extract(write(tmp_path, msg))  # tnefparse spun for minutes on these
    assert "Hi Bob, the papers are attached." in result.text
    assert result.note == (
        "Attachments not read: winmail.dat (The file is damaged: its Outlook "
        "contents (TNEF) cannot be read)."
    )


def test_a_winmail_dat_over_the_size_limit_is_named_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(attachments, "MAX_ATTACHMENT_BYTES", 2**20)
    winmail = tnef_bytes(("notes.txt", b"Meter reading 4711" * 2**16))
    msg = mail_message(("winmail.dat", "application/ms-tnef", winmail))
    result = extract(write(tmp_path, msg))
    assert "Meter reading" not in result.text
    assert result.text.endswith("Attachments: winmail.dat")
    assert result.note == "Attachments not read: winmail.dat (over 1 MB)."


@pytest.mark.timeout(60)  # a hang guard, not a speed claim
def test_the_recipient_table_of_a_winmail_dat_is_not_read(tmp_path: Path) -> None:
    # tnefparse reads its rows on from where damage stopped the last: here at a
    # count of 0xFFFFFFFF properties. The rest of the winmail.dat is read.
    rows = struct.pack("<IIHH", 2, 1, 0x00FF, 0x0001) + struct.pack("<I", 2**32 - 1)
    winmail = tnef_bytes(("notes.txt", b"Meter reading 4711"))
    msg = mail_message(
        ("winmail.dat", "application/ms-tnef", winmail + attribute(0x9004, rows))
    )
    result = extract(write(tmp_path, msg))  # tnefparse spun for minutes on these
    assert "Attachment: notes.txt\nMeter reading 4711" in result.text
    assert result.note == ""
