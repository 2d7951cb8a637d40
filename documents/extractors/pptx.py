"""PowerPoint extraction with python-pptx: slide text, tables, SmartArt, chart labels,
notes and comments of presentations, shows and templates (.pptx, .pptm, .ppsx, .ppsm,
.potx, .potm).

Hidden slides (Hide Slide) are not read, as hidden sheets and hidden text are not
anywhere: what the author took out of the document as it is shown is not its text.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable, Iterator
from typing import Any

from .archive import checked_zip, declares_dtd, strict_ooxml, strict_refusal
from .base import (
    DTD_REASON,
    CorruptFileError,
    ExtractionResult,
    ExtractOptions,
    TextBuilder,
    UnsupportedFileError,
    comment_line,
    damaged_xml,
    parse_xml,
    short_reason,
    table_row_lines,
    unreadable,
)
from .detect import MEMBER_ERRORS
from .drawing import chart_lines, chart_references, diagram_lines

_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
# Comments: a slide's classic ones (ppt/comments/comment1.xml), and the modern
# ones of PowerPoint 365, with their replies (ppt/comments/modernComment_….xml).
_MODERN = "{http://schemas.microsoft.com/office/powerpoint/2018/8/main}"
_COMMENTS = (
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships/comments",
    "http://schemas.microsoft.com/office/2018/10/relationships/comments",
)
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_BLIP = f"{_A}blip"
_EMBED = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}embed"
_SHAPE_TREES = (f"{_P}spTree", f"{_P}grpSp")
# A slide's show="0": hidden, left out when the deck is presented.
_HIDDEN_SLIDE = ("0", "false")
# Else a deck whose slides are all hidden would pass for a blank one.
ALL_SLIDES_HIDDEN = "No text: every slide is hidden, and hidden slides are not read."
# python-pptx gives a line break (a:br, Shift+Enter) as a vertical tab.
_VERTICAL_TAB = "\v"
# Shapes whose tops are this close (in EMU: a quarter of an inch) are on one row,
# read left to right: hand-placed boxes are rarely aligned to the point.
_ROW_TOLERANCE = 228_600
# The main part of a presentation, a macro-enabled one (.pptm), a show (.ppsx,
# .ppsm) and a template (.potx, .potm): the same PresentationML, which
# pptx.Presentation() opens only under the first two types. Macros are never run.
_MAIN_TYPES = (
    "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml",
    "application/vnd.ms-powerpoint.presentation.macroEnabled.main+xml",
    "application/vnd.openxmlformats-officedocument.presentationml.slideshow.main+xml",
    "application/vnd.ms-powerpoint.slideshow.macroEnabled.main+xml",
    "application/vnd.openxmlformats-officedocument.presentationml.template.main+xml",
    "application/vnd.ms-powerpoint.template.macroEnabled.main+xml",
)


def extract_pptx(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """Each slide's text in reading order (groups and tables included), its charts'
    labels, then its notes; a deck of pictures only is read by OCR."""
    _check_archive(path)
    presentation = _open(path)
    text = TextBuilder(options.max_chars)
    try:
        text.extend(_lines(presentation))
        slides = len(presentation.slides)
        all_hidden = slides > 0 and next(_shown_slides(presentation), None) is None
    except (KeyError, ValueError, AttributeError, SyntaxError) as exc:
        raise _unreadable(path, exc, "its slides cannot be read") from exc
    body = text.text.strip("\n")
    result = ExtractionResult(
        text=body,
        page_count=slides or None,
        confidence=1.0 if body.strip() else 0.0,
        extractor="pptx",
        note=ALL_SLIDES_HIDDEN if all_hidden else text.note,
    )
    # Imported here: Pillow and Tesseract are for decks that need them.
    from .image import with_pictures

    return with_pictures(result, _pictures(presentation), options)


def _check_archive(path: str | os.PathLike[str]) -> None:
    """Refuse broken zips, zip bombs and Strict Open XML."""
    with checked_zip(path, "PowerPoint (.pptx)", "ppt/presentation.xml") as archive:
        if strict_ooxml(archive):
            raise strict_refusal("PowerPoint", "PowerPoint Presentation (.pptx)")


def _open(path: str | os.PathLike[str]) -> Any:
    from pptx.opc.package import PartFactory
    from pptx.package import Package
    from pptx.parts.presentation import PresentationPart

    for content_type in _MAIN_TYPES:
        PartFactory.part_type_for.setdefault(content_type, PresentationPart)
    try:
        part = Package.open(os.fspath(path)).main_document_part
    except Exception as exc:  # PackageNotFoundError, KeyError, XML errors
        raise _unreadable(path, exc, "its presentation cannot be read") from exc
    if part.content_type not in _MAIN_TYPES:
        raise UnsupportedFileError(
            "This PowerPoint package holds no presentation the reader knows "
            f"({part.content_type}); save it as .pptx."
        )
    return part.presentation


def _unreadable(
    path: str | os.PathLike[str], exc: BaseException, what: str
) -> CorruptFileError:
    """As `unreadable`, but an entity bomb said plainly: libxml2 stops it with its
    own internals ("Maximum entity amplification factor exceeded, see …")."""
    if damaged_xml(exc) is not None and _declares_dtd(path):
        return CorruptFileError(f"its XML cannot be parsed ({DTD_REASON})")
    return unreadable(exc, what)


def _declares_dtd(path: str | os.PathLike[str]) -> bool:
    """Whether an XML part of the package declares a DTD (Office XML never does)."""
    try:
        with zipfile.ZipFile(path) as archive:
            return any(declares_dtd(archive, name) for name in archive.namelist())
    except MEMBER_ERRORS:
        return False  # the ZIP's own damage: the library's reason stands


def _shown_slides(presentation: Any) -> Iterator[tuple[int, Any]]:
    """The slides that are not hidden, with their numbers in the deck."""
    for number, slide in enumerate(presentation.slides, 1):
        if slide.element.get("show") not in _HIDDEN_SLIDE:
            yield number, slide


def _lines(presentation: Any) -> Iterator[str]:
    for number, slide in _shown_slides(presentation):
        yield from _shapes_lines(_slide_shapes(slide, number))
        yield from _chart_lines(slide)
        notes = _notes(slide, number)
        if notes.strip():
            yield notes
        yield from _comments(slide)
        yield ""


def _slide_shapes(slide: Any, number: int) -> list[Any]:
    from pptx.exc import InvalidXmlError

    try:
        _choose_alternatives(slide.element.cSld.spTree)
        return list(slide.shapes)
    except InvalidXmlError as exc:  # e.g. a slide without its p:cSld
        raise CorruptFileError(
            f"slide {number} cannot be read ({_reason(exc)})"
        ) from exc


def _pictures(presentation: Any) -> Iterator[Callable[[], bytes]]:
    """The shown slides' pictures in slide order, each once (pictures, picture fills and
    the slide's own background); not those of masters and layouts, which are logos
    more than pages, nor an mc:Fallback's copy of its mc:Choice."""
    seen = set()
    for _, slide in _shown_slides(presentation):
        for blip in slide.element.iter(_BLIP):
            if next(blip.iterancestors(f"{_MC}Fallback"), None) is not None:
                continue
            try:
                picture = slide.part.related_part(blip.get(_EMBED))
            except (KeyError, ValueError):  # none, dangling, or a linked file
                continue
            if not picture.content_type.startswith("image/"):
                continue
            if picture.partname not in seen:
                seen.add(picture.partname)
                yield lambda picture=picture: picture.blob


