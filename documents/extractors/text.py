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
from .sniff import utf16_without_bom

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
# Letters of Western European languages outside ASCII, as cp1252 decodes them. Not
# Iceland's ð þ ý: Turkish ğ ş ı in cp1254 decode to them.
_WESTERN_LETTERS = frozenset(
    "ÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÑÒÓÔÕÖØÙÚÛÜßàáâãäåæçèéêëìíîïñòóôõöøùúûüÿŒœŠšŽžŸ"
)
# Inside a word: apostrophes and Catalan's middle dot; any other symbol between two
# letters ("Za¿ó³æ" is Polish in cp1250) means another code page.
_IN_WORD = frozenset("’·")
_MAX_FOREIGN_SHARE = 0.4
# A language is told from the accented letters: few of them tell nothing (a short
# Catalan sentence comes out as "Hungarian, cp1258").
_SURE_COHERENCE = 0.3  # charset-normalizer's language fit, 0..1
_SURE_NON_ASCII = 16  # of letters not in ASCII; Cyrillic or Greek come out ~100%
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
    # Before UTF-8: English in UTF-16 is valid UTF-8, with a NUL after each letter.
    utf16 = utf16_without_bom(data)
    if utf16:
        return utf16, 0.9
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        return "utf-8", 1.0
    from charset_normalizer import from_bytes

    matches = from_bytes(data)
    best = matches.best()
    if _reads_as_western(data) and not _surely_other(data, best):
        # Few bytes give a detector little to go on (a short CSV of names came out
        # as cp775): text that reads as Western European in cp1252 is taken as such.
        return _WESTERN, 0.8 if best is None else round(max(0.5, 0.9 - best.chaos), 3)
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


def _reads_as_western(data: bytes) -> bool:
    """True when cp1252 decodes the bytes into something that reads as Western
    European text: accented letters here and there inside mostly-ASCII words.
    Single-byte Cyrillic, Greek or Hebrew decode to runs of accented letters."""
    try:
        text = data.decode(_WESTERN)
    except UnicodeDecodeError:  # 0x81, 0x8D, 0x8F, 0x90, 0x9D: unused in cp1252
        return False
    letters = accented = run = 0
    previous = " "
    for index, char in enumerate(text):
        if char.isascii():
            run = 0
            letters += char.isalpha()
        elif char.isalpha():
            if char not in _WESTERN_LETTERS:
                return False
            letters += 1
            accented += 1
            run += 1
            if run == 3:  # three accented letters in a row: no Western word
                return False
        else:
            run = 0
            following = text[index + 1 : index + 2]
            if char not in _IN_WORD and previous.isalpha() and following.isalpha():
                return False
        previous = char
    # Something beyond ASCII (else UTF-8 would have done), in the right measure.
    return text != data.decode("ascii", "replace") and (
        accented <= _MAX_FOREIGN_SHARE * letters
    )


def _surely_other(data: bytes, best: object) -> bool:
    """True when the detector found a non-Western language it is sure of, from
    enough evidence (Hungarian in cp1250 reads as Western in cp1252 but for ő, ű)."""
    if best is None or _WESTERN in (best.encoding, *best.could_be_from_charset):
        return False
    if sum(byte > 0x7F for byte in data) < _SURE_NON_ASCII:
        return False
    language = best.language
    return (
        language not in _WESTERN_LANGUAGES
        and language != "Unknown"
        and best.coherence >= _SURE_COHERENCE
    )
