"""DOCX extraction: body (tables a row a line, cells separated by tabs), SmartArt
and chart labels, notes, headers, footers, then comments."""

from __future__ import annotations

import os
import re
import tempfile
import zipfile
from email import policy
from email.parser import BytesParser
from functools import partial
from itertools import chain, islice
from typing import TYPE_CHECKING, Any, NamedTuple

from .archive import checked_zip, declares_dtd, strict_ooxml, strict_refusal
from .base import (
    DTD_REASON,
    CorruptFileError,
    ExtractionResult,
    ExtractOptions,
    TextBuilder,
    UnsupportedFileError,
    comment_line,
    outside_tables,
    table_row_lines,
    unreadable,
)
from .detect import office_main_part
from .drawing import CHART, DIAGRAM, chart_lines, diagram_lines
from .formats import DOCX
from .html import html_lines
from .mail import part_text
from .marks import BULLET, SYMBOL_FONT, letters, roman
from .text import decode

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_P, _R, _T = f"{_W}p", f"{_W}r", f"{_W}t"
_SYM = f"{_W}sym"
# A complex field: begin, its code (w:instrText), separate, its result, end. A
# field nested in another's code (a MERGEFIELD inside an IF) keeps a result of its
# own there, which Word does not show: only the outer field's result is shown.
_FIELD_CHAR, _FIELD_CHAR_TYPE = f"{_W}fldChar", f"{_W}fldCharType"
_FIELD_CODE = f"{_W}instrText"
# Fields whose result Word never shows: SET (a bookmark's new text, shown by a REF
# field; LibreOffice writes its variables so) and ASK (the answer to a prompt).
_UNSHOWN_FIELDS = frozenset({"SET", "ASK"})
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
_BLIP = "{http://schemas.openxmlformats.org/drawingml/2006/main}blip"
_EMBED = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}embed"
_IMAGEDATA = "{urn:schemas-microsoft-com:vml}imagedata"
_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
# Text moved with tracked changes on stays at its old place, struck out.
_MOVED_AWAY = f"{_W}moveFrom"
_DELETED = f"{_W}del"
_SDT, _SHOWING_PROMPT = f"{_W}sdt", f"{_W}sdtPr/{_W}showingPlcHdr"
_RPR, _VAL = f"{_W}rPr", f"{_W}val"
_HIDING = (f"{_W}vanish", f"{_W}specVanish")  # Font > Hidden
_OFF = frozenset({"0", "false", "off"})
# Numbered and bulleted paragraphs (numbering.xml): a paragraph's list and level,
# its own or its style's.
_NUM_PR, _ILVL, _NUM_ID = f"{_W}numPr", f"{_W}ilvl", f"{_W}numId"
_PLACEHOLDER = re.compile(r"%([1-9])")  # a level's number in its text, "%1.%2"
_SUFFIXES = {"tab": "\t", "space": " ", "nothing": ""}
_MAX_STYLE_DEPTH = 64  # styles based on styles: a loop or a hostile chain ends there
# Ruby (phonetic guide) text: the reading above its base, not the text itself.
_RUBY_TEXT = f"{_W}rt"
# A paragraph mark deleted (or moved away) with tracked changes on: the paragraph
# runs on into the next one, as Word shows it once the changes are accepted.
_MARK = f"{_W}pPr/{_RPR}"
_MARK_REMOVED = (_DELETED, _MOVED_AWAY)
# Tables: rows (w:tr) of cells (w:tc), either of them may stand in a content
# control or custom XML; a cell's text is one line, its white space one space.
_TBL, _TR, _TC, _TC_PR = f"{_W}tbl", f"{_W}tr", f"{_W}tc", f"{_W}tcPr"
_GRID_SPAN = f"{_TC_PR}/{_W}gridSpan"
_WRAPPERS = frozenset({_SDT, f"{_W}sdtContent", f"{_W}customXml"})
_MAX_COLUMNS = 63  # Word's widest table: a hostile span counts no more
_BLOCK_ENDS = (_TBL, _SDT, f"{_W}sectPr", _ALT_CHUNK)
_MAX_CHUNK_DEPTH = 4  # Word documents embedded in embedded Word documents
_COMMENT, _COMMENT_REFERENCE = f"{_W}comment", f"{_W}commentReference"


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
    numbering = _Numbering(document)
    deleted = _deleted_comments(body)  # before the body's deleted text is taken out
    text = TextBuilder(options.max_chars)
    # Lazily, part by part: reading stops once the limit is reached.
    parts = chain(
        _paragraphs(body, document.part, hidden, numbering),
        _notes(document, hidden, numbering),
        _headers_and_footers(document, hidden, numbering),
        _comments(document, hidden, numbering, deleted),
    )
    text.extend(parts)
    extracted = text.text.strip("\n")
    result = ExtractionResult(
        text=extracted,
        page_count=page_count,
        confidence=1.0 if extracted.strip() else 0.0,
        extractor="docx",
        note=text.note,
    )
    # Imported here: Pillow and Tesseract are for Word files that need them.
    from .image import with_pictures

    return with_pictures(result, _pictures(body, document.part), options)


