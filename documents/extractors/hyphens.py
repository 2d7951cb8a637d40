"""Words that typesetting broke across lines are joined again ("com-\\npile" becomes
"compile"), while real hyphens stay ("e-mail", "state-of-the-art").

A break takes the form the document itself uses more often elsewhere, hyphenated
("e-mail") or joined (any language); failing that, it is joined when a pyspellchecker
word list of the documents' languages (OCR_LANGUAGES) knows the joined word. Anything
else is left exactly as extracted.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from functools import cache
from importlib.resources import files

# A hyphen that ends a line (U+2010 is the one Chrome prints for a soft hyphen).
_LINE_END = re.compile(r"[-\u2010][ \t]*\n[ \t]*")
_HEAD = re.compile(r"[^\W\d_]+\Z")  # the letters just before it
_TAIL = re.compile(r"[^\W\d_]+")  # the letters just after it
_HEAD_REACH = 64  # longer "words" are not words
# Everything but letters, hyphens and non-ASCII becomes a space, so words and compounds
# stand between spaces (non-ASCII bytes are parts of letters, kept whole).
_SEPARATORS = bytes.maketrans(
    bytes(c for c in range(128) if not (chr(c).isalpha() or chr(c) == "-")),
    b" " * sum(1 for c in range(128) if not (chr(c).isalpha() or chr(c) == "-")),
)
_COUNT_EACH_UP_TO = 64  # forms; past that, counting every word once is cheaper
# Tesseract's language codes (OCR_LANGUAGES) -> pyspellchecker's word lists.
_WORD_LISTS = {
    "eng": "en", "deu": "de", "fra": "fr", "spa": "es", "ita": "it", "por": "pt",
    "nld": "nl", "rus": "ru", "lav": "lv", "eus": "eu", "fas": "fa", "ara": "ar",
}  # fmt: skip


def _word_list(language: str) -> frozenset[str]:
    resource = files("spellchecker") / "resources" / f"{language}.json.gz"
    return frozenset(json.loads(gzip.decompress(resource.read_bytes())))


@cache
def dictionary(languages: str = "eng") -> frozenset[str]:
    """The words (lower case) of the documents' languages ("eng+deu"), loaded once per
    process; English when none of them has a list."""
    names = [_WORD_LISTS[code] for code in languages.split("+") if code in _WORD_LISTS]
    lists = [_word_list(name) for name in dict.fromkeys(names or ["en"])]
    return lists[0] if len(lists) == 1 else frozenset().union(*lists)


def join_hyphenated(text: str, languages: str = "eng") -> str:
    """The text with line-end hyphenation undone where the joined word is a word."""
    found = list(breaks(text))
    if not found:
        return text
    uses = usage(text, {form for *_, head, tail in found for form in forms(head, tail)})
    words = dictionary(languages)
    pieces, done = [], 0
    for start, end, head, tail in found:
        mended, _ = mend(head, tail, uses, words)
        pieces += [text[done:start], text[start:end] if mended is None else mended]
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


def breaks(text: str) -> Iterator[tuple[int, int, str, str]]:
    """(start, end, head, tail) of each word broken by a hyphen at a line end. A head
    or tail that a hyphen joins to more belongs to a compound ("state-of-the-\nart",
    "commander-\nin-chief"), which is left alone. Found from the line ends, so the
    cost is in the breaks, not in the length of the text."""
    for hit in _LINE_END.finditer(text):
        head = _HEAD.search(text, max(0, hit.start() - _HEAD_REACH), hit.start())
        tail = _TAIL.match(text, hit.end())
        if head is None or tail is None:
            continue
        start, end = head.start(), tail.end()
        if (start and _joined_on(text[start - 1])) or (
            end < len(text) and _joined_on(text[end])
        ):
            continue
        yield start, end, head.group(), tail.group()


def _joined_on(char: str) -> bool:
    return char == "-" or char == "_" or char.isalnum()


def forms(head: str, tail: str) -> tuple[str, str]:
    """The two readings of a break, hyphenated and joined, in lower case."""
    return f"{head}-{tail}".lower(), (head + tail).lower()


def usage(text: str, wanted: set[str]) -> dict[str, int]:
    """How often the document writes each wanted word or compound. Counted on bytes
    at C speed: splitting a long text into Python words would cost more than the
    extraction itself."""
    data = b" " + text.lower().encode().translate(_SEPARATORS) + b" "
    if len(wanted) > _COUNT_EACH_UP_TO:
        counts = Counter(data.split())
        return {form: counts[form.encode()] for form in wanted}
    return {form: data.count(b" " + form.encode() + b" ") for form in wanted}


def mend(
    head: str, tail: str, uses: Mapping[str, int], words: frozenset[str]
) -> tuple[str | None, str]:
    """What becomes of one break "head-\ntail" (None: left as it is), and why."""
    if not tail[0].islower():
        return None, "left"  # "Anglo-\nSaxon": a name, not a broken word
    hyphenated, joined = forms(head, tail)
    # The document's own spelling first: the form it uses more often.
    if uses[hyphenated] > uses[joined]:
        return f"{head}-{tail}", "hyphen kept"
    if uses[joined]:
        return head + tail, "joined (document)"
    if joined in words:
        return head + tail, "joined (dictionary)"
    return None, "left"
