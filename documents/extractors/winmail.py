"""Outlook's winmail.dat (TNEF, application/ms-tnef), which Outlook and Exchange send
in place of a message's attachments, and of its body, when it is written in rich
text: read with tnefparse (its RTF body decompressed with compressed-rtf). One saved
from a message and uploaded on its own is read as one attached to an e-mail is."""

from __future__ import annotations

import contextlib
import logging
import os
import struct
from collections.abc import Iterator

from tnefparse.mapi import IMESSAGE_SIG
from tnefparse.tnef import TNEF, TNEFAttachment

from .attachments import UNNAMED, Attached, Attachments, names_line, separated
from .base import (
    CorruptFileError,
    ExtractionResult,
    ExtractOptions,
    TextBuilder,
    join_notes,
)
from .formats import WINMAIL
from .html import html_lines
from .rtf import read_text
from .text import decode

_TYPES = (WINMAIL.mime_type, *WINMAIL.other_mime_types)
(SIGNATURE,) = WINMAIL.signatures  # every TNEF stream starts with it
_DAMAGED = "its Outlook contents (TNEF) cannot be read"
_BODY_DAMAGED = "Its message body is damaged and was not read; its files were."
# tnefparse logs the damage it steps over as errors; what matters reaches the note.
logging.getLogger("tnefparse").setLevel(logging.CRITICAL)
# tnefparse copies the rest of the file for each attribute, and loops on counts read
# from the file: real ones hold tens of attributes and hundreds of values.
_MAX_ATTRIBUTES = 2_000
_MAX_VALUES = 100_000
_MAPI_PROPS, _RECIPIENTS, _ATTACHMENT = 0x9003, 0x9004, 0x9005  # attributes' names
# An attachment's data property, which tnefparse parses as a message of its own,
# unchecked, when it starts as a forwarded one does: renamed before tnefparse sees
# it (to a tag no property has), read here. The forwarded message is then read as
# an attached winmail.dat is, checked as this one.
_DATA_OBJECT, _DATA_RENAMED = 0x3701, 0x0000
# MAPI property types: bytes per value, and those of values of their own length.
_SIZES = {0x2: 2, 0xB: 2, 0x3: 4, 0x4: 4, 0xA: 4, 0x5: 8, 0x6: 8, 0x7: 8}
_SIZES |= {0x14: 8, 0x40: 8, 0x48: 16}
_SHORT, _VARIABLE = (0x2, 0xB), (0x0, 0xD, 0x1E, 0x1F, 0x102)


def is_winmail(content_type: str, name: str) -> bool:
    """An attachment that is TNEF by its type, or by the name Outlook gives it
    (sent as application/octet-stream by some servers)."""
    return content_type in _TYPES or name.lower() == "winmail.dat"


class Winmail:
    """The files a winmail.dat holds, and its body."""

    def __init__(self, name: str, data: bytes) -> None:
        """Raises CorruptFileError when it cannot be taken apart."""
        self.name = name
        data = _checked(data)
        try:
            self._tnef = TNEF(_Attributes(data), do_checksum=False)
            self.files = [
                Attached(self._name(attachment), _data(attachment))
                for attachment in self._tnef.attachments
            ]
        except Exception as exc:  # tnefparse fails on damage with what it met
            raise CorruptFileError(_DAMAGED) from exc

    def body_lines(self) -> list[str]:
        """The body's text: its plain text, else its HTML, else its RTF (what
        Outlook keeps of a rich-text message); none when it has none."""
        tnef = self._tnef
        try:
            if tnef.body:
                return _text(tnef.body, tnef.codepage).splitlines()
            if tnef.htmlbody:
                return html_lines(_text(tnef.htmlbody, None), with_title=False)[0]
            rtf = tnef.rtfbody  # still compressed if compressed-rtf is missing
            if rtf and rtf.lstrip().startswith(b"{\\rtf"):
                return read_text(rtf).splitlines()
        except Exception as exc:
            raise CorruptFileError(_DAMAGED) from exc
        return []

    def _name(self, attachment: TNEFAttachment) -> str:
        try:
            name = attachment.long_filename()
        except UnicodeDecodeError:
            # No long name, and the short one in the sender's code page, which
            # tnefparse reads as UTF-8.
            name = decode(attachment._name, self._tnef.codepage).strip("\x00")
        return name or UNNAMED


def _data(attachment: TNEFAttachment) -> bytes:
    """An attachment's bytes: its data property's, as tnefparse keeps them (without
    the marker of a forwarded message), else its data attribute's."""
    renamed = [p.data for p in attachment.mapi_attrs if p.name == _DATA_RENAMED]
    if renamed and isinstance(renamed[-1], bytes):
        return renamed[-1].removeprefix(IMESSAGE_SIG)
    return attachment.data


class _Attributes(bytes):
    """A winmail.dat as tnefparse is given it. tnefparse reads each attribute from
    a copy of the rest of the file (``data[offset:]``): 2,000 attributes in 50 MB
    copied 50 GB, 20 s. Here that slice is the attribute's own bytes only."""

    def __getitem__(self, key):  # type: ignore[override]
        start = key.start if isinstance(key, slice) else None
        if key == slice(start, None) and 0 <= (start or 0) <= len(self) - 9:
            start = start or 0
            (length,) = struct.unpack_from("<I", self, start + 5)
            return bytes(memoryview(self)[start : start + length + 11])
        return super().__getitem__(key)


