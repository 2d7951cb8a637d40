"""HTML and EPUB extraction: each test builds its document here and pins the text
read. The defects were found by an outside audit."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from documents.extractors import extract


def read(tmp_path: Path, name: str, content: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(content)
    return extract(path).text


def test_inline_svg_shows_its_text_but_not_its_tooltip(tmp_path: Path) -> None:
    # SVG was dropped whole, labels and all, while its <title> (a tooltip, shown
    # on hover only) became the page's title when the page had none.
    page = (
        b"<html><body><p>Sales by region</p>"
        b'<svg viewBox="0 0 100 50"><title>Chart tooltip</title><desc>A bar chart'
        b'</desc><defs><text id="t">Defined only</text></defs><style>text{}</style>'
        b'<g><rect width="10" height="10"/><text x="0" y="20">North <tspan>42</tspan>'
        b'</text><text x="0" y="40">South 17</text></g></svg>'
        b"<p>Source: ledger</p></body></html>"
    )
    assert read(tmp_path, "chart.html", page) == (
        "Sales by region\nNorth 42\nSouth 17\nSource: ledger"
    )


def test_page_title_is_the_html_title_not_an_svg_one(tmp_path: Path) -> None:
    # A logo drawn before the page's own <title> (a template that writes the
    # header first) lent it its tooltip as the title; the real one stayed in the text.
    page = (
        b"<!DOCTYPE html><svg><title>Logo</title><text>ACME</text></svg>"
        b"<title>Annual report</title><p>Body</p>"
    )
    assert read(tmp_path, "report.html", page) == "Annual report\nACME\nBody"


def epub_bytes(chapter: str) -> bytes:
    """A one-chapter EPUB 3."""
    opf = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" '
        'version="3.0"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
        "<dc:title>Atlas</dc:title></metadata><manifest>"
        '<item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/>'
        '</manifest><spine><itemref idref="c1"/></spine></package>'
    )
    container = (
        '<?xml version="1.0"?><container version="1.0" '
        'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
        '<rootfile full-path="OEBPS/content.opf" '
        'media-type="application/oebps-package+xml"/></rootfiles></container>'
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
        archive.writestr("META-INF/container.xml", container)
        archive.writestr("OEBPS/content.opf", opf)
        archive.writestr("OEBPS/c1.xhtml", chapter)
    return buffer.getvalue()


def test_epub_svg_captions_are_read(tmp_path: Path) -> None:
    # E-books draw maps and title pages in SVG; their words are the book's text.
    chapter = (
        '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/'
        'xhtml"><head><title>Atlas</title></head><body><h1>Maps</h1>'
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><title>map'
        '</title><text x="1" y="5">River Thames</text></svg></body></html>'
    )
    assert read(tmp_path, "atlas.epub", epub_bytes(chapter)) == (
        "Atlas\n\nMaps\nRiver Thames"
    )
