"""Byte tests that recognise a format from the start of a file (no Django)."""

from __future__ import annotations

import codecs
import functools
import re
import unicodedata
from collections import Counter

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
_BOM_CODECS = dict(
    zip(
        _BOMS,
        ("utf-32-le", "utf-32-be", "utf-8", "utf-16-le", "utf-16-be"),
        strict=True,
    )
)
_BOM_SAMPLE = 16 * 1024  # bytes after the mark: decoded, they must read as text
# Object syntax without a %PDF- header: a PDF whose start was lost, not prose.
_PDF_OBJECT = re.compile(rb"\d+\s+\d+\s+obj\s*<<")
_PDF_STRUCTURE = re.compile(rb"\b(endobj|startxref|trailer|xref)\b")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")
_MAX_CONTROL_SHARE = 0.05  # binary has ~12%
# Controls text carries by convention, not counted: a terminal's escape sequences
# (a coloured log's ESC [ 31 m, a title's ESC ] ... BEL) and DOS's end-of-file mark
# (Ctrl-Z) after the last line. Binary bytes hardly ever form them.
TERMINAL_ESCAPES = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]{0,256}(?:\x07|\x1b\\))"
)
_DOS_END_OF_FILE = "\x1a"
# UTF-16 without a BOM: Latin text has a zero high byte in nearly every character,
# and almost never a zero low byte (U+0000, U+0100...).
_UTF16_SAMPLE = 4096
_UTF16_MIN_ZERO_HIGH = 0.7
_UTF16_MAX_ZERO_LOW = 0.01
# UTF-16 of other scripts has no zero high byte. Its control bytes tell it from a
# code page's text, which has none: a Cyrillic letter's high byte (0x04), a space's
# NUL, an ideograph's low byte one time in nine. Its pairs tell it from ASCII with
# a few controls: an alphabet's high bytes repeat where the low ones vary, and few
# of the bytes of ideographs are printable ASCII.
_C0_BYTES = bytes(b for b in range(32) if b not in b"\t\n\r\x1b")  # ESC: coloured logs
_PRINTABLE_BYTES = bytes(range(32, 127)) + b"\t\n\r\x1b"
_WIDE_MIN_C0_SHARE = 0.01
_WIDE_MIN_BYTES = 8
_WIDE_MAX_ZERO_LOW = 0.2  # U+1000 is Myanmar KA; a NUL in every other one, records
_IDEOGRAPHS_MIN_BYTES = 64  # fewer: random bytes and terminal descriptions read so too
_IDEOGRAPHS_SHARE = 0.25  # of bytes not printable ASCII
# A few words of CJK in UTF-16 (too few bytes for the share of ideographs, or not a
# control byte among them): every character must be a common one, one in seven of
# random 16-bit units. Han of the first level of GB 2312, JIS X 0208 or Big5 (7,113
# of 20,992; lead bytes), Hangul of KS X 1001 (2,350 of 11,172), kana, punctuation
# and ASCII, which random units hardly ever are (worth ~8 bits each, Han ~3).
_COMMON_HAN = (  # codec, first and last lead byte, lowest trail byte
    ("gb2312", 0xB0, 0xD7, 0xA1),
    ("euc_jp", 0xB0, 0xCF, 0xA1),
    ("big5", 0xA4, 0xC5, 0x40),
)
_COMMON_HANGUL = ("euc_kr", 0xB0, 0xC8, 0xA1)
_KANA = range(0x3041, 0x3100)
_CJK_MARKS = (range(0x3000, 0x3040), range(0xFF01, 0xFF5F))  # 、。「」 ！？（）
_FEW_CJK_MIN_LETTERS = 2
# Latin, Cyrillic or Greek words in a code page read so up to 12 bits ("Luís" in
# cp1252 is "界班", 6 bits; UDHR article 1 in ~450 languages, its words and pieces).
_FEW_CJK_TEXT_BITS = 16
_FEW_CJK_BINARY_BITS = 32  # where control bytes make them binary otherwise
_LEGACY_CJK = ("gb18030", "cp932", "big5hkscs", "cp949")
_UTF32_MIN_BYTES = 64  # fewer: a few random 32-bit numbers read as Hangul too
# UTF-32 of Latin text: ASCII and Latin-1 letters have three zero bytes, as have
# records of small 32-bit numbers; words tell them apart.
_LATIN_MIN_CHARS = 8
_LATIN_LETTER_SHARE = 0.75  # of characters other than spaces
_LATIN_MAX_ACCENTED_SHARE = 0.25  # of letters: French has ~4%, Czech ~15%
_LATIN_WORD_CHARS = 16  # a space in so many characters at least, and one
_LATIN_MIN_DISTINCT = 8  # a line said over and over has few: "plain text " * 50
# Decoded, it must read as text, where binary has letters of every script, repeats
# a record or runs on without a space or a stop: hardly a control, unassigned,
# private or lone surrogate character, nor an ideograph of CJK Extension A (rare,
# where ASCII pairs land: "4k" is U+346B); the letters past ASCII nearly all of one
# script, and enough of them; some spaces or punctuation; some variety.
_NOT_TEXT = {"Cc", "Cn", "Co", "Cs"}
_EXTENSION_A = range(0x3400, 0x4DC0)
_MAX_NOT_TEXT_SHARE = 0.01
_MIN_ONE_SCRIPT_SHARE = 0.9
_MIN_LETTER_SHARE = 0.2  # of a short text; a long one (HTML, CSV) may be mostly ASCII
_ENOUGH_LETTERS = 8
_MIN_SEPARATOR_SHARE = 0.02
_SEPARATORS_FROM = 8  # characters: a word or two may have none
# General punctuation: where ASCII read as UTF-16 puts a space beside a letter
# (" a" is U+2061); real text has spaces or its own stops as well.
_ASCII_PAIRS = range(0x2000, 0x2070)
_MIN_DISTINCT = 16
# Scripts written beside CJK ideographs: Japanese kana, Korean Hangul.
_WITH_IDEOGRAPHS = {
    "HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA", "IDEOGRAPHIC", "HANGUL",
    "HALFWIDTH", "FULLWIDTH",
}  # fmt: skip
_ANY_SCRIPT = ("COMBINING", "MODIFIER")  # accents and modifier letters of any script
# NULs that pad text, not binary data's scattered zeros: a log cut by logrotate's
# copytruncate opens with a run of them, one a crash left a hole in holds or ends
# with one, an export padded to a block ends with some.
_NULS = re.compile(rb"\x00+")
_MIN_INNER_NULS = 16  # a hole in a file, not a string's terminator
_PADDING_NULS = re.compile(rb"\x00{%d,}" % _MIN_INNER_NULS)
_MAX_INNER_NUL_RUNS = 4
# Fewer, shorter NULs: one strayed into text (a bad copy, an editor's crash) in so
# many bytes at most; binary data has one in 256 or more, and a sentence none.
_BYTES_PER_STRAY_NUL = 1024
# A file named as text (.txt, .csv, .md) may hold a few more: in a short sample the
# bytes cannot tell a stray NUL (an export, an editor's crash) from binary data's,
# and its name, which promises text, settles it.
_NAMED_TEXT_STRAY_NULS = 4
_IMAGES = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"II*\x00", b"MM\x00*")
_BINARY_MAGIC = (*_IMAGES, OLE_MAGIC, *ZIP_MAGIC, b"\x1f\x8b", b"7z\xbc")
# A tar archive's magic, after its first member's name, mode, sizes and dates (POSIX,
# GNU): a text member is text, its archive is not.
TAR_MAGIC_AT = 257
TAR_MAGIC = (b"ustar\x0000", b"ustar  \x00")
# The start of an HTML document, after optional whitespace (WHATWG sniffing's tags).
_HTML_START = re.compile(
    rb"\s*(?:<!doctype\s+html|<html|<head|<body|<title|<meta|<table|<div|<p)[\s>]"
)
# What only a whole HTML document opens with; a fragment (<p align="center">, <div>)
# also opens many a Markdown README.
_HTML_DOCUMENT_START = re.compile(rb"\s*(?:<!doctype\s+html|<html|<head|<body)[\s>]")
# What may come before a page's first tag: an XML declaration (XHTML) and comments,
# such as the "<!-- saved from url=... -->" browsers write into pages they save.
_HTML_PROLOG = re.compile(rb"\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*", re.DOTALL)
# An SVG picture's prolog: XML declaration, stylesheets, comments, its doctype (with
# Illustrator's entities); then its root element. Its elements, to look past them.
_SVG_PROLOG = re.compile(
    rb"\s*(?:(?:<\?[^>]*>|<!--.*?-->|<!doctype\s+svg(?:[^>\[]|\[[^\]]*\])*>)\s*)*",
    re.DOTALL,
)
_SVG_START = re.compile(rb"<svg[\s/>]")
# LibreOffice's "Flat XML" OpenDocument (.fodt, .fods, .fodp): its root element,
# after the XML declaration, is office:document naming the kind of document (after
# some 40 namespace declarations). A doctype is looked past: the reader refuses it.
_XML_PROLOG = re.compile(
    rb"\s*(?:(?:<\?[^>]*>|<!--.*?-->|<!doctype\s(?:[^>\[]|\[[^\]]*\])*>)\s*)*",
    re.DOTALL | re.IGNORECASE,
)
_FLAT_ODF_ROOT = re.compile(
    rb"<office:document\s[^>]*?\boffice:mimetype\s*=\s*"
    rb"[\"']application/vnd\.oasis\.opendocument\.([a-z]+)"
)
_FLAT_ODF_HEAD = 16 * 1024
_SVG_TAG = re.compile(rb"<(/?)svg(?=[\s/>])[^>]*?(/?)>")
_COMMENT = re.compile(rb"<!--.*?(?:-->|$)", re.DOTALL)
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
    """True for a %PDF- header at the start, or near it before PDF objects, or PDF
    object syntax without one."""
    if prefix.startswith(b"%PDF-"):
        return True
    # Past the start, the header must lead to objects: a README or a log saying
    # "every PDF opens with %PDF-1.7" is text.
    header = prefix.find(b"%PDF-", 0, _PDF_HEADER_WINDOW)
    if header > 0 and _PDF_OBJECT.search(prefix, header):
        return True
    return bool(_PDF_OBJECT.search(prefix) and _PDF_STRUCTURE.search(prefix))


