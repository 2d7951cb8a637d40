"""Outlook's winmail.dat (TNEF, application/ms-tnef), which Outlook and Exchange send
in place of a message's attachments, and of its body, when it is written in rich
text: read with tnefparse (its RTF body decompressed with compressed-rtf)."""

from __future__ import annotations

import logging

from tnefparse.tnef import TNEF, TNEFAttachment

from .attachments import Attached
from .base import CorruptFileError
from .html import html_lines
from .rtf import read_text
from .text import decode

_TYPES = ("application/ms-tnef", "application/vnd.ms-tnef")
_DAMAGED = "its Outlook contents (TNEF) cannot be read"
# tnefparse logs the damage it steps over as errors; what matters reaches the note.
logging.getLogger("tnefparse").setLevel(logging.CRITICAL)


def is_winmail(content_type: str, name: str) -> bool:
    """An attachment that is TNEF by its type, or by the name Outlook gives it
    (sent as application/octet-stream by some servers)."""
    return content_type in _TYPES or name.lower() == "winmail.dat"


class Winmail:
    """The files a winmail.dat holds, and its body."""

    def __init__(self, name: str, data: bytes) -> None:
        """Raises CorruptFileError when it cannot be taken apart."""
        self.name = name
        try:
            self._tnef = TNEF(data, do_checksum=False)
            self.files = [
                Attached(self._name(attachment), attachment.data)
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
        return name or "(unnamed attachment)"


def _text(value: str | bytes, charset: str | None) -> str:
    """A body property: text, or bytes in the message's code page."""
    text = value if isinstance(value, str) else decode(value, charset)
    return text.replace("\x00", "")
