"""OpenDocument text (ODT) extraction: headings and paragraphs in order, then notes,
headers and footers.

The text is walked here, in content.xml as lxml parses it: odfdo's text of a
paragraph carries its opinions (links as Markdown, comments with their author and
date, whose date it parses, so a comment dated 0000-00-00 as LibreOffice writes
it failed the file), and the deleted text of tracked changes sits in the body.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from itertools import chain
from typing import Any

from .archive import checked_zip
from .base import (
    DTD_REASON,
    CorruptFileError,
    EncryptedFileError,
    ExtractionResult,
    ExtractOptions,
    TextBuilder,
    parse_xml,
    unreadable,
)

_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"
_BLOCKS = (f"{_TEXT}p", f"{_TEXT}h")
# Not the reader's text where they stand: comments, deleted text kept for
# tracked changes, and notes (read after the body, as Word's are).
_NOTE = f"{_TEXT}note"
_ASIDE = {f"{_OFFICE}annotation", f"{_TEXT}tracked-changes", _NOTE}
_STYLE = "{urn:oasis:names:tc:opendocument:xmlns:style:1.0}"
_FO = "{urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0}"
_PAGE_MARGINS = tuple(
    f"{_STYLE}{where}{page}"
    for where in ("header", "footer")
    for page in ("", "-first", "-left")
)
_SPACE, _TAB, _BREAK = f"{_TEXT}s", f"{_TEXT}tab", f"{_TEXT}line-break"
_MAX_SPACES = 1024
# ODF 1.2 §6.1.2: in a paragraph, runs of these collapse to one space, and none
# counts at its start or end; text:s, text:tab and text:line-break are the real ones.
_WHITE_SPACE = re.compile(r"[ \t\r\n]+")
# Hidden text: a section, a paragraph or characters (their style's Hidden
# attribute), a hidden-paragraph or hidden-text field whose condition held.
_SECTION = f"{_TEXT}section"
_STYLED = {f"{_TEXT}p": "paragraph", f"{_TEXT}h": "paragraph", f"{_TEXT}span": "text"}
_HIDDEN_PARAGRAPH, _HIDDEN_TEXT = f"{_TEXT}hidden-paragraph", f"{_TEXT}hidden-text"
_DISPLAY = (f"{_TEXT}display", f"{_FO}display")
_PAGE_COUNT = re.compile(rb'meta:page-count="(\d+)"')


def extract_odt(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """Extract the text of an OpenDocument text file, up to the limit."""
    with checked_zip(path, "OpenDocument text (.odt)", "content.xml") as archive:
        names = set(archive.namelist())
        manifest = (
            archive.read("META-INF/manifest.xml")
            if "META-INF/manifest.xml" in names
            else b""
        )
        if b"encryption-data" in manifest:
            raise EncryptedFileError(
                "This OpenDocument file is protected by a password, so its text "
                "cannot be read; save a copy without a password and upload that."
            )
        content = archive.read("content.xml")
        styles = archive.read("styles.xml") if "styles.xml" in names else b""
        meta = archive.read("meta.xml") if "meta.xml" in names else b""
    body = _parse(content)
    styles_root = _parse(styles) if styles else None
    # Automatic styles are the part's own; common ones (styles.xml) serve both.
    common = None if styles_root is None else styles_root.find(f"{_OFFICE}styles")
    body_hidden = _hidden_styles(common, body.find(f"{_OFFICE}automatic-styles"))
    text = TextBuilder(options.max_chars)
    # Headers and footers after the body and notes, as DOCX's.
    text.extend(chain(_blocks(body, body_hidden), _headers_and_footers(styles_root)))
    body_text = text.text.strip("\n")
    count = _PAGE_COUNT.search(meta)
    return ExtractionResult(
        text=body_text,
        page_count=(int(count.group(1)) or None) if count else None,
        confidence=1.0 if body_text.strip() else 0.0,
        extractor="odt",
        note=text.note,
    )


def _parse(xml: bytes) -> Any:
    """The root of one of the package's XML parts."""
    from lxml import etree

    try:
        root = parse_xml(xml)
    except etree.XMLSyntaxError as exc:
        raise unreadable(exc, "its OpenDocument content cannot be read") from exc
    if root.getroottree().docinfo.doctype:
        raise CorruptFileError(f"its XML cannot be parsed ({DTD_REASON})")
    return root


def _hidden_styles(*parts: Any) -> frozenset[tuple[str, str]]:
    """The (family, name) of each style whose text is hidden (Format › Character ›
    Hidden), by its own text properties or those it inherits."""
    styles: dict[tuple[str, str], tuple[str | None, str | None]] = {}
    for part in parts:
        if part is None:
            continue
        for style in part.iter(f"{_STYLE}style"):
            key = (style.get(f"{_STYLE}family", ""), style.get(f"{_STYLE}name", ""))
            display = None
            props = style.find(f"{_STYLE}text-properties")
            if props is not None:
                display = next(filter(None, map(props.get, _DISPLAY)), None)
            styles[key] = (display, style.get(f"{_STYLE}parent-style-name"))
    hidden = set()
    for key in styles:
        current, seen = key, set()
        while current in styles and current not in seen:  # a loop ends the walk
            seen.add(current)
            display, parent = styles[current]
            if display is not None:
                if display == "none":
                    hidden.add(key)
                break
            current = (key[0], parent or "")
    return frozenset(hidden)


