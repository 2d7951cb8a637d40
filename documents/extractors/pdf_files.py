"""Files embedded in a PDF (its Attachments panel, the EmbeddedFiles name tree: a
ZUGFeRD or Factur-X invoice's XML, a portfolio's documents): named after the pages'
text, and the documents among them read as an e-mail's attachments are."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator

import pypdfium2 as pdfium

from .attachments import Attached, Attachments, separated
from .base import ExtractionResult, ExtractOptions, TextBuilder, join_notes


def with_embedded_files(
    path: str | os.PathLike[str], result: ExtractionResult, options: ExtractOptions
) -> ExtractionResult:
    """The pages' result, followed by the text of the documents embedded in the PDF
    and the names of all its embedded files."""
    if len(result.text) >= options.max_chars:
        return result  # no room left: not even opened
    files = _embedded_files(path)
    if not files:
        return result
    reader = Attachments(options)
    text = TextBuilder(options.max_chars)
    text.extend(_lines(result.text, files, reader))
    return dataclasses.replace(
        result,
        text=text.text,
        note=join_notes(result.note, reader.note, text.note),
    )


def _lines(pages: str, files: list[Attached], reader: Attachments) -> Iterator[str]:
    if pages:
        yield pages
    blocks = [reader.lines(file) for file in files]
    names = ", ".join(file.name for file in files)
    yield from separated([*blocks, iter([f"Attachments: {names}"])], after=bool(pages))


def _embedded_files(path: str | os.PathLike[str]) -> list[Attached]:
    """The files in the PDF's EmbeddedFiles name tree; none when PDFium cannot open
    it (the pages' reader has said why)."""
    try:
        doc = pdfium.PdfDocument(os.fspath(path))
    except pdfium.PdfiumError:
        return []
    try:
        files = []
        for index in range(doc.count_attachments()):
            attachment = doc.get_attachment(index)
            name = attachment.get_name() or "(unnamed attachment)"
            try:
                data = bytes(attachment.get_data())
            except pdfium.PdfiumError:
                data = b""  # no stream to read: named only
            files.append(Attached(name, data))
        return files
    finally:
        doc.close()
