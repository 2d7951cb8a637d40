"""EPUB e-book extraction: the book's title, then the documents of its spine in
reading order, each read as an HTML page is (html_lines)."""

from __future__ import annotations

import os
import posixpath
import zipfile
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

from .archive import checked_zip
from .base import (
    CorruptFileError,
    EncryptedFileError,
    ExtractionResult,
    ExtractOptions,
    RefusedFileError,
    TextBuilder,
    join_notes,
    parse_xml,
    unreadable,
)
from .html import decode_html, html_lines

_CONTAINER = "META-INF/container.xml"
_ENCRYPTION = "META-INF/encryption.xml"
_PACKAGE_TYPE = "application/oebps-package+xml"
# The spine's documents read; others (SVG pages, DTBook) hold no HTML.
_CHAPTER_TYPES = {"application/xhtml+xml", "text/html"}
# Fonts are "encrypted" to tie them to the book, not to lock its text.
_FONT_OBFUSCATION = {
    "http://www.idpf.org/2008/embedding",
    "http://ns.adobe.com/pdf/enc#RC",
}
_XMLENC = "{http://www.w3.org/2001/04/xmlenc#}"
# Bounds beyond the archive's own (checked_zip): a spine may name one document a
# million times, and a whole book in one document is a few megabytes.
_MAX_INDEX_BYTES = 16 * 1024 * 1024  # container.xml, the package, encryption.xml
_MAX_CHAPTER_BYTES = 50 * 1024 * 1024  # an HTML upload's limit
_MAX_CHAPTERS = 10_000
_MB = 1024 * 1024
# What LibreOffice's export (libepubgen) writes as the title of a document that
# has none.
_PLACEHOLDER_TITLES = {"unknown title"}
_DRM = (
    "This e-book is protected by DRM (its chapters are encrypted), so its text "
    "cannot be read; upload a copy without DRM."
)


