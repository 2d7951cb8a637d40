"""E-mail (.eml, Apple Mail's .emlx) extraction with the standard library: headers,
body, attachments."""

from __future__ import annotations

import base64
import binascii
import io
import os
import re
from collections.abc import Iterator
from contextvars import ContextVar
from email import errors
from email.feedparser import BytesFeedParser
from email.message import EmailMessage
from email.policy import EmailPolicy, Policy
from typing import Any

from .attachments import Attached, Attachments, names_line, separated
from .base import (
    CorruptFileError,
    ExtractionResult,
    ExtractOptions,
    RefusedFileError,
    TextBuilder,
    join_notes,
)
from .detect import detect_format
from .formats import EMAIL, by_extension, emlx_message
from .html import html_lines
from .text import bom_codec, codec_for_label, decode, detect_encoding
from .winmail import SIGNATURE, Winmail, is_winmail

_HEADERS = ("From", "To", "Cc", "Subject", "Date")
_BODY_TYPES = ("plain", "html")
# A bounce's report (RFC 3464, RFC 6533): read in the body, as mail programs show it.
_DELIVERY_STATUS = ("message/delivery-status", "message/global-delivery-status")
_STATUS_CHARSET = (
    "utf-8"  # a global one's (an address's 8-bit letters); others are ASCII
)
# A line opening a part: "--", a boundary (RFC 2046's characters, 1 to 70, not
# ending in a space), then the part's first header.
_BOUNDARY_LINE = re.compile(
    rb"^--([0-9A-Za-z'()+_,./:=?-](?:[0-9A-Za-z'()+_,./:=? -]{0,68}"
    rb"[0-9A-Za-z'()+_,./:=?-])?)[ \t]*\r?\n[!-9;-~]+:",
    re.MULTILINE,
)
_LINE_BREAKS = re.compile(r"[\r\n]")
# An encoded word's charset (RFC 2047: "=?iso-8859-1?Q?...?=", RFC 2231 may add
# "*en" for its language).
_ENCODED_WORD_CHARSET = re.compile(r"=\?([^?*\s]+)(?=[*?])")
# Python's email package (3.11 to 3.13) quotes the whole address after a name it
# encodes: =?utf-8?q?J=C3=BCrgen?= <"j@example.de">, a local part without its
# domain: read as the address it stands for.
_QUOTED_ADDRESS = re.compile(r'<"([^"\s<>@]+@[^"\s<>@]+)">')
_ADDRESS_HEADERS = ("from", "to", "cc")
# Forwarded messages (message/rfc822) are read inside each other this deep; deeper
# ones are named only.
_MAX_FORWARD_DEPTH = 3
# An invitation's (text/calendar, RFC 5545) properties people read, outside its
# alarms ("Reminder") and time zones; its escapes ("\n", "\,").
_CALENDAR_TEXT = ("SUMMARY", "LOCATION", "DESCRIPTION")
_CALENDAR_SKIPPED = ("VALARM", "VTIMEZONE")
_CALENDAR_ESCAPE = re.compile(r"\\([nN,;\\])")
_CALENDAR_TYPES = ("text/calendar", "application/ics")
# A file uuencoded into a body: "begin", its Unix mode, its name.
_UU_BEGIN = re.compile(r"begin [0-7]{3,4} (\S.*)$")
# Of a plain text and an HTML alternative, the plain one is read when it holds at
# least this share of the HTML's words: an empty one, or a stub ("view this e-mail
# in a browser"), does not, and the HTML (what mail programs show) is read.
_PLAIN_HOLDS_HTML = 0.5
_WORD = re.compile(r"\w+")
# A body only its recipient's key opens (S/MIME, OpenPGP), or signed inside a
# PKCS #7 blob: its headers are all there is to read.
_SEALED_TYPES = (
    "application/pkcs7-mime",
    "application/x-pkcs7-mime",
    "multipart/encrypted",
)
_SEALED_NOTE = (
    "Its body is encrypted or wrapped in a signature (S/MIME or OpenPGP), which "
    "cannot be read here: only its headers were read."
)
# The parser takes half a millisecond a part, and each header it is asked for
# costs that again: real messages have tens of parts and headers of a few KB. Past
# these, the first parts are read, the rest left out and noted, and a header is cut.
_MAX_PARTS = 500
# The parser's parts in all while one e-mail is read, its forwarded messages' too
# (each parsed from its own bytes): past them it stops (_PartBudget).
_MAX_PARSED = 4 * _MAX_PARTS
_FEED_BYTES = 8 * 1024  # the parser is fed this much at a time
_MAX_PART_HEADERS = 256 * 1024  # the parts' headers together, in characters
_MAX_HEADER_CHARS = 100_000
_PARTS_NOTE = (
    "It has more than {:,} parts (attachments and body parts) or more than {:,} KB "
    "of their headers: only the first ones were read, the rest were left out."
)
_TOO_DEEP = (
    "This e-mail nests its parts or forwarded messages hundreds of levels deep, "
    "which no mail program writes: it cannot be read. Forward its contents again "
    "or save its attachments and upload them."
)
_BROKEN_NOTE = (
    "Its MIME structure is broken (a multipart message without its boundary, or "
    "with a wrong one): {what}."
)


