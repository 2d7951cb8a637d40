"""Words that typesetting broke across lines are joined again ("com-\\npile" becomes
"compile"), while real hyphens stay ("e-mail", "state-of-the-art").

A break takes the form the document itself uses more often elsewhere, hyphenated
("e-mail") or joined (any language); failing that, it is joined when pyspellchecker's
English word list knows the joined word. Anything else is left exactly as extracted.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from functools import cache
from importlib.resources import files

# "head-" at a line end, then "tail" starting the next line; a head or tail that is
# itself joined by a hyphen belongs to a compound ("state-of-the-\nart", "commander-\n
# in-chief") and is left alone.
_BROKEN = re.compile(r"(?<![\w-])([^\W\d_]+)-[ \t]*\n[ \t]*([^\W\d_]+)(?![\w-])")
_WORD = re.compile(r"[^\W\d_]+")
_COMPOUND = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")


@cache
def english_words() -> frozenset[str]:
    """pyspellchecker's English word list (lower case), loaded once per process."""
    resource = files("spellchecker") / "resources" / "en.json.gz"
    return frozenset(json.loads(gzip.decompress(resource.read_bytes())))


def join_hyphenated(text: str) -> str:
    """The text with line-end hyphenation undone where the joined word is a word."""
    if "-" not in text or not _BROKEN.search(text):
        return text
    words, compounds = vocabulary(text)

    def replace(match: re.Match[str]) -> str:
        mended, _ = mend(*match.groups(), words, compounds)
        return match.group(0) if mended is None else mended

    return _BROKEN.sub(replace, text)


def vocabulary(text: str) -> tuple[Counter[str], Counter[str]]:
    """How often the document uses each word and each hyphenated compound (lower
    case), away from the breaks."""
    unbroken = _BROKEN.sub(" ", text)
    return (
        Counter(word.lower() for word in _WORD.findall(unbroken)),
        Counter(word.lower() for word in _COMPOUND.findall(unbroken)),
    )


def mend(
    head: str, tail: str, words: Counter[str], compounds: Counter[str]
) -> tuple[str | None, str]:
    """What becomes of one break "head-\ntail" (None: left as it is), and why."""
    if not tail[0].islower():
        return None, "left"  # "Anglo-\nSaxon": a name, not a broken word
    hyphenated, joined = f"{head}-{tail}", head + tail
    # The document's own spelling first: the form it uses more often.
    if compounds[hyphenated.lower()] > words[joined.lower()]:
        return hyphenated, "hyphen kept"
    if words[joined.lower()]:
        return joined, "joined (document)"
    if joined.lower() in english_words():
        return joined, "joined (dictionary)"
    return None, "left"
