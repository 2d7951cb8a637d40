"""OpenDocument extraction from content.xml: a text's (ODT) headings and paragraphs in
order, then its notes, headers, footers and comments; a spreadsheet's (ODS) shown
sheets, row by row, each followed by its cells' comments; a presentation's (ODP)
shown slides, each with its speaker notes and comments; the labels of charts and the
formulas embedded in a text, on a slide or on a sheet, as DOCX's and PPTX's are read.

The text is walked here, in content.xml as lxml parses it: odfdo's text of a
paragraph carries its opinions (links as Markdown, comments with their author and
date, whose date it parses, so a comment dated 0000-00-00 as LibreOffice writes
it failed the file), and the deleted text of tracked changes sits in the body.
"""

from __future__ import annotations

import binascii
import os
import re
import zipfile
from collections.abc import Callable, Iterator
from itertools import chain, islice
from typing import Any, NamedTuple

from .archive import checked_zip, declares_dtd
from .base import (
    DTD_REASON,
    CorruptFileError,
    EncryptedFileError,
    ExtractionResult,
    ExtractOptions,
    TextBuilder,
    comment_line,
    mend_cell_breaks,
    outside_tables,
    parse_xml,
    table_row_lines,
    unreadable,
)
from .detect import MEMBER_ERRORS
from .drawing import MAX_LABELS, capped
from .marks import BULLET, letters, roman
from .pptx import ALL_SLIDES_HIDDEN, reading_order
from .xlsx import MAX_EMPTY_CELLS

_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"
_BLOCKS = (f"{_TEXT}p", f"{_TEXT}h")
# Not the reader's text where they stand: comments (read at the end), deleted text
# kept for tracked changes, and notes (read after the body, as Word's are).
_NOTE, _COMMENT = f"{_TEXT}note", f"{_OFFICE}annotation"
_TRACKED_CHANGES = f"{_TEXT}tracked-changes"
_ASIDE = {_COMMENT, _TRACKED_CHANGES, _NOTE}
_STYLE = "{urn:oasis:names:tc:opendocument:xmlns:style:1.0}"
_FO = "{urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0}"
# A page's style: its header and footer; a paragraph's style may start a new page
# of one, which the next page's style follows.
_MASTER_PAGE, _STYLE_NAME = f"{_STYLE}master-page", f"{_STYLE}name"
_MASTER_PAGE_NAME, _NEXT_STYLE_NAME = (
    f"{_STYLE}master-page-name",
    f"{_STYLE}next-style-name",
)
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
# Ruby (phonetic guide) text: the reading above its base, not the text itself.
_RUBY_TEXT = f"{_TEXT}ruby-text"
# A Word form field's place (LibreOffice's ODT): a drop-down's entries are in it.
_FIELD = "{urn:openoffice:names:experimental:ooo-ms-interop:xmlns:field:1.0}"
_FIELDMARK = f"{_FIELD}fieldmark"
# Page-number and page-count fields hold the value the last layout left: a page's
# number, or none a page gave them: "0" (a headless conversion), "<number>" (a
# slide's notes page). Those are left out.
_PAGE_FIELDS = {f"{_TEXT}page-number", f"{_TEXT}page-count"}
_NO_PAGE = re.compile(r"\s*(?:<.*|0*)\s*", re.DOTALL)
# Lists: a paragraph's number or bullet comes from its list's style, by its depth.
_LIST, _LIST_ITEM = f"{_TEXT}list", f"{_TEXT}list-item"
_LIST_HEADER, _NUMBER = f"{_TEXT}list-header", f"{_TEXT}number"
_LIST_STYLES = (f"{_TEXT}list-style", f"{_TEXT}outline-style")
# Numbered levels, then bulleted ones (a character or a picture).
_NUMBERED_LEVELS = (f"{_TEXT}list-level-style-number", f"{_TEXT}outline-level-style")
_LIST_LEVELS = (
    *_NUMBERED_LEVELS,
    f"{_TEXT}list-level-style-bullet",
    f"{_TEXT}list-level-style-image",
)
_FOLLOWED_BY = {"listtab": "\t", "space": " ", "nothing": ""}
_MAX_LIST_DEPTH = 64
# What an attribute's count (spaces, repeats) is taken as at most: int() refuses a
# number of thousands of digits, and callers cap far lower.
_MAX_COUNT = 10**9

