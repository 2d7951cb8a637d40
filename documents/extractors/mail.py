"""E-mail (.eml) extraction with the standard library: headers, body, attachments."""

from __future__ import annotations

import os
from collections.abc import Iterator
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser

from .base import ExtractionResult, ExtractOptions, TextBuilder
from .html import html_lines
from .text import decode

_HEADERS = ("From", "To", "Cc", "Subject", "Date")


def extract_email(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """Headers (From, To, Cc, Subject, Date), the text body (the HTML one converted
    when there is no plain text), and the names of the attachments."""
    with open(path, "rb") as fh:
        message = BytesParser(policy=policy.default).parse(fh)
    text = TextBuilder(options.max_chars)
    text.extend(_lines(message))
    body = text.text.strip("\n")
    return ExtractionResult(
        text=body,
        page_count=None,
        confidence=1.0 if body.strip() else 0.0,
        extractor="email",
        note=text.note,
    )


def _lines(message: EmailMessage) -> Iterator[str]:
    for name in _HEADERS:
        value = _header(message, name)
        if value:
            yield f"{name}: {value}"
    yield ""
    part = message.get_body(preferencelist=("plain", "html"))
    if part is not None:
        content = part_text(part)
        if part.get_content_subtype() == "html":
            yield from html_lines(content)[0]
        else:
            yield from content.splitlines()
    names = [_attachment_name(a) for a in message.iter_attachments()]
    if names:
        yield ""
        yield f"Attachments: {', '.join(names)}"


def _header(message: EmailMessage, name: str) -> str:
    try:
        value = message.get(name)
    except (ValueError, IndexError, TypeError):  # a header the policy cannot parse
        raw = message.get_all(name, failobj=[""])
        value = str(raw[0]) if raw else ""
    return " ".join(str(value or "").split())


def part_text(part: EmailMessage) -> str:
    """The part's text. Its charset is often missing (us-ascii by the RFC, yet
    8-bit), unknown to Python, or ISO-8859-1 on Windows text: decoded as a mail
    program would, where the standard library put U+FFFD or C1 controls."""
    payload = part.get_payload(decode=True) or b""
    return decode(payload, part.get_content_charset())


def _attachment_name(part: EmailMessage) -> str:
    try:
        name = part.get_filename()
        if not name and part.get_content_type() == "message/rfc822":
            # A forwarded message has no file name: mail programs show its subject.
            subject = _header(part.get_payload(0), "Subject")
            name = f"{subject}.eml" if subject else None
    except (ValueError, IndexError, TypeError, AttributeError):
        name = None
    return name or f"(unnamed {part.get_content_type()})"