def looks_like_text(prefix: bytes) -> bool:
    """True when a byte prefix decodes as text with almost no control characters."""
    for bom in _BOMS:
        if prefix.startswith(bom):
            return _text_after_bom(prefix, bom)
    if prefix.startswith(_BINARY_MAGIC) or prefix.startswith(TAR_MAGIC, TAR_MAGIC_AT):
        return False
    if unicode_without_bom(prefix):
        return True
    text = _without_nul_padding(prefix)
    if not text or text.startswith(_BINARY_MAGIC):
        return False
    return _few_controls(_as_characters(text))


def _as_characters(text: bytes) -> str:
    """Text bytes as characters: UTF-8 if they are, else the likeliest encoding's."""
    decoded = _decode_utf8_prefix(text)
    # Escapes in seven bits may switch character sets (ISO-2022-JP mail).
    if decoded is None or "\x1b" in decoded:
        decoded = _guess_decode(text)
    return decoded


def _few_controls(decoded: str, bad: int = 0) -> bool:
    """True when hardly a character of ``decoded`` is a control (past the escape
    sequences and end-of-file mark of text) or one of ``bad`` others."""
    decoded = TERMINAL_ESCAPES.sub("", decoded).removesuffix(_DOS_END_OF_FILE)
    bad += len(_CONTROL.findall(decoded))
    return bad <= _MAX_CONTROL_SHARE * max(len(decoded), 1)