def extract_epub(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """The book's title, then each chapter's text, a blank line between chapters."""
    text = TextBuilder(options.max_chars)
    notes: list[str] = []
    with checked_zip(path, "E-book (.epub)", _CONTAINER) as archive:
        members = {info.filename: info for info in archive.infolist()}
        package_name = _package_name(archive, members)
        package = _parse(_read_index(archive, members[package_name]), package_name)
        chapters = _spine(package, package_name, members, notes)
        locked = _encrypted(archive, members)
        if any(chapter.filename in locked for chapter in chapters):
            raise EncryptedFileError(_DRM)
        text.extend(_lines(archive, _title(package), chapters, notes))
    body = text.text.strip("\n")
    return ExtractionResult(
        text=body,
        page_count=None,
        confidence=1.0 if body.strip() else 0.0,
        extractor="epub",
        note=join_notes(text.note, *dict.fromkeys(notes)),
    )


def _read_index(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """One of the book's XML indexes, refused when larger than any real one."""
    if info.file_size > _MAX_INDEX_BYTES:
        raise RefusedFileError(
            f"This e-book is refused: its {info.filename} is "
            f"{info.file_size // _MB:,} MB, more than the "
            f"{_MAX_INDEX_BYTES // _MB} MB a book's index takes."
        )
    return archive.read(info)


def _parse(data: bytes, name: str) -> Any:
    from lxml import etree

    try:
        return parse_xml(data)
    except etree.XMLSyntaxError as exc:
        raise unreadable(exc, f"its {name} cannot be read") from exc


def _package_name(archive: zipfile.ZipFile, members: dict[str, Any]) -> str:
    """The package document (content.opf) container.xml points to; the archive's
    first .opf when it points to none the archive holds."""
    container = _parse(_read_index(archive, members[_CONTAINER]), _CONTAINER)
    rootfiles = list(container.iter("{*}rootfile"))
    rootfiles.sort(key=lambda rootfile: rootfile.get("media-type") != _PACKAGE_TYPE)
    for rootfile in rootfiles:
        name = _member(rootfile.get("full-path") or "", members)
        if name is not None:
            return name
    name = next((name for name in members if name.lower().endswith(".opf")), None)
    if name is None:
        raise CorruptFileError(
            "it holds no package document (content.opf), which lists its chapters"
        )
    return name


def _member(name: str, members: dict[str, Any]) -> str | None:
    """The archive's member of this path (its case ignored when no member has it
    exactly, as books made on Windows need), else None."""
    name = posixpath.normpath(unquote(name).lstrip("/")) if name else ""
    if name in members:
        return name
    lowered = name.lower()
    return next((member for member in members if member.lower() == lowered), None)


def _title(package: Any) -> str:
    """The book's (first) dc:title, in OEB 1's dc-metadata too; "" for none, or
    for the placeholder of a book saved without one."""
    metadata = package.find("{*}metadata")
    title = None if metadata is None else next(metadata.iter("{*}title"), None)
    shown = " ".join((title.text or "").split()) if title is not None else ""
    return "" if shown.lower() in _PLACEHOLDER_TITLES else shown


def _spine(
    package: Any, package_name: str, members: dict[str, Any], notes: list[str]
) -> list[zipfile.ZipInfo]:
    """The members of the spine's HTML documents, each once: those in the reading
    order first, then those out of it (linear="no": notes, answers, pop-ups)."""
    base = posixpath.dirname(package_name)
    items = {item.get("id"): item for item in package.iterfind("{*}manifest/{*}item")}
    refs = list(package.iterfind("{*}spine/{*}itemref"))
    refs.sort(key=lambda ref: ref.get("linear") == "no")
    chapters: dict[str, zipfile.ZipInfo] = {}
    missing = 0
    for ref in refs:
        item = items.get(ref.get("idref"))
        if item is None or item.get("media-type") not in _CHAPTER_TYPES:
            continue
        href = (item.get("href") or "").partition("#")[0]
        name = _member(posixpath.join(base, unquote(href)), members) if href else None
        if name is None:
            missing += 1
        elif name not in chapters:
            if len(chapters) == _MAX_CHAPTERS:
                notes.append(
                    f"Only the first {_MAX_CHAPTERS:,} chapters of the book were read."
                )
                break
            chapters[name] = members[name]
    if missing:
        notes.append(f"{missing:,} of the chapters the book lists are missing from it.")
    return list(chapters.values())


def _encrypted(archive: zipfile.ZipFile, members: dict[str, Any]) -> set[str]:
    """The members META-INF/encryption.xml says are encrypted (DRM: Adobe's,
    Apple's, Readium LCP), fonts merely obfuscated left out."""
    if _ENCRYPTION not in members:
        return set()
    root = _parse(_read_index(archive, members[_ENCRYPTION]), _ENCRYPTION)
    locked = set()
    for data in root.iter(f"{_XMLENC}EncryptedData"):
        method = data.find(f"{_XMLENC}EncryptionMethod")
        if method is not None and method.get("Algorithm") in _FONT_OBFUSCATION:
            continue
        for reference in data.iter(f"{_XMLENC}CipherReference"):
            name = _member(reference.get("URI") or "", members)
            if name is not None:
                locked.add(name)
    return locked


def _lines(
    archive: zipfile.ZipFile,
    title: str,
    chapters: list[zipfile.ZipInfo],
    notes: list[str],
) -> Iterator[str]:
    """The title, then each chapter's lines and a blank line; read one chapter at a
    time, as far as the text limit asks."""
    if title:
        yield title
        yield ""
    for chapter in chapters:
        if chapter.flag_bits & 0x1:  # a ZIP password on the member itself
            raise EncryptedFileError(_DRM)
        if chapter.file_size > _MAX_CHAPTER_BYTES:
            notes.append(
                f"A chapter over {_MAX_CHAPTER_BYTES // _MB} MB ({chapter.filename}) "
                "was not read."
            )
            continue
        markup = decode_html(archive.read(chapter))
        try:
            # A chapter's <title> is the book's or the chapter's again: the book's
            # title is read once from the package, chapters' headings are text.
            lines, note = html_lines(markup, with_title=False)
        except CorruptFileError:  # one damaged chapter costs its own text only
            notes.append(f"A chapter ({chapter.filename}) could not be read.")
            continue
        if note:
            notes.append(note)
        if lines:
            yield from lines
            yield ""
