"""Byte tests that recognise a format from the start of a file (no Django)."""

from __future__ import annotations

import codecs
import re

PREFIX_BYTES = 64 * 1024  # enough to judge text; keeps detection O(1) in file size
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
# Legacy Office files, and password-protected OOXML files, are OLE2 containers.
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_PDF_HEADER_WINDOW = 1024  # PDF readers accept junk before %PDF- up to here
_BOMS = (
    codecs.BOM_UTF32_LE,  # before UTF-16 LE: it starts with the same two bytes
    codecs.BOM_UTF32_BE,
    codecs.BOM_UTF8,
    codecs.BOM_UTF16_LE,
    codecs.BOM_UTF16_BE,
)
# Object syntax without a %PDF- header: a PDF whose start was lost, not prose.
_PDF_OBJECT = re.compile(rb"\d+\s+\d+\s+obj\s*<<")
_PDF_STRUCTURE = re.compile(rb"\b(endobj|startxref|trailer|xref)\b")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")
_MAX_CONTROL_SHARE = 0.05  # coloured logs carry some ESC codes; binary has ~12%
# UTF-16 without a BOM: Latin text has a zero high byte in nearly every character,
# and almost never a zero low byte (U+0000, U+0100...).
_UTF16_SAMPLE = 4096
_UTF16_MIN_ZERO_HIGH = 0.7
_UTF16_MAX_ZERO_LOW = 0.01
# NULs that pad text, not binary data's scattered zeros: a log cut by logrotate's
# copytruncate opens with a run of them, one a crash left a hole in holds or ends
# with one, an export padded to a block ends with some.
_NULS = re.compile(rb"\x00+")
_MIN_INNER_NULS = 16  # a hole in a file, not a string's terminator
_MAX_INNER_NUL_RUNS = 4
_IMAGES = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"II*\x00", b"MM\x00*")
_BINARY_MAGIC = (*_IMAGES, OLE_MAGIC, *ZIP_MAGIC, b"\x1f\x8b", b"7z\xbc")
# The start of an HTML document, after optional whitespace (WHATWG sniffing's tags).
_HTML_START = re.compile(
    rb"\s*(?:<!doctype\s+html|<html|<head|<body|<title|<meta|<table|<div|<p)[\s>]"
)
# What only a whole HTML document opens with; a fragment (<p align="center">, <div>)
# also opens many a Markdown README.
_HTML_DOCUMENT_START = re.compile(rb"\s*(?:<!doctype\s+html|<html|<head|<body)[\s>]")
_XML_DECLARATION = re.compile(rb"\s*<\?xml[^>]*>\s*(?:<!--.*?-->\s*)*", re.DOTALL)
# A message's header block: "Name: value" lines (and folded continuations).
_HEADER_LINE = re.compile(rb"[!-9;-~]+:")
_MAIL_HEADERS = {
    b"from", b"to", b"cc", b"subject", b"date", b"message-id", b"mime-version",
    b"received", b"return-path", b"delivered-to", b"reply-to", b"sender",
}  # fmt: skip
# Headers a mail system writes; a memo's "From:" and "To:" lines are not enough.
_MACHINE_HEADERS = {
    b"message-id", b"mime-version", b"received", b"return-path", b"delivered-to",
    b"date",
}  # fmt: skip
_MBOX_FROM = re.compile(
    rb"From \S+ +\w{3} \w{3} [ \d]\d \d\d:\d\d"
)  # "From - Thu Nov  7 09:00"
_ADDRESS = re.compile(rb"[^\s@<>]+@[^\s@<>]+\.\w+")


def looks_like_pdf(prefix: bytes) -> bool:
    """True for a %PDF- header near the start, or PDF object syntax without one."""
    if b"%PDF-" in prefix[:_PDF_HEADER_WINDOW]:
        return True
    return bool(_PDF_OBJECT.search(prefix) and _PDF_STRUCTURE.search(prefix))


def looks_like_text(prefix: bytes) -> bool:
    """True when a byte prefix decodes as text with almost no control characters."""
    for bom in _BOMS:
        if prefix.startswith(bom):
            return True
    if prefix.startswith(_BINARY_MAGIC):
        return False
    if utf16_without_bom(prefix):
        return True
    text = _without_nul_padding(prefix)
    if not text or text.startswith(_BINARY_MAGIC):
        return False
    decoded = _decode_utf8_prefix(text)
    # Escapes in seven bits may switch character sets (ISO-2022-JP mail).
    if decoded is None or "\x1b" in decoded:
        decoded = _guess_decode(text)
    return len(_CONTROL.findall(decoded)) <= _MAX_CONTROL_SHARE * max(len(decoded), 1)