def _text_after_bom(prefix: bytes, bom: bytes) -> bool:
    """True when what follows a byte-order mark reads as text in its encoding: a
    mark before binary data (a picture, random bytes) does not make it text. Binary
    read as UTF-8 or UTF-32 is mostly not characters at all; as UTF-16, one unit in
    eight is a private or surrogate one."""
    sample = prefix[len(bom) : len(bom) + _BOM_SAMPLE]
    decoder = codecs.getincrementaldecoder(_BOM_CODECS[bom])("replace")
    decoded = decoder.decode(sample, False).rstrip("\x00")  # padding, as elsewhere
    bad = decoded.count("\ufffd") + sum(
        unicodedata.category(char) in ("Cn", "Co", "Cs")
        for char in decoded
        if char > "\ud7ff"  # where private and surrogate units are: spares a lookup
    )
    return _few_controls(decoded, bad)


def _without_nul_padding(prefix: bytes) -> bytes | None:
    """The bytes without the runs of NULs that pad text: any at either end, and a
    few long ones inside; a rare stray NUL stays, a control among the text. None
    when NULs are strewn through them, as in binary data (or one in a sentence)."""
    text = prefix.strip(b"\x00")
    runs = _NULS.findall(text)
    if not runs:
        return text
    padding = sum(len(run) >= _MIN_INNER_NULS for run in runs)
    stray = sum(len(run) for run in runs if len(run) < _MIN_INNER_NULS)
    if padding > _MAX_INNER_NUL_RUNS or stray > len(text) // _BYTES_PER_STRAY_NUL:
        return None
    return _PADDING_NULS.sub(b"", text)


