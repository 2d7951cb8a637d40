"""Plain-text extraction: work out the encoding, decode, normalise newlines."""

from __future__ import annotations

import codecs
import os
import re
import unicodedata

from .base import (
    EMPTY_NOTE,
    CorruptFileError,
    ExtractionResult,
    ExtractOptions,
    join_notes,
    truncated_note,
)
from .sniff import TERMINAL_ESCAPES, unicode_without_bom

# Longest BOM first: the UTF-32 LE BOM begins with the UTF-16 LE one.
_BOM_ENCODINGS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_NEWLINES = re.compile(r"\r\n?|\u2028|\u2029")
# Bytes that break the encoding a byte-order mark names: a few are strays, more are
# a file that is not that text at all.
_MAX_INVALID_SHARE = 0.05
_WESTERN = "cp1252"  # what browsers fall back to
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_UTF8_GOOD_PER_BAD = 10
_AFTER_WORDS = frozenset("²®™©")  # m², Brand®; not ³ or ¹, cp1250's ł and ą (100 zł)
_ANYWHERE = frozenset("°…·•†‡‰")  # 20°C, "etc…"
_QUOTES_AND_DASHES = {"Pi", "Pf", "Ps", "Pe", "Pd"}  # « » “ ” „ – —
# Mac Roman (classic Mac OS, Excel for Mac) has its accented letters where Windows
# code pages have symbols and rare capitals: chardetng reads it as one of those.
_MAC_ROMAN = "mac-roman"
_LATIN_CODE_PAGES = frozenset({"cp1252", "cp1250", "cp1254", "cp1257"})
_MAC_ROMAN_ODD_PER_ODD = 4  # what Mac Roman must beat the code page by
_MAC_ROMAN_SAMPLE = 64 * 1024  # judged by its start: a second a 4 MB file otherwise
# DOS text: its lines of boxes and shades, four alike ("════", "────", "▒▒▒▒"),
# are "ÍÍÍÍ", "ÄÄÄÄ", "±±±±" in the code pages chardetng guesses for it, and its
# accented letters (0x80-0xA5) their symbols ("caf‚", "M\x81ller", "se¤or").
# CP437 first (the US one, boxes and all); then DOS's Western European CP850
# ("informa‡Æo", "Fran‡ois" in CP437: "ã", "ç" and "ø" moved) and Central
# European CP852 ("Za¾¢ˆ†" for "Zażółć"), and Greek CP737 ("¥ž ¡˜­â" for "καφέ"),
# which chardetng does not know: it knows CP866, DOS's Cyrillic. German reads
# alike in the first three.
_DOS_CODE_PAGES = ("cp437", "cp850", "cp852", "cp737")
# Greek from DOS (CP737), which chardetng reads as cp1252, with few odd characters
# ("š¨ãš¦¨ž" for "γρήγορη"). (When capitals are many it reads it as CP866, and
# Russian would be read as CP737 as often as Greek could be.) Greek words
# (a small letter in them: a run of capitals may be dashes, "——" is CP737's "ΩΩ")
# bear one accent each, or none (short ones), seldom two ("τηλέφωνό μου"); read as
# CP737, Russian's commonest letters (с т у) are accented ones, and Latin text's
# accents Greek letters glued to its words (which _dos_odd_characters counts).
_DOS_GREEK = "cp737"
_GREEK_WORD = re.compile(r"[\u0370-\u03ff]{2,}")
_GREEK_ACCENTED = frozenset("άέήίόύώΐΰΆΈΉΊΌΎΏ")
_GREEK_WORDS = 2  # with a small letter, what the text must show
_TWO_ACCENTS_PER_WORD = 10  # words of one accent for each of two: at least
# DOS's Hebrew CP862 has its letters where CP866 has Cyrillic capitals: chardetng
# reads it as CP866, in capitals only ("ЩМЕН" for "שלום"). Hebrew's final letters
# (ך ם ן ף ץ: CP866's К Н П У Х) end words, or begin them in text stored in the
# order it is shown (DOS's visual Hebrew); their other forms (כ מ נ פ צ) do not.
# Russian in capitals has those letters anywhere, seldom Ш Щ Ъ (Hebrew's common
# ר ש ת) and often Ы Ь Э Ю Я, which CP862 has as symbols; its small letters are
# CP862's accented Latin ones. (With boxes, chardetng may read cp1251.)
_DOS_CYRILLIC, _DOS_HEBREW = "cp866", "cp862"
_CYRILLIC_WORD = re.compile(r"[\u0400-\u04ff]{3,}")
_HEBREW_WORD = re.compile(rb"[\x80-\x9a]{2,}")
_HEBREW_FINAL, _HEBREW_NOT_FINAL = b"\x8a\x8d\x8f\x93\x95", b"\x8b\x8e\x90\x94\x96"
_RESH_SHIN_TAV = re.compile(rb"[\x98-\x9a]")
_NOT_HEBREW = re.compile(rb"[\x9b-\xaf\xe0-\xff]")
_HEBREW_FINALS = 2  # what a text must show, at the right end of its words
_DOS_LINE = re.compile(rb"([\xb0\xb1\xb2\xc4\xcd\xdb])\1{3}")
_DOS_ODD_AT_LEAST = 3  # what the code page must read as odd without a line
_IN_WORDS = frozenset("´·\u00ad")  # it´s, col·lecció, a soft hyphen
# cp1252's „ “ ” are DOS's ä ô ö ("H„ndler", "T”ne"): inside a word, or two at
# a word's end, odd for the DOS test (not for Mac Roman's: a typed "say“hi”" is
# cp1252's).
_QUOTE_IN_WORD = re.compile(
    r"(?<=[^\W\d_])[„“”]+(?=[^\W\d_])"  # "H„ndler"
    r"|(?<=[^\W\d_])[„“”]{2,}|[„“”]{2,}(?=[^\W\d_])"  # "Hyv„„", "„„nestys"
)
# ISO-8859-15 has "€" where cp1252 has "¤", a sign nobody types beside an amount;
# it has no symbols in 0x80-0x9F, where cp1252 has its quotes and dashes.
_AMOUNT_IN_LATIN9 = re.compile(rb"\d[ \xa0]?\xa4|\xa4[ \xa0]?\d")
_CP1252_ONLY = re.compile(rb"[\x80-\x9f]")
# Labels whose text browsers and mail programs read with a larger code page than
# Python's codec of that name (WHATWG Encoding Standard): "ISO-8859-1" text is
# written on Windows, curly quotes and euro sign in 0x80-0x9F; "Shift_JIS" holds
# Windows' ① and NEC symbols.
_SUPERSETS = {
    "ascii": "cp1252",
    "iso8859-1": "cp1252",
    "iso8859-9": "cp1254",
    "iso8859-11": "cp874",
    "tis-620": "cp874",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "shift_jis": "cp932",
    "euc_kr": "cp949",
    "big5": "big5hkscs",
}
# WHATWG names that Python's codecs do not know.
_WHATWG_NAMES = {
    "windows-874": "cp874",
    "x-mac-cyrillic": "mac-cyrillic",
    "iso-8859-8-i": "iso8859-8",
    "windows-31j": "cp932",
    "x-sjis": "cp932",
    "iso885915": "iso8859-15",
    "csisolatin9": "iso8859-15",
    "mac": "mac-roman",
    "x-mac-roman": "mac-roman",
    "csmacintosh": "mac-roman",
}