def extract_winmail(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """A winmail.dat on its own: its body, the text of the documents in it (as an
    e-mail's attachments are read), and the names of all its files."""
    with open(path, "rb") as fh:
        winmail = Winmail(os.path.basename(path), fh.read())
    attachments = Attachments(options)
    text = TextBuilder(options.max_chars)
    damage = ""
    try:
        body = winmail.body_lines()
    except CorruptFileError:
        if not winmail.files:
            raise
        body, damage = [], _BODY_DAMAGED
    text.extend(_lines(body, winmail.files, attachments))
    found = text.text.strip("\n")
    return ExtractionResult(
        text=found,
        page_count=None,
        confidence=1.0 if found.strip() else 0.0,
        extractor="winmail",
        note=join_notes(damage, attachments.note, text.note),
    )


def _lines(
    body: list[str], files: list[Attached], attachments: Attachments
) -> Iterator[str]:
    yield from body
    blocks = [attachments.lines(file) for file in files]
    if files:
        blocks.append(names_line(f.name for f in files))
    yield from separated(blocks, after=any(line.strip() for line in body))


def _text(value: str | bytes, charset: str | None) -> str:
    """A body property: text, or bytes in the message's code page."""
    text = value if isinstance(value, str) else decode(value, charset)
    return text.replace("\x00", "")


def _checked(data: bytes) -> bytes:
    """The winmail.dat as tnefparse is given it: without its recipient table (not
    read here; tnefparse reads its rows on from where damage stopped the last), its
    attachments' data properties renamed (see _DATA_RENAMED).
    Raises CorruptFileError when the attributes, or the counts of MAPI properties
    and values, are more than tnefparse reads in reasonable time: checked in one
    pass, stepping as tnefparse does (it steps over what is cut short)."""
    offset, attributes, values = 6, 0, _Budget()
    dropped: list[tuple[int, int]] = []  # the recipient tables' (start, end)
    renamed: list[int] = []  # where the data properties' tags are
    while offset + 12 < len(data):  # as tnefparse: TNEF.MIN_OBJ_SIZE
        attributes += 1
        if attributes > _MAX_ATTRIBUTES:
            raise CorruptFileError(_DAMAGED)
        (name,) = struct.unpack_from("<H", data, offset + 1)
        (length,) = struct.unpack_from("<I", data, offset + 5)
        end = min(len(data), offset + length + 11)
        if name == _RECIPIENTS:
            dropped.append((offset, end))
        if name in (_MAPI_PROPS, _ATTACHMENT):
            tags = renamed if name == _ATTACHMENT else []
            with contextlib.suppress(struct.error):  # cut short: tnefparse stops too
                _check_properties(data, offset + 9, end - 2, values, tags)
        offset = end
    if not (dropped or renamed):
        return data
    out = bytearray(data)
    for at in renamed:
        struct.pack_into("<H", out, at, _DATA_RENAMED)
    for start, end in reversed(dropped):
        del out[start:end]
    return bytes(out)


class _Budget:
    """The values counted so far, against _MAX_VALUES."""

    def __init__(self) -> None:
        self.used = 0

    def spend(self, count: int, room: int) -> None:
        """Raises CorruptFileError when ``count`` values cannot fit in ``room``
        (each takes a few bytes at least) or pass the budget."""
        self.used += count
        if count > room or self.used > _MAX_VALUES:
            raise CorruptFileError(_DAMAGED)


def _check_properties(
    whole: bytes, start: int, stop: int, values: _Budget, renamed: list[int]
) -> None:
    """Steps through the list of MAPI properties in ``whole[start:stop]`` as
    tnefparse's decode_mapi does (which stops at the first damage); raises as
    _checked says. Adds to ``renamed`` where each data property's tag is."""
    data = memoryview(whole)[start:stop]
    (count,) = struct.unpack_from("<I", data)
    at = 4
    values.spend(count, (len(data) - at) // 4)  # 4 bytes of tag each at least
    for _ in range(count):
        if at >= len(data):
            break
        kind, name = struct.unpack_from("<HH", data, at)
        if name == _DATA_OBJECT:
            renamed.append(start + at + 2)
        at += 4
        if name >= 0x8000:  # a named property: its GUID, and its number or name
            (named_by,) = struct.unpack_from("<I", data, at + 16)
            at += 20
            if named_by == 0:
                at += 4
            else:
                (size,) = struct.unpack_from("<I", data, at)
                at += 4 + _padded(size)
        many = None
        if kind & 0x1000:
            kind ^= 0x1000
            (many,) = struct.unpack_from("<I", data, at)
            at += 4
            values.spend(many, (len(data) - at) // _SIZES.get(kind, 4))
        if kind in _SIZES:
            at += _SIZES[kind] * (many or 1)
            if (many or 1) % 2 and kind in _SHORT:
                at += 2
        elif kind in _VARIABLE:
            for _ in range(many or 1):
                items = 1
                if not many:
                    (items,) = struct.unpack_from("<I", data, at)
                    at += 4
                    values.spend(items, (len(data) - at) // 4)
                for _ in range(items):
                    (size,) = struct.unpack_from("<I", data, at)
                    at += 4 + _padded(size)
        else:
            return  # a type tnefparse does not know: it stops there


def _padded(size: int) -> int:
    return size + -size % 4