def _pictures(body: Any, part: Any) -> Iterator[Callable[[], bytes]]:
    """The body's pictures in document order, each once (DrawingML's a:blip, and
    VML's v:imagedata of older Word files); not those of headers and footers,
    which are logos more than pages."""
    related, seen = part.related_parts, set()
    for el in body.iter(_BLIP, _IMAGEDATA):
        rid = el.get(_EMBED if el.tag == _BLIP else _R_ID)
        picture = related.get(rid) if rid else None
        if picture is None or not picture.content_type.startswith("image/"):
            continue
        if picture.partname not in seen:
            seen.add(picture.partname)
            yield lambda picture=picture: picture.blob


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
    selector = PartFactory.part_class_selector
    if getattr(selector, "func", None) is not _part_class:  # once per process
        PartFactory.part_class_selector = partial(_part_class, selector)
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


def _part_class(
    selector: Callable[[str, str], Any] | None, content_type: str, reltype: str
) -> Any:
    """python-docx's class for a part (its `selector`'s choice), but a chunk's is
    kept as bytes: a Word document embedded whole (a .docx, as merging tools embed
    one) has the content type of a main part, which python-docx would parse as XML,
    and fail."""
    from docx.opc.constants import RELATIONSHIP_TYPE as RT
    from docx.opc.part import Part

    if reltype == RT.A_F_CHUNK:
        return Part
    return None if selector is None else selector(content_type, reltype)


def _paragraphs(
    root: Any,
    part: Any,
    hidden: dict[str, bool],
    numbering: _Numbering,
    depth: int = 0,
) -> Iterator[str]:
    """Yield each w:p's shown text in document order, after its list number or
    bullet; a table row by row, a line each; a page embedded whole (w:altChunk)
    where it stands. `hidden`: the styles that hide or show their text; `depth`:
    how many Word chunks this one lies in."""
    # Text read elsewhere: mc:Fallback repeats the mc:Choice content (e.g. text
    # boxes) for old readers, w:moveFrom is moved text at its old place. Ruby
    # text is a reading shown above its base, which is the text. Deleted runs
    # go too: their text is w:delText, but a deleted equation's is m:t, and
    # some writers put w:t there.
    for repeated in list(root.iter(_FALLBACK, _MOVED_AWAY, _DELETED, _RUBY_TEXT)):
        if repeated.getparent().tag != _RPR:  # not a paragraph mark's, read below
            repeated.getparent().remove(repeated)
    # A content control nobody filled in shows its prompt ("Click or tap here to
    # enter text."): the template's, not the document's text.
    for control in list(root.iter(_SDT)):
        shown = control.find(_SHOWING_PROMPT)
        if shown is not None and shown.get(_VAL, "1") not in _OFF:
            cells = control.findall(f"{_W}sdtContent/{_TC}")
            for cell in cells:  # a cell's control: its cell stays, empty, in its column
                for child in [c for c in cell if c.tag != _TC_PR]:
                    cell.remove(child)
            if not cells:
                control.getparent().remove(control)
    yield from _Story(part, hidden, numbering, depth).lines(root)