def _without_nul_padding(prefix: bytes) -> bytes | None:
    """The bytes without the runs of NULs that pad text: any at either end, and a
    few long ones inside. None when NULs are strewn through them, as in binary data
    (or one in a sentence)."""
    text = prefix.strip(b"\x00")
    runs = _NULS.findall(text)
    if not runs:
        return text
    if len(runs) > _MAX_INNER_NUL_RUNS or min(map(len, runs)) < _MIN_INNER_NULS:
        return None
    return _NULS.sub(b"", text)


def utf16_without_bom(prefix: bytes) -> str | None:
    """ "utf-16-le" or "utf-16-be" for text in UTF-16 without a byte-order mark
    (told by where its zero bytes fall), else None."""
    sample = prefix[:_UTF16_SAMPLE]
    sample = sample[: len(sample) - len(sample) % 2]
    pairs = len(sample) // 2
    if pairs < 2:
        return None
    first, second = sample[0::2], sample[1::2]
    for encoding, high, low in (
        ("utf-16-le", second, first),
        ("utf-16-be", first, second),
    ):
        if (
            high.count(0) >= _UTF16_MIN_ZERO_HIGH * pairs
            and low.count(0) <= _UTF16_MAX_ZERO_LOW * pairs
        ):
            try:  # not final: the sample may end inside a surrogate pair
                text = codecs.getincrementaldecoder(encoding)().decode(sample)
            except UnicodeDecodeError:
                return None
            controls = len(_CONTROL.findall(text))
            return encoding if controls <= _MAX_CONTROL_SHARE * len(text) else None
    return None


def looks_like_html(prefix: bytes) -> bool:
    """True when the text opens with an HTML tag (or XHTML after an XML declaration)."""
    return bool(_HTML_START.match(_html_head(prefix)))


def surely_html(prefix: bytes) -> bool:
    """True when the text opens as a whole HTML document (doctype, <html>, <head> or
    <body>), not merely with a tag."""
    return bool(_HTML_DOCUMENT_START.match(_html_head(prefix)))


def looks_like_email(prefix: bytes) -> bool:
    """True when the text opens with an RFC 5322 header block that has a From."""
    headers = _mail_headers(prefix)
    return (
        headers is not None
        and b"from" in headers
        and len(headers.keys() & _MAIL_HEADERS) >= 2
    )


def surely_email(prefix: bytes) -> bool:
    """True for a header block a mail system wrote: a From with an address, or a
    header such as Date or Message-ID, where a memo has only "From:" and "To:"."""
    headers = _mail_headers(prefix)
    return (
        looks_like_email(prefix)
        and headers is not None
        and bool(_ADDRESS.search(headers[b"from"]) or headers.keys() & _MACHINE_HEADERS)
    )


def _html_head(prefix: bytes) -> bytes:
    head = prefix[:4096]
    for bom in _BOMS:
        if head.startswith(bom) and bom != codecs.BOM_UTF8:
            # A page saved as "Unicode" (UTF-16): its tags, in bytes that match.
            codec = "utf-32" if len(bom) == 4 else "utf-16"
            head = head.decode(codec, "ignore").encode()
            break
    head = head[:2048].removeprefix(codecs.BOM_UTF8).lower()
    declaration = _XML_DECLARATION.match(head)
    return head[declaration.end() :] if declaration else head


def _mail_headers(prefix: bytes) -> dict[bytes, bytes] | None:
    """The header block's names (lower case) and first values, or None if the text
    does not open with one."""
    headers: dict[bytes, bytes] = {}
    lines = prefix[:16384].splitlines()
    if lines and _MBOX_FROM.match(lines[0]):
        del lines[0]  # an mbox separator, as Thunderbird keeps in saved messages
    for line in lines:
        if not line.strip():
            break  # the blank line that ends the headers
        if line[:1] in (b" ", b"\t"):
            if not headers:
                return None
            continue  # a folded header
        if not _HEADER_LINE.match(line):
            return None
        name, _, value = line.partition(b":")
        headers.setdefault(name.lower(), value)
    return headers


def _decode_utf8_prefix(prefix: bytes) -> str | None:
    # Incremental decoding tolerates a multi-byte character cut at the prefix end.
    try:
        return codecs.getincrementaldecoder("utf-8")().decode(prefix, final=False)
    except UnicodeDecodeError:
        return None


def _guess_decode(prefix: bytes) -> str:
    from .text import detect_encoding  # text imports this module

    encoding, _ = detect_encoding(prefix)
    # Not final: the prefix may end inside a character.
    return codecs.getincrementaldecoder(encoding)("replace").decode(prefix, False)