class _MailPolicy(EmailPolicy):
    """The standard library's default policy, except that encoded words in headers
    and file names are read in the charsets mail programs read them in:
    "ISO-8859-1" as Windows-1252 (its curly quotes), "GB2312" as GB18030 (its
    rarer characters), where the standard library drops or garbles them."""

    def header_fetch_parse(self, name: str, value: Any) -> Any:
        if isinstance(value, str):
            value = value[:_MAX_HEADER_CHARS]
        if isinstance(value, str) and "=?" in value:
            value = _ENCODED_WORD_CHARSET.sub(
                lambda m: f"=?{codec_for_label(m.group(1)) or m.group(1)}", value
            )
        return super().header_fetch_parse(name, value)


_POLICY = _MailPolicy()


class _Attachments(Attachments):
    """The attachments of a message, and of those it forwards, read as documents
    (see attachments.py); and its invitations, each read once."""

    def __init__(self, options: ExtractOptions) -> None:
        super().__init__(options)
        self.invitations: set[tuple[str, ...]] = set()  # those read, to read once
        # The last part of an e-mail without its closing boundary: cut short, if
        # it cannot be read (some programs leave the boundary out).
        self.ending: EmailMessage | None = None

    def invitation(self, part: EmailMessage) -> Iterator[str]:
        """An invitation's text, unless the same was read already (Google sends it
        both as an alternative to the body and as invite.ics)."""
        lines = tuple(_calendar_lines(part_text(part)))
        if lines not in self.invitations:
            self.invitations.add(lines)
            yield from lines

    def part_lines(self, part: EmailMessage) -> Iterator[str]:
        """An attached document's heading and text (see Attachments.lines)."""
        data, cut = _payload(part)
        attached = Attached(
            name=_attachment_name(part),
            data=data,
            sent_as_text=part.get_content_maintype() == "text",
            charset=part.get_content_charset(),
            cut=cut,
            ending=part is self.ending,
        )
        return self.lines(attached)


class _Mail:
    """A message taken apart as a mail program shows it: the text parts of its
    body in order, and its attachments."""

    def __init__(self, message: EmailMessage) -> None:
        self.body: list[EmailMessage] = []
        self.attachments: list[EmailMessage] = []
        self.invitations: list[EmailMessage] = []  # sent as alternatives to the body
        self.broken: list[str] = []  # what was done with broken multiparts
        self._walk(message)

    def _walk(self, part: EmailMessage) -> None:
        if part.is_attachment():
            self.attachments.append(part)
            return
        maintype, subtype = part.get_content_maintype(), part.get_content_subtype()
        status = part.get_content_type() in _DELIVERY_STATUS  # read as text
        if (maintype == "text" and subtype in _BODY_TYPES) or status:
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
        """One alternative: the first with plain text, unless it lacks most of the
        HTML one's words; else the first with any text. And the invitations of the
        others (Outlook and Google send one as an alternative to its text)."""
        found = [_Mail(sub) for sub in parts]
        shown = [(f, "\n".join(_body_lines(f.body))) for f in found if f.body]
        shown = [(f, text) for f, text in shown if text.strip()] or shown[:1]
        plain = next(((f, t) for f, t in shown if _has_plain(f.body)), None)
        html = next(((f, t) for f, t in shown if not _has_plain(f.body)), None)
        chosen = (plain or html or (None, ""))[0]
        if plain and html and not _holds(plain[1], html[1]):
            chosen = html[0]
        for other in found:
            if other is chosen:
                self.body += other.body
                self.attachments += other.attachments
                self.broken += other.broken
            else:
                self.invitations += [p for p in other.attachments if _is_calendar(p)]
            self.invitations += other.invitations

    def _parts(self, part: EmailMessage) -> list[EmailMessage] | None:
        """A multipart's parts. Without its boundary, or with one that never occurs,
        the parser keeps the body as one string: the parts are found by the boundary
        their lines use, else None (the body is read as text)."""
        payload = part.get_payload()
        if isinstance(payload, list):
            return payload
        raw = str(payload).encode("ascii", "surrogateescape")
        for found in _BOUNDARY_LINE.finditer(raw):
            if _parsing_stopped():  # each try would copy the body, and find nothing
                break
            boundary = found.group(1)
            wrapper = _parse(
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
    HTML one converted where the plain text is missing, empty or a stub), of
    invitations, of attachments that are documents, and the attachments' names."""
    with open(path, "rb") as fh:
        return _message_text(fh.read(), options)