def _notes(slide: Any, number: int) -> str:
    from pptx.exc import InvalidXmlError

    if not slide.has_notes_slide:
        return ""
    try:
        notes = slide.notes_slide.notes_text_frame
    except InvalidXmlError as exc:
        raise CorruptFileError(
            f"the notes of slide {number} cannot be read ({_reason(exc)})"
        ) from exc
    return "" if notes is None else notes.text.replace(_VERTICAL_TAB, "\n")


def _comments(slide: Any) -> Iterator[str]:
    """The slide's comments, resolved ones too, each reply after its comment, as
    "Comment: …"; a damaged comments part costs its own comments only."""
    from lxml import etree

    seen = set()
    for rel in slide.part.rels.values():
        if rel.reltype not in _COMMENTS or rel.is_external:
            continue
        part = rel.target_part
        if part.partname in seen:
            continue
        seen.add(part.partname)
        try:
            root = parse_xml(part.blob)
        except (etree.XMLSyntaxError, ValueError):
            continue
        for comment in root.iterchildren(f"{_P}cm", f"{_MODERN}cm"):
            for text in _comment_texts(comment):
                if line := comment_line(text):
                    yield line


def _comment_texts(comment: Any) -> Iterator[str]:
    """A classic comment's text; a modern one's, then its replies'."""
    if comment.tag == f"{_P}cm":
        yield comment.findtext(f"{_P}text") or ""
        return
    body = f"{_MODERN}txBody"
    for text in (comment.find(body), *comment.iterfind(f"{_MODERN}replyLst/*/{body}")):
        if text is not None:
            yield "\n".join(
                "".join(run.text or "" for run in paragraph.iter(f"{_A}t"))
                for paragraph in text.iter(f"{_A}p")
            )


def _reason(exc: BaseException) -> str:
    # python-pptx quotes element names reST-style: "required ``<p:cSld>`` child …"
    return short_reason(exc).replace("``", "")


