"""PowerPoint (.pptx) extraction with python-pptx: slide text, tables, SmartArt and
notes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from .archive import check_zip
from .base import (
    ExtractionResult,
    ExtractOptions,
    TextBuilder,
    parse_xml,
    unreadable,
)

_DGM = "{http://schemas.openxmlformats.org/drawingml/2006/diagram}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_DATA_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}dm"


def extract_pptx(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """Each slide's text in shape order (groups and tables included), then its notes."""
    check_zip(path, "PowerPoint (.pptx)", "ppt/presentation.xml")
    presentation = _open(path)
    text = TextBuilder(options.max_chars)
    try:
        text.extend(_lines(presentation))
        slides = len(presentation.slides)
    except (KeyError, ValueError, AttributeError, SyntaxError) as exc:
        raise unreadable(exc, "its slides cannot be read") from exc
    body = text.text.strip("\n")
    return ExtractionResult(
        text=body,
        page_count=slides or None,
        confidence=1.0 if body.strip() else 0.0,
        extractor="pptx",
        note=text.note,
    )


def _open(path: str | os.PathLike[str]) -> Any:
    import pptx

    try:
        return pptx.Presentation(os.fspath(path))
    except Exception as exc:  # PackageNotFoundError, KeyError, XML errors
        raise unreadable(exc, "its presentation cannot be read") from exc


def _lines(presentation: Any) -> Iterator[str]:
    for slide in presentation.slides:
        for shape in slide.shapes:
            yield from _shape_lines(shape)
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                yield notes.text
        yield ""


def _shape_lines(shape: Any) -> Iterator[str]:
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
        for child in shape.shapes:
            yield from _shape_lines(child)
    elif shape.has_text_frame:
        for paragraph in shape.text_frame.paragraphs:
            if paragraph.text.strip():
                yield paragraph.text
    elif getattr(shape, "has_table", False):
        for row in shape.table.rows:
            cells = [cell.text for cell in row.cells]
            if any(cell.strip() for cell in cells):
                yield "\t".join(cells)
    else:
        yield from _diagram_lines(shape)


def _diagram_lines(shape: Any) -> Iterator[str]:
    """A SmartArt diagram's text: python-pptx sees a graphic frame without any;
    the text is in the diagram's data part, a paragraph per point."""
    from lxml import etree

    ids = shape.element.find(f".//{_DGM}relIds")
    if ids is None:
        return
    try:
        data = shape.part.related_part(ids.get(_DATA_REL)).blob
    except (KeyError, AttributeError):  # a dangling reference: the rest stands
        return
    try:
        root = parse_xml(data)
    except etree.XMLSyntaxError:  # a damaged diagram costs its text, not the deck's
        return
    for point in root.iter(f"{_DGM}pt"):
        body = point.find(f"{_DGM}t")
        if body is None or point.get("type", "node") not in ("node", "asst"):
            continue
        for paragraph in body.iter(f"{_A}p"):
            line = "".join(t.text or "" for t in paragraph.iter(f"{_A}t"))
            if line.strip():
                yield line
