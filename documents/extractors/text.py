"""Plain-text extraction: work out the encoding, decode, normalise newlines."""

from __future__ import annotations

import codecs
import os
import re

from .base import (
    CorruptFileError,
    ExtractionResult,
    ExtractOptions,
    join_notes,
    truncated_note,
)

# Longest BOM first: the UTF-32 LE BOM begins with the UTF-16 LE one.
_BOM_ENCODINGS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_NEWLINES = re.compile(r"\r\n?|\u2028|\u2029")
_WESTERN = "cp1252"  # superset of ISO-8859-1's printable characters
_WESTERN_LANGUAGES = {  # as charset-normalizer names them
    "English", "French", "German", "Spanish", "Portuguese", "Italian", "Dutch",
    "Danish", "Swedish", "Norwegian", "Finnish", "Indonesian",
}  # fmt: skip


def extract_text(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """Decode a plain-text file by BOM, else UTF-8, else the detected encoding."""
    # No encoding spends more than 4 bytes on a character: reading this much is
    # enough to fill the limit, whatever the file's size.
    with open(path, "rb") as fh:
        data = fh.read(options.max_chars * 4 + 4)
        cut = bool(fh.read(1))
    encoding, confidence = detect_encoding(data)
    # A guessed code page may leave a few bytes unmapped: replace, don't fail.
    decoder = codecs.getincrementaldecoder(encoding)(
        "strict" if confidence == 1.0 else "replace"
    )
    try:  # not final when cut: the last character may lack its last bytes
        text = decoder.decode(data, final=not cut)
    except UnicodeDecodeError as exc:  # BOM promised an encoding the bytes break
        raise CorruptFileError(
            f"it is not valid {encoding} text ({exc.reason})"
        ) from exc
    # NULs and stray BOMs carry no text; str.replace is ~50x faster than translate.
    text = _NEWLINES.sub("\n", text).replace("\x00", "").replace("\ufeff", "")
    cut = cut or len(text) > options.max_chars
    return ExtractionResult(
        text=text[: options.max_chars],
        page_count=None,
        confidence=confidence if text.strip() else 0.0,
        extractor="text",
        note=join_notes(
            f"No byte-order mark and not UTF-8: decoded as {encoding} (a best guess)."
            if confidence < 1.0
            else "",
            truncated_note(options.max_chars) if cut else "",
        ),
    )


def detect_encoding(data: bytes) -> tuple[str, float]:
    """Return (encoding, confidence) for raw bytes; never fails."""
    for bom, encoding in _BOM_ENCODINGS:
        if data.startswith(bom):
            return encoding, 1.0
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        return "utf-8", 1.0
    from charset_normalizer import from_bytes

    matches = from_bytes(data)
    best = matches.best()
    if best is None:
        return "latin-1", 0.3  # decodes any byte string; last resort
    encoding = best.encoding
    # Latin text often fits several code pages almost equally well (cp1250 and
    # cp1252 share most accented letters); for a Western European language
    # choose the code page those languages are actually written in.
    slack = 0.05 if best.language in _WESTERN_LANGUAGES else 0.01
    for match in matches:
        if (
            _WESTERN in (match.encoding, *match.could_be_from_charset)
            and match.chaos <= best.chaos + slack
            and match.coherence >= best.coherence - 0.02
        ):
            encoding = _WESTERN
            break
    # A guess, however good: a wrong code page garbles accented letters.
    return encoding, round(max(0.5, 0.9 - best.chaos), 3)
