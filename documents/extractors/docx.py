"""DOCX extraction: body (tables and nested tables included), notes, headers, footers."""

from __future__ import annotations

import os
import re
import zipfile
from email import policy
from email.parser import BytesParser
from itertools import chain, islice
from typing import TYPE_CHECKING, Any

from .archive import checked_zip
from .base import (
    CorruptFileError,
    ExtractionResult,
    ExtractOptions,
    TextBuilder,
    UnsupportedFileError,
    unreadable,
)
from .html import html_lines
from .mail import part_text
from .text import decode

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_P, _R, _T = f"{_W}p", f"{_W}r", f"{_W}t"
_RUN_PIECES = {
    f"{_W}tab": "\t",
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
_NOTE_PARTS = ("/word/footnotes.xml", "/word/endnotes.xml")
_STRICT_NS = b"http://purl.oclc.org/ooxml/"


def extract_docx(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """Extract the text of a Word (.docx) file in reading order, up to the limit."""
    page_count = _check_archive(path)
    document = _open_document(path)
    text = TextBuilder(options.max_chars)
    # Lazily, part by part: reading stops once the limit is reached.
    parts = chain(
        _paragraphs(document.element.body, document.part),
        _notes(document),
        _headers_and_footers(document),
    )
    text.extend(parts)
    body = text.text.strip("\n")
    return ExtractionResult(
        text=body,
        page_count=page_count,
        confidence=1.0 if body.strip() else 0.0,
        extractor="docx",
        note=text.note,
    )


def _check_archive(path: str | os.PathLike[str]) -> int | None:
    """Refuse broken zips, Strict OOXML and zip bombs; return the saved page count."""
    with checked_zip(path, "Word (.docx)", "word/document.xml") as archive:
        names = set(archive.namelist())
        rels = archive.read("_rels/.rels") if "_rels/.rels" in names else b""
        app = archive.read("docProps/app.xml") if "docProps/app.xml" in names else b""
    if _STRICT_NS in rels:
        raise UnsupportedFileError(
            "This Word file is saved as 'Strict Open XML', which is not supported; "
            "save it again as a regular Word Document (.docx)."
        )
    match = re.search(rb"<Pages>(\d+)</Pages>", app)
    return (int(match.group(1)) or None) if match else None


# The main part of a macro-enabled document (.docm) and of templates (.dotx,
# .dotm): the same WordprocessingML as a .docx's, which python-docx opens only under
# its own content type. The macros are never run, only the text is read.
_OTHER_MAIN_TYPES = (
    "application/vnd.ms-word.document.macroEnabled.main+xml",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml",
    "application/vnd.ms-word.template.macroEnabledTemplate.main+xml",
)


def _open_document(path: str | os.PathLike[str]) -> Any:
    from docx.opc.constants import CONTENT_TYPE
    from docx.opc.exceptions import PackageNotFoundError
    from docx.opc.part import PartFactory
    from docx.package import Package
    from docx.parts.document import DocumentPart

    for content_type in _OTHER_MAIN_TYPES:
        PartFactory.part_type_for.setdefault(content_type, DocumentPart)
    try:
        part = Package.open(os.fspath(path)).main_document_part
    except (PackageNotFoundError, KeyError, zipfile.BadZipFile) as exc:
        raise CorruptFileError("its Word package structure is incomplete") from exc
    except Exception as exc:  # lxml.etree.XMLSyntaxError and friends
        raise unreadable(exc, "its Word content cannot be read") from exc
    if part.content_type not in (CONTENT_TYPE.WML_DOCUMENT_MAIN, *_OTHER_MAIN_TYPES):
        raise UnsupportedFileError(
            "This Word package holds no document the reader knows "
            f"({part.content_type}); save it as .docx."
        )
    return part.document


def _paragraphs(root: Any, part: Any) -> Iterator[str]:
    """Yield each w:p's text in document order, so table cells come row by row;
    a page embedded whole (w:altChunk) where it stands."""
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
        pieces = []
        for el in p.iter(_T, _MATH_T, *_RUN_PIECES):
            if nested and _owning_paragraph(el) is not p:
                continue
            if el.tag == _T or el.tag == _MATH_T:
                pieces.append(el.text or "")
            elif el.getparent().tag == _R:  # w:tab also defines tab stops in w:pPr
                pieces.append(_RUN_PIECES[el.tag])
        yield "".join(pieces)


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


def _notes(document: Any) -> Iterator[str]:
    from docx.oxml import parse_xml

    for part in document.part.package.iter_parts():
        if part.partname in _NOTE_PARTS:
            notes = _paragraphs(parse_xml(part.blob), part)
            yield from (t for t in notes if t.strip())


def _headers_and_footers(document: Any) -> Iterator[str]:
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
            yield from _paragraphs(part.element, part)


def _section_parts(section: Any) -> Iterable[Any]:
    return (
        section.header,
        section.footer,
        section.first_page_header,
        section.first_page_footer,
        section.even_page_header,
        section.even_page_footer,
    )