# Spreadsheets: sheets are tables, whose rows may stand in groups.
_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_SPREADSHEET = f"{_OFFICE}spreadsheet"
_SHEET, _ROW = f"{_TABLE}table", f"{_TABLE}table-row"
_ROW_GROUPS = {
    f"{_TABLE}table-row-group",
    f"{_TABLE}table-header-rows",
    f"{_TABLE}table-rows",
}
_CELL, _COVERED_CELL = f"{_TABLE}table-cell", f"{_TABLE}covered-table-cell"
_ROWS_REPEATED = f"{_TABLE}number-rows-repeated"
_COLUMNS_REPEATED = f"{_TABLE}number-columns-repeated"
# A sheet's size in LibreOffice and Excel: repeats past it are padding (a saved
# sheet ends in an empty row repeated to the last one) or a hostile file's billion.
_MAX_ROWS, _MAX_COLUMNS = 1_048_576, 16_384
# A cell's stored value, for a cell that shows no text of its own (some generators
# write none).
_VALUES = tuple(
    f"{_OFFICE}{name}"
    for name in ("string-value", "value", "date-value", "time-value", "boolean-value")
)
# Presentations: slides are draw:page elements, each with its speaker notes.
_PRESENTATION = f"{_OFFICE}presentation"
_PAGE, _PAGE_STYLE = f"{_DRAW}page", f"{_DRAW}style-name"
_PRESENTATION_NS = "{urn:oasis:names:tc:opendocument:xmlns:presentation:1.0}"
_SPEAKER_NOTES = f"{_PRESENTATION_NS}notes"
# A layout's placeholders on a slide or notes page: what they show comes from the
# master or a field ("<number>"), not from the slide.
_PLACEHOLDER_CLASS = f"{_PRESENTATION_NS}class"
_PLACEHOLDERS = {"page-number", "date-time", "header", "footer"}
# Where a shape is on its slide: svg:x and svg:y, or a turned shape's translate().
_SVG = "{urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0}"
_SVG_X, _SVG_Y, _TRANSFORM = f"{_SVG}x", f"{_SVG}y", f"{_DRAW}transform"
# Its numbers hold no comma nor bracket: \S+? tried every length at every
# "translate(", a hostile transform's search quadratic (80 KB: 18 s).
_TRANSLATE = re.compile(r"translate\s*\(\s*([^\s,()]+)[\s,]+([^\s,()]+)\s*\)")
_LENGTH = re.compile(r"(-?(?:\d+\.?\d*|\.\d+))(cm|mm|in|pt|pc|px)")
_EMU = {
    "cm": 360_000,
    "mm": 36_000,
    "in": 914_400,
    "pt": 12_700,
    "pc": 152_400,
    "px": 9_525,
}
# Comments on a slide, as LibreOffice writes them, and as ODF 1.4 does.
_SLIDE_COMMENTS = ("{http://openoffice.org/2009/office}annotation", _COMMENT)
# Charts: a draw:object names a sub-document of the package ("./Object 1"), whose
# content.xml holds a chart:chart and the table of its data.
_OBJECT = f"{_DRAW}object"
_FRAME, _ANCHOR_TYPE = f"{_DRAW}frame", f"{_TEXT}anchor-type"
_HREF = "{http://www.w3.org/1999/xlink}href"
_CHART = "{urn:oasis:names:tc:opendocument:xmlns:chart:1.0}"
_CHART_TITLES = (f"{_CHART}title", f"{_CHART}subtitle")
# A formula (LibreOffice Math) is a MathML sub-document: its identifiers, numbers,
# operators and text, joined as DOCX equations are read; its StarMath source, in an
# annotation, is not what the page shows. Invisible operators (U+2061-U+2064) go.
_MATH = "{http://www.w3.org/1998/Math/MathML}"
_MATH_TOKENS = tuple(f"{_MATH}{name}" for name in ("mi", "mn", "mo", "mtext", "ms"))
_INVISIBLE = dict.fromkeys(range(0x2061, 0x2065))
# The table a cell address names, quoted or not, before its first cell.
_TABLE_NAME = re.compile(r"\s*\$?(?:'((?:[^']|'')*)'|([^.\s']*))\.")
# A cell range of the chart's table: "local-table.$A$2:.$A$5" (the second table
# name left out, or quoted as the first may be).
_RANGE = re.compile(
    r"\.\$?([A-Z]{1,3})\$?(\d{1,7})(?::[^.:\s]*\.\$?([A-Z]{1,3})\$?(\d{1,7}))?"
)