def _choose_alternatives(tree: Any) -> None:
    """Replace each mc:AlternateContent among the shapes by its first mc:Choice's
    shapes (without one, its mc:Fallback's): python-pptx sees neither, and PowerPoint
    wraps so a text box that holds an equation, all its other words with it."""
    for alternate in list(tree.iter(f"{_MC}AlternateContent")):
        parent = alternate.getparent()
        if parent is None or parent.tag not in _SHAPE_TREES:
            continue  # inside a discarded choice, or not among shapes
        chosen = alternate.find(f"{_MC}Choice")
        if chosen is None:
            chosen = alternate.find(f"{_MC}Fallback")
        at = parent.index(alternate)
        parent[at : at + 1] = [] if chosen is None else list(chosen)


def _shapes_lines(shapes: Any) -> Iterator[str]:
    """The lines of the shapes that have text, in reading order."""
    read = [(shape, lines) for shape in shapes if (lines := _read_shape(shape))]
    for _, lines in _reading_order(read):
        yield from lines


def _reading_order(read: list[tuple[Any, list[str]]]) -> list[tuple[Any, list[str]]]:
    positions = [_position(shape) for shape, _ in read]
    titles = [_is_title(shape) for shape, _ in read]
    placeholders = [shape.is_placeholder for shape, _ in read]
    return [read[at] for at in reading_order(positions, titles, placeholders)]


def reading_order(
    positions: list[tuple[int, int] | None],
    titles: list[bool],
    placeholders: list[bool],
) -> list[int]:
    """The order in which to read a slide's shapes, given each one's (top, left) in
    EMU, whether it is a title and whether it is a placeholder (PPTX's and ODP's):
    top to bottom, a row left to right, not in z-order (which "Bring to Front"
    changes). A title comes first and placeholders keep their order among
    themselves, the layout's (a comparison's heading above its own list); the others
    go between them by position. Where a position is unknown, z-order stands."""
    known = [position for position in positions if position is not None]
    if len(known) < len(positions):
        return list(range(len(positions)))
    first = (0, 0)  # a title's key: rows count from 1
    keys = [first] * len(known)
    row, row_top = 0, None
    for at in sorted(range(len(known)), key=known.__getitem__):
        top, left = known[at]
        if row_top is None or top - row_top > _ROW_TOLERANCE:
            row, row_top = row + 1, top
        keys[at] = first if titles[at] else (row, left)
    held = [at for at, placeholder in enumerate(placeholders) if placeholder]
    held.sort(key=lambda at: keys[at] != first)  # titles first
    others = sorted(
        (at for at, placeholder in enumerate(placeholders) if not placeholder),
        key=keys.__getitem__,
    )
    merged = []
    while held and others:
        source = others if keys[others[0]] < keys[held[0]] else held
        merged.append(source.pop(0))
    return merged + held + others


def _position(shape: Any) -> tuple[int, int] | None:
    """(top, left) in EMU, a placeholder's inherited from its layout; None if
    unknown."""
    from pptx.exc import InvalidXmlError

    try:
        top, left = shape.top, shape.left
    except (NotImplementedError, InvalidXmlError, ValueError, AttributeError, KeyError):
        return None  # e.g. a placeholder whose slide has lost its layout
    return None if top is None or left is None else (top, left)


def _is_title(shape: Any) -> bool:
    from pptx.enum.shapes import PP_PLACEHOLDER

    titles = (PP_PLACEHOLDER.TITLE, PP_PLACEHOLDER.CENTER_TITLE)
    return shape.is_placeholder and shape.placeholder_format.type in titles


def _read_shape(shape: Any) -> list[str]:
    """A shape's lines; one python-pptx cannot make sense of loses its own text, not
    the deck's."""
    from pptx.exc import InvalidXmlError

    try:
        return list(_shape_lines(shape))
    except (NotImplementedError, InvalidXmlError, ValueError):
        return []


def _shape_lines(shape: Any) -> Iterator[str]:
    from pptx.shapes.group import GroupShape

    # Not shape.shape_type: it raises for a shape without geometry (an empty
    # p:spPr, as Google Slides, LibreOffice and Keynote write).
    if isinstance(shape, GroupShape):
        yield from _shapes_lines(shape.shapes)
    elif shape.has_text_frame:
        for paragraph in shape.text_frame.paragraphs:
            if paragraph.text.strip():
                yield paragraph.text.replace(_VERTICAL_TAB, "\n")
    elif getattr(shape, "has_table", False):
        for row in shape.table.rows:
            yield from table_row_lines(
                [
                    [
                        p.text.replace(_VERTICAL_TAB, "\n")
                        for p in cell.text_frame.paragraphs
                    ]
                    for cell in row.cells
                ]
            )
    else:  # a graphic frame: SmartArt's text is in a part of its own
        yield from diagram_lines(shape.element, shape.part)


def _chart_lines(slide: Any) -> Iterator[str]:
    """The labels of the slide's charts, after its text (groups' charts included)."""
    for reference in chart_references(slide.element.cSld.spTree):
        yield from chart_lines(reference, slide.part)