def _hidden(el: Any, hidden_styles: frozenset[tuple[str, str]]) -> bool:
    """True when LibreOffice does not show the element's text."""
    tag = el.tag
    if tag == _SECTION:
        return el.get(f"{_TEXT}display") == "none"
    if tag == _HIDDEN_TEXT:
        return el.get(f"{_TEXT}is-hidden") == "true"
    family = _STYLED.get(tag)
    if family is None:
        return False
    if (family, el.get(f"{_TEXT}style-name", "")) in hidden_styles:
        return True
    return family == "paragraph" and any(
        field.get(f"{_TEXT}is-hidden") == "true"
        and next(field.iterancestors(*_BLOCKS)) is el
        for field in el.iter(_HIDDEN_PARAGRAPH)
    )


def _headers_and_footers(styles: Any) -> Iterator[str]:
    """The master pages' headers and footers (styles.xml), each text once."""
    if styles is None:
        return
    hidden_styles = _hidden_styles(styles)
    seen = set()
    for part in styles.iter(*_PAGE_MARGINS):
        for block in part.iter(*_BLOCKS):
            if _shown(block, hidden_styles):
                line = _text(block, hidden_styles)
                if line.strip() and line not in seen:
                    seen.add(line)
                    yield line


def _blocks(root: Any, hidden_styles: frozenset[tuple[str, str]]) -> Iterator[str]:
    """Each heading and paragraph of the body in order, then the notes' paragraphs."""
    notes = []
    body = root.find(f"{_OFFICE}body")
    for block in (root if body is None else body).iter(*_BLOCKS):
        if not _shown(block, hidden_styles):
            continue
        owner = _aside(block)
        if owner is None:
            yield _text(block, hidden_styles)
        elif owner.tag == _NOTE:
            notes.append(_text(block, hidden_styles))
    yield from notes


def _shown(block: Any, hidden_styles: frozenset[tuple[str, str]]) -> bool:
    """False for a block hidden itself or inside something hidden (a section, a
    paragraph or characters holding the text box it stands in)."""
    return not any(
        _hidden(el, hidden_styles) for el in chain((block,), block.iterancestors())
    )


def _aside(block: Any) -> Any:
    """The comment, note or tracked change that holds a block, if any."""
    for ancestor in block.iterancestors():
        if ancestor.tag in _ASIDE:
            return ancestor
    return None


def _text(block: Any, hidden_styles: frozenset[tuple[str, str]]) -> str:
    """A paragraph's text as the page shows it: white space collapsed, spaces,
    tabs and line breaks written out, what stands aside or is hidden left out,
    and drawings (text boxes, shapes), whose paragraphs are read on their own turn."""
    pieces: list[tuple[str, bool]] = []
    _pieces(block, hidden_styles, pieces)
    return _collapse(pieces)


def _pieces(
    el: Any, hidden_styles: frozenset[tuple[str, str]], pieces: list[tuple[str, bool]]
) -> None:
    """Append the element's text as (text, written out) pieces: written-out ones
    (text:s, text:tab, text:line-break) keep their white space, the rest collapse."""
    pieces.append((el.text or "", False))
    for child in el:
        tag = child.tag
        if tag == _SPACE:
            count = child.get(f"{_TEXT}c", "1")
            # Capped: a hostile file may ask for a billion spaces.
            spaces = min(int(count), _MAX_SPACES) if count.isdigit() else 1
            pieces.append((" " * spaces, True))
        elif tag == _TAB:
            pieces.append(("\t", True))
        elif tag == _BREAK:
            pieces.append(("\n", True))
        elif (
            isinstance(tag, str)
            and tag not in _ASIDE
            and not tag.startswith(_DRAW)
            and not _hidden(child, hidden_styles)
        ):
            _pieces(child, hidden_styles, pieces)  # spans, links, fields
        pieces.append((child.tail or "", False))


def _collapse(pieces: list[tuple[str, bool]]) -> str:
    """The pieces joined, white space collapsed as ODF 1.2 §6.1.2 says: a run is
    one space, none at the paragraph's start or end (nor, for clean lines, at a
    line break's sides); written-out pieces are kept as they are."""
    out: list[str] = []
    drop_space = True  # at the start, and after a collapsed space
    ends_soft = False  # the text so far ends with a collapsed space
    for piece, written in pieces:
        if written:
            if piece == "\n":
                if ends_soft:
                    out[-1] = out[-1][:-1]
                drop_space = True
            else:
                drop_space = False
            ends_soft = False
            out.append(piece)
            continue
        piece = _WHITE_SPACE.sub(" ", piece)
        if drop_space and piece.startswith(" "):
            piece = piece[1:]
        if piece:
            out.append(piece)
            drop_space = ends_soft = piece.endswith(" ")
    if ends_soft:
        out[-1] = out[-1][:-1]
    return "".join(out)