def extract_odt(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """Extract the text of an OpenDocument text file, up to the limit."""
    return _extract(path, options, "OpenDocument text (.odt)")


def extract_ods(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """Each shown sheet's name, then its rows, cells separated by tabs (as XLSX's)."""
    return _extract(path, options, "OpenDocument spreadsheet (.ods)")


def extract_odp(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """Each slide's text in order (tables row by row), then its notes (as PPTX's)."""
    return _extract(path, options, "OpenDocument presentation (.odp)")


def extract_flat(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """LibreOffice's "Flat XML" OpenDocument (.fodt, .fods, .fodp): the package's
    parts in one XML document, read as the package's are."""
    from lxml import etree

    with open(path, "rb") as fh:
        root = _parse(fh.read())
    if root.tag != f"{_OFFICE}document":
        raise CorruptFileError("it is not a flat OpenDocument file (office:document)")
    meta = root.find(f"{_OFFICE}meta")
    meta_xml = b"" if meta is None else etree.tostring(meta)
    # Its styles, automatic styles and body are those content.xml and styles.xml
    # hold in a package.
    return _read(root, root, meta_xml, _Inline(), options)


def _extract(
    path: str | os.PathLike[str], options: ExtractOptions, kind: str
) -> ExtractionResult:
    """Read an ODF package as its body says it is (text, spreadsheet or presentation),
    whatever it was stored as; `kind` names the file in messages."""
    with checked_zip(path, kind, "content.xml") as archive:
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
        # Embedded objects are read as the body names them, in the archive still open.
        objects = _Objects(archive, names)
        return _read(
            _parse(content), _parse(styles) if styles else None, meta, objects, options
        )


def _read(
    body: Any,
    styles_root: Any,
    meta: bytes,
    objects: _Objects | _Inline,
    options: ExtractOptions,
) -> ExtractionResult:
    """The text of a package's parts: content.xml's root, styles.xml's (or None)
    and meta.xml."""
    # Automatic styles are the part's own; common ones (styles.xml) serve both.
    common = None if styles_root is None else styles_root.find(f"{_OFFICE}styles")
    automatic = body.find(f"{_OFFICE}automatic-styles")
    body_hidden = _hidden_styles(common, automatic)
    text = TextBuilder(options.max_chars)
    document = _document(body)
    page_count = None
    note = ""
    if document is not None and document.tag == _SPREADSHEET:
        extractor = "ods"
        hidden_sheets = _hiding_styles("table", common, automatic)
        text.extend(
            _sheets(document, body_hidden, hidden_sheets, options.max_chars, objects)
        )
    elif document is not None and document.tag == _PRESENTATION:
        extractor = "odp"
        slides = list(document.iterchildren(_PAGE))
        page_count = len(slides) or None
        hidden_slides = _hiding_styles("drawing-page", common, automatic)
        # Hidden slides are not read, as PPTX's (see pptx.py).
        shown = [s for s in slides if s.get(_PAGE_STYLE) not in hidden_slides]
        if slides and not shown:
            note = ALL_SLIDES_HIDDEN
        text.extend(_slides(shown, body_hidden, options.max_chars, objects))
    else:
        extractor = "odt"
        # Headers and footers after the body and notes, then comments, as DOCX's.
        lists = _Lists(common, automatic)
        text.extend(
            chain(
                _blocks(body, body_hidden, lists, objects),
                _headers_and_footers(styles_root, body),
                _text_comments(body, styles_root),
            )
        )
        count = _PAGE_COUNT.search(meta)
        page_count = (int(count.group(1)) or None) if count else None
    body_text = text.text.strip("\n")
    result = ExtractionResult(
        text=body_text,
        page_count=page_count,
        confidence=1.0 if body_text.strip() else 0.0,
        extractor=extractor,
        note=note or text.note,
    )
    if extractor != "odt":
        return result
    # Imported here: Pillow and Tesseract are for documents that need them.
    from .image import with_pictures

    return with_pictures(result, objects.pictures(body), options)


def _document(root: Any) -> Any:
    """The body's document element: office:text, office:spreadsheet, ...; None if
    the body holds none."""
    body = root.find(f"{_OFFICE}body")
    if body is None:
        return None
    return next((child for child in body if isinstance(child.tag, str)), None)


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


def _headers_and_footers(styles: Any, content: Any = None) -> Iterator[str]:
    """The headers and footers (styles.xml) of the master pages the text's pages
    may use, each line once."""
    if styles is None:
        return
    flow = _Flow(_hidden_styles(styles), None, None)
    used = _used_master_pages(styles, content)
    seen = set()
    for part in styles.iter(*_PAGE_MARGINS):
        page = part.getparent()
        if page is not None and page.tag == _MASTER_PAGE and page not in used:
            continue
        for line in flow.lines(part):
            if line.strip() and line not in seen:
                seen.add(line)
                yield line


def _used_master_pages(styles: Any, content: Any) -> set[Any]:
    """The master pages a text's pages may use: the first (the default),
    "Standard", those a style names, and those they give way to on the next page.
    Others are no page's, as the "Page <n>" header and footer docutils' rst2odt
    defines in every file."""
    pages: dict[str | None, Any] = {}
    for page in styles.iter(_MASTER_PAGE):
        pages.setdefault(page.get(_STYLE_NAME), page)
    names = {"Standard", next(iter(pages), None)}
    for root in (styles, content):
        for style in () if root is None else root.iter(f"{_STYLE}style"):
            names.add(style.get(_MASTER_PAGE_NAME) or "Standard")
    used: set[Any] = set()
    todo = [pages[name] for name in names if name in pages]
    while todo:
        page = todo.pop()
        if page not in used:
            used.add(page)
            following = pages.get(page.get(_NEXT_STYLE_NAME) or "Standard")
            todo += [] if following is None else [following]
    return used


def _text_comments(content: Any, styles: Any) -> Iterator[str]:
    """A text's comments (the body's, the headers' and footers'), resolved ones
    too, as "Comment: …"; not those on text a tracked change deleted, which go with
    it."""
    parts = (
        content.find(f"{_OFFICE}body"),
        None if styles is None else styles.find(f"{_OFFICE}master-styles"),
    )
    for part in parts:
        for comment in () if part is None else part.iter(_COMMENT):
            if next(comment.iterancestors(_TRACKED_CHANGES), None) is not None:
                continue
            if line := comment_line(_comment_text(comment)):
                yield line


def _comment_text(comment: Any) -> str:
    """A comment's paragraphs, not its author or date."""
    return "\n".join(_text(block, frozenset()) for block in comment.iter(*_BLOCKS))


def _blocks(
    root: Any,
    hidden_styles: frozenset[tuple[str, str]],
    lists: _Lists,
    objects: _Objects | _Inline,
) -> Iterator[str]:
    """Each heading and paragraph of the body in order, after its list number or
    bullet, a table row by row, an embedded chart's labels or formula after the
    paragraph it stands in, then the notes' lines."""
    flow = _Flow(hidden_styles, lists, objects)
    body = root.find(f"{_OFFICE}body")
    yield from flow.lines(root if body is None else body)
    yield from flow.notes


class _Flow:
    """A text's lines as they are read in order; its notes' lines are kept in
    `notes`, to follow the body (as Word's do). Without `lists`, no numbers; without
    `objects`, no charts."""

    def __init__(
        self,
        hidden_styles: frozenset[tuple[str, str]],
        lists: _Lists | None,
        objects: _Objects | _Inline | None,
    ) -> None:
        self.hidden_styles, self.lists, self.objects = hidden_styles, lists, objects
        self.notes: list[str] = []

    def lines(self, root: Any) -> Iterator[str]:
        """The lines of what `root` holds: paragraphs, tables, charts, formulas."""
        for block in outside_tables(root, _SHEET, (*_BLOCKS, _OBJECT), _BLOCKS):
            if not _shown(block, self.hidden_styles):
                continue
            owner = _aside(block, root)
            if owner is not None and owner.tag != _NOTE:
                continue  # a comment, or text a tracked change deleted
            if block.tag == _SHEET:
                found: Iterator[str] = self.rows(block)
            elif block.tag == _OBJECT:
                found = iter(())
                if (
                    owner is None
                    and self.objects is not None
                    and _inline_formula(block, self.objects) is None
                ):
                    found = _object_lines(block, self.objects)
            else:
                label = "" if self.lists is None else self.lists.label(block)
                line = _text(block, self.hidden_styles, self.objects)
                found = iter((label + line,))
            if owner is None:
                yield from found
            else:
                self.notes.extend(found)

    def rows(self, table: Any) -> Iterator[str]:
        """A text table's rows as ``table_row_lines`` reads them (as a DOCX table's);
        a merged cell's text once, the cells it covers empty, so the columns line
        up."""
        position = 0
        for row in _table_rows(table):
            cells: list[list[str]] = []
            for cell in row.iterchildren(_CELL, _COVERED_CELL):
                times = min(
                    _count(cell.get(_COLUMNS_REPEATED)), _MAX_COLUMNS - len(cells)
                )
                # A covered cell lies under a merged one: what it may hold is not shown.
                cells += [list(self.lines(cell)) if cell.tag == _CELL else []] * times
                if len(cells) >= _MAX_COLUMNS:
                    break
            times = min(_count(row.get(_ROWS_REPEATED)), _MAX_ROWS - position)
            position += times
            lines = list(table_row_lines(cells))
            for _ in range(times):  # the reader stops at the text limit
                yield from lines
            if position >= _MAX_ROWS:
                return


def _shown(block: Any, hidden_styles: frozenset[tuple[str, str]]) -> bool:
    """False for a block hidden itself or inside something hidden (a section, a
    paragraph or characters holding the text box it stands in)."""
    return not any(
        _hidden(el, hidden_styles) for el in chain((block,), block.iterancestors())
    )


def _aside(block: Any, within: Any = None) -> Any:
    """The comment, note or tracked change that holds a block, if any (and inside
    `within`, if given)."""
    for ancestor in block.iterancestors():
        if ancestor is within:
            return None
        if ancestor.tag in _ASIDE:
            return ancestor
    return None


def _text(
    block: Any,
    hidden_styles: frozenset[tuple[str, str]],
    objects: _Objects | _Inline | None = None,
) -> str:
    """A paragraph's text as the page shows it: white space collapsed, spaces,
    tabs and line breaks written out, what stands aside or is hidden left out,
    and drawings (text boxes, shapes), whose paragraphs are read on their own turn;
    with `objects`, a formula standing as a character read where it stands."""
    pieces: list[tuple[str, bool]] = []
    _pieces(block, hidden_styles, pieces, objects)
    return _collapse(pieces)


def _pieces(
    el: Any,
    hidden_styles: frozenset[tuple[str, str]],
    pieces: list[tuple[str, bool]],
    objects: _Objects | _Inline | None = None,
) -> None:
    """Append the element's text as (text, written out) pieces: written-out ones
    (text:s, text:tab, text:line-break) keep their white space, the rest collapse."""
    pieces.append((el.text or "", False))
    for child in el:
        tag = child.tag
        if tag == _FRAME and objects is not None:
            for embedded in child.iterchildren(_OBJECT):
                if formula := _inline_formula(embedded, objects):
                    pieces.append((formula, False))
        elif tag == _SPACE:
            # Capped: a hostile file may ask for a billion spaces.
            spaces = min(_count(child.get(f"{_TEXT}c")), _MAX_SPACES)
            pieces.append((" " * spaces, True))
        elif tag == _TAB:
            pieces.append(("\t", True))
        elif tag == _BREAK:
            pieces.append(("\n", True))
        elif tag == _FIELDMARK:  # holds no text; a drop-down's entry shows
            pieces.append((_drop_down_entry(child), False))
        elif (
            isinstance(tag, str)
            and tag not in _ASIDE
            and tag != _RUBY_TEXT
            and not tag.startswith(_DRAW)
            and not (
                tag in _PAGE_FIELDS and _NO_PAGE.fullmatch("".join(child.itertext()))
            )
            and not _hidden(child, hidden_styles)
        ):
            _pieces(child, hidden_styles, pieces, objects)  # spans, links, fields
        pieces.append((child.tail or "", False))


def _drop_down_entry(fieldmark: Any) -> str:
    """The entry a legacy form's drop-down (a FORMDROPDOWN fieldmark, as
    LibreOffice keeps Word's) shows: its Dropdown_Selected one, else its first;
    "" for other fieldmarks."""
    if not (fieldmark.get(f"{_FIELD}type") or "").endswith("FORMDROPDOWN"):
        return ""
    entries, at = [], 0
    for param in fieldmark.iter(f"{_FIELD}param"):
        name, value = param.get(f"{_FIELD}name"), param.get(f"{_FIELD}value") or ""
        if name == "Dropdown_ListEntry":
            entries.append(value)
        elif name == "Dropdown_Selected" and value.isascii() and value.isdigit():
            at = int(value[:9])
    return entries[at] if at < len(entries) else entries[0] if entries else ""


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


def _count(value: str | None) -> int:
    """An attribute's count (text:c, a repeat): 1 unless a positive number, and
    _MAX_COUNT at most."""
    if not value or not (value.isascii() and value.isdigit()):
        return 1  # "²" is a digit to str.isdigit(), not to int()
    return max(1, int(value)) if len(value) < 10 else _MAX_COUNT


# --- List numbers (ODT) ---------------------------------------------------------------


class _ListLevel(NamedTuple):
    """One level of a list style (text:list-level-style-*, text:outline-level-style)."""

    bullet: bool  # a bullet or picture, shown as "•"
    format: str  # style:num-format: "1", "a", "A", "i", "I", or "" for none
    sync: bool  # style:num-letter-sync: "aa, bb" after "z", not "aa, ab"
    prefix: str
    suffix: str
    display: int  # text:display-levels: "2.1" shows 2
    start: int
    followed_by: str  # what stands between the number and the text


class _Lists:
    """The list styles (and the headings' outline numbering) of a text, and the
    counts of its lists as they are read in order."""

    def __init__(self, *parts: Any) -> None:
        self.styles: dict[str, dict[int, _ListLevel]] = {}
        self.outline: dict[int, _ListLevel] = {}
        own: dict[str, str] = {}  # a paragraph style's list style, if it names one
        parents: dict[str, str] = {}
        for part in parts:
            if part is None:
                continue
            for style in part.iter(*_LIST_STYLES):
                levels = {
                    _count(level.get(f"{_TEXT}level")): _list_level(level)
                    for level in style.iterchildren(*_LIST_LEVELS)
                }
                self.styles[style.get(f"{_STYLE}name", "")] = levels
                if style.tag == _LIST_STYLES[1]:
                    self.outline = levels
            for style in part.iter(f"{_STYLE}style"):
                if style.get(f"{_STYLE}family") != "paragraph":
                    continue
                name = style.get(f"{_STYLE}name", "")
                if (listed := style.get(f"{_STYLE}list-style-name")) is not None:
                    own[name] = listed
                if (parent := style.get(f"{_STYLE}parent-style-name")) is not None:
                    parents[name] = parent
        self.paragraph_lists: dict[str, str] = {}
        for name in set(own) | set(parents):
            current = name
            for _ in range(_MAX_LIST_DEPTH):  # a loop ends the walk
                if current in own or current not in parents:
                    break
                current = parents[current]
            if current in own:
                self.paragraph_lists[name] = own[current]
        # Counts by level: each outermost list's, the last one of each style's and
        # each named one's (which later lists continue), and the headings'.
        self.counts: dict[Any, dict[int, int]] = {}
        self.last: dict[str, dict[int, int]] = {}
        self.named: dict[str, tuple[dict[int, int], str]] = {}  # and their style
        self.headings: dict[int, int] = {}

    def label(self, block: Any) -> str:
        """The number or bullet a paragraph shows before its text, and what follows
        it (a tab): the first paragraph of a list item, or a numbered heading."""
        item = block.getparent()
        if item is None or item.tag not in (_LIST_ITEM, _LIST_HEADER):
            return self._heading(block) if block.tag == _BLOCKS[1] else ""
        first = next((c for c in item if isinstance(c.tag, str)), None)
        if item.tag == _LIST_HEADER or first is not block:
            return ""  # a list's header, or an item's second paragraph: no number
        nested = []  # the lists it stands in, innermost first
        parent = item
        while parent is not None and parent.tag in (_LIST, _LIST_ITEM, _LIST_HEADER):
            if parent.tag == _LIST:
                nested.append(parent)
            parent = parent.getparent()
        depth = min(len(nested), _MAX_LIST_DEPTH)
        style = next(filter(None, (a.get(f"{_TEXT}style-name") for a in nested)), None)
        # Without a style of its own, the style of the list it continues, else its
        # paragraph's.
        continued = self.named.get(nested[-1].get(f"{_TEXT}continue-list", ""))
        if style is None and continued is not None:
            style = continued[1]
        if style is None:
            style = self.paragraph_lists.get(block.get(f"{_TEXT}style-name", ""), "")
        levels = self.styles.get(style, {})
        counts = self._counts(nested[-1], style)
        start = item.get(f"{_TEXT}start-value")
        _advance(counts, depth, levels, None if start is None else _count(start))
        if block.find(_NUMBER) is not None:  # the number as written, read as text
            return ""
        return _label(levels, counts, depth)

    def _counts(self, outermost: Any, style: str) -> dict[int, int]:
        """The counts of the list an outermost text:list starts, or continues."""
        if outermost in self.counts:
            return self.counts[outermost]
        continued = self.named.get(outermost.get(f"{_TEXT}continue-list", ""))
        if continued is not None:
            counts = continued[0]
        elif outermost.get(f"{_TEXT}continue-numbering") == "true":
            counts = self.last.get(style, {})
        else:
            counts = {}
        self.counts[outermost] = self.last[style] = counts
        name = outermost.get("{http://www.w3.org/XML/1998/namespace}id")
        if name:
            self.named[name] = (counts, style)
        return counts

    def _heading(self, heading: Any) -> str:
        """A heading's number by the outline numbering (Tools › Heading Numbering)."""
        if heading.get(f"{_TEXT}is-list-header") == "true":
            return ""
        level = min(_count(heading.get(f"{_TEXT}outline-level")), 10)
        start = None
        if heading.get(f"{_TEXT}restart-numbering") == "true":
            start = _count(heading.get(f"{_TEXT}start-value"))
        _advance(self.headings, level, self.outline, start)
        return (
            ""
            if heading.find(_NUMBER) is not None
            else _label(self.outline, self.headings, level)
        )


def _list_level(level: Any) -> _ListLevel:
    alignment = level.find(
        f"{_STYLE}list-level-properties/{_STYLE}list-level-label-alignment"
    )
    followed = (
        "listtab"
        if alignment is None
        else alignment.get(f"{_TEXT}label-followed-by", "listtab")
    )
    return _ListLevel(
        bullet=level.tag not in _NUMBERED_LEVELS,
        format=level.get(f"{_STYLE}num-format", ""),
        sync=level.get(f"{_STYLE}num-letter-sync") == "true",
        prefix=level.get(f"{_STYLE}num-prefix", ""),
        suffix=level.get(f"{_STYLE}num-suffix", ""),
        display=min(_count(level.get(f"{_TEXT}display-levels")), 10),
        start=min(_count(level.get(f"{_TEXT}start-value")), 10**6),
        followed_by=_FOLLOWED_BY.get(followed, "\t"),
    )


def _advance(
    counts: dict[int, int],
    level: int,
    levels: dict[int, _ListLevel],
    start: int | None,
) -> None:
    """Count one more item at a level (from `start`, if it restarts there); the
    deeper levels start again."""
    if start is not None:
        counts[level] = start
    elif level in counts:
        counts[level] += 1
    else:
        counts[level] = levels[level].start if level in levels else 1
    for deeper in [n for n in counts if n > level]:
        del counts[deeper]


def _label(levels: dict[int, _ListLevel], counts: dict[int, int], level: int) -> str:
    """A level's label as its style writes it: prefix, the numbers of the levels
    it displays ("2.1"), suffix, then what follows the label; "" for none."""
    style = levels.get(level)
    if style is None:
        return ""
    if style.bullet:
        return BULLET + style.followed_by
    if not style.format:
        numbers = ""
    else:
        shown = range(max(1, level - style.display + 1), level + 1)
        numbers = ".".join(
            _formatted(
                levels.get(n), counts.get(n, levels[n].start if n in levels else 1)
            )
            for n in shown
        )
    label = style.prefix + numbers + style.suffix
    return label + style.followed_by if label.strip() else ""


def _formatted(style: _ListLevel | None, value: int) -> str:
    kind = "1" if style is None else style.format
    if kind in ("a", "A"):
        text = letters(value, repeat=style is not None and style.sync)
        return text.upper() if kind == "A" else text
    if kind in ("i", "I"):
        return roman(value).upper() if kind == "I" else roman(value)
    return str(value) if kind else ""


# --- Spreadsheets (ODS) ----------------------------------------------------------------


# What hides a sheet or a slide: its style's properties, an attribute, its value.
_HIDING = {
    "table": (f"{_STYLE}table-properties", f"{_TABLE}display", "false"),
    "drawing-page": (
        f"{_STYLE}drawing-page-properties",
        f"{_PRESENTATION_NS}visibility",
        "hidden",
    ),
}


def _hiding_styles(family: str, *parts: Any) -> frozenset[str]:
    """The names of the styles of a `family` that hide what takes them: a sheet
    ("table": Sheet › Hide Sheet) or a slide ("drawing-page": Slide › Hide Slide)."""
    properties, attribute, value = _HIDING[family]
    hidden = set()
    for part in parts:
        if part is None:
            continue
        for style in part.iter(f"{_STYLE}style"):
            props = style.find(properties)
            if (
                style.get(f"{_STYLE}family") == family
                and props is not None
                and props.get(attribute) == value
            ):
                hidden.add(style.get(f"{_STYLE}name", ""))
    return frozenset(hidden)


def _sheets(
    spreadsheet: Any,
    hidden_styles: frozenset[tuple[str, str]],
    hidden_sheets: frozenset[str],
    max_chars: int,
    objects: _Objects,
) -> Iterator[str]:
    """Each shown sheet's name, its rows, its charts' labels, its comments, then a
    blank line, as XLSX's are read."""
    for sheet in spreadsheet.iterchildren(_SHEET):
        # Hidden rows and columns are read, as XLSX's: they often hold what people
        # look up.
        if sheet.get(f"{_TABLE}style-name") in hidden_sheets:
            continue
        yield sheet.get(f"{_TABLE}name", "")
        yield from _rows(sheet, hidden_styles, max_chars)
        # On the sheet (table:shapes) or anchored in a cell.
        for embedded in sheet.iter(_OBJECT):
            yield from _object_lines(embedded, objects)
        yield from _cell_comments(sheet)
        yield ""


def _cell_comments(sheet: Any) -> Iterator[str]:
    """The comments on a sheet's cells, row by row, as XLSX's: "Comment on B3: …";
    a repeated cell's once, at its first place."""
    from openpyxl.utils import get_column_letter

    row_at = 0
    for row in _table_rows(sheet):
        if row_at >= _MAX_ROWS:
            return
        column_at = 0
        for cell in row.iterchildren(_CELL, _COVERED_CELL):
            if column_at >= _MAX_COLUMNS:
                break
            where = f"{get_column_letter(column_at + 1)}{row_at + 1}"
            for comment in cell.iterchildren(_COMMENT):
                if line := comment_line(_comment_text(comment), where):
                    yield line
            column_at += _count(cell.get(_COLUMNS_REPEATED))
        row_at += _count(row.get(_ROWS_REPEATED))


def _rows(
    table: Any, hidden_styles: frozenset[tuple[str, str]], max_chars: int
) -> Iterator[str]:
    """A table's rows that hold a value, cells separated by tabs; a repeated row
    (table:number-rows-repeated) is read as often, within a sheet's size."""
    position = 0
    for row in _table_rows(table):
        times = min(_count(row.get(_ROWS_REPEATED)), _MAX_ROWS - position)
        position += times
        line = _row(row, hidden_styles, max_chars)
        if line:
            for _ in range(times):  # the reader stops asking at the text limit
                yield line
        if position >= _MAX_ROWS:
            return


def _table_rows(parent: Any) -> Iterator[Any]:
    """The rows of a table in order, those in groups and header rows included."""
    for child in parent:
        if child.tag == _ROW:
            yield child
        elif child.tag in _ROW_GROUPS:
            yield from _table_rows(child)


def _row(row: Any, hidden_styles: frozenset[tuple[str, str]], max_chars: int) -> str:
    """A row's cells separated by tabs, up to its last value ("" for none), a long
    run of empty cells shortened as XLSX's are (MAX_EMPTY_CELLS). A repeated cell
    (table:number-columns-repeated) is read as often, within a sheet's width, and
    the line ends once past `max_chars`, where the text is cut anyway."""
    pieces: list[str] = []
    size = columns = written = gap = 0  # gap: empty cells since the last value
    for cell in row.iterchildren(_CELL, _COVERED_CELL):
        times = min(_count(cell.get(_COLUMNS_REPEATED)), _MAX_COLUMNS - columns)
        columns += times
        # A covered cell lies under a merged one: what it may still hold is not shown.
        value = _cell(cell, hidden_styles) if cell.tag == _CELL else ""
        if not value:
            gap += times  # its tabs are written only if a value follows
        for _ in range(times if value else 0):
            pieces.append("\t" * (min(gap, MAX_EMPTY_CELLS) + (written > 0)) + value)
            size += len(pieces[-1])
            written, gap = written + gap + 1, 0
            if size > max_chars:
                return "".join(pieces)
        if columns >= _MAX_COLUMNS:
            break
    return "".join(pieces)


def _cell(cell: Any, hidden_styles: frozenset[tuple[str, str]]) -> str:
    """A cell's text as the sheet shows it, its paragraphs on one line (a formatted
    number, date or amount as formatted); without a paragraph, its stored value."""
    paragraphs = [
        _text(block, hidden_styles)
        for block in cell.iter(*_BLOCKS)
        if _aside(block) is None and _shown(block, hidden_styles)
    ]
    if not paragraphs:
        return next(filter(None, map(cell.get, _VALUES)), "").strip()
    # Tabs and line breaks inside a cell would read as the next cell or row.
    return " ".join(mend_cell_breaks("\n".join(paragraphs)).split())


# --- Presentations (ODP) ---------------------------------------------------------------


def _slides(
    slides: list[Any],
    hidden_styles: frozenset[tuple[str, str]],
    max_chars: int,
    objects: _Objects,
) -> Iterator[str]:
    """Each slide's lines, its charts' labels (and formulas), then its speaker
    notes, its comments, then a blank line, as PPTX's."""
    for slide in slides:
        yield from _slide_shape_lines(slide, hidden_styles, max_chars)
        for embedded in slide.iter(_OBJECT):
            if not any(a.tag == _SPEAKER_NOTES for a in embedded.iterancestors()):
                yield from _object_lines(embedded, objects)
        for notes in slide.iterchildren(_SPEAKER_NOTES):
            yield from _shape_lines(notes, hidden_styles, max_chars)
        for comment in slide.iterchildren(*_SLIDE_COMMENTS):
            if line := comment_line(_comment_text(comment)):
                yield line
        yield ""


def _slide_shape_lines(
    slide: Any, hidden_styles: frozenset[tuple[str, str]], max_chars: int
) -> Iterator[str]:
    """The lines of a slide's shapes in reading order, as PPTX's: by position, not
    in the order they were drawn (an Impress slide keeps its shapes in z-order)."""
    read = [
        (shape, lines)
        for shape in slide
        if (lines := list(_element_lines(shape, hidden_styles, max_chars)))
    ]
    order = reading_order(
        [_position(shape) for shape, _ in read],
        [shape.get(_PLACEHOLDER_CLASS) == "title" for shape, _ in read],
        [shape.get(_PLACEHOLDER_CLASS) is not None for shape, _ in read],
    )
    for at in order:
        yield from read[at][1]


def _position(shape: Any) -> tuple[int, int] | None:
    """A shape's (top, left) in EMU; a group's, its members' top and left; None if
    unknown."""
    corners = []
    for placed in (shape, *shape.iterdescendants()):
        corner = _corner(placed)
        if corner is not None and placed is shape:
            return corner
        if corner is not None:
            corners.append(corner)
    if not corners:
        return None
    return min(top for top, _ in corners), min(left for _, left in corners)


def _corner(element: Any) -> tuple[int, int] | None:
    x, y = element.get(_SVG_X), element.get(_SVG_Y)
    if x is None or y is None:  # a turned shape is placed by its transform
        turned = _TRANSLATE.search(element.get(_TRANSFORM) or "")
        if turned is None:
            return None
        x, y = turned.groups()
    top, left = _emu(y), _emu(x)
    return None if top is None or left is None else (top, left)


def _emu(length: str) -> int | None:
    match = _LENGTH.fullmatch(length.strip())
    return round(float(match[1]) * _EMU[match[2]]) if match else None


def _shape_lines(
    parent: Any, hidden_styles: frozenset[tuple[str, str]], max_chars: int
) -> Iterator[str]:
    """The non-empty paragraphs of the shapes under `parent` in order (frames, text
    boxes, groups, a shape anchored in a paragraph after it), a table row by row;
    comments and speaker notes left out (each read on its own turn)."""
    for child in parent:
        yield from _element_lines(child, hidden_styles, max_chars)


def _element_lines(
    child: Any, hidden_styles: frozenset[tuple[str, str]], max_chars: int
) -> Iterator[str]:
    tag = child.tag
    if (
        not isinstance(tag, str)
        or tag in _ASIDE
        or tag == _SPEAKER_NOTES
        or tag in _SLIDE_COMMENTS
        or child.get(_PLACEHOLDER_CLASS) in _PLACEHOLDERS
        or _hidden(child, hidden_styles)
    ):
        return
    if tag == _SHEET:
        yield from _rows(child, hidden_styles, max_chars)
        return
    if tag in _BLOCKS:
        line = _text(child, hidden_styles)
        if line.strip():
            yield line
    yield from _shape_lines(child, hidden_styles, max_chars)


# --- Charts (embedded objects) ---------------------------------------------------------


class _Objects:
    """A package's embedded objects (charts, formulas): "Object 1/content.xml" is
    read and parsed when a draw:object first names "./Object 1", and only then."""

    def __init__(self, archive: zipfile.ZipFile, names: set[str]) -> None:
        self._archive = archive
        self._names = names
        self._roots: dict[str, Any] = {}

    def root(self, embedded: Any) -> Any:
        """The root of the object a draw:object names; None if absent or damaged."""
        name = embedded.get(_HREF, "").removeprefix("./").rstrip("/")
        if name not in self._roots:
            self._roots[name] = self._read(name)
        return self._roots[name]

    def pictures(self, body: Any) -> Iterator[Callable[[], bytes]]:
        """The pictures the body shows (draw:image), stored in the package, in
        document order, each once; not an object's picture of itself (a chart's
        labels are read from the object)."""
        seen = set()
        for image in body.iter(f"{_DRAW}image"):
            name = image.get(_HREF, "").removeprefix("./")
            if name not in self._names or name.startswith("ObjectReplacements/"):
                continue
            if name not in seen:
                seen.add(name)
                yield lambda name=name: self._member(name)

    def _member(self, name: str) -> bytes:
        try:
            return self._archive.read(name)
        except MEMBER_ERRORS:  # a damaged picture: passed over, as one not decoded
            return b""

    def _read(self, name: str) -> Any:
        member = f"{name}/content.xml"
        if "/" in name or member not in self._names:
            return None
        # lxml stops an entity bomb as a syntax error, which would pass for damage.
        if declares_dtd(self._archive, member):
            raise CorruptFileError(f"its XML cannot be parsed ({DTD_REASON})")
        try:
            data = self._archive.read(member)
        except MEMBER_ERRORS:
            return None
        return _object_root(data)


class _Inline:
    """A flat file's embedded objects and pictures, held in the document itself: an
    object's root inside its draw:object, a picture's bytes in base64."""

    def root(self, embedded: Any) -> Any:
        """The object's root (math:math, office:document); None if it holds none."""
        return next((child for child in embedded if isinstance(child.tag, str)), None)

    def pictures(self, body: Any) -> Iterator[Callable[[], bytes]]:
        """The pictures the body shows, in document order; not an object's picture
        of itself (a frame holding an object too)."""
        # The body's only: a flat file holds its headers' logos too.
        shown = body.find(f"{_OFFICE}body")
        for image in () if shown is None else shown.iter(f"{_DRAW}image"):
            frame = image.getparent()
            if frame is not None and frame.find(_OBJECT) is not None:
                continue
            data = image.find(f"{_OFFICE}binary-data")
            if data is not None and data.text:
                yield lambda text=data.text: _decoded(text)


def _decoded(text: str) -> bytes:
    """A picture's base64; b"" when damaged (passed over, as one not decoded)."""
    try:
        return binascii.a2b_base64(text)
    except (binascii.Error, ValueError):
        return b""


def _object_lines(embedded: Any, objects: _Objects) -> Iterator[str]:
    """The labels of the chart a draw:object embeds, as a DOCX or PPTX chart's: its
    title, subtitle and axis titles a line each, then its series names and its
    category labels, a tab-separated line each. A formula gives its line; other
    objects give nothing."""
    root = objects.root(embedded)
    if root is not None and root.tag == f"{_MATH}math":
        if formula := _formula(root):
            yield formula
        return
    chart = None if root is None else next(root.iter(f"{_CHART}chart"), None)
    if chart is None:
        return
    plot = chart.find(f"{_CHART}plot-area")
    axes = [] if plot is None else plot.findall(f"{_CHART}axis")
    titles = chain(
        chart.iterchildren(*_CHART_TITLES),
        (title for axis in axes for title in axis.iterchildren(f"{_CHART}title")),
    )
    for title in titles:
        for block in title.iter(*_BLOCKS):
            if line := _text(block, frozenset()):
                yield line
    table = chart.find(f"{_TABLE}table")
    if plot is None or table is None:
        return
    # A spreadsheet's chart names the cells of its sheet, read with the sheet, not
    # those of its own table (a cache laid out otherwise): only these are looked up.
    own = table.get(f"{_TABLE}name")
    labels = [
        _RANGE.search(address)
        for series in islice(plot.iterchildren(f"{_CHART}series"), MAX_LABELS + 1)
        if _names_table(address := series.get(f"{_CHART}label-cell-address", ""), own)
    ]
    categories = [
        found
        for axis in axes
        for shown in axis.iterchildren(f"{_CHART}categories")
        if _names_table(address := shown.get(f"{_TABLE}cell-range-address", ""), own)
        for found in _RANGE.finditer(address)
    ]
    names = capped(_cells(table, [match for match in labels if match], False))
    for line in (names, capped(_cells(table, categories, True))):
        if line:
            yield "\t".join(line)


def _formula(root: Any) -> str:
    """A formula's line: its MathML tokens' text, invisible operators left out."""
    formula = "".join(token.text or "" for token in root.iter(*_MATH_TOKENS))
    return formula.translate(_INVISIBLE).strip()


def _inline_formula(embedded: Any, objects: _Objects | _Inline) -> str | None:
    """The formula a draw:object embeds in a frame anchored as a character (in a
    sentence, where Writer puts one), read where it stands, as a DOCX's inline
    equation; None for other objects, and for formulas anchored otherwise (read
    after their paragraph)."""
    frame = embedded.getparent()
    if frame is None or frame.tag != _FRAME or frame.get(_ANCHOR_TYPE) != "as-char":
        return None
    root = objects.root(embedded)
    if root is None or root.tag != f"{_MATH}math":
        return None
    return _formula(root)


def _names_table(address: str, table: str | None) -> bool:
    """Whether a cell address ("local-table.$A$2:.$A$5", "'Q1 2024'.B1") names
    `table`, or no table; any address does when `table` is None."""
    found = _TABLE_NAME.match(address)
    if table is None or found is None:
        return True
    quoted, bare = found.groups()
    return (bare if quoted is None else quoted.replace("''", "'")) in ("", table)


def _object_root(data: bytes) -> Any:
    """A sub-document's root; None if damaged, which costs its own text only."""
    from lxml import etree

    try:
        return parse_xml(data)
    except etree.XMLSyntaxError:
        return None


def _cells(table: Any, ranges: list[re.Match[str]], text_only: bool) -> list[str]:
    """The text of the chart table's cells in `ranges`, range by range, each column
    by column; `text_only`: numbers and dates left out, as DOCX and PPTX charts'
    category axes are read."""
    bounds = []
    for match in ranges:
        column, row, last_column, last_row = match.groups()
        first = (_column(column), _count(row) - 1)
        last = (_column(last_column or column), _count(last_row or row) - 1)
        bounds.append((*map(min, first, last), *map(max, first, last)))
    found = []
    row_at = 0
    for row in _table_rows(table):
        rows = _count(row.get(_ROWS_REPEATED))
        column_at = 0
        for cell in row.iterchildren(_CELL, _COVERED_CELL):
            columns = _count(cell.get(_COLUMNS_REPEATED))
            kind = cell.get(f"{_OFFICE}value-type")
            if cell.tag == _CELL and not (text_only and kind not in (None, "string")):
                for n, (c1, r1, c2, r2) in enumerate(bounds):
                    # A repeated row or cell counts once: the labels are distinct.
                    if (
                        c1 < column_at + columns
                        and column_at <= c2
                        and r1 < row_at + rows
                        and row_at <= r2
                    ):
                        where = (max(column_at, c1), max(row_at, r1))
                        found.append(((n, *where), cell))
            column_at += columns
        row_at += rows
    return [_cell(cell, frozenset()) for _, cell in sorted(found, key=lambda f: f[0])]


def _column(letters: str) -> int:
    """A column's index from its letters: A is 0, AA is 26."""
    number = 0
    for letter in letters:
        number = number * 26 + ord(letter) - ord("A") + 1
    return number - 1
