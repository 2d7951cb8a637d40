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
_PAGE_MARGINS = tuple(
    f"{_STYLE}{where}{page}"
    for where in ("header", "footer")
    for page in ("", "-first", "-left")
)
_SPACE, _TAB, _BREAK = f"{_TEXT}s", f"{_TEXT}tab", f"{_TEXT}line-break"
_MAX_SPACES = 1024
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
    text = TextBuilder(options.max_chars)
    # Headers and footers after the body and notes, as DOCX's.
    text.extend(chain(_blocks(body), _headers_and_footers(styles)))
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


def _headers_and_footers(styles: bytes) -> Iterator[str]:
    """The master pages' headers and footers (styles.xml), each text once."""
    if not styles:
        return
    seen = set()
    for part in _parse(styles).iter(*_PAGE_MARGINS):
        for block in part.iter(*_BLOCKS):
            line = _text(block)
            if line.strip() and line not in seen:
                seen.add(line)
                yield line


def _blocks(root: Any) -> Iterator[str]:
    """Each heading and paragraph of the body in order, then the notes' paragraphs."""
    notes = []
    body = root.find(f"{_OFFICE}body")
    for block in (root if body is None else body).iter(*_BLOCKS):
        owner = _aside(block)
        if owner is None:
            yield _text(block)
        elif owner.tag == _NOTE:
            notes.append(_text(block))
    yield from notes


def _aside(block: Any) -> Any:
    """The comment, note or tracked change that holds a block, if any."""
    for ancestor in block.iterancestors():
        if ancestor.tag in _ASIDE:
            return ancestor
    return None


def _text(block: Any) -> str:
    """A paragraph's text as the page shows it: spaces, tabs and line breaks
    written out, what stands aside left out, and drawings (text boxes, shapes),
    whose paragraphs are read on their own turn."""
    pieces = [block.text or ""]
    for child in block:
        tag = child.tag
        if tag == _SPACE:
            count = child.get(f"{_TEXT}c", "1")
            # Capped: a hostile file may ask for a billion spaces.
            pieces.append(
                " " * (min(int(count), _MAX_SPACES) if count.isdigit() else 1)
            )
        elif tag == _TAB:
            pieces.append("\t")
        elif tag == _BREAK:
            pieces.append("\n")
        elif isinstance(tag, str) and tag not in _ASIDE and not tag.startswith(_DRAW):
            pieces.append(_text(child))  # spans, links, fields
        pieces.append(child.tail or "")
    return "".join(pieces)
