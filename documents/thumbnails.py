"""First-page thumbnails, drawn by the queue's children (the ``thumbnail`` job kind).
No Django here: children start fast and hold no database connection.

A PDF's first page is drawn with PDFium, an image is scaled (its first frame, or a
HEIC's primary image, turned upright), and any other document becomes a text card: its
title and the first lines of its extracted text on a page-shaped card."""

from __future__ import annotations

import io
import textwrap
import warnings

from PIL import Image, ImageDraw, ImageFont, ImageOps, UnidentifiedImageError

# Importing image registers pi-heif's plugin: HEIC photos are drawn like the rest.
from documents.extractors.image import cut_short, cut_short_allowed, heif_refusal
from documents.extractors.ocr import grey
from documents.local_files import remove_copy
from documents.page_render import render
from jobqueue.child import JobFailed

# The box a thumbnail fits in: an A4 page's shape, two list rows high.
WIDTH, HEIGHT = 240, 340
CARD_MARGIN = 16
CARD_LINES = 18
PDF = "application/pdf"


def thumbnail_in_child(
    path: str, mime_type: str, title: str, text: str, copy: bool = False
) -> bytes:
    """The document's thumbnail as PNG bytes; JobFailed says why there is none.
    ``copy``: ``path`` is a copy of the stored file, removed after."""
    try:
        if mime_type == PDF:
            picture = _pdf_page(path)
        elif mime_type.startswith("image/"):
            picture = _image(path)
        else:
            picture = text_card(title, text)
    finally:
        if copy:
            remove_copy(path)
    picture.thumbnail((WIDTH, HEIGHT))
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def _pdf_page(path: str) -> Image.Image:
    import pypdfium2 as pdfium

    try:
        png = render(path, 1, width=WIDTH * 2)
    except pdfium.PdfiumError as exc:
        message = f"The PDF's first page cannot be drawn: {exc}"
        raise JobFailed("corruption", message) from exc
    except IndexError:
        raise JobFailed("unsupported", "The PDF has no pages to draw.") from None
    return Image.open(io.BytesIO(png))


def _image(path: str) -> Image.Image:
    with warnings.catch_warnings():
        # The same bound as reading the image: a bomb is refused, not decoded.
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            try:
                return _scaled(path)
            except OSError as exc:
                if not cut_short(exc):
                    raise
            # What its text was read from: the rows it holds, the rest blank.
            with cut_short_allowed():
                return _scaled(path)
        except (Image.DecompressionBombWarning, Image.DecompressionBombError):
            raise JobFailed("unsupported", "The image is too large to draw.") from None
        except RuntimeError as exc:  # pi-heif's, as reading the picture says it
            refusal = heif_refusal(exc)
            if refusal is None:
                raise
            raise JobFailed(refusal.error_type, str(refusal)) from exc
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
            raise JobFailed("corruption", f"The image cannot be drawn: {exc}") from exc


def _scaled(path: str) -> Image.Image:
    with Image.open(path) as image:
        image.draft("RGB", (WIDTH * 2, HEIGHT * 2))  # JPEG: decode smaller
        picture = ImageOps.exif_transpose(image)
        picture.thumbnail((WIDTH, HEIGHT))
        return _flatten(picture)


def _flatten(image: Image.Image) -> Image.Image:
    """RGB on white: transparency and palettes shown as people see them, and 16-bit
    grey (a 10-bit HEIC's, a scanner's PNG) scaled to 8 bits: converted as it is,
    all but black came out white."""
    if image.mode.startswith("I"):
        image = grey(image)
    image = image.convert("RGBA")
    background = Image.new("RGBA", image.size, "white")
    return Image.alpha_composite(background, image).convert("RGB")


def text_card(title: str, text: str) -> Image.Image:
    """A page-shaped card with the title and the first lines of the text."""
    card = Image.new("RGB", (WIDTH, HEIGHT), "white")
    draw = ImageDraw.Draw(card)
    draw.rectangle([0, 0, WIDTH - 1, HEIGHT - 1], outline="#c9ced6")
    heading = ImageFont.load_default(size=15)
    body = ImageFont.load_default(size=11)
    y = CARD_MARGIN
    for line in textwrap.wrap(title, width=26)[:2]:
        draw.text((CARD_MARGIN, y), line, fill="#1f2933", font=heading)
        y += 20
    y += 6
    lines = [
        wrapped
        for paragraph in text.splitlines()
        if paragraph.strip()
        for wrapped in textwrap.wrap(paragraph.strip(), width=38)
    ]
    for line in lines[:CARD_LINES]:
        draw.text((CARD_MARGIN, y), line, fill="#52606d", font=body)
        y += 15
    return card
