"""E-mail (.eml) extraction with the standard library: headers, body, attachments."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser

from .base import ExtractionResult, ExtractOptions, TextBuilder, join_notes
from .html import html_lines
from .text import decode, detect_encoding

_HEADERS = ("From", "To", "Cc", "Subject", "Date")
_BODY_TYPES = ("plain", "html")
# A line opening a part: "--", a boundary (RFC 2046's characters, 1 to 70, not
# ending in a space), then the part's first header.
_BOUNDARY_LINE = re.compile(
    rb"^--([0-9A-Za-z'()+_,./:=?-](?:[0-9A-Za-z'()+_,./:=? -]{0,68}"
    rb"[0-9A-Za-z'()+_,./:=?-])?)[ \t]*\r?\n[!-9;-~]+:",
    re.MULTILINE,
)
_LINE_BREAKS = re.compile(r"[\r\n]")
# Forwarded messages (message/rfc822) are read inside each other this deep; deeper
# ones are named only.
_MAX_FORWARD_DEPTH = 3
# An invitation's (text/calendar, RFC 5545) properties people read, outside its
# alarms ("Reminder") and time zones; its escapes ("\n", "\,").
_CALENDAR_TEXT = ("SUMMARY", "LOCATION", "DESCRIPTION")
_CALENDAR_SKIPPED = ("VALARM", "VTIMEZONE")
_CALENDAR_ESCAPE = re.compile(r"\\([nN,;\\])")
_BROKEN_NOTE = (
    "Its MIME structure is broken (a multipart message without its boundary, or "
    "with a wrong one): {what}."
)


class _Mail:
    """A message taken apart as a mail program shows it: the text parts of its
    body in order, and its attachments."""

    def __init__(self, message: EmailMessage) -> None:
        self.body: list[EmailMessage] = []
        self.attachments: list[EmailMessage] = []
        self.broken: list[str] = []  # what was done with broken multiparts
        self._walk(message)

    def _walk(self, part: EmailMessage) -> None:
        if part.is_attachment():
            self.attachments.append(part)
            return
        maintype, subtype = part.get_content_maintype(), part.get_content_subtype()
        if maintype == "text" and subtype in _BODY_TYPES:
            self.body.append(part)
        elif maintype != "multipart":
            self.attachments.append(part)
        elif (parts := self._parts(part)) is None:
            self.body.append(part)  # read whole, as text
        elif subtype == "alternative":
            self._walk_alternative(parts)
        elif subtype == "related":
            # The root (the "start" part, else the first) is the body; the rest are
            # its pictures, named only when sent as attachments.
            start = part.get_param("start")
            root = next((p for p in parts if start and p["content-id"] == start), None)
            for sub in parts:
                if sub is (root or parts[0]):
                    self._walk(sub)
                elif sub.is_attachment():
                    self.attachments.append(sub)
        else:  # mixed, and kinds a reader treats as mixed
            for sub in parts:
                self._walk(sub)

    def _walk_alternative(self, parts: list[EmailMessage]) -> None:
        """One alternative: the first holding plain text, else the first with any."""
        chosen = None
        for sub in parts:
            found = _Mail(sub)
            if found.body and (
                chosen is None
                or (_has_plain(found.body) and not _has_plain(chosen.body))
            ):
                chosen = found
        if chosen is not None:
            self.body += chosen.body
            self.attachments += chosen.attachments
            self.broken += chosen.broken

    def _parts(self, part: EmailMessage) -> list[EmailMessage] | None:
        """A multipart's parts. Without its boundary, or with one that never occurs,
        the parser keeps the body as one string: the parts are found by the boundary
        their lines use, else None (the body is read as text)."""
        payload = part.get_payload()
        if isinstance(payload, list):
            return payload
        raw = str(payload).encode("ascii", "surrogateescape")
        for found in _BOUNDARY_LINE.finditer(raw):
            boundary = found.group(1)
            wrapper = BytesParser(policy=policy.default).parsebytes(
                b'Content-Type: multipart/mixed; boundary="'
                + boundary
                + b'"\r\n\r\n'
                + raw
            )
            parts = wrapper.get_payload()
            if isinstance(parts, list) and parts:
                self.broken.append("its parts were found by the boundary they use")
                return parts
        self.broken.append("its body was read as plain text")
        return None


def extract_email(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """Headers (From, To, Cc, Subject, Date), the text of the body's parts (the
    HTML one converted where there is no plain text), and the attachments' names."""
    with open(path, "rb") as fh:
        message = BytesParser(policy=policy.default).parse(fh)
    mail = _Mail(message)
    text = TextBuilder(options.max_chars)
    text.extend(_lines(message, mail))
    body = text.text.strip("\n")
    broken = (
        _BROKEN_NOTE.format(what="; ".join(dict.fromkeys(mail.broken)))
        if mail.broken
        else ""
    )
    return ExtractionResult(
        text=body,
        page_count=None,
        confidence=1.0 if body.strip() else 0.0,
        extractor="email",
        note=join_notes(broken, text.note),
    )