def text_but_for_stray_nuls(prefix: bytes) -> bool:
    """True when bytes holding a few stray NULs (at most _NAMED_TEXT_STRAY_NULS, or
    the share text may hold anyway) are text once those are taken out, without a
    single other control: for a file whose name promises text. Binary data has
    more NULs, or other controls (an executable's header)."""
    text = prefix.strip(b"\x00")
    stray = sum(len(run) for run in _NULS.findall(text) if len(run) < _MIN_INNER_NULS)
    allowed = max(_NAMED_TEXT_STRAY_NULS, len(text) // _BYTES_PER_STRAY_NUL)
    if not stray or stray > allowed:
        return False
    cleaned = _NULS.sub(
        lambda run: run.group() if len(run.group()) >= _MIN_INNER_NULS else b"", text
    )
    if not looks_like_text(cleaned):
        return False
    decoded = _as_characters(_PADDING_NULS.sub(b"", cleaned))
    decoded = TERMINAL_ESCAPES.sub("", decoded).removesuffix(_DOS_END_OF_FILE)
    return "\ufffd" not in decoded and not _CONTROL.search(decoded)


def unicode_without_bom(prefix: bytes) -> str | None:
    """The UTF-32 or UTF-16 codec (with its byte order) of text saved without a
    byte-order mark, else None."""
    return utf32_without_bom(prefix) or utf16_without_bom(prefix)


def utf32_without_bom(prefix: bytes) -> str | None:
    """ "utf-32-le" or "utf-32-be" for text in UTF-32 without a byte-order mark: the
    top byte of every character is zero (code points end at U+10FFFF); Latin text's
    next two are too, other scripts read as one script."""
    sample = prefix[: 2 * _UTF16_SAMPLE]  # as many characters as UTF-16's
    sample = sample[: len(sample) - len(sample) % 4]
    if not sample:
        return None
    for encoding, top, plane, row in (
        ("utf-32-le", sample[3::4], sample[2::4], sample[1::4]),
        ("utf-32-be", sample[0::4], sample[1::4], sample[2::4]),
    ):
        if top.strip(b"\x00"):
            continue
        text = _decoded(sample, encoding)
        if text is None:
            continue
        latin = (
            not plane.strip(b"\x00")
            and row.count(0) >= _UTF16_MIN_ZERO_HIGH * len(row)
            # A short prefix is the whole file: whole characters, no byte more.
            and (len(prefix) % 4 == 0 or len(prefix) > 2 * _UTF16_SAMPLE)
        )
        if (latin and _latin_text(text)) or (
            len(sample) >= _UTF32_MIN_BYTES and _other_script(text)
        ):
            return encoding
    return None


def _latin_text(text: str) -> bool:
    """True for the characters of a guessed UTF-32 that read as Latin text: enough
    of them, mostly ASCII letters, words with spaces between them, capitals where
    words start, hardly a control. Records of small numbers have NULs and controls
    (0-31), or land on any character to 0xFF (punctuation, "kQ", "ÄÐ", no spaces),
    and a program's alphabet table ("ABCDEFGH") has no space."""
    letters = sum(char.isalpha() for char in text)
    accented = letters - sum(char.isascii() and char.isalpha() for char in text)
    spaces = sum(char in " \t\n\r" for char in text)
    capitals_inside = sum(
        before.islower() and char.isupper()
        for before, char in zip(text, text[1:], strict=False)
    )
    return (
        len(text) >= _LATIN_MIN_CHARS
        and len(_CONTROL.findall(text)) <= _MAX_CONTROL_SHARE * len(text)
        and letters >= _LATIN_LETTER_SHARE * (len(text) - spaces)
        and accented <= _LATIN_MAX_ACCENTED_SHARE * letters
        and spaces >= max(1, len(text) // _LATIN_WORD_CHARS)
        and capitals_inside <= letters // _LATIN_WORD_CHARS
        and len(set(text)) >= min(_LATIN_MIN_DISTINCT, len(text) / 2)
    )


def utf16_without_bom(prefix: bytes) -> str | None:
    """ "utf-16-le" or "utf-16-be" for text in UTF-16 without a byte-order mark
    (told by where its zero bytes fall, or for other scripts than Latin by what its
    characters are), else None."""
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
            text = _decoded(sample, encoding)
            if text is None:
                return None
            controls = len(_CONTROL.findall(text))
            return encoding if controls <= _MAX_CONTROL_SHARE * len(text) else None
    if wide := _utf16_of_other_scripts(sample):
        return wide
    # A short prefix is the whole file: an odd byte more is not UTF-16.
    whole = len(prefix) % 2 == 0 or len(prefix) > _UTF16_SAMPLE
    return _utf16_of_few_cjk(sample) if whole else None


def _utf16_of_other_scripts(sample: bytes) -> str | None:
    """UTF-16 of Cyrillic, Greek, Arabic, CJK...: no zero high bytes to tell it."""
    size = len(sample)
    c0 = size - len(sample.translate(None, _C0_BYTES))
    if size < _WIDE_MIN_BYTES or c0 <= _WIDE_MIN_C0_SHARE * size or _utf8(sample):
        return None
    non_ascii = len(sample.translate(None, _PRINTABLE_BYTES))
    ideographs = size >= _IDEOGRAPHS_MIN_BYTES and non_ascii >= _IDEOGRAPHS_SHARE * size
    even, odd = sample[0::2], sample[1::2]
    # The byte order whose high bytes vary less first (a tie: Windows' LE).
    for encoding, high, low in sorted(
        (("utf-16-le", odd, even), ("utf-16-be", even, odd)),
        key=lambda order: len(set(order[1])),
    ):
        alphabet = 2 * len(set(high)) <= len(set(low))
        if (alphabet or ideographs) and low.count(0) <= _WIDE_MAX_ZERO_LOW * len(low):
            text = _decoded(sample, encoding)
            script = _other_script(text) if text is not None else None
            if script and (alphabet or script == "CJK"):
                return encoding
    return None


def _utf16_of_few_cjk(sample: bytes) -> str | None:
    """UTF-16 of a few CJK words ("日本語のテキスト", "안녕하세요"): every character
    a common one, and more evidence than a code page's words or binary give. Two
    ideographs ("中文") are not enough: "Luís" in cp1252 reads as two as well."""
    # Seven-bit bytes are ASCII: "bakabyalagwa" reads as six common ideographs.
    if sample.isascii() or _utf8(sample):
        return None
    padded = sample.strip(b"\x00")
    controls = len(padded) - len(padded.translate(None, _C0_BYTES + b"\x00"))
    enough = _FEW_CJK_BINARY_BITS if controls else _FEW_CJK_TEXT_BITS
    for encoding in ("utf-16-le", "utf-16-be"):
        text = _decoded(sample, encoding)
        bits = _common_cjk_bits(text.rstrip("\x00")) if text else None
        if bits is not None and bits >= enough:
            return None if _legacy_cjk(sample) else encoding
    return None


def _common_cjk_bits(text: str) -> int | None:
    """How unlikely ``text`` is as random 16-bit units, in bits, when it is CJK of
    common characters only (Chinese, Japanese or Korean, not a mix), else None."""
    common_han, common_hangul = _common_cjk()
    bits = han = kana = hangul = 0
    for char in text:
        code = ord(char)
        if char in common_han:
            han += 1
            bits += 3
        elif char in common_hangul:
            hangul += 1
            bits += 4
        elif code in _KANA:
            kana += 1
            bits += 8
        elif any(code in marks for marks in _CJK_MARKS) or (
            char.isascii() and (char.isprintable() or char in "\t\n\r")
        ):
            bits += 8
        else:
            return None
    letters = han + kana + hangul
    if letters < _FEW_CJK_MIN_LETTERS or (hangul and (kana or hangul < han)):
        return None
    return bits


@functools.cache
def _common_cjk() -> tuple[frozenset[str], frozenset[str]]:
    """The common Han characters and Hangul syllables, by their legacy codes."""

    def common(codec: str, first: int, last: int, lowest: int) -> set[str]:
        found = set()
        for lead in range(first, last + 1):
            for trail in range(lowest, 0xFF):
                try:
                    found.add(bytes((lead, trail)).decode(codec))
                except UnicodeDecodeError:
                    continue
        return found

    han = set().union(*(common(*level) for level in _COMMON_HAN))
    return (
        frozenset(char for char in han if 0x4E00 <= ord(char) < 0xA000),
        frozenset(common(*_COMMON_HANGUL)),
    )


def _legacy_cjk(sample: bytes) -> bool:
    """True for bytes that a legacy CJK code page reads as common CJK characters
    only: Shift_JIS or GBK text of a few words, which UTF-16 also reads as Han."""
    for codec in _LEGACY_CJK:
        try:
            text = sample.decode(codec)
        except UnicodeDecodeError:
            continue
        if not any(char.isascii() for char in text) and _common_cjk_bits(text):
            return True
    return False


def _utf8(sample: bytes) -> bool:
    """True for UTF-8 beyond ASCII, a bad byte in ten characters at most: Russian in
    UTF-8 reads as Korean in UTF-16 ("и" is D0 B8, U+D0B8 is a Hangul syllable)."""
    text = sample.decode("utf-8", "replace")
    bad = text.count("\ufffd")
    good = len(text) - len(text.encode("ascii", "ignore")) - bad
    return good > 0 and bad * 10 <= good


def _decoded(sample: bytes, encoding: str) -> str | None:
    try:  # not final: the sample may end inside a character
        return codecs.getincrementaldecoder(encoding)().decode(sample)
    except UnicodeDecodeError:
        return None


def _other_script(text: str) -> str | None:
    """The script, other than Latin, of the letters past ASCII in the characters of
    a guessed UTF-16 or UTF-32; None when there is none or they are not text."""
    bad = separators = 0
    scripts: Counter[str] = Counter()
    for char in text:
        category = unicodedata.category(char)
        if char in "\t\n\r" or (category[0] in "PZ" and ord(char) not in _ASCII_PAIRS):
            separators += 1
        elif category in _NOT_TEXT or ord(char) in _EXTENSION_A:
            bad += char != "\f"
        elif category[0] in "LM" and char > "\x7f":
            scripts[_script(char)] += 1  # letters and their vowel signs
    for generic in _ANY_SCRIPT:
        del scripts[generic]
    script, most = scripts.most_common(1)[0] if scripts else ("LATIN", 0)
    if (
        script == "LATIN"
        or bad > _MAX_NOT_TEXT_SHARE * len(text)
        or most < _MIN_ONE_SCRIPT_SHARE * scripts.total()
        or most < min(_MIN_LETTER_SHARE * len(text), _ENOUGH_LETTERS)
        or len(set(text)) < min(_MIN_DISTINCT, len(text) / 2)
        or (
            len(text) >= _SEPARATORS_FROM
            and separators < _MIN_SEPARATOR_SHARE * len(text)
        )
    ):
        return None
    return script


def _script(char: str) -> str:
    """The script a letter is of, by the first word of its name ("CYRILLIC SMALL
    LETTER A"); Chinese, Japanese and Korean (ideographs, kana, Hangul, full-width
    forms) as one."""
    script = unicodedata.name(char, "").partition(" ")[0]
    return "CJK" if script in _WITH_IDEOGRAPHS else script


def looks_like_html(prefix: bytes) -> bool:
    """True when the text opens with an HTML tag (or XHTML after an XML declaration),
    or with an inline SVG (an icon, a logo) that HTML follows."""
    if _HTML_START.match(_html_head(prefix)):
        return True
    svg = _svg_head(prefix)
    return svg is not None and bool(_outside_svg(svg))


def flat_odf_kind(prefix: bytes) -> str:
    """The kind of document ("text", "spreadsheet", "presentation") a flat
    OpenDocument file's root names; "" for other text."""
    head = _unicode_head(prefix, _FLAT_ODF_HEAD)
    found = _FLAT_ODF_ROOT.match(head, _XML_PROLOG.match(head).end())
    return found.group(1).decode() if found else ""


def looks_like_svg(prefix: bytes) -> bool:
    """True for an SVG picture: text that opens with an <svg> element and holds
    nothing else (an SVG that a fragment of HTML follows is HTML)."""
    svg = _svg_head(prefix)
    return svg is not None and not _outside_svg(svg)


def _svg_head(prefix: bytes) -> bytes | None:
    """The text from its <svg> root on, in lower case, when it opens with one."""
    head = _unicode_head(prefix, 4096).lower()
    if not _SVG_START.match(head, _SVG_PROLOG.match(head).end()):
        return None
    head = _unicode_head(prefix, len(prefix)).lower()  # to look past the picture
    return head[_SVG_PROLOG.match(head).end() :]


def _outside_svg(head: bytes) -> bytes:
    """What text holds besides its <svg> elements (nested ones included) and its
    comments, stripped; an element the prefix cuts runs to its end."""
    outside, depth, start = [], 0, 0
    for tag in _SVG_TAG.finditer(head):
        if depth == 0:
            outside.append(head[start : tag.start()])
        closing, empty = tag.groups()
        if closing:
            depth = max(depth - 1, 0)
        elif not empty:
            depth += 1
        if depth == 0:
            start = tag.end()
    if depth == 0:
        outside.append(head[start:])
    return _COMMENT.sub(b"", b"".join(outside)).strip()


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
    head = _unicode_head(prefix, 2048).lower()
    return head[_HTML_PROLOG.match(head).end() :]


def _unicode_head(prefix: bytes, size: int) -> bytes:
    """The first ``size`` bytes of text without its byte-order mark; a page saved as
    "Unicode" (UTF-16), with or without the mark, in bytes its ASCII tags match."""
    head = prefix[: 4 * size]
    for bom in _BOMS:
        if head.startswith(bom) and bom != codecs.BOM_UTF8:
            codec = "utf-32" if len(bom) == 4 else "utf-16"
            return head.decode(codec, "ignore").encode()[:size]
    if b"\x00" in head[:4] and (codec := unicode_without_bom(head)):
        return head.decode(codec, "ignore").encode()[:size]
    return head[:size].removeprefix(codecs.BOM_UTF8)


def _mail_headers(prefix: bytes) -> dict[bytes, bytes] | None:
    """The header block's names (lower case) and first values, or None if the text
    does not open with one."""
    headers: dict[bytes, bytes] = {}
    # The whole prefix: Microsoft 365's and relays' headers pass 16 KiB before the
    # From. Notepad's byte-order mark is not part of the first header's name.
    text = _unicode_head(prefix, len(prefix))
    lines = text.splitlines()
    if lines and _MBOX_FROM.match(lines[0]):
        del lines[0]  # an mbox separator, as Thunderbird keeps in saved messages
    cut = not text.endswith((b"\n", b"\r"))  # the last line may be cut short
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            break  # the blank line that ends the headers
        if line[:1] in (b" ", b"\t"):
            if not headers:
                return None
            continue  # a folded header
        if not _HEADER_LINE.match(line):
            if cut and n == len(lines):
                break
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