class _Story:
    """One part's text as it is read, in order: a body, a header, the notes. Its
    lists are counted on, and paragraphs run on, across its tables' cells."""

    def __init__(
        self, part: Any, hidden: dict[str, bool], numbering: _Numbering, depth: int
    ) -> None:
        self.part, self.hidden, self.numbering = part, hidden, numbering
        self.depth = depth
        self.counters: dict[str, dict[int, int]] = {}  # each part numbers its own
        # Paragraphs that run on from one whose mark went: the text and graphics before.
        self.joined: dict[Any, tuple[str, list[Any]]] = {}

    def lines(self, root: Any) -> Iterator[str]:
        """The lines of what `root` holds: paragraphs, tables, embedded pages."""
        for el in outside_tables(root, _TBL, (_P, _ALT_CHUNK), (_P,)):
            if el.tag == _TBL:
                yield from self.rows(el)
            elif el.tag == _ALT_CHUNK:
                yield from _chunk_lines(self.part, el.get(_R_ID), self.depth)
            else:
                yield from self.paragraph(el)

    def rows(self, table: Any) -> Iterator[str]:
        """A table's rows as ``table_row_lines`` reads them. A merged cell's text
        comes once, the columns it spans stay as empty cells (as other formats'
        merged cells), so the columns line up."""
        for row in _within(table, _TR):
            cells: list[list[str]] = [[]] * _span(
                row.find(f"{_W}trPr/{_W}gridBefore"), absent=0
            )
            for cell in _within(row, _TC):
                # Cells that continue a merged one, below it (w:vMerge) or, as older
                # Word merged them, beside it (w:hMerge): empty.
                merged = _continues(cell, "vMerge") or _continues(cell, "hMerge")
                lines = [] if merged else list(self.lines(cell))
                cells += [lines] + [[]] * (_span(cell.find(_GRID_SPAN)) - 1)
            yield from table_row_lines(cells)

    def paragraph(self, p: Any) -> Iterator[str]:
        """A paragraph's line, after its number or bullet, then its graphics'
        lines; nothing when it runs on into the next one."""
        head, head_graphics = self.joined.pop(p, ("", []))
        style_id, following = "", None
        # A bare <w:p/> (an empty line; generated files may hold hundreds of
        # thousands) has no style, text or mark to look for: lxml's searches cost.
        if not len(p):
            line, hid_text, graphics = "", False, head_graphics
        else:
            # A text box nests whole paragraphs inside a run; those are yielded on
            # their own turn, so skip their pieces here. (Rare: the cheap check.)
            nested = next(islice(p.iter(_P), 1, 2), None) is not None
            # Hidden by its style, unless a run says otherwise. (A w:vanish in the
            # paragraph's own w:pPr/w:rPr hides only its mark, not its text.)
            style = p.find(f"{_W}pPr/{_W}pStyle")
            style_id = style.get(_VAL, "") if style is not None else ""
            by_style = self.hidden.get(style_id) if style is not None else None
            line, hid_text = _own_text(p, nested, by_style, self.hidden)
            graphics = head_graphics + [
                el
                for el in p.iter(CHART, DIAGRAM)
                if not nested or _owning_paragraph(el) is p
            ]
            following = _next_paragraph(p) if _mark_removed(p) else None
        if following is not None and not (line or graphics or head):
            return  # deleted whole: the next paragraph keeps its own number
        # Run on: the joined paragraph keeps the first one's number.
        label = "" if head else self.numbering.label(p, style_id, self.counters)
        # A list item whose text is all hidden shows no number either.
        shown = head + (line if hid_text and not line else label + line)
        if following is not None:
            self.joined[following] = (shown, graphics)
            return
        if shown or not graphics:  # a paragraph that only holds a graphic: its text
            yield shown
        yield from _graphic_lines(graphics, self.part)


def _within(parent: Any, tag: str) -> Iterator[Any]:
    """The children of `parent` with `tag`, those inside content controls (w:sdt)
    and custom XML (w:customXml) included: a table's rows, a row's cells."""
    for child in parent:
        if child.tag == tag:
            yield child
        elif child.tag in _WRAPPERS:
            yield from _within(child, tag)


def _continues(cell: Any, merge: str) -> bool:
    """Whether a cell continues a merged one (w:vMerge or w:hMerge, "continue" when
    it says nothing)."""
    found = cell.find(f"{_TC_PR}/{_W}{merge}")
    return found is not None and found.get(_VAL, "continue") == "continue"


def _span(el: Any, absent: int = 1) -> int:
    """The columns a w:gridSpan (or w:gridBefore) counts, `absent` without one, and
    within Word's widest table."""
    if el is None:
        return absent
    return max(absent, min(_int(el.get(_VAL), absent), _MAX_COLUMNS))


