"""OpenDocument text (ODT) extraction with odfdo: headings and paragraphs in order."""

from __future__ import annotations

import os
from typing import Any

from .archive import checked_zip
from .base import (
    EncryptedFileError,
    ExtractionResult,
    ExtractOptions,
    TextBuilder,
    unreadable,
)

# Note bodies and text boxes sit inside a paragraph, whose text already holds theirs.
_BLOCKS = " | ".join(
    f"//text:{tag}[not(ancestor::text:note-body) and not(ancestor::draw:text-box)]"
    for tag in ("h", "p")
)


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
            "This OpenDocument file is protected by a password, so its text cannot "
            "be read; save a copy without a password and upload that."
        )
    document = _open(path)
    text = TextBuilder(options.max_chars)
    try:  # odfdo parses content.xml only now, when the body is first read
        text.extend(block.inner_text for block in document.body.get_elements(_BLOCKS))
    except (KeyError, ValueError, SyntaxError) as exc:  # lxml's XMLSyntaxError too
        raise unreadable(exc, "its OpenDocument content cannot be read") from exc
    body = text.text.strip("\n")
    return ExtractionResult(
        text=body,
        page_count=_page_count(document),
        confidence=1.0 if body.strip() else 0.0,
        extractor="odt",
        note=text.note,
    )


def _open(path: str | os.PathLike[str]) -> Any:
    from odfdo import Document

    try:
        return Document(os.fspath(path))
    except Exception as exc:  # lxml.etree.XMLSyntaxError, KeyError and friends
        raise unreadable(exc, "its OpenDocument content cannot be read") from exc


def _page_count(document: Any) -> int | None:
    try:
        count = document.meta.statistic.get("meta:page-count")
    except Exception:  # noqa: BLE001 - a missing or odd meta.xml costs only the count
        return None
    return count or None
