"""Draw one PDF page as PNG with PDFium. No Django: run as a child process,
``python -m documents.page_render PATH NUMBER``, the PNG on stdout."""

from __future__ import annotations

import io
import os
import resource
import sys

# The page's width in pixels: sharp on a laptop, a bounded cost per page.
PAGE_WIDTH = 1000
# A page may be drawn at most this many times its size in points (a tiny page).
MAX_SCALE = 4.0
# The drawing's address space: a hostile page fails here, not the host.
MEMORY_BYTES = 1024 * 1024 * 1024


def render(path: str, number: int, width: int = PAGE_WIDTH) -> bytes:
    """Page ``number`` (1-based) of the PDF at ``path`` as PNG, ``width`` pixels wide."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(path)
    try:
        if not 1 <= number <= len(pdf):
            raise IndexError(f"There is no page {number}.")
        page = pdf[number - 1]
        scale = min(width / max(page.get_width(), 1.0), MAX_SCALE)
        image = page.render(scale=scale).to_pil()
        buffer = io.BytesIO()
        image.save(buffer, format="PNG", optimize=True)
        return buffer.getvalue()
    finally:
        pdf.close()


if __name__ == "__main__":
    # Set here, not by the web process as it forks: it runs threads. Others'
    # requests come first: a page may take seconds to draw.
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    os.nice(10)
    sys.stdout.buffer.write(render(sys.argv[1], int(sys.argv[2])))