def _own_text(
    p: Any, nested: bool, by_style: bool | None, hidden: dict[str, bool]
) -> tuple[str, bool]:
    """A paragraph's shown text, not its text boxes' (`nested`: it holds some), and
    whether some of its text is hidden."""
    pieces = []
    hid_text = False
    in_code: list[bool] = []  # the open fields: whether each is still in its code
    # Each open field's drop-down entry (a legacy form's FORMDROPDOWN), shown
    # where the field has no result of its own (Word and LibreOffice write none),
    # and where its result starts.
    chosen: list[tuple[str, int]] = []
    codes: list[str] = []  # the open fields' codes
    for el in p.iter(_T, _MATH_T, _SYM, _FIELD_CHAR, _FIELD_CODE, *_RUN_PIECES):
        if nested and _owning_paragraph(el) is not p:
            continue
        if el.tag == _FIELD_CODE:
            if codes and in_code and in_code[-1]:
                codes[-1] += el.text or ""
            continue
        if el.tag == _FIELD_CHAR:
            kind = el.get(_FIELD_CHAR_TYPE)
            if kind == "begin":
                shown = True not in in_code and not _is_hidden(
                    el.getparent(), by_style, hidden
                )
                chosen.append((_drop_down_entry(el) if shown else "", len(pieces)))
            elif kind == "separate" and chosen:
                chosen[-1] = (chosen[-1][0], len(pieces))
            elif kind == "end" and chosen:
                entry, start = chosen.pop()
                if entry and not "".join(pieces[start:]).strip():
                    pieces.append(entry)
            _field_char(kind, in_code)
            if kind == "begin":
                codes.append("")
            elif kind == "separate" and codes and in_code:
                # A result Word does not show: read as the field's code is.
                name = (codes[-1].split() or [""])[0].upper()
                in_code[-1] = name in _UNSHOWN_FIELDS
            elif kind == "end" and codes:
                codes.pop()
            continue
        if True in in_code:
            continue
        run = el.getparent()  # w:r, or m:r in an equation
        if _is_hidden(run, by_style, hidden):
            hid_text = True
            continue
        if el.tag == _T or el.tag == _MATH_T:
            pieces.append(el.text or "")
        elif el.tag == _SYM:
            pieces.append(_symbol(el))
        elif run.tag == _R:  # w:tab also defines tab stops in w:pPr
            pieces.append(_RUN_PIECES[el.tag])
    return "".join(pieces), hid_text


def _drop_down_entry(field_char: Any) -> str:
    """The entry a legacy form's drop-down field shows (its w:result, else its
    w:default, else its first), from its begin w:fldChar; "" for other fields."""
    entries = field_char.findall(f"{_W}ffData/{_W}ddList/{_W}listEntry")
    if not entries:
        return ""
    drop_down = entries[0].getparent()
    at = next(
        (
            _int(found.get(_VAL), 0)
            for found in (drop_down.find(f"{_W}result"), drop_down.find(f"{_W}default"))
            if found is not None
        ),
        0,
    )
    return (entries[at] if 0 <= at < len(entries) else entries[0]).get(_VAL) or ""


def _field_char(kind: str | None, in_code: list[bool]) -> None:
    """Follow a w:fldChar: a field begins in its code, its result starts, it ends.
    (A field that spans paragraphs, as a table of contents, ends in a later one.)"""
    if kind == "begin":
        in_code.append(True)
    elif kind == "separate" and in_code:
        in_code[-1] = False
    elif kind == "end" and in_code:
        in_code.pop()


def _graphic_lines(graphics: list[Any], part: Any) -> Iterator[str]:
    """The text of a paragraph's SmartArt diagrams and charts, after its own."""
    for graphic in graphics:
        if graphic.tag == CHART:
            yield from chart_lines(graphic, part)
        else:
            yield from diagram_lines(graphic, part)


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
            return SYMBOL_FONT.get(low, chr(low))
        if low in SYMBOL_FONT:  # else a sign kept as its private-use character
            return SYMBOL_FONT[low]
    if code < 0x20 or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
        return ""
    return chr(code)


