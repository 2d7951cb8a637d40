"""Files embedded in a PDF (its Attachments panel, the EmbeddedFiles name tree: a
ZUGFeRD or Factur-X invoice's XML, a portfolio's documents; and files attached to
comments, Acrobat's paperclip, which are in no tree): named after the pages' text,
and the documents among them read as an e-mail's attachments are.

PDFium says whether there are any; pdfminer lists them and hands over their raw
streams, inflated here within MAX_ATTACHMENT_BYTES: PDFium only inflates a stream
whole, and a small PDF may hold gigabytes of zeros."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, BinaryIO

import pypdfium2 as pdfium
from pdfminer.pdfdocument import PDFDocument
from pdfminer.pdfpage import PDFPage
from pdfminer.pdfparser import PDFParser
from pdfminer.pdftypes import LITERALS_FLATE_DECODE, PDFObjRef, PDFStream, resolve1
from pdfminer.psparser import LIT
from pdfminer.utils import decode_text

from . import attachments
from .attachments import UNNAMED, Attached, Attachments, names_line, separated
from .base import ExtractionResult, ExtractOptions, TextBuilder, join_notes

# A name tree's nodes: more is a damaged (or looping) tree, not a real PDF's.
_MAX_TREE_NODES = 10_000
_FILE_ATTACHMENT = LIT("FileAttachment")


@dataclasses.dataclass(frozen=True, slots=True)
class _Embedded:
    """One embedded file: its name, and its stream, fetched only to be read."""

    name: str
    stream: Any = None  # a PDFObjRef (or PDFStream); None: named only


def with_embedded_files(
    path: str | os.PathLike[str],
    result: ExtractionResult,
    options: ExtractOptions,
    annotated: Sequence[int] = (),
) -> ExtractionResult:
    """The pages' result, followed by the text of the documents embedded in the PDF
    and the names of all its embedded files; ``annotated``: the indices of pages
    with files attached to comments."""
    if len(result.text) >= options.max_chars:
        return result  # no room left: not even opened
    names = _names(path)
    if not names and not annotated:
        return result
    reader = Attachments(options)
    text = TextBuilder(options.max_chars)
    with open(path, "rb") as fh:
        files = _embedded_files(fh, names, annotated)
        if not files:
            return result
        text.extend(_lines(result.text, files, reader))
    return dataclasses.replace(
        result,
        text=text.text,
        note=join_notes(result.note, reader.note, text.note),
    )


def _lines(pages: str, files: list[_Embedded], reader: Attachments) -> Iterator[str]:
    if pages:
        yield pages
    # One file's data at a time, fetched as its turn comes.
    blocks = (reader.lines(_attached(file, reader)) for file in files)
    names = names_line(file.name for file in files)
    yield from separated(itertools.chain(blocks, [names]), after=bool(pages))


def _names(path: str | os.PathLike[str]) -> list[str]:
    """The names of the PDF's embedded files (PDFium decodes none of them); none
    when PDFium cannot open it (the pages' reader has said why)."""
    try:
        doc = pdfium.PdfDocument(os.fspath(path))
    except pdfium.PdfiumError:
        return []
    try:
        return [
            doc.get_attachment(index).get_name() or UNNAMED
            for index in range(doc.count_attachments())
        ]
    finally:
        doc.close()


def _embedded_files(
    fh: BinaryIO, names: list[str], annotated: Sequence[int]
) -> list[_Embedded]:
    """The files in the EmbeddedFiles name tree, then those attached to comments,
    each once (many names and comments may point at one). When pdfminer cannot
    read the tree: PDFium's ``names`` of its files, named only."""
    try:
        document = PDFDocument(PDFParser(fh))
    except Exception:  # pdfminer fails on damage with what it met
        return [_Embedded(name) for name in names]
    files: list[_Embedded] = []
    seen: set[int] = set()
    try:
        if names:
            tree = resolve1(resolve1(document.catalog["Names"])["EmbeddedFiles"])
            _add(files, seen, map(resolve1, _tree_values(tree)))
    except Exception:
        files = [_Embedded(name) for name in names]
    with contextlib.suppress(Exception):  # damage: those met so far, and the tree's
        _add(files, seen, _commented_files(document, annotated))
    return files


def _add(files: list[_Embedded], seen: set[int], specs: Iterable[Any]) -> None:
    """File specifications' files, those whose stream was met before left out."""
    for spec in specs:
        if not isinstance(spec, dict):  # a bare file name: a file outside the PDF
            continue
        streams = resolve1(spec.get("EF")) or {}
        stream = streams.get("UF") or streams.get("F")
        if isinstance(stream, PDFObjRef):
            if stream.objid in seen:
                continue
            seen.add(stream.objid)
        name = _text(spec.get("UF")) or _text(spec.get("F")) or UNNAMED
        files.append(_Embedded(name, stream))


def _commented_files(document: PDFDocument, annotated: Sequence[int]) -> Iterator[Any]:
    """The file specifications of the FileAttachment annotations on the pages
    ``annotated`` (PDFium found them), in page order."""
    wanted = set(annotated)
    if not wanted:
        return
    last = max(wanted)
    for index, page in enumerate(PDFPage.create_pages(document)):
        if index > last:
            break
        if index not in wanted:
            continue
        for annot in resolve1(page.annots) or []:
            annot = resolve1(annot)
            if isinstance(annot, dict) and annot.get("Subtype") is _FILE_ATTACHMENT:
                yield resolve1(annot.get("FS"))


def _tree_values(root: Any) -> Iterator[Any]:
    """A name tree's values, in order, its nodes visited once and so many at most."""
    pending, seen = [root], set()
    while pending and len(seen) < _MAX_TREE_NODES:
        node = pending.pop()
        key = node.objid if isinstance(node, PDFObjRef) else id(node)
        if key in seen:
            continue
        seen.add(key)
        node = resolve1(node)
        yield from resolve1(node.get("Names", []))[1::2]
        pending.extend(reversed(resolve1(node.get("Kids", []))))


def _text(value: Any) -> str:
    value = resolve1(value)
    return decode_text(value).strip("\x00") if isinstance(value, bytes) else ""


def _attached(file: _Embedded, reader: Attachments) -> Attached:
    """The file, with its data when it may be read: none once the reader reads no
    more (inside an attachment; past the limit, where its name alone counts it)."""
    if reader.inside_attachment:
        return Attached(file.name, b"")
    if reader.left <= 0:
        reader.past_limit(file.name)
        return Attached(file.name, b"")
    return Attached(file.name, _data(file.stream))


def _data(stream: Any) -> bytes:
    """The stream's bytes; past MAX_ATTACHMENT_BYTES, only that much and one more
    (the reader names it as over the limit). Nothing for a filter other than
    Flate (which real embedded files use), or damage: named only."""
    try:
        return _bounded(resolve1(stream), attachments.MAX_ATTACHMENT_BYTES + 1)
    except Exception:  # damage: named only
        return b""


def _bounded(stream: Any, cap: int) -> bytes:
    if not isinstance(stream, PDFStream):
        return b""
    raw = stream.get_rawdata() or b""
    if stream.decipher:  # encrypted, with an empty user password
        raw = stream.decipher(stream.objid, stream.genno, raw, stream.attrs)
    filters = stream.get_filters()
    if not filters:
        return raw[:cap]
    (kind, params), *others = filters
    if others or kind not in LITERALS_FLATE_DECODE:
        return b""
    if resolve1((params or {}).get("Predictor", 1)) != 1:
        return b""
    return zlib.decompressobj().decompress(raw, cap)
