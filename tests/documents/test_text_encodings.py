"""Plain text in encodings a byte-order mark or UTF-8 does not name: Mac Roman,
ISO-8859-15, and UTF-16 or UTF-32 saved without a byte-order mark."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from documents.extractors import detect_format, extract
from documents.extractors.text import decode, detect_encoding


def write(tmp_path: Path, content: bytes, name: str = "upload.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


# --- Mac Roman --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Café crème, naïve, Zürich",
        "name;city\nJosé;Zürich\nFrançois;Besançon\nMüller;Köln\n",
        "“Hello” – it’s déjà vu, très élégant.\n",
        "Il va à Paris.",  # "ˆ" alone, cp1252's modifier letter
        "He said “hi” – ok",  # cp1252: "ÒhiÓ Ð"
    ],
    ids=["accents", "csv", "quotes", "a-grave", "quotes-only"],
)
def test_mac_roman_text_is_read_as_mac_roman(tmp_path: Path, text: str) -> None:
    # Excel for Mac's CSV read as cp1252: "CafŽ cr�me, na•ve, ZŸrich".
    result = extract(write(tmp_path, text.encode("mac-roman"), "export.csv"))
    assert result.text == text
    assert "decoded as mac-roman (a best guess)" in result.note


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("It´s a nice day – “quoted” … 3½ cups, 20°C, m², Brand®", "cp1252"),
        ("Paris–Berlin, mother–daughter, don‘t say“hi”", "cp1252"),
        ("McDonald’s • Café • naïve", "cp1252"),
        ("HÉLÈNE et Zoë, Noël. Ça va? À bientôt!", "cp1252"),
        ("Ærø, Ålesund, Øre; ŽURNAL, Škoda, Œuvre", "cp1252"),
        ("Zażółć gęślą jaźń, Łódź", "cp1250"),
        ("Türkçe: ğüşıöç İstanbul", "cp1254"),
        ("Привет, как дела? Всё хорошо.", "cp1251"),
    ],
)
def test_windows_text_is_not_taken_for_mac_roman(text: str, encoding: str) -> None:
    assert detect_encoding(text.encode(encoding))[0] == encoding


# --- ISO-8859-15 ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "label", ["ISO-8859-15", "iso885915", "csisolatin9", "l9", "latin9"]
)
def test_iso_8859_15_labels_read_a4_as_the_euro_sign(label: str) -> None:
    # The WHATWG labels Python's codecs lack were ignored: cp1252 read 0xA4 as "¤".
    data = "Prix : 20 €, un cœur, déjà vu".encode("iso8859-15")
    assert decode(data, label) == "Prix : 20 €, un cœur, déjà vu"


@pytest.mark.parametrize(
    "text",
    ["Prix : 20 €, un cœur, déjà vu\n", "Total;€12,50\nTVA;€2,50\n", "Preis: 5€"],
)
def test_undeclared_iso_8859_15_with_euro_amounts_is_read_so(
    tmp_path: Path, text: str
) -> None:
    result = extract(write(tmp_path, text.encode("iso8859-15")))
    assert result.text == text
    assert "decoded as iso8859-15" in result.note


@pytest.mark.parametrize(
    ("data", "encoding"),
    [
        (b"Unit price \xa4 (any currency), caf\xe9", "cp1252"),  # no amount by it
        (b"\x9320 \xa4\x94 and \x8020", "cp1252"),  # cp1252's quotes and euro
        ("Café 2,50 €".encode("cp1252"), "cp1252"),
    ],
)
def test_western_text_without_euro_amounts_stays_cp1252(
    data: bytes, encoding: str
) -> None:
    assert detect_encoding(data)[0] == encoding


# --- UTF-16 and UTF-32 without a byte-order mark ----------------------------------------

OTHER_SCRIPTS = {
    "russian": "Привет, как дела? Всё хорошо.\nВторая строка.\n",
    "greek": "Καλημέρα κόσμε, τι κάνεις;\n",
    "chinese": "你好，世界。今天天气很好，我们一起去公园散步吧。你觉得怎么样？\n",
    "japanese": "こんにちは世界、元気ですか。今日はとても良い天気ですね。\n",
    "arabic": "مرحبا بالعالم، كيف حالك؟\n",
    "hebrew": "שלום עולם, מה שלומך?\n",
    "korean": "안녕하세요 세계, 잘 지내요? 오늘은 날씨가 정말 좋네요.\n",
    "hindi": "नमस्ते दुनिया, आप कैसे हैं?\n",
    "mixed": "Отчёт по проекту Phoenix, версия 2.1\n",
}


@pytest.mark.parametrize(
    "encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"]
)
@pytest.mark.parametrize("text", OTHER_SCRIPTS.values(), ids=OTHER_SCRIPTS.keys())
def test_unicode_without_a_bom_in_other_scripts_is_text(
    tmp_path: Path, text: str, encoding: str
) -> None:
    # Without NULs beside Latin letters it was refused, or read as a code page.
    path = write(tmp_path, text.encode(encoding))
    assert detect_format(path).key == "text"
    result = extract(path)
    assert result.text == text
    assert encoding in result.note


LATIN = {
    "words": "Hello world",
    "line": "Hello world\n",
    "repeated": "plain text in UTF-32 " * 50,  # was a binary case: text, no BOM
    "accents": "Ein Café in Zürich, ein Bier in Łódź.\r\n",
}


@pytest.mark.parametrize("encoding", ["utf-32-le", "utf-32-be"])
@pytest.mark.parametrize("text", LATIN.values(), ids=LATIN.keys())
def test_latin_utf32_without_a_bom_is_text(
    tmp_path: Path, text: str, encoding: str
) -> None:
    # Three zero bytes in every four were taken for records of numbers: refused.
    path = write(tmp_path, text.encode(encoding))
    assert detect_format(path).key == "text"
    result = extract(path)
    assert result.text == text.replace("\r\n", "\n")
    assert encoding in result.note


SHORT_CJK = {
    "japanese": "日本語のテキスト",
    "hiragana": "こんにちは",
    "korean": "안녕하세요",
    "chinese": "欢迎光临本店",
    "chinese-controls": "中华人民共和国宪法第一条规定",  # 0x11 and 0x00 bytes
}


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
@pytest.mark.parametrize("text", SHORT_CJK.values(), ids=SHORT_CJK.keys())
def test_short_cjk_utf16_without_a_bom_is_text(
    tmp_path: Path, text: str, encoding: str
) -> None:
    # Too few bytes to tell by the share of ideographs: read as a code page (Mac
    # Roman, cp1252), or refused where control bytes are among them.
    path = write(tmp_path, text.encode(encoding))
    assert detect_format(path).key == "text"
    assert extract(path).text == text


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("Luís", "cp1252"),  # "界班" in UTF-16 LE: two ideographs are too few
        ("bakabyalagwa", "ascii"),  # six common ideographs in UTF-16 LE
        ("こんにちは世界", "cp932"),
    ],
)
def test_short_text_is_not_taken_for_cjk_in_utf16(text: str, encoding: str) -> None:
    data = text.encode(encoding)
    assert not detect_encoding(data)[0].startswith("utf-16")
    assert decode(data) == text


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_short_utf16_without_a_bom_in_an_alphabet_is_text(
    tmp_path: Path, encoding: str
) -> None:
    # An alphabet's high byte repeats (0x04 here): a few words are enough.
    assert (
        extract(write(tmp_path, "Привет, мир!".encode(encoding))).text == "Привет, мир!"
    )


def test_utf8_with_nuls_is_not_taken_for_utf16() -> None:
    # Russian in UTF-8 read as UTF-16 is Hangul ("и" is D0 B8): the strings of a
    # message catalogue (.mo), NUL after each, read as Korean.
    words = ["тысяча", "тысячи", "тысяч", "миллион", "миллиона", "миллионов"]
    data = b"\x00".join(f"%(value)s {word}".encode() for word in words * 8)
    assert detect_encoding(data)[0] == "utf-8"


def _ascii_with_controls(seed: int) -> bytes:
    rng = random.Random(seed)
    data = bytearray(b"The quick brown fox jumps over the lazy dog. " * 40)
    for _ in range(len(data) // 8):
        data.insert(rng.randrange(len(data)), rng.choice(b"\x01\x07\x08\x0c\x1a"))
    return bytes(data)


@pytest.mark.parametrize(
    "content",
    [
        random.Random(0).randbytes(4096),
        struct.pack("<1024h", *random.Random(2).choices(range(-300, 300), k=1024)),
        struct.pack("<1024I", *random.Random(3).choices(range(5000), k=1024)),
        struct.pack(">1024I", *range(1024)),
        struct.pack("<64I", *random.Random(5).choices(range(32, 300), k=64)),
        struct.pack("<256I", *random.Random(6).choices(range(32, 127), k=256)),
        struct.pack(">256I", *random.Random(7).choices(range(160, 256), k=256)),
        struct.pack("<52I", *range(65, 91), *range(97, 123)),
        _ascii_with_controls(4),
        bytes(range(256)) * 16,
    ],
    ids=[
        "random",
        "pcm",
        "int32-le",
        "int32-be",
        "int32-latin",
        "int32-printable",
        "int32-latin1",
        "int32-alphabet",
        "controls",
        "bytes",
    ],
)
def test_binary_is_still_not_text(tmp_path: Path, content: bytes) -> None:
    assert detect_format(write(tmp_path, content, "data.bin")) is None


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("Привет, как дела? Всё хорошо.", "cp1251"),
        ("Привет мир, как дела", "koi8-r"),
        ("Καλημέρα κόσμε", "cp1253"),
        ("①番の資料を送ります。", "cp932"),
        ("こんにちは世界、元気ですか", "cp932"),
        ("是人都生而自由，在尊严和权利上一律平等。", "gb18030"),
        ("שלום עולם, מה שלומך?", "cp1255"),
    ],
)
def test_eight_bit_text_is_not_taken_for_utf16(text: str, encoding: str) -> None:
    data = text.encode(encoding)
    assert data.decode(detect_encoding(data)[0]) == text  # KOI8-R read as KOI8-U


def test_a_coloured_log_is_read_without_its_escape_codes(tmp_path: Path) -> None:
    # "\x1b[31mERROR" came out as "[31mERROR": one word to search, not ERROR.
    log = (
        b"\x1b]0;deploy\x07\x1b[1;31mERROR\x1b[0m disk full on \x1b[4mdb-2\x1b[0m\n"
        b"\x1b[32mINFO\x1b[0m retrying in 5 s\n"
    )
    text = extract(write(tmp_path, log, "deploy.log")).text
    assert text == "ERROR disk full on db-2\nINFO retrying in 5 s\n"