def _lines(message: EmailMessage, mail: _Mail, depth: int = 0) -> Iterator[str]:
    """The headers, the body's text, forwarded messages and invitations (their
    text), and the attachments' names."""
    charset = _body_charset(message, mail)
    for name in _HEADERS:
        value = _header(message, name, charset)
        if value:
            yield f"{name}: {value}"
    yield ""
    for n, part in enumerate(mail.body):
        if n:
            yield ""
        content = part_text(part)
        if part.get_content_subtype() == "html" or _looks_like_html(part, content):
            yield from html_lines(content)[0]
        elif part.get_param("format", "").lower() == "flowed":
            delsp = part.get_param("delsp", "").lower() == "yes"
            yield from _unflowed(content.splitlines(), delsp=delsp)
        else:
            yield from content.splitlines()
    shown = bool(mail.body)
    for attachment in mail.attachments:
        lines = _attached_lines(attachment, depth)
        first = next(lines, None)
        if first is None:
            continue
        if shown:
            yield ""
        shown = True
        yield first
        yield from lines
    names = [_attachment_name(a) for a in mail.attachments]
    if names:
        if shown:
            yield ""
        yield f"Attachments: {', '.join(names)}"


def _attached_lines(part: EmailMessage, depth: int) -> Iterator[str]:
    """A forwarded message read as a message is, or an invitation's text; nothing
    for other attachments."""
    kind = part.get_content_type()
    if kind == "message/rfc822" and depth < _MAX_FORWARD_DEPTH:
        try:
            inner = part.get_payload(0)
        except (TypeError, IndexError):  # not parsed as a message: named only
            return
        if isinstance(inner, EmailMessage):
            yield from _lines(inner, _Mail(inner), depth + 1)
    elif kind == "text/calendar":
        yield from _calendar_lines(part_text(part))


def _calendar_lines(text: str) -> Iterator[str]:
    """The summary, location and description of each event (task...) in an
    iCalendar text, its folded lines joined and escapes undone."""
    unfolded = re.sub(r"\r?\n[ \t]", "", text)
    skipped = 0  # the depth of the alarms and time zones being passed
    for line in unfolded.splitlines():
        name, _, value = line.partition(":")
        name = name.split(";", 1)[0].strip().upper()
        if name == "BEGIN" and value.strip().upper() in _CALENDAR_SKIPPED:
            skipped += 1
        elif name == "END" and value.strip().upper() in _CALENDAR_SKIPPED:
            skipped = max(0, skipped - 1)
        elif not skipped and name in _CALENDAR_TEXT and value.strip():
            shown = _CALENDAR_ESCAPE.sub(
                lambda m: "\n" if m.group(1) in "nN" else m.group(1), value
            )
            yield from shown.splitlines()


def _unflowed(lines: list[str], *, delsp: bool) -> Iterator[str]:
    """Lines of format=flowed text (RFC 3676) as written: a line ending in a space
    goes on in the next one of the same quote depth (that space removed with
    delsp=yes), and the space a sender put before a line's start is taken away."""
    joined: list[str] = []
    flowing, depth = False, 0
    for line in lines:
        quotes = len(line) - len(line.lstrip(">"))
        content = line[quotes:]
        if content.startswith(" "):  # space-stuffed
            content = content[1:]
        soft = content.endswith(" ") and content != "-- "  # "-- " opens a signature
        if soft and delsp:
            content = content[:-1]
        if flowing and quotes == depth and joined:
            joined[-1] += content
        else:
            joined.append(">" * quotes + (" " if quotes and content else "") + content)
        flowing, depth = soft, quotes
    return iter(joined)


def _has_plain(parts: list[EmailMessage]) -> bool:
    return any(p.get_content_type() == "text/plain" for p in parts)


def _looks_like_html(part: EmailMessage, content: str) -> bool:
    """A broken multipart read as text that is a web page."""
    if part.get_content_maintype() != "multipart":
        return False
    start = content.lstrip()[:15].lower()
    return start.startswith(("<!doctype html", "<html"))


def _body_charset(message: EmailMessage, mail: _Mail | None = None) -> str | None:
    """The charset the message's text declares: its raw 8-bit headers were most
    likely written in it by the same program."""
    parts = [message] + (mail.body if mail is not None else [])
    return next(filter(None, (p.get_content_charset() for p in parts)), None)


def _header(message: EmailMessage, name: str, charset: str | None = None) -> str:
    raw = next((v for k, v in message.raw_items() if k.lower() == name.lower()), None)
    if raw is not None and not raw.isascii():
        # 8-bit bytes in a header (the parser kept them as surrogates), which the
        # policy makes U+FFFD: decoded as the body's charset, or a detected one.
        value: object = _decoded_header(message, name, raw, charset)
    else:
        try:
            value = message.get(name)
        except (ValueError, IndexError, TypeError):  # a header the policy cannot parse
            got = message.get_all(name, failobj=[""])
            value = str(got[0]) if got else ""
    return " ".join(str(value or "").split())


def _decoded_header(
    message: EmailMessage, name: str, raw: str, charset: str | None
) -> object:
    data = raw.encode("ascii", "surrogateescape")
    if charset is None:
        # Every 8-bit header together: more letters for the detector to go by.
        data_all = b" ".join(
            v.encode("ascii", "surrogateescape")
            for _, v in message.raw_items()
            if not v.isascii()
        )
        charset = detect_encoding(data_all)[0]
    text = _LINE_BREAKS.sub("", decode(data, charset))
    try:  # encoded words and addresses, as for any header
        return policy.default.header_factory(name, text)
    except (ValueError, IndexError, TypeError):
        return text


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
            inner = part.get_payload(0)
            subject = _header(inner, "Subject", _body_charset(inner))
            name = f"{subject}.eml" if subject else None
    except (ValueError, IndexError, TypeError, AttributeError):
        name = None
    return name or f"(unnamed {part.get_content_type()})"