def extract_text(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """Decode a plain-text file by BOM, else UTF-8, else the detected encoding."""
    # No encoding spends more than 4 bytes on a character: reading this much is
    # enough to fill the limit, whatever the file's size.
    with open(path, "rb") as fh:
        data = fh.read(options.max_chars * 4 + 4)
        cut = bool(fh.read(1))
    # Cut, the last character may lack its last bytes: not a sign of another code.
    encoding, confidence = detect_encoding(_whole_characters(data) if cut else data)
    # A guessed code page may leave a few bytes unmapped, and a file its byte-order
    # mark names may hold a stray byte of another (a cp1252 "é" pasted into UTF-8):
    # replaced, with a note; the file is lost only when much of it does not fit.
    decoder = codecs.getincrementaldecoder(encoding)("replace")
    text = decoder.decode(data, final=not cut)
    unguessed = confidence == 1.0 or encoding == "utf-8"  # not a code page guessed
    invalid = text.count("\ufffd") if unguessed else 0
    if confidence == 1.0 and invalid > _MAX_INVALID_SHARE * len(text):
        raise CorruptFileError(f"it is not valid {encoding} text")
    # NULs and stray BOMs carry no text; str.replace is ~50x faster than translate.
    text = _NEWLINES.sub("\n", text).replace("\x00", "").replace("\ufeff", "")
    if "\x1b" in text:
        # A coloured log's escape codes would glue "[31m" to the word they colour,
        # and search would not find it.
        text = TERMINAL_ESCAPES.sub("", text)
    cut = cut or len(text) > options.max_chars
    blank = not text.strip()
    return ExtractionResult(
        text="" if blank else text[: options.max_chars],
        page_count=None,
        confidence=0.0 if blank else confidence,
        extractor="text",
        note=join_notes(
            EMPTY_NOTE if blank else "",
            f"No byte-order mark and not valid UTF-8: decoded as {encoding} "
            "(a best guess)."
            if not unguessed
            else "",
            f"Bytes that are not valid {encoding.removesuffix('-sig').upper()} "
            f"were replaced by � ({invalid:,})."
            if invalid
            else "",
            truncated_note(options.max_chars) if cut else "",
        ),
    )


def bom_codec(data: bytes) -> str | None:
    """The codec a byte-order mark at the start of ``data`` names, if any."""
    return next((codec for bom, codec in _BOM_ENCODINGS if data.startswith(bom)), None)


def detect_encoding(data: bytes) -> tuple[str, float]:
    """Return (Python codec, confidence) for raw bytes; never fails."""
    if codec := bom_codec(data):
        return codec, 1.0
    # Before UTF-8: English in UTF-16 is valid UTF-8, with a NUL after each letter,
    # and Cyrillic in UTF-16 LE is ASCII bytes too (0x04 after each letter).
    wide = unicode_without_bom(data)
    if wide:
        return wide, 0.9
    # ISO-2022-JP (Japanese mail) is seven-bit, so valid UTF-8 too: its escapes tell.
    if b"\x1b" not in data and _is_utf8(data):
        return "utf-8", 1.0
    if _mostly_utf8(data):
        # A stray byte or two (files joined, a line pasted from a cp1252 editor)
        # in UTF-8 text: any code page would garble all the rest.
        return "utf-8", 0.8
    # A legacy code page: chardetng (Firefox's detector) tells them apart from
    # letter pairs, so a short "Łódź" or "Привет" is read right, where a detector
    # of language statistics needs paragraphs (it gave Big5, UTF-16, cp1125).
    from chardetng_py import EncodingDetector

    detector = EncodingDetector()
    detector.feed(data, last=True)
    name, sure = detector.guess_assess(tld=None, allow_utf8=True)
    encoding = codec_for_label(name) or _WESTERN
    if encoding == "utf-8" and _is_utf8(data):
        return encoding, 1.0
    if encoding != "utf-8" and _utf8_reads_better(data, encoding):
        return "utf-8", 0.8
    if encoding != _WESTERN and _western_symbols_only(data):
        # Its letters are all ASCII: English with "£825" or "½ cup", which chardetng
        # reads as Polish "Ł825" and "˝ cup".
        return _western(data), 0.6
    boxes = _DOS_LINE.search(data[:_MAC_ROMAN_SAMPLE])
    if (encoding == _DOS_CYRILLIC or boxes) and _dos_hebrew(data):
        return _DOS_HEBREW, 0.6
    if encoding in _LATIN_CODE_PAGES and (dos := _dos_code_page(data, encoding)):
        return dos, 0.6
    if encoding in _LATIN_CODE_PAGES and _mac_roman_reads_better(data, encoding):
        return _MAC_ROMAN, 0.6
    if encoding == _WESTERN:
        encoding = _western(data)
    return encoding, 0.9 if sure else 0.6


def _western(data: bytes) -> str:
    """cp1252, or ISO-8859-15 for text whose "¤" stands by a number: "20 €"."""
    if _AMOUNT_IN_LATIN9.search(data) and not _CP1252_ONLY.search(data):
        return "iso8859-15"
    return _WESTERN


def _mac_roman_reads_better(data: bytes, encoding: str) -> bool:
    """True for Mac Roman text that ``encoding`` reads with odd characters ("CafŽ",
    "na•ve"), which Mac Roman reads with far fewer ("Café", "naïve")."""
    sample = data[:_MAC_ROMAN_SAMPLE]
    odd = _odd_characters(sample.decode(encoding, "replace"))
    mac_odd = _odd_characters(sample.decode(_MAC_ROMAN))
    return odd > 0 and mac_odd * _MAC_ROMAN_ODD_PER_ODD <= odd


def _dos_code_page(data: bytes, encoding: str) -> str | None:
    """The DOS code page that reads ``data`` with the fewest odd characters (the
    first of those alike), if it reads better than ``encoding``: with a line of
    boxes or shades, no more odd characters than ``encoding``; without one, none,
    where ``encoding`` reads a few and Mac Roman one at least (Mac Roman's "für" is
    CP437's "fƒr"; French from DOS, "mangé", is Mac Roman's "mangÇ")."""
    sample = data[:_MAC_ROMAN_SAMPLE]
    texts = {page: sample.decode(page) for page in _DOS_CODE_PAGES}
    odds = {page: _dos_odd_characters(text) for page, text in texts.items()}
    dos = min(_DOS_CODE_PAGES, key=odds.__getitem__)  # the first of those alike
    dos_odd = odds[dos]
    text = sample.decode(encoding, "replace")
    odd = _odd_characters(text) + len(_QUOTE_IN_WORD.findall(text))
    if _DOS_LINE.search(sample):
        # Russian from DOS (CP866), its boxes taken by chardetng for a Latin code
        # page's letters: CP737's Greek letters are its Cyrillic ones, read as Greek
        # only if they make Greek words. Cyrillic words that read as cleanly as a
        # Latin page's letters are CP866's ("Как дела" is CP852's "Őá¬ Ąąźá").
        cyrillic = sample.decode(_DOS_CYRILLIC)
        odds[_DOS_CYRILLIC] = _dos_odd_characters(cyrillic)
        if not _greek(texts[_DOS_GREEK]):
            del odds[_DOS_GREEK]
        dos = min(odds, key=odds.__getitem__)  # the first of those alike
        if (
            odds[_DOS_CYRILLIC] == odds[dos]
            and len(_CYRILLIC_WORD.findall(cyrillic)) > 1
        ):
            dos = _DOS_CYRILLIC
        return dos if odds[dos] <= odd else None
    if dos == _DOS_GREEK:  # Greek words, not Latin ones' accents (those are glued)
        return dos if dos_odd == 0 and _greek(texts[dos]) else None
    return (
        dos
        if dos_odd == 0  # a code page's "é" (0xE9) is CP437's "Θ" after a small letter
        and odd >= _DOS_ODD_AT_LEAST
        and _odd_characters(sample.decode(_MAC_ROMAN)) > 0
        else None
    )


def _greek(text: str) -> bool:
    """True for Greek text (read from DOS's CP737): no odd characters, Greek words
    with small letters, accented once (a word in ten may be twice)."""
    if _dos_odd_characters(text):
        return False
    words = [word for word in _GREEK_WORD.findall(text) if not word.isupper()]
    accents = [sum(1 for c in word if c in _GREEK_ACCENTED) for word in words]
    once, twice = accents.count(1), len(accents) - accents.count(0) - accents.count(1)
    return (
        len(words) >= _GREEK_WORDS
        and once > 0
        and twice * _TWO_ACCENTS_PER_WORD <= once
    )


def _dos_hebrew(data: bytes) -> bool:
    """True for DOS Hebrew text (CP862) that chardetng reads as CP866: words of
    its letters only, whose final letters all stand at one end of them, and their
    other forms never there."""
    sample = data[:_MAC_ROMAN_SAMPLE]
    if _NOT_HEBREW.search(sample) or not _RESH_SHIN_TAV.search(sample):
        return False
    words = _HEBREW_WORD.findall(sample)
    for end in (-1, 0):  # the order it is read in, or shown in (visual)
        ends = bytes(word[end] for word in words)
        finals = sum(map(ends.count, _HEBREW_FINAL))
        total = sum(word.count(c) for word in words for c in _HEBREW_FINAL)
        if (
            finals >= _HEBREW_FINALS
            and finals == total  # none inside or at the other end
            and not any(map(ends.count, _HEBREW_NOT_FINAL))
        ):
            return True
    return False


def _dos_odd_characters(text: str) -> int:
    """Odd characters as ``_odd_characters`` counts them, and letters of another
    script than Latin glued to an ASCII letter: CP737's Greek for another code
    page's accents ("Straάe" for "Straße")."""
    return _odd_characters(text) + sum(
        1
        for found in _NON_ASCII.finditer(text)
        if found.group().isalpha()
        and not unicodedata.name(found.group(), "").startswith("LATIN")
        and any(
            c.isascii() and c.isalpha()
            for c in text[found.start() - 1 : found.start()]
            + text[found.end() : found.end() + 1]
        )
    )


def _odd_characters(text: str) -> int:
    """How many characters beyond ASCII a writer would hardly have put where they
    stand: a byte the code page lacks, a capital after a small letter ("CafŽ"),
    a modifier letter ("dŽjˆ"), a symbol inside a word ("na•ve"; dashes and quotes
    may be, as in "Paris–Berlin" and "it’s")."""
    odd = 0
    for found in _NON_ASCII.finditer(text):
        char, at = found.group(), found.start()
        category = unicodedata.category(char)
        before = text[at - 1 : at]
        inside = before.isalpha() and text[at + 1 : at + 2].isalpha()
        odd += (
            char == "\ufffd"
            or category in ("Cc", "Co", "Lm")
            or (char.isupper() and before.islower())
            or (
                inside
                and not char.isalpha()
                and char not in _IN_WORDS
                and category not in _QUOTES_AND_DASHES
            )
        )
    return odd


def _western_symbols_only(data: bytes) -> bool:
    """True when cp1252 reads every byte beyond ASCII as a symbol or punctuation,
    none glued to a word as another code page's letters are ("£ódŸ" is "Łódź";
    "m²" and "Brand®" are fine)."""
    try:
        text = data.decode(_WESTERN)
    except UnicodeDecodeError:  # 0x81, 0x8D, 0x8F, 0x90, 0x9D: unused in cp1252
        return False
    if text.isascii():  # seven bits (ISO-2022-JP): chardetng knows better
        return False
    for found in _NON_ASCII.finditer(text):
        char, at = found.group(), found.start()
        if char.isalpha():
            return False
        if char in _ANYWHERE or unicodedata.category(char) in _QUOTES_AND_DASHES:
            continue
        before = at > 0 and text[at - 1].isalpha()
        after = text[at + 1 : at + 2].isalpha()
        if after or (before and char not in _AFTER_WORDS):
            return False
    return True


def codec_for_label(label: str | None) -> str | None:
    """The Python codec for text labelled ``label`` (a charset of HTML, mail or
    a detector), read as browsers read it; None for a label nobody knows."""
    name = (label or "").strip().strip("\"'").lower()
    if not name:
        return None
    try:
        codec = codecs.lookup(_WHATWG_NAMES.get(name, name)).name
    except LookupError:
        return None
    return _SUPERSETS.get(codec, codec)


def decode(data: bytes, declared: str | None = None) -> str:
    """Bytes as their reader sees them: a byte-order mark decides, then the declared
    charset, unless the bytes are UTF-8 under another label (an editor saved them
    again) or none of them fits it; with no usable label, the detected encoding."""
    for bom, encoding in _BOM_ENCODINGS:
        if data.startswith(bom):
            return data.decode(encoding, errors="replace")
    encoding = codec_for_label(declared)
    if encoding is None or (
        encoding != "utf-8" and not data.isascii() and _is_utf8(data)
    ):
        encoding = detect_encoding(data)[0]
    text = data.decode(encoding, errors="replace")
    if "\ufffd" in text and not _NON_ASCII.search(text.replace("\ufffd", "")):
        # Not one character beyond ASCII fits the label ("utf-8" on cp1252 bytes):
        # the label is wrong. A damaged byte or two in real UTF-8 stays as it is.
        text = data.decode(detect_encoding(data)[0], errors="replace")
    return text


def _whole_characters(data: bytes) -> bytes:
    """``data`` without a UTF-8 character its end cut in two (a lead byte, and fewer
    continuation bytes than it announces)."""
    start = len(data) - 1
    while start >= max(len(data) - 4, 0) and 0x80 <= data[start] < 0xC0:
        start -= 1
    if start < 0 or data[start] < 0xC0:
        return data
    length = 2 if data[start] < 0xE0 else 3 if data[start] < 0xF0 else 4
    return data[:start] if len(data) - start < length else data


def _mostly_utf8(data: bytes) -> bool:
    """True for UTF-8 text with at most one bad byte in ten good characters beyond
    ASCII; text in a code page has almost none of those (é alone is not UTF-8)."""
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    good = _NON_ASCII.subn("", text)[1] - bad
    return good > 0 and bad * _UTF8_GOOD_PER_BAD <= good


def _utf8_reads_better(data: bytes, encoding: str) -> bool:
    """True for UTF-8 text with a stray byte that has too few characters beyond
    ASCII for ``_mostly_utf8``'s ratio ("ünïcode" and one bad byte): twice as
    many valid sequences as bad bytes, each a plausible character, and fewer odd
    characters than ``encoding`` makes of it ("Ã¼nÃ¯code"). A code page's text
    seldom forms even one valid sequence ("Fuß“" does), and its bytes beyond ASCII
    that do not are bad ones."""
    sample = data[:_MAC_ROMAN_SAMPLE]
    if len(sample) < len(data):  # the sample's end may cut a character in two
        sample = _whole_characters(sample)
    text = sample.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    good = _NON_ASCII.subn("", text)[1] - bad
    if not 0 < bad * 2 <= good or not _plausible_utf8(text):
        return False
    return _odd_characters(text) < _odd_characters(sample.decode(encoding, "replace"))


def _plausible_utf8(text: str) -> bool:
    """False when a valid sequence reads as what UTF-8 text would hardly hold: a
    control or unassigned character, or a letter of another script than Latin
    glued to an ASCII letter (cp1252's "sÑ“" is UTF-8's "sѓ")."""
    for found in _NON_ASCII.finditer(text):
        char, at = found.group(), found.start()
        if char == "\ufffd":
            continue
        category = unicodedata.category(char)
        if category in ("Cc", "Co", "Cn"):
            return False
        beside = text[at - 1 : at] + text[at + 1 : at + 2]
        if (
            category.startswith("L")
            and any(c.isascii() and c.isalpha() for c in beside)
            and not unicodedata.name(char, "").startswith("LATIN")
        ):
            return False
    return True


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
