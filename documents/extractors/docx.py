"""DOCX extraction: body (tables and nested tables included), notes, headers, footers."""

from __future__ import annotations

import os
import re
import zipfile
from email import policy
from email.parser import BytesParser
from itertools import chain, islice
from typing import TYPE_CHECKING, Any

from .archive import checked_zip, declares_dtd, strict_ooxml, strict_refusal
from .base import (
    DTD_REASON,
    CorruptFileError,
    ExtractionResult,
    ExtractOptions,
    TextBuilder,
    UnsupportedFileError,
    unreadable,
)
from .detect import office_main_part
from .formats import DOCX
from .html import html_lines
from .mail import part_text
from .text import decode

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_P, _R, _T = f"{_W}p", f"{_W}r", f"{_W}t"
_SYM = f"{_W}sym"
_RUN_PIECES = {
    f"{_W}tab": "\t",
    f"{_W}ptab": "\t",  # the alignment tab of Word's built-in headers and footers
    f"{_W}br": "\n",
    f"{_W}cr": "\n",
    f"{_W}noBreakHyphen": "-",
}
_MATH_T = "{http://schemas.openxmlformats.org/officeDocument/2006/math}t"  # equations
_ALT_CHUNK = f"{_W}altChunk"
_R_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
# Text moved with tracked changes on stays at its old place, struck out.
_MOVED_AWAY = f"{_W}moveFrom"
_RPR, _VAL = f"{_W}rPr", f"{_W}val"
_HIDING = (f"{_W}vanish", f"{_W}specVanish")  # Font > Hidden
_OFF = frozenset({"0", "false", "off"})
# The Symbol font's letters and signs (Adobe's Symbol encoding), where Unicode has
# them; Word stores its codes as F020-F0FF. Its other codes below 0x7F are ASCII's,
# and it has no character at 0x7F-0x9F and 0xF0 (the Mac's Apple logo) or 0xFF.
_SYMBOL_FONT = {
    **dict(zip(range(0x41, 0x5B), "ΑΒΧΔΕΦΓΗΙϑΚΛΜΝΟΠΘΡΣΤΥςΩΞΨΖ", strict=True)),
    **dict(zip(range(0x61, 0x7B), "αβχδεφγηιϕκλμνοπθρστυϖωξψζ", strict=True)),
    0x22: "∀", 0x24: "∃", 0x27: "∋", 0x2A: "∗", 0x2D: "−", 0x40: "≅", 0x5C: "∴",
    0x5E: "⊥", 0xA3: "≤", 0xA5: "∞", 0xAB: "↔", 0xAC: "←", 0xAD: "↑", 0xAE: "→",
    0xAF: "↓", 0xB0: "°", 0xB1: "±", 0xB3: "≥", 0xB4: "×", 0xB5: "∝", 0xB6: "∂",
    0xB7: "•", 0xB8: "÷", 0xB9: "≠", 0xBA: "≡", 0xBB: "≈", 0xC5: "⊕", 0xC7: "∩",
    0xC8: "∪", 0xCE: "∈", 0xD6: "√", 0xD8: "¬", 0xDE: "⇒", 0xE5: "∑", 0xF2: "∫",
    **dict.fromkeys((*range(0x7F, 0xA0), 0xF0, 0xFF), ""),
}  # fmt: skip


