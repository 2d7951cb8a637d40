"""E-mail extraction, from the second extraction audit: invitations sent as an
alternative to the body, empty or stub plain text alternatives, and attachments
cut short in a truncated e-mail."""

from __future__ import annotations

from email.message import EmailMessage
from pathlib import Path

import pytest

from documents.extractors import extract
from tests.files import pdf_bytes

CALENDAR = (
    "BEGIN:VCALENDAR\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\n"
    "SUMMARY:Budget review meeting\r\nLOCATION:Room 4B\\, Building North\r\n"
    "DESCRIPTION:Bring the Q2 figures.\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
)
INVITATION = [
    "Budget review meeting",
    "Room 4B, Building North",
    "Bring the Q2 figures.",
]


def message(subject: str = "Invitation: Budget review") -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = "organizer@example.com"
    msg["Subject"] = subject
    return msg


def alternatives(msg: EmailMessage, plain: str, html: str) -> None:
    msg.set_content(plain)
    msg.add_alternative(html, subtype="html")


def write(tmp_path: Path, content: bytes | EmailMessage) -> Path:
    path = tmp_path / "mail.eml"
    path.write_bytes(bytes(content))
    return path


def attach_invitation(msg: EmailMessage, mime: str) -> None:
    """The invitation as the file invite.ics, of type ``mime``."""
    maintype, subtype = mime.split("/")
    msg.add_attachment(
        CALENDAR.encode(), maintype=maintype, subtype=subtype, filename="invite.ics"
    )


def test_an_invitation_sent_as_an_alternative_is_read(tmp_path: Path) -> None:
    # Outlook: the calendar is a third alternative to the plain text and HTML;
    # only the plain text was read.
    msg = message()
    alternatives(msg, "Join the call.", "<p>Join the call.</p>")
    msg.add_alternative(CALENDAR, subtype="calendar", params={"method": "REQUEST"})
    text = extract(write(tmp_path, msg)).text
    assert text.splitlines() == [
        "From: organizer@example.com",
        "Subject: Invitation: Budget review",
        "",
        "Join the call.",
        "",
        *INVITATION,
    ]


@pytest.mark.parametrize(
    "mime", ["application/ics", "text/calendar", "application/octet-stream"]
)
def test_an_invitation_also_attached_as_a_file_is_read_once(
    tmp_path: Path, mime: str
) -> None:
    # Google: the calendar alternative, and the same invitation as invite.ics,
    # which was named only.
    msg = message()
    alternatives(msg, "You have been invited.", "<p>You have been invited.</p>")
    msg.add_alternative(CALENDAR, subtype="calendar", params={"method": "REQUEST"})
    attach_invitation(msg, mime)
    text = extract(write(tmp_path, msg)).text
    assert text.splitlines()[3:] == [
        "You have been invited.",
        "",
        *INVITATION,
        "",
        "Attachments: invite.ics",
    ]


@pytest.mark.parametrize("mime", ["application/ics", "application/octet-stream"])
def test_an_invitation_attached_as_a_file_alone_is_read(
    tmp_path: Path, mime: str
) -> None:
    msg = message()
    msg.set_content("See the invitation.")
    attach_invitation(msg, mime)
    text = extract(write(tmp_path, msg)).text
    assert text.splitlines()[3:] == [
        "See the invitation.",
        "",
        *INVITATION,
        "",
        "Attachments: invite.ics",
    ]


@pytest.mark.parametrize(
    "plain",
    [
        "\n",
        " \n\t\n",
        "To view this message, please use an HTML compatible email viewer.",
        "This message requires HTML.",
    ],
    ids=["empty", "whitespace", "stub-longer-than-html", "stub"],
)
def test_the_html_is_read_when_the_plain_alternative_lacks_its_text(
    tmp_path: Path, plain: str
) -> None:
    # The body was dropped (an empty plain part), or only the stub was read.
    msg = message("Spring sale")
    html = "<h1>Spring sale</h1><p>All garden tools 30% off until Friday.</p>"
    alternatives(msg, plain, html)
    text = extract(write(tmp_path, msg)).text
    assert text.splitlines()[3:] == [
        "Spring sale",
        "All garden tools 30% off until Friday.",
    ]


def test_a_plain_alternative_holding_the_html_text_is_still_read(
    tmp_path: Path,
) -> None:
    # The plain text stands for the HTML although the HTML adds a footer.
    msg = message("Spring sale")
    alternatives(
        msg,
        "All garden tools 30% off until Friday: https://shop.example.com/sale",
        "<p>All <b>garden tools</b> 30% off until Friday.</p>"
        "<p><a href='#'>Unsubscribe</a></p>",
    )
    text = extract(write(tmp_path, msg)).text
    assert text.splitlines()[3:] == [
        "All garden tools 30% off until Friday: https://shop.example.com/sale"
    ]


def cut_mail(attachment: bytes, name: str, mime: str, keep: int) -> bytes:
    """A message with a text body and one attachment, cut after ``keep``
    characters of the attachment's base64, as a failed download or a full
    mailbox leaves it (no closing boundary)."""
    msg = message("Truncated")
    msg.set_content("Text before the cut.")
    maintype, subtype = mime.split("/")
    msg.add_attachment(attachment, maintype=maintype, subtype=subtype, filename=name)
    raw = bytes(msg)
    start = raw.index(b"\n\n", raw.index(name.encode())) + 2
    end = start
    while keep:
        if raw[end : end + 1] not in b"\r\n":
            keep -= 1
        end += 1
    return raw[:end] + b"\n"


@pytest.mark.parametrize("keep", [301, 300], ids=["mid-group", "whole-groups"])
def test_an_attachment_cut_short_is_named_in_the_note(
    tmp_path: Path, keep: int
) -> None:
    # With 4n+1 characters of base64 the standard library gives back the base64
    # text itself, which was taken for text named .pdf and skipped silently.
    raw = cut_mail(pdf_bytes("Attached report"), "cut.pdf", "application/pdf", keep)
    result = extract(write(tmp_path, raw))
    assert result.text.splitlines()[3:] == [
        "Text before the cut.",
        "",
        "Attachments: cut.pdf",
    ]
    assert result.note.startswith("Attachments not read: cut.pdf (cut short in the")


def test_what_is_left_of_an_attachment_cut_short_is_read(tmp_path: Path) -> None:
    notes = "".join(f"Line {n} of the site notes.\n" for n in range(1, 40))
    raw = cut_mail(notes.encode(), "notes.txt", "text/plain", 4 * 50 + 1)
    result = extract(write(tmp_path, raw))
    lines = result.text.splitlines()
    assert lines[5:7] == ["Attachment: notes.txt", "Line 1 of the site notes."]
    assert lines[-1] == "Attachments: notes.txt"
    assert "Line 39" not in result.text
    assert "TGluZS" not in result.text  # no base64
    assert result.note == (
        "Attachments read in part: notes.txt (cut short in the e-mail)."
    )
