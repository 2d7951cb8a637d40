"""RTF extraction with striprtf."""

from __future__ import annotations

import os
import re

from .base import (
    CorruptFileError,
    ExtractionResult,
    ExtractOptions,
    TextBuilder,
    join_notes,
    short_reason,
)

_CODE_PAGE = re.compile(rb"\\ansicpg(\d+)")
_CUT = "the RTF is incomplete (its end is missing); the upload may have been cut short"


def extract_rtf(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """Extract the text of an RTF file, up to the limit."""
    from striprtf.striprtf import rtf_to_text

    with open(path, "rb") as fh:
        data = fh.read()
    # RTF is 7-bit text; \'hh escapes are bytes in the document's code page.
    match = _CODE_PAGE.search(data[:4096])
    encoding = f"cp{int(match.group(1))}" if match else "cp1252"
    try:
        "".encode(encoding)
    except LookupError:
        encoding = "cp1252"
    try:
        plain = rtf_to_text(data.decode("latin-1"), encoding=encoding, errors="replace")
    except (ValueError, IndexError, RecursionError) as exc:
        raise CorruptFileError(
            f"its RTF cannot be parsed ({short_reason(exc)})"
        ) from exc
    # An RTF's text is never longer than the file, so the limit bounds the output.
    text = TextBuilder(options.max_chars)
    text.extend(plain.splitlines())
    body = text.text.strip("\n")
    note = text.note
    if _unclosed(data):  # cut short: an upload or a save that did not finish
        if not body.strip():
            raise CorruptFileError(_CUT)
        note = join_notes(note, f"The text may stop early: {_CUT}.")
    return ExtractionResult(
        text=body,
        page_count=None,
        confidence=1.0 if body.strip() else 0.0,
        extractor="rtf",
        note=note,
    )


def _unclosed(data: bytes) -> bool:
    """True when groups are opened and never closed: the file's end is lost.
    (Counted at C speed; escaped braces, \\{ and \\}, are text.)"""
    opened = data.count(b"{") - data.count(b"\\{")
    closed = data.count(b"}") - data.count(b"\\}")
    return opened > closed