def _chunk_lines(part: Any, rid: str | None, depth: int) -> Iterator[str]:
    """The text of an "alternative format chunk": HTML, XHTML or MHT that Word
    converts on opening (tools that make Word files from web pages write them),
    RTF, or a whole Word document (as tools that merge documents write them).
    Chunks of older Word files are not read."""
    try:
        chunk = part.related_parts[rid]
    except KeyError:  # a dangling reference: the rest stands
        return
    kind, content = chunk.content_type, chunk.blob
    if kind in DOCX.main_part_types:
        yield from _word_chunk_lines(content, depth + 1)
        return
    if kind in ("application/rtf", "text/rtf"):
        from .rtf import read_text

        yield from read_text(content).splitlines()
        return
    if kind == "message/rfc822":  # MHT: the page inside a message
        message = BytesParser(policy=policy.default).parsebytes(content)
        page = message.get_body(preferencelist=("html", "plain"))
        if page is None:
            return
        kind, content = page.get_content_type(), part_text(page)
    if "html" in kind:
        yield from html_lines(content, with_title=False)[0]  # Word shows none
    elif kind == "text/plain":
        text = decode(content) if isinstance(content, bytes) else content
        yield from text.splitlines()


def _word_chunk_lines(content: bytes, depth: int) -> Iterator[str]:
    """The body and notes of a Word document embedded whole, checked as an upload
    is; not past a few chunks deep (a package may hold itself). A damaged one
    costs its own text, not the document's."""
    if depth > _MAX_CHUNK_DEPTH:
        return
    with tempfile.NamedTemporaryFile(suffix=".docx") as fh:
        fh.write(content)
        fh.flush()
        try:
            _check_archive(fh.name)
            document = _open_document(fh.name)
        except (CorruptFileError, UnsupportedFileError):
            return
    body = document.element.find(f"{_W}body")
    if body is None:
        return
    hidden, numbering = _hidden_styles(document), _Numbering(document)
    yield from _paragraphs(body, document.part, hidden, numbering, depth)
    yield from _notes(document, hidden, numbering)


def _mark_removed(p: Any) -> bool:
    """Whether the paragraph's mark is tracked as deleted or moved away."""
    mark = p.find(_MARK)
    return (
        mark is not None and next(mark.iterchildren(*_MARK_REMOVED), None) is not None
    )


def _next_paragraph(p: Any) -> Any:
    """The paragraph a paragraph runs on into when its mark goes: the next one in
    the same body, cell or text box; None before a table or at the end."""
    for sibling in p.itersiblings():
        if sibling.tag == _P:
            return sibling
        if sibling.tag in _BLOCK_ENDS:
            return None
    return None


def _owning_paragraph(el: Any) -> Any:
    while el is not None and el.tag != _P:
        el = el.getparent()
    return el


def _notes(
    document: Any, hidden: dict[str, bool], numbering: _Numbering
) -> Iterator[str]:
    """The footnotes and endnotes: the parts the main part relates as such,
    whatever their names. Word writes a space between a note's number, which is
    not read, and its text, LibreOffice a tab: left out."""
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
        notes = _paragraphs(parse_xml(part.blob), part, hidden, numbering)
        yield from (t.lstrip(" \t") for t in notes if t.strip())


def _deleted_comments(body: Any) -> set[str]:
    """The ids of the comments on text deleted with tracked changes on: they go
    with it once the changes are accepted, as the body is read."""
    return {
        reference.get(f"{_W}id", "")
        for reference in body.iter(_COMMENT_REFERENCE)
        if next(reference.iterancestors(_DELETED), None) is not None
    }


def _comments(
    document: Any, hidden: dict[str, bool], numbering: _Numbering, deleted: set[str]
) -> Iterator[str]:
    """The comments (word/comments.xml), resolved ones too, each once, as
    "Comment: …" after all else; not those in `deleted`."""
    from docx.opc.constants import RELATIONSHIP_TYPE as RT
    from docx.oxml import parse_xml

    rels = document.part.rels.values()
    # A document has one comments part.
    rel = next(
        (r for r in rels if r.reltype == RT.COMMENTS and not r.is_external), None
    )
    if rel is None:
        return
    part = rel.target_part
    for comment in parse_xml(part.blob).iterchildren(_COMMENT):
        if comment.get(f"{_W}id") not in deleted:
            lines = _paragraphs(comment, part, hidden, numbering)
            if line := comment_line("\n".join(lines)):
                yield line


def _headers_and_footers(
    document: Any, hidden: dict[str, bool], numbering: _Numbering
) -> Iterator[str]:
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
            yield from _paragraphs(part.element, part, hidden, numbering)


