"""Chinese, Japanese, Korean and Thai words for the search index, as bigrams.

Chinese, Japanese and Thai are written without spaces, and Korean words take their
particles attached ("서울에서"): both engines take such a run as one word, so "東京" in
"私は東京に住んでいます" would never be found. Those runs are also stored as
overlapping bigrams (``Document.search_grams``, Lucene's CJK bigrams), and
``documents.search`` looks for a query word in those scripts as the phrase of its
bigrams.

The character classes are built on first use, not at import: the combining marks are
read from Unicode's whole Basic Multilingual Plane, tens of milliseconds that every
process (worker, cron tick, web) would otherwise pay at start.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

# Scripts whose words are not separated by spaces (Han with its extensions and
# compatibility blocks, Hiragana, Katakana, Bopomofo, Thai), and Hangul, whose words
# carry their particles. Migration 0011 keeps a copy for PostgreSQL (frozen there).
CJK_RANGES = (
    "\u0e00-\u0e7f"  # Thai
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3005-\u3007"  # 々 〆 〇
    "\u3031-\u3035\u303b\u303c"  # kana repeat marks, 〻 〼
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3100-\u312f\u3130-\u318f\u31a0-\u31bf"  # Bopomofo, Hangul compat. Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf\u4e00-\u9fff"  # CJK ideographs, extension A
    "\ua960-\ua97f\uac00-\ud7ff"  # Hangul Jamo extended, syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uffdc"  # half-width Katakana and Hangul
    "\U0001b000-\U0001b16f"  # Kana supplement and extensions
    "\U00020000-\U000323af"  # CJK extensions B to H, compatibility supplement
)
# The text is read for grams as far as PostgreSQL's index reads it (migration 0002),
# and the grams stop at a budget that keeps PostgreSQL's tsvector (1 MB at most) far
# from its limit: each different gram costs its bytes and about 5 more there.
GRAMS_TEXT_CHARS = 250_000
GRAMS_MAX_BYTES = 400_000
# Ends the name's grams in ``search_grams``: neither engine takes it for a word, and
# no gram holds it.
NAME_END = "\n"


@cache
def combining_marks() -> str:
    """The combining marks of the Basic Multilingual Plane, as a character class's
    ranges (the vowel signs of Hindi, Thai or Tamil, Arabic and Hebrew points)."""
    category = unicodedata.category
    ranges: list[tuple[int, int]] = []
    for code in range(0x300, 0x10000):
        if category(chr(code))[0] == "M":
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1] = (ranges[-1][0], code)
            else:
                ranges.append((code, code))
    return "".join(f"{chr(first)}-{chr(last)}" for first, last in ranges)


@cache
def word_pattern() -> re.Pattern[str]:
    """A letter or digit with the letters, digits and combining marks after it;
    everything else separates words, as in FTS5's unicode61 and PostgreSQL's parser
    ("नमस्ते" is one word, not "नमस" "त")."""
    return re.compile(rf"[^\W_](?:[^\W_]|[{combining_marks()}])*")


@cache
def unit_pattern() -> re.Pattern[str]:
    """A character of those scripts with its combining marks (Thai vowels, kana
    voicing)."""
    return re.compile(f"[{CJK_RANGES}][{combining_marks()}]*")


@cache
def _script() -> re.Pattern[str]:
    return re.compile(f"[{CJK_RANGES}]")


@cache
def _mark() -> re.Pattern[str]:
    return re.compile(f"[{combining_marks()}]")


@cache
def _run() -> re.Pattern[str]:
    return re.compile(f"(?:{unit_pattern().pattern})+")


@cache
def _word_tail() -> re.Pattern[str]:
    # What follows a run in the same word (letters, digits, marks: "2024年3月").
    return re.compile(rf"(?:[^\W_]|[{combining_marks()}])*")


@cache
def _wordish() -> re.Pattern[str]:
    return re.compile(rf"[^\W_]|[{combining_marks()}]")


def pieces(word: str) -> list[tuple[str, bool]]:
    """The word cut where its script changes: (piece, in those scripts) pairs."""
    found, end = [], 0
    for run in _run().finditer(word):
        if run.start() > end:
            found.append((word[end : run.start()], False))
        found.append((run[0], True))
        end = run.end()
    if end < len(word):
        found.append((word[end:], False))
    return found


def run_bigrams(run: str, *, closed: bool) -> list[str]:
    """Overlapping pairs of the run's characters; a closed run (one that ends there)
    also gives its last character, so that a one-character search (a prefix) finds
    it and no phrase runs on into the next run."""
    if _mark().search(run):
        units = unit_pattern().findall(run)
        grams = [a + b for a, b in zip(units, units[1:], strict=False)]
    else:
        units = run  # one character each: pairs are slices, much faster
        grams = [run[i : i + 2] for i in range(len(run) - 1)]
    return [*grams, units[-1]] if closed or len(units) == 1 else grams


def bigrams(text: str) -> str:
    """The words of ``text`` that hold Chinese, Japanese, Korean or Thai, as bigrams
    separated by spaces ("東京都に住む" → "東京 京都 都に に住 住む む"); what else such
    a word holds comes along as it is ("2024年" → "2024 年"). Empty without them."""
    return " ".join(_grams(text))


def _grams(text: str) -> list[str]:
    grams: list[str] = []
    if not has_grams(text):
        return grams  # most documents: a look at the text, nothing more
    # Composed (NFC), as PostgreSQL's index and the query's grams are: Korean typed
    # on a Mac, or extracted decomposed (NFD), is otherwise letters (jamo) apart.
    text = unicodedata.normalize("NFC", text)
    word, wordish = word_pattern(), _wordish()
    end = 0
    for run in _run().finditer(text):
        if run.start() < end:
            continue  # part of the word already done
        start = run.start()
        while start > end and wordish.fullmatch(text[start - 1]):
            start -= 1
        while start < run.start() and not word.match(text[start]):
            start += 1  # a word begins with a letter or digit, not with a mark
        end = _word_tail().match(text, run.end()).end()
        if start == run.start() and end == run.end():
            grams += run_bigrams(run[0], closed=True)  # most runs: nothing attached
            continue
        for piece, cjk in pieces(text[start:end]):
            grams += run_bigrams(piece, closed=True) if cjk else [piece]
    return grams


def _cost(gram: str) -> int:
    # Its bytes, and about as much again for its entry and a position in a tsvector.
    return len(gram.encode()) + 5


def search_grams(
    *, text: str = "", title: str = "", original_filename: str = ""
) -> str:
    """What a document's ``search_grams`` holds: the ``bigrams`` of its title and file
    name, then, after a line break (``NAME_END``), those of its text (as far as the
    index reads it), within ``GRAMS_MAX_BYTES``; the text's alone without name grams,
    and empty for a document without those scripts. The index gives the name's grams
    the name's weight (migration 0012), so a title matches as a Latin title does."""
    name = [gram for part in (title, original_filename) for gram in _grams(part)]
    grams = [*name, *_grams(text[:GRAMS_TEXT_CHARS])]
    if sum(map(_cost, dict.fromkeys(grams))) > GRAMS_MAX_BYTES:
        seen: set[str] = set()
        budget = GRAMS_MAX_BYTES
        for end, gram in enumerate(grams):
            if gram not in seen:
                budget -= _cost(gram)
                if budget < 0:
                    grams = grams[:end]
                    break
                seen.add(gram)
    if not name:
        return " ".join(grams)
    return " ".join(grams[: len(name)]) + NAME_END + " ".join(grams[len(name) :])


def has_grams(text: str) -> bool:
    """Whether ``text`` holds a character that ``search_grams`` makes bigrams of."""
    return not text.isascii() and bool(_script().search(text))