def extract_emlx(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """An Apple Mail .emlx file read as the e-mail it holds: its length line and
    Mail's property list after the message left out."""
    with open(path, "rb") as fh:
        data = fh.read()
    message = emlx_message(data)
    # Without its length line (an .eml renamed), the file is the message.
    return _message_text(data if message is None else message, options)


class _PartBudget:
    """The parser's message factory, counting the parts it makes while one e-mail
    is read. A boundary line alone opens a part ("--b" and a line: 6 bytes), and
    a forwarded message is parsed from its own bytes (base64, an attached .eml):
    1.4 MB of either took the parser 20 s (an upload of 50 MB, many minutes),
    whatever boundary lines with headers the e-mail itself shows."""

    def __init__(self) -> None:
        self.left = _MAX_PARSED

    def __call__(self, policy: Policy) -> EmailMessage:
        self.left -= 1
        return EmailMessage(policy=policy)


_BUDGET: ContextVar[_PartBudget] = ContextVar("mail_part_budget")


def _parsing_stopped() -> bool:
    """Whether the e-mail being read has spent its parts: nothing more is parsed."""
    budget = _BUDGET.get(None)
    return budget is not None and budget.left < 0


def _message_text(data: bytes, options: ExtractOptions) -> ExtractionResult:
    """The text of a message, from its bytes: see extract_email."""
    budget = _BUDGET.set(_PartBudget())
    try:
        return _read_message(data, options)
    except RecursionError:  # the parser's, or the walk's: nested far past reason
        raise RefusedFileError(_TOO_DEEP) from None
    finally:
        _BUDGET.reset(budget)


def _read_message(data: bytes, options: ExtractOptions) -> ExtractionResult:
    message = _parse(data)
    pruned = _pruned(message)
    mail = _Mail(message)
    attachments = _Attachments(options)
    attachments.ending = None if pruned else _ending(message)
    text = TextBuilder(options.max_chars)
    text.extend(_lines(message, mail, attachments))
    pruned = pruned or _parsing_stopped()  # parts left out
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
        note=join_notes(
            _SEALED_NOTE if message.get_content_type() in _SEALED_TYPES else "",
            _PARTS_NOTE.format(_MAX_PARTS, _MAX_PART_HEADERS // 1024) if pruned else "",
            broken,
            attachments.note,
            text.note,
        ),
    )


def _pruned(message: EmailMessage) -> bool:
    """Leaves out the parts past _MAX_PARTS, or past _MAX_PART_HEADERS of headers
    (in reading order, those inside forwarded messages too); whether any were."""
    order: list[tuple[EmailMessage | None, EmailMessage]] = []
    stack: list[tuple[EmailMessage | None, EmailMessage]] = [(None, message)]
    while stack:  # not recursive: as deep as the parser went
        parent, part = stack.pop()
        order.append((parent, part))
        payload = part.get_payload()
        if isinstance(payload, list):
            stack.extend((part, sub) for sub in reversed(payload))
    headers = 0
    for at, (_, part) in enumerate(order[1:], 1):
        headers += sum(len(name) + len(str(value)) for name, value in part.raw_items())
        if at > _MAX_PARTS or headers > _MAX_PART_HEADERS:
            break
    else:
        return False
    left_out = {id(part) for _, part in order[at:]}
    for parent, part in order[at:]:
        if parent is not None and id(parent) not in left_out:
            # Its first part left out: the rest of its parts come after it.
            payload = parent.get_payload()
            del payload[next(n for n, p in enumerate(payload) if p is part) :]
            left_out.add(id(parent))  # cut once
    return True


def _lines(
    message: EmailMessage, mail: _Mail, attachments: _Attachments, depth: int = 0
) -> Iterator[str]:
    """The headers, the body's text (or its winmail.dat's), forwarded messages,
    invitations and attached documents (their text, those in a winmail.dat too),
    and the attachments' names."""
    charset = _body_charset(message, mail)
    for name in _HEADERS:
        value = _header(message, name, charset)
        if value:
            yield f"{name}: {value}"
    yield ""
    winmails = _winmails(mail, attachments)
    body = list(_body_lines(mail.body))
    if not any(line.strip() for line in body):
        # Written in rich text: Exchange may send its body only in winmail.dat.
        body = _winmail_body(winmails, attachments) or body
    body, inline = _uuencoded(body)
    yield from body
    blocks: list[Iterator[str]] = [attachments.lines(file) for file in inline]
    for attachment in [*mail.invitations, *mail.attachments]:
        if id(attachment) not in winmails:
            blocks.append(_attached_lines(attachment, attachments, depth))
        elif found := winmails[id(attachment)]:  # a damaged one is named only
            blocks += [attachments.lines(file) for file in found.files]
    names = [file.name for file in inline]
    for part in mail.attachments:
        found = winmails.get(id(part))
        names += [f.name for f in found.files] if found else [_attachment_name(part)]
    if names:
        blocks.append(names_line(names))
    yield from separated(blocks, after=bool(mail.body) or bool(body))


def _uuencoded(lines: list[str]) -> tuple[list[str], list[Attached]]:
    """The body's lines without the files uuencoded in it (as Unix mail and older
    mail programs attach them: "begin 644 name", lines of data, "end"), and those
    files; a block that does not decode whole stays as text."""
    if not any(line.startswith("begin ") for line in lines):
        return lines, []
    kept: list[str] = []
    files: list[Attached] = []
    at = 0
    while at < len(lines):
        begin = _UU_BEGIN.match(lines[at])
        found = _uu_file(lines, at + 1) if begin else None
        if found is None:
            kept.append(lines[at])
            at += 1
            continue
        data, at = found
        files.append(Attached(begin.group(1).strip(), data))
        if kept and not kept[-1].strip() and at < len(lines) and not lines[at].strip():
            at += 1  # one blank line where the file was, not two
    return kept, files


def _uu_file(lines: list[str], start: int) -> tuple[bytes, int] | None:
    """The bytes of the uuencoded lines from ``start`` to their "end" line, and the
    index after it; None when they are not uuencoded data."""
    data = bytearray()
    for at in range(start, len(lines)):
        line = lines[at].rstrip()
        if line == "end":
            return (bytes(data), at + 1) if data else None
        if line in ("", "`"):  # a line of no bytes
            continue
        # Its first character counts its bytes; some encoders pad past them.
        size = ((ord(line[0]) - 32) & 63) * 4 + 5
        try:
            data += binascii.a2b_uu(line[: size // 3])
        except ValueError:  # binascii.Error, or a letter past ASCII (prose)
            return None
    return None


def _winmails(mail: _Mail, attachments: _Attachments) -> dict[int, Winmail | None]:
    """The message's winmail.dat files taken apart, by their part's id; None for a
    damaged one, which is noted."""
    found: dict[int, Winmail | None] = {}
    for part in mail.attachments:
        name = _attachment_name(part)
        if not (is_winmail(part.get_content_type(), name) or _starts_as_winmail(part)):
            continue
        data = _payload(part)[0]
        if not data:
            continue
        if attachments.too_large(name, len(data)):  # not taken apart: named only
            found[id(part)] = None
            continue
        try:
            found[id(part)] = Winmail(name, data)
        except CorruptFileError as exc:
            found[id(part)] = None
            attachments.unread.append(f"{name} ({exc})")
    return found


def _starts_as_winmail(part: EmailMessage) -> bool:
    """An attachment whose first bytes are TNEF's, under another name and type
    (a gateway's "ATT00001.dat", application/octet-stream): only its first few
    bytes decoded."""
    payload = part.get_payload()
    if not isinstance(payload, str):
        return False
    encoding = part.get("content-transfer-encoding", "").strip().lower()
    if encoding == "base64":
        start = re.sub(r"[^A-Za-z0-9+/]", "", payload[:64])[:8]
        head = base64.b64decode(start) if len(start) == 8 else b""
    else:
        head = payload[:4].encode("utf-8", "surrogateescape")
    return head.startswith(SIGNATURE)


def _winmail_body(
    winmails: dict[int, Winmail | None], attachments: _Attachments
) -> list[str]:
    """The body of the first winmail.dat that has one."""
    for found in filter(None, winmails.values()):
        try:
            lines = found.body_lines()
        except CorruptFileError as exc:
            attachments.unread.append(f"{found.name} ({exc})")
            continue
        if any(line.strip() for line in lines):
            return lines
    return []


def _body_lines(body: list[EmailMessage]) -> Iterator[str]:
    """The text of the body's parts, a blank line between them."""
    for n, part in enumerate(body):
        if n:
            yield ""
        if part.get_content_type() in _DELIVERY_STATUS:
            yield from _delivery_status_lines(part)
            continue
        content = part_text(part)
        if part.get_content_subtype() == "html" or _looks_like_html(part, content):
            # A mail program shows no page title ("Untitled Document").
            yield from html_lines(content, with_title=False)[0]
        elif part.get_param("format", "").lower() == "flowed":
            delsp = part.get_param("delsp", "").lower() == "yes"
            yield from _unflowed(content.splitlines(), delsp=delsp)
        else:
            yield from content.splitlines()


def _delivery_status_lines(part: EmailMessage) -> Iterator[str]:
    """A bounce's delivery status as its fields read (the failed recipient, its
    Action and Status): a block for the message, then one for each recipient, a
    blank line between them. The parser keeps each block as a part of headers (a
    global one, its first block only: the rest is that part's body)."""
    blocks = part.get_payload()
    if not isinstance(blocks, list):
        yield from part_text(part).splitlines()
        return
    for n, block in enumerate(blocks):
        if n:
            yield ""
        for name in dict.fromkeys(name for name, _ in block.raw_items()):
            yield f"{name}: {_header(block, name, _STATUS_CHARSET)}"
        rest = block.get_payload(decode=True)
        if isinstance(rest, bytes) and rest.strip():
            yield ""
            yield from decode(rest.strip(b"\r\n"), _STATUS_CHARSET).splitlines()


def _attached_lines(
    part: EmailMessage, attachments: _Attachments, depth: int
) -> Iterator[str]:
    """A forwarded message read as a message is, an invitation's text, or a
    document's under its name; nothing for other attachments."""
    if part.get_content_type() == "message/rfc822" or _is_attached_email(part):
        inner = _forwarded(part)
        if inner is not None and depth < _MAX_FORWARD_DEPTH:
            yield from _lines(inner, _Mail(inner), attachments, depth + 1)
    elif _is_calendar(part):
        yield from attachments.invitation(part)
    else:
        yield from attachments.part_lines(part)


def _parse(data: bytes) -> EmailMessage:
    """A message from its bytes. One saved by Notepad or PowerShell, after a
    byte-order mark or all in UTF-16, is decoded first: its headers would be read
    as body text."""
    codec = bom_codec(data)
    if codec:
        data = data.decode(codec, "replace").encode()
    budget = _BUDGET.get(None) or _PartBudget()
    parser = BytesFeedParser(_factory=budget, policy=_POLICY)
    # Fed as the standard library's parser feeds itself, stopped once the e-mail's
    # parts are spent: what was read is kept, its last part maybe cut short.
    for start in range(0, len(data), _FEED_BYTES):
        if budget.left < 0:
            break
        parser.feed(data[start : start + _FEED_BYTES])
    return parser.close()


def _is_attached_email(part: EmailMessage) -> bool:
    """An .eml file attached as a file (application/octet-stream, as a mail
    program sends a dragged-in file it has no type for), not as message/rfc822."""
    if by_extension(_attachment_name(part)) is not EMAIL:
        return False
    return detect_format(io.BytesIO(_payload(part)[0])) is EMAIL


def _forwarded(part: EmailMessage) -> EmailMessage | None:
    """The message a message/rfc822 part or an attached .eml file holds; None when
    it was not parsed as one (it is named only). One sent in base64, which RFC
    2046 forbids and Exchange does, is parsed from its decoded bytes: else it is a
    message of no headers and a body of base64. Parsed once: its name (its
    subject) and its text both ask for it, and each parse spends the part budget."""
    if not hasattr(part, "_forwarded_message"):
        part._forwarded_message = _parsed_forwarded(part)
    return part._forwarded_message


def _parsed_forwarded(part: EmailMessage) -> EmailMessage | None:
    if part.get_content_type() != "message/rfc822":
        return _parse(_payload(part)[0])
    try:
        inner = part.get_payload(0)
    except (TypeError, IndexError):
        return None
    if not isinstance(inner, EmailMessage):
        return None
    if part.get("content-transfer-encoding", "").strip().lower() == "base64" and (
        not inner.keys()
    ):
        encoded = EmailMessage()
        encoded["Content-Transfer-Encoding"] = "base64"
        encoded.set_payload(inner.get_payload())
        inner = _parse(_payload(encoded)[0])
    return inner


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


def _holds(plain: str, html: str) -> bool:
    """Whether a plain text alternative holds most of the HTML one's words."""
    wanted = set(_WORD.findall(html.casefold()))
    found = wanted & set(_WORD.findall(plain.casefold()))
    return len(found) >= _PLAIN_HOLDS_HTML * len(wanted)


def _is_calendar(part: EmailMessage) -> bool:
    """An invitation: iCalendar, by its type or its name (invite.ics)."""
    return part.get_content_type() in _CALENDAR_TYPES or _attachment_name(
        part
    ).lower().endswith(".ics")


def _ending(message: EmailMessage) -> EmailMessage | None:
    """The part a cut e-mail ends in: the last one, when a multipart misses its
    closing boundary (the parser then reads to the end of the file)."""
    parts = list(message.walk())
    if any(
        isinstance(d, errors.CloseBoundaryNotFoundDefect)
        for p in parts
        for d in p.defects
    ):
        return parts[-1]
    return None


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
    shown = " ".join(str(value or "").split())
    if name.lower() in _ADDRESS_HEADERS:
        shown = _QUOTED_ADDRESS.sub(r"<\1>", shown)
    return shown


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
        return _POLICY.header_fetch_parse(name, text)
    except (ValueError, IndexError, TypeError):
        return text


def part_text(part: EmailMessage) -> str:
    """The part's text. Its charset is often missing (us-ascii by the RFC, yet
    8-bit), unknown to Python, or ISO-8859-1 on Windows text: decoded as a mail
    program would, where the standard library put U+FFFD or C1 controls. NULs
    carry no text, as in a text file."""
    return decode(_payload(part)[0], part.get_content_charset()).replace("\x00", "")


def _payload(part: EmailMessage) -> tuple[bytes, bool]:
    """The part's content, and whether it is cut short: base64 cut in a group of
    four, which the standard library gives back undecoded, is decoded as far as it
    goes."""
    data = part.get_payload(decode=True)
    if not isinstance(data, bytes):
        return b"", False
    if any(isinstance(d, errors.InvalidBase64LengthDefect) for d in part.defects):
        usable = re.sub(rb"[^A-Za-z0-9+/]", b"", data)
        return base64.b64decode(usable[: len(usable) // 4 * 4]), True
    return data, False


def _attachment_name(part: EmailMessage) -> str:
    try:
        name = part.get_filename()
        if not name and part.get_content_type() == "message/rfc822":
            # A forwarded message has no file name: mail programs show its subject.
            inner = _forwarded(part)
            subject = _header(inner, "Subject", _body_charset(inner)) if inner else ""
            name = f"{subject}.eml" if subject else None
    except (ValueError, IndexError, TypeError, AttributeError):
        name = None
    return name or f"(unnamed {part.get_content_type()})"