def _section_parts(section: Any) -> Iterable[Any]:
    return (
        section.header,
        section.footer,
        section.first_page_header,
        section.first_page_footer,
        section.even_page_header,
        section.even_page_footer,
    )


class _Level(NamedTuple):
    """One level of a list (w:lvl)."""

    start: int
    format: str  # w:numFmt: decimal, lowerLetter, bullet, none...
    text: str  # w:lvlText: "%1.%2)" puts the levels' numbers in
    restart: int | None  # w:lvlRestart: after which levels it starts again
    legal: bool  # w:isLgl: the levels' numbers in digits, as "1.1" for "I.a"
    suffix: str  # what stands between the number and the text
    style: str  # w:pStyle: the paragraph style that takes this level


class _Numbering:
    """The lists of numbering.xml (w:abstractNum, and w:num that use them), and the
    paragraph styles that number their paragraphs (headings, "List Number")."""

    def __init__(self, document: Any) -> None:
        self.abstract: dict[str, dict[int, _Level]] = {}
        self.links: dict[str, str] = {}  # abstractNum -> a numbering style's id
        # w:num: its abstractNum, its levels' w:startOverride and replaced w:lvl.
        self.nums: dict[str, tuple[str, dict[int, int], dict[int, _Level]]] = {}
        self.styles: dict[str, tuple[str | None, int | None]] = {}
        root = _numbering_root(document)
        if root is None:
            return
        for abstract in root.iterchildren(f"{_W}abstractNum"):
            key = abstract.get(f"{_W}abstractNumId", "")
            self.abstract[key] = _levels(abstract)
            link = abstract.find(f"{_W}numStyleLink")
            if link is not None:
                self.links[key] = link.get(_VAL, "")
        for num in root.iterchildren(f"{_W}num"):
            used = num.find(f"{_W}abstractNumId")
            starts, levels = {}, {}
            for override in num.iterchildren(f"{_W}lvlOverride"):
                level = _int(override.get(_ILVL), -1)
                start = override.find(f"{_W}startOverride")
                if start is not None:
                    starts[level] = _int(start.get(_VAL), 0)
                levels.update(_levels(override))
            self.nums[num.get(_NUM_ID, "")] = (
                "" if used is None else used.get(_VAL, ""),
                starts,
                levels,
            )
        self.styles = _numbered_styles(document)

    def label(self, p: Any, style: str, counters: dict[str, dict[int, int]]) -> str:
        """The number or bullet a paragraph shows before its text, with what follows
        it (a tab), counted on in `counters`; "" for a paragraph outside a list."""
        if not self.nums:
            return ""
        num_id, ilvl = self.styles.get(style, (None, None))
        own = p.find(f"{_W}pPr/{_NUM_PR}")
        if own is not None:
            own_num, own_level = own.find(_NUM_ID), own.find(_ILVL)
            if own_num is not None:
                num_id = own_num.get(_VAL)
            if own_level is not None:
                ilvl = _int(own_level.get(_VAL), 0)
        if num_id is None or num_id not in self.nums:  # "0" takes a style's away
            return ""
        levels, starts, key = self._list(num_id)
        if ilvl is None:  # a heading style's level: the one that names the style
            ilvl = next((n for n, lv in levels.items() if lv.style == style), 0)
        level = levels.get(ilvl)
        if level is None:
            return ""
        # Lists that share their definition number on together, as Word does,
        # unless one starts its own numbering (w:startOverride).
        counted = counters.setdefault(key, {})
        counted[ilvl] = counted[ilvl] + 1 if ilvl in counted else starts[ilvl]
        for deeper in [n for n in counted if n > ilvl]:
            restart = levels[deeper].restart if deeper in levels else None
            if ilvl < (deeper if restart is None else restart):
                del counted[deeper]
        if level.format == "bullet":
            return BULLET + level.suffix
        shown = _PLACEHOLDER.sub(
            lambda m: _number(levels, starts, counted, int(m.group(1)) - 1, level),
            level.text,
        )
        return shown + level.suffix if shown.strip() else ""

    def _list(self, num_id: str) -> tuple[dict[int, _Level], dict[int, int], str]:
        """A w:num's levels, their start values, and the key its counters go by."""
        abstract_id, start_overrides, replaced = self.nums[num_id]
        for _ in range(3):  # a list style's definition, through its style
            if self.abstract.get(abstract_id) or abstract_id not in self.links:
                break
            linked = self.styles.get(self.links[abstract_id], (None, None))[0]
            if linked not in self.nums:
                break
            abstract_id = self.nums[linked][0]
        levels = {**self.abstract.get(abstract_id, {}), **replaced}
        starts = {n: level.start for n, level in levels.items()}
        starts.update(start_overrides)
        key = f"num {num_id}" if start_overrides or replaced else abstract_id
        return levels, starts, key


