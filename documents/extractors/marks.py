"""List marks and symbol-font characters, shared by the readers: the Symbol font's
table, the private-use bullets of symbol fonts, and automatic list numbers."""

from __future__ import annotations

import re

BULLET = "•"
# The Symbol font's letters and signs (Adobe's Symbol encoding), where Unicode has
# them; Word stores its codes as F020-F0FF. Its other codes below 0x7F are ASCII's,
# and it has no character at 0x7F-0x9F and 0xF0 (the Mac's Apple logo) or 0xFF.
SYMBOL_FONT = {
    **dict(zip(range(0x41, 0x5B), "ΑΒΧΔΕΦΓΗΙϑΚΛΜΝΟΠΘΡΣΤΥςΩΞΨΖ", strict=True)),
    **dict(zip(range(0x61, 0x7B), "αβχδεφγηιϕκλμνοπθρστυϖωξψζ", strict=True)),
    0x22: "∀", 0x24: "∃", 0x27: "∋", 0x2A: "∗", 0x2D: "−", 0x40: "≅", 0x5C: "∴",
    0x5E: "⊥", 0xA3: "≤", 0xA5: "∞", 0xAB: "↔", 0xAC: "←", 0xAD: "↑", 0xAE: "→",
    0xAF: "↓", 0xB0: "°", 0xB1: "±", 0xB3: "≥", 0xB4: "×", 0xB5: "∝", 0xB6: "∂",
    0xB7: BULLET, 0xB8: "÷", 0xB9: "≠", 0xBA: "≡", 0xBB: "≈", 0xC5: "⊕", 0xC7: "∩",
    0xC8: "∪", 0xCE: "∈", 0xD6: "√", 0xD8: "¬", 0xDE: "⇒", 0xE5: "∑", 0xF2: "∫",
    **dict.fromkeys((*range(0x7F, 0xA0), 0xF0, 0xFF), ""),
}  # fmt: skip
# Bullets that a symbol font's private-use code leaves in PDF and RTF text (which
# name no font, or not reliably), shown as empty boxes: Word's Symbol bullet, and
# LibreOffice's OpenSymbol one (Windows-1252's bullet code, 0x95, at F095).
_BULLETS = {0xF000 + 0xB7: SYMBOL_FONT[0xB7], 0xF095: BULLET}
# Wingdings bullets of Word's bullet library (▪ ➢ ✓), at a line's start only: the
# same codes are signs of the Symbol font (♣ ¬) inside a line.
_LINE_START_BULLETS = re.compile(r"(?m)^([ \t]*)[\uf0a7\uf0d8\uf0fc]")
_ANY_BULLET = re.compile(r"[\uf095\uf0b7\uf0a7\uf0d8\uf0fc]")


def symbol_bullets(text: str) -> str:
    """The text with the symbol fonts' private-use bullets as "•"; other
    private-use characters, whose meaning depends on their font, kept."""
    if _ANY_BULLET.search(text) is None:  # the common case, cheaply
        return text
    text = _LINE_START_BULLETS.sub(rf"\g<1>{BULLET}", text)
    return text.translate(_BULLETS)


# --- Automatic list numbers ----------------------------------------------------

# Beyond these, numbers are written in digits (a hostile start value).
_MAX_ROMAN = 3999
_MAX_LETTERS = 780  # "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz": 30 letters
_ROMAN = (
    (1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"),
    (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"),
)  # fmt: skip


def roman(number: int) -> str:
    """A number in lower-case Roman numerals (digits past 3999, or below 1)."""
    if not 0 < number <= _MAX_ROMAN:
        return str(number)
    out = []
    for value, letters in _ROMAN:
        count, number = divmod(number, value)
        out.append(letters * count)
    return "".join(out)


def letters(number: int, *, repeat: bool) -> str:
    """A number as lower-case letters: a-z, then aa, bb, ... (`repeat`, as Word and
    LibreOffice's "synchronized" letters) or aa, ab, ... (as a spreadsheet's columns)."""
    if not 0 < number <= _MAX_LETTERS:
        return str(number)
    if repeat:
        times, index = divmod(number - 1, 26)
        return chr(ord("a") + index) * (times + 1)
    out = ""
    while number:
        number, index = divmod(number - 1, 26)
        out = chr(ord("a") + index) + out
    return out
