"""DOCX extraction: body (tables and nested tables included), notes, headers, footers."""

from __future__ import annotations

import os
import re
import zipfile
import zlib
from itertools import islice
from typing import TYPE_CHECKING, Any

from .base import (
    CorruptFileError,
    ExtractionResult,
    ExtractOptions,
    UnsupportedFileError,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

MAX_UNCOMPRESSED_BYTES = 200 * 1024 * 1024
MAX_RATIO = 100  # deflate rarely beats ~20x on real XML; bombs reach 1000x+
_RATIO_CHECK_ABOVE = 20 * 1024 * 1024  # tiny files may compress absurdly well

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_P, _R, _T = f"{_W}p", f"{_W}r", f"{_W}t"
_RUN_PIECES = {
    f"{_W}tab": "\t",
    f"{_W}br": "\n",
    f"{_W}cr": "\n",
    f"{_W}noBreakHyphen": "-",
}
_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_NOTE_PARTS = ("/word/footnotes.xml", "/word/endnotes.xml")
_STRICT_NS = b"http://purl.oclc.org/ooxml/"


def extract_docx(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """Extract the text of a Word (.docx) file in reading order."""
    page_count = _check_archive(path)
    document = _open_document(path)
    parts = list(_paragraphs(document.element.body))
    parts += _notes(document)
    parts += _headers_and_footers(document)
    text = "\n".join(parts).strip("\n")
    return ExtractionResult(
        text=text,
        page_count=page_count,
        confidence=1.0 if text.strip() else 0.0,
        extractor="docx",
    )


def _check_archive(path: str | os.PathLike[str]) -> int | None:
    """Refuse broken zips, Strict OOXML and zip bombs; return the saved page count."""
    if os.path.getsize(path) == 0:
        raise CorruptFileError("it is empty (0 bytes); the upload may have failed")
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            names = {info.filename for info in infos}
            # zipfile stops at each member's declared size, so declared sizes bound
            # what parsing can inflate to.
            total = sum(info.file_size for info in infos)
            packed = sum(info.compress_size for info in infos) or 1
            if total > MAX_UNCOMPRESSED_BYTES or (
                total > _RATIO_CHECK_ABOVE and total / packed > MAX_RATIO
            ):
                raise CorruptFileError(
                    f"it would expand to {total // (1024 * 1024)} MB when unpacked "
                    f"({total / packed:.0f}x its size), which looks like a zip bomb"
                )
            if "word/document.xml" not in names:
                raise UnsupportedFileError(
                    "This ZIP archive is not a Word (.docx) document."
                )
            rels = archive.read("_rels/.rels") if "_rels/.rels" in names else b""
            app = (
                archive.read("docProps/app.xml") if "docProps/app.xml" in names else b""
            )
    except zipfile.BadZipFile as exc:
        raise CorruptFileError(
            "it is not a complete ZIP archive (a .docx is one); "
            "the upload may have been cut short"
        ) from exc
    except (OSError, EOFError, NotImplementedError, zlib.error) as exc:
        raise CorruptFileError(f"its ZIP archive cannot be read ({exc})") from exc
    if _STRICT_NS in rels:
        raise UnsupportedFileError(
            "This Word file is saved as 'Strict Open XML', which is not supported; "
            "save it again as a regular Word Document (.docx)."
        )
    match = re.search(rb"<Pages>(\d+)</Pages>", app)
    return (int(match.group(1)) or None) if match else None


def _open_document(path: str | os.PathLike[str]) -> Any:
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        return docx.Document(os.fspath(path))
    except ValueError as exc:  # python-docx's check of the main part's content type
        raise UnsupportedFileError(
            "This is not a regular Word document (macro-enabled files and templates "
            "are not supported); save it as .docx."
        ) from exc
    except (PackageNotFoundError, KeyError, zipfile.BadZipFile) as exc:
        raise CorruptFileError("its Word package structure is incomplete") from exc
    except Exception as exc:  # lxml.etree.XMLSyntaxError and friends
        raise CorruptFileError(f"its XML cannot be parsed ({exc})") from exc


def _paragraphs(root: Any) -> Iterator[str]:
    """Yield each w:p's text in document order, so table cells come row by row."""
    # mc:Fallback repeats the mc:Choice content (e.g. text boxes) for old readers.
    for fallback in list(root.iter(_FALLBACK)):
        fallback.getparent().remove(fallback)
    for p in root.iter(_P):
        # A text box nests whole paragraphs inside a run; those are yielded on their
        # own turn, so skip their pieces here. (Rare, hence the cheap check first.)
        nested = next(islice(p.iter(_P), 1, 2), None) is not None
        pieces = []
        for el in p.iter(_T, *_RUN_PIECES):
            if nested and _owning_paragraph(el) is not p:
                continue
            if el.tag == _T:
                pieces.append(el.text or "")
            elif el.getparent().tag == _R:  # w:tab also defines tab stops in w:pPr
                pieces.append(_RUN_PIECES[el.tag])
        yield "".join(pieces)


def _owning_paragraph(el: Any) -> Any:
    while el is not None and el.tag != _P:
        el = el.getparent()
    return el


def _notes(document: Any) -> list[str]:
    from docx.oxml import parse_xml

    out: list[str] = []
    for part in document.part.package.iter_parts():
        if part.partname in _NOTE_PARTS:
            out += [t for t in _paragraphs(parse_xml(part.blob)) if t.strip()]
    return out


def _headers_and_footers(document: Any) -> list[str]:
    out: list[str] = []
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
            out += _paragraphs(part.element)
    return out


def _section_parts(section: Any) -> Iterable[Any]:
    return (
        section.header,
        section.footer,
        section.first_page_header,
        section.first_page_footer,
        section.even_page_header,
        section.even_page_footer,
    )