def _numbering_root(document: Any) -> Any:
    """numbering.xml's root, or None for a document without one (or a broken one)."""
    from docx.opc.constants import RELATIONSHIP_TYPE as RT
    from docx.oxml import parse_xml

    for rel in document.part.rels.values():
        if rel.reltype == RT.NUMBERING and not rel.is_external:
            try:
                return parse_xml(rel.target_part.blob)
            except Exception:  # a broken list part: the text is read without numbers
                return None
    return None


def _levels(parent: Any) -> dict[int, _Level]:
    """The w:lvl definitions under an abstractNum (or a lvlOverride), by level."""
    levels = {}
    for lvl in parent.iterchildren(f"{_W}lvl"):
        values = {
            name: (None if (el := lvl.find(f"{_W}{name}")) is None else el.get(_VAL))
            for name in ("start", "numFmt", "lvlText", "lvlRestart", "suff", "pStyle")
        }
        legal = lvl.find(f"{_W}isLgl")
        levels[_int(lvl.get(_ILVL), 0)] = _Level(
            start=_int(values["start"], 1 if values["numFmt"] != "decimalZero" else 0),
            format=values["numFmt"] or "decimal",
            text=values["lvlText"] or "",
            restart=None
            if values["lvlRestart"] is None
            else _int(values["lvlRestart"], 0),
            legal=legal is not None and legal.get(_VAL, "true").lower() not in _OFF,
            suffix=_SUFFIXES.get(values["suff"] or "tab", "\t"),
            style=values["pStyle"] or "",
        )
    return levels


def _numbered_styles(document: Any) -> dict[str, tuple[str | None, int | None]]:
    """Each paragraph style's list and level (w:numPr), its own or inherited."""
    try:
        styles = document.part.styles.element
    except (KeyError, ValueError, AttributeError):  # a broken styles part
        return {}
    own: dict[str, tuple[str | None, int | None]] = {}
    based_on: dict[str, str] = {}
    for style in styles.iterchildren(f"{_W}style"):
        name = style.get(f"{_W}styleId", "")
        numbered = style.find(f"{_W}pPr/{_NUM_PR}")
        if numbered is not None:
            num_id, level = numbered.find(_NUM_ID), numbered.find(_ILVL)
            own[name] = (
                None if num_id is None else num_id.get(_VAL),
                None if level is None else _int(level.get(_VAL), 0),
            )
        parent = style.find(f"{_W}basedOn")
        if parent is not None:
            based_on[name] = parent.get(_VAL, "")
    resolved = {}
    for name in set(own) | set(based_on):
        num_id, level, current = None, None, name
        for _ in range(_MAX_STYLE_DEPTH):
            found = own.get(current, (None, None))
            num_id = num_id if num_id is not None else found[0]
            level = level if level is not None else found[1]
            if current not in based_on:
                break
            current = based_on[current]
        if num_id is not None:
            resolved[name] = (num_id, level)
    return resolved


def _number(
    levels: dict[int, _Level],
    starts: dict[int, int],
    counted: dict[int, int],
    n: int,
    shown: _Level,
) -> str:
    """Level n's number as the level `shown` writes it: its count so far, else its
    start value."""
    value = counted.get(n, starts.get(n, 1))
    kind = "decimal" if shown.legal or n not in levels else levels[n].format
    if kind == "lowerLetter":
        return letters(value, repeat=True)
    if kind == "upperLetter":
        return letters(value, repeat=True).upper()
    if kind == "lowerRoman":
        return roman(value)
    if kind == "upperRoman":
        return roman(value).upper()
    if kind == "decimalZero":
        return f"{value:02d}"
    if kind == "none":
        return ""
    if kind == "bullet":
        return BULLET
    return str(value)  # decimal, and the scripts' numbers Word also counts with


def _int(value: str | None, default: int) -> int:
    """An attribute's whole number, within what a list counts to; else `default`."""
    try:
        return max(-1, min(int(value or ""), 10**6))
    except ValueError:
        return default