def extract_docx(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """Extract the text of a Word (.docx) file in reading order, up to the limit."""
    page_count = _check_archive(path)
    document = _open_document(path)
    body = document.element.find(f"{_W}body")
    if body is None:
        raise CorruptFileError(
            "its Word document has no body, the part that holds its text"
        )
    hidden = _hidden_styles(document)
    text = TextBuilder(options.max_chars)
    # Lazily, part by part: reading stops once the limit is reached.
    parts = chain(
        _paragraphs(body, document.part, hidden),
        _notes(document, hidden),
        _headers_and_footers(document, hidden),
    )
    text.extend(parts)
    extracted = text.text.strip("\n")
    return ExtractionResult(
        text=extracted,
        page_count=page_count,
        confidence=1.0 if extracted.strip() else 0.0,
        extractor="docx",
        note=text.note,
    )


def _check_archive(path: str | os.PathLike[str]) -> int | None:
    """Refuse broken zips, Strict OOXML, zip bombs and DTDs; return the saved page
    count."""
    with checked_zip(path, "Word (.docx)", _main_part(path)) as archive:
        names = set(archive.namelist())
        strict = strict_ooxml(archive)
        app = archive.read("docProps/app.xml") if "docProps/app.xml" in names else b""
        with_dtd = any(declares_dtd(archive, name) for name in names)
    if strict:
        raise strict_refusal("Word", "Word Document (.docx)")
    if with_dtd:
        # Refused before python-docx parses it, whose parser would report the
        # expansion of an entity bomb in libxml2's words.
        raise CorruptFileError(f"its XML cannot be parsed ({DTD_REASON})")
    match = re.search(rb"<Pages>(\d+)</Pages>", app)
    return (int(match.group(1)) or None) if match else None


def _main_part(path: str | os.PathLike[str]) -> str:
    """The member the package names as its main part (Word Online saves
    word/document2.xml), else the usual one; checked_zip judges a broken archive."""
    try:
        with zipfile.ZipFile(path) as archive:
            return office_main_part(archive) or DOCX.zip_member
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        return DOCX.zip_member


def _open_document(path: str | os.PathLike[str]) -> Any:
    from docx.opc.exceptions import PackageNotFoundError
    from docx.opc.part import PartFactory
    from docx.package import Package
    from docx.parts.document import DocumentPart

    # A macro-enabled document (.docm) and templates (.dotx, .dotm) hold the same
    # WordprocessingML as a .docx, which python-docx opens only under its own
    # content type. The macros are never run, only the text is read.
    for content_type in DOCX.main_part_types:
        PartFactory.part_type_for.setdefault(content_type, DocumentPart)
    try:
        part = Package.open(os.fspath(path)).main_document_part
    except (PackageNotFoundError, KeyError, zipfile.BadZipFile) as exc:
        raise CorruptFileError("its Word package structure is incomplete") from exc
    except Exception as exc:  # lxml.etree.XMLSyntaxError and friends
        raise unreadable(exc, "its Word content cannot be read") from exc
    if part.content_type not in DOCX.main_part_types:
        raise UnsupportedFileError(
            "This Word package holds no document the reader knows "
            f"({part.content_type}); save it as .docx."
        )
    return part.document


def _paragraphs(root: Any, part: Any, hidden: dict[str, bool]) -> Iterator[str]:
    """Yield each w:p's shown text in document order, so table cells come row by
    row; a page embedded whole (w:altChunk) where it stands. `hidden`: the styles
    that hide or show their text."""
    # Text read elsewhere: mc:Fallback repeats the mc:Choice content (e.g. text
    # boxes) for old readers, w:moveFrom is moved text at its old place.
    for repeated in list(root.iter(_FALLBACK, _MOVED_AWAY)):
        repeated.getparent().remove(repeated)
    for p in root.iter(_P, _ALT_CHUNK):
        if p.tag == _ALT_CHUNK:
            yield from _chunk_lines(part, p.get(_R_ID))
            continue
        # A text box nests whole paragraphs inside a run; those are yielded on their
        # own turn, so skip their pieces here. (Rare, hence the cheap check first.)
        nested = next(islice(p.iter(_P), 1, 2), None) is not None
        # Hidden by its style, unless a run says otherwise. (A w:vanish in the
        # paragraph's own w:pPr/w:rPr hides only its mark, not its text.)
        style = p.find(f"{_W}pPr/{_W}pStyle")
        by_style = hidden.get(style.get(_VAL, "")) if style is not None else None
        pieces = []
        for el in p.iter(_T, _MATH_T, _SYM, *_RUN_PIECES):
            if nested and _owning_paragraph(el) is not p:
                continue
            run = el.getparent()  # w:r, or m:r in an equation
            if _is_hidden(run, by_style, hidden):
                continue
            if el.tag == _T or el.tag == _MATH_T:
                pieces.append(el.text or "")
            elif el.tag == _SYM:
                pieces.append(_symbol(el))
            elif run.tag == _R:  # w:tab also defines tab stops in w:pPr
                pieces.append(_RUN_PIECES[el.tag])
        yield "".join(pieces)


def _is_hidden(run: Any, by_style: bool | None, hidden: dict[str, bool]) -> bool:
    """True for a run formatted as hidden text: by itself, else by its character
    style, else by its paragraph's style. (w:webHidden hides only in Web layout.)"""
    properties = run.find(_RPR)
    if properties is not None:
        own = _flag(properties)
        if own is not None:
            return own
        style = properties.find(f"{_W}rStyle")
        if style is not None and style.get(_VAL) in hidden:
            return hidden[style.get(_VAL)]
    return bool(by_style)


def _flag(properties: Any) -> bool | None:
    """Whether w:rPr (or a style's) hides text: True, False, or None if it says not."""
    for element in properties.iterchildren(*_HIDING):
        return element.get(_VAL, "true").lower() not in _OFF
    return None


def _hidden_styles(document: Any) -> dict[str, bool]:
    """The styles that set hidden text on or off, through the styles they are
    based on."""
    try:
        styles = document.part.styles.element
    except (KeyError, ValueError, AttributeError):  # a broken styles part
        return {}
    own: dict[str, bool | None] = {}
    based_on: dict[str, str] = {}
    for style in styles.iterchildren(f"{_W}style"):
        name = style.get(f"{_W}styleId", "")
        properties = style.find(_RPR)
        own[name] = _flag(properties) if properties is not None else None
        parent = style.find(f"{_W}basedOn")
        if parent is not None:
            based_on[name] = parent.get(_VAL, "")
    resolved = {}
    for name in own:
        seen = set()
        current: str | None = name
        while current in own and current not in seen:  # a loop ends it
            seen.add(current)
            if own[current] is not None:
                resolved[name] = bool(own[current])
                break
            current = based_on.get(current)
    return resolved


def _symbol(sym: Any) -> str:
    """The character a w:sym shows: a Symbol-font letter or sign as Unicode where
    it has one, else the code as it is (a private-use character for fonts such as
    Wingdings)."""
    try:
        code = int(sym.get(f"{_W}char", ""), 16)
    except ValueError:
        return ""
    if (sym.get(f"{_W}font") or "").lower() == "symbol":
        low = code - 0xF000 if 0xF020 <= code <= 0xF0FF else code
        if 0x20 <= low < 0x7F:
            return _SYMBOL_FONT.get(low, chr(low))
        if low in _SYMBOL_FONT:  # else a sign kept as its private-use character
            return _SYMBOL_FONT[low]
    if code < 0x20 or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
        return ""
    return chr(code)


def _chunk_lines(part: Any, rid: str | None) -> Iterator[str]:
    """The text of an "alternative format chunk": HTML, XHTML or MHT that Word
    converts on opening (tools that make Word files from web pages write them).
    RTF and older Word chunks are not read."""
    try:
        chunk = part.related_parts[rid]
    except KeyError:  # a dangling reference: the rest stands
        return
    kind, content = chunk.content_type, chunk.blob
    if kind == "message/rfc822":  # MHT: the page inside a message
        message = BytesParser(policy=policy.default).parsebytes(content)
        page = message.get_body(preferencelist=("html", "plain"))
        if page is None:
            return
        kind, content = page.get_content_type(), part_text(page)
    if "html" in kind:
        yield from html_lines(content)[0]
    elif kind == "text/plain":
        text = decode(content) if isinstance(content, bytes) else content
        yield from text.splitlines()


def _owning_paragraph(el: Any) -> Any:
    while el is not None and el.tag != _P:
        el = el.getparent()
    return el


def _notes(document: Any, hidden: dict[str, bool]) -> Iterator[str]:
    """The footnotes and endnotes: the parts the main part relates as such,
    whatever their names."""
    from docx.opc.constants import RELATIONSHIP_TYPE as RT
    from docx.oxml import parse_xml

    seen = set()
    for rel in document.part.rels.values():
        if rel.reltype not in (RT.FOOTNOTES, RT.ENDNOTES) or rel.is_external:
            continue
        part = rel.target_part
        if part.partname in seen:
            continue
        seen.add(part.partname)
        notes = _paragraphs(parse_xml(part.blob), part, hidden)
        yield from (t for t in notes if t.strip())


def _headers_and_footers(document: Any, hidden: dict[str, bool]) -> Iterator[str]:
    seen: set[str] = set()
    for section in document.sections:
        for hf in _section_parts(section):
            try:
                # A linked header has no definition of its own: it repeats the previous one.
                if hf.is_linked_to_previous:
                    continue
                part = hf.part
            except (KeyError, ValueError):  # a dangling reference: keep the body text
                continue
            if part.partname in seen:
                continue
            seen.add(part.partname)
            yield from _paragraphs(part.element, part, hidden)


def _section_parts(section: Any) -> Iterable[Any]:
    return (
        section.header,
        section.footer,
        section.first_page_header,
        section.first_page_footer,
        section.even_page_header,
        section.even_page_footer,
    )
