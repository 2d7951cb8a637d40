"""Photos and scans as image files (PNG, JPEG, TIFF with all its pages, WebP, BMP,
AVIF, HEIC, GIF, JPEG 2000): OCR."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence

from PIL import Image, ImageFile, ImageOps, TiffImagePlugin, UnidentifiedImageError

from .base import (
    DEFAULT_OPTIONS,
    EMPTY_NOTE,
    CorruptFileError,
    ExtractionError,
    ExtractionResult,
    ExtractOptions,
    RefusedFileError,
    TextBuilder,
    UnsupportedFileError,
    join_notes,
    page_ranges,
    short_reason,
)
from .ocr import OcrUnavailable, grey, reader

try:
    from pi_heif import register_heif_opener
except ImportError:  # HEIC alone needs it (extract_heic says so); the rest still read
    register_heif_opener = None
else:
    # Pillow's own plugins first: an AVIF marked with the general brand "mif1" is
    # then read by its AVIF plugin, not taken by libheif, which has no AV1 decoder.
    Image.init()
    # libheif turns the photo as its HEIF boxes say and pi-heif resets the EXIF
    # orientation to 1, so upright_grey and thumbnails do not turn it twice.
    register_heif_opener()
# libheif's words for a HEIF coded in a way its wheel cannot decode (JPEG, VVC).
_NOT_BUILT_IN = re.compile(r"has not been built in|Unsupported feature")
# And for one whose size box claims more than its own limit (2³⁰ pixels): said
# before Pillow's limit is asked.
_OVER_LIBHEIF_LIMIT = re.compile(r"Security limit exceeded.*?(\d+)x(\d+)")

# Pillow's own bomb threshold (~89 megapixels: an A4 page at 1,200 dpi fits).
MAX_PIXELS = Image.MAX_IMAGE_PIXELS
# And a side: OCR reads a tall page in strips of 10,000 rows, each costing its own
# pass; a 1×89,000,000 picture (173 KB) took minutes. A side of 100,000 pixels is
# 8 m at 300 dpi.
MAX_SIDE = 100_000
# A page far longer than wide holds no line of text, and Tesseract aborts the
# process on some (a 20,000×1 PNG of 84 bytes): not read.
_MAX_THINNESS = 1_000
_THIN = "more than {:,} times as long as it is wide, too thin to hold text: not read"
_PILLOW_PIXELS = re.compile(r"\((\d+) pixels\)")  # in Pillow's bomb message
# Why each plugin refused a file it was shown: Pillow warns it when asked to.
Image.WARN_POSSIBLE_FORMATS = True
_NO_MODE = re.compile(r"^(\w+) opening failed\. (.*\bmode\b.*)$")
_MODE = re.compile(r"\bmode\b")
# A picture with more images inside that are views of it, not pages: an animation's
# frames (GIF, WebP, AVIF), a phone photo's preview or depth map (MPO), a HEIC's
# burst or live photo. Its picture is the image it opens at: the first frame, or a
# HEIC's primary image, which need not be its first.
_ONE_PICTURE = {"PNG", "WEBP", "MPO", "GIF", "AVIF", "HEIF"}
_TRUNCATED = "image file is truncated"  # Pillow's words for data that ends early
# libheif's and libavif's words for it: a HEIC or AVIF picture is not read in part.
_ENDS_EARLY = re.compile(r"Unexpected end of file|Truncated data")
# Pillow's words for a PNG's compressed text (a comment, metadata) that inflates
# past its bomb limit: the picture may be sound, its metadata is refused.
_TEXT_BOMB = re.compile(r"MAX_TEXT_CHUNK|memory used in text chunks")
_TEXT_REFUSED = (
    "This PNG is refused: its text (a comment or metadata) would unpack to more "
    "than Pillow allows, which is how a decompression bomb looks. Save the "
    "picture again without its metadata, or as JPEG."
)
_INCOMPLETE = "the image file is incomplete (its end is missing), so it cannot be read"


def cut_short(exc: OSError) -> bool:
    """Whether Pillow stopped because the image's data ends early."""
    return _TRUNCATED in str(exc)


@contextlib.contextmanager
def cut_short_allowed() -> Iterator[None]:
    """Decode what a cut-short image holds, its missing rows left blank."""
    ImageFile.LOAD_TRUNCATED_IMAGES = True
    try:
        yield
    finally:
        ImageFile.LOAD_TRUNCATED_IMAGES = False


_ORIENTATION, _COMPRESSION = 274, 259  # TIFF tags
_X_RESOLUTION, _Y_RESOLUTION = 282, 283
# Pixels taller than wide (a standard fax: 204 × 98 dpi) squash the print Tesseract
# sees: such a page is resampled to square pixels first. Within 10 % is square
# enough (a fine fax, 204 × 196); past 4 times, the resolution is not believed.
_UNEVEN, _MAX_UNEVEN = 1.1, 4.0
_TURNED, _UNCOMPRESSED = 5, 1  # Orientation 5-8 swaps width and height
CUT_SHORT_NOTE = (
    "The image file is incomplete (its end is missing): what it holds was read."
)


def extract_image(
    path: str | os.PathLike[str], options: ExtractOptions = DEFAULT_OPTIONS
) -> ExtractionResult:
    """OCR every page (frame) of an image file."""
    with warnings.catch_warnings(record=True) as reasons:
        warnings.simplefilter("always")
        # Pillow only warns between its limit and twice it; refuse from the limit.
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            try:
                return _open_and_read(path, options)
            except OSError as exc:
                if not cut_short(exc):
                    raise
            # Cut short (a camera or a transfer that left off the last bytes): the
            # rows it holds are read, the missing ones left blank, and it is said.
            with cut_short_allowed():
                result = _open_and_read(path, options, cut_short=True)
            return dataclasses.replace(
                result, note=join_notes(CUT_SHORT_NOTE, result.note)
            )
        except (Image.DecompressionBombWarning, Image.DecompressionBombError) as exc:
            # Pillow's text names its own two limits; say ours, once.
            found = _PILLOW_PIXELS.search(str(exc))
            pixels = int(found.group(1)) if found else None
            raise UnsupportedFileError(_too_large(pixels)) from exc
        except UnidentifiedImageError as exc:
            raise _unidentified(reasons) from exc
        except RuntimeError as exc:  # pi-heif's for what libheif will not decode
            refusal = heif_refusal(exc)
            if refusal is None:
                raise
            raise refusal from exc
        except (OSError, SyntaxError, ValueError, EOFError) as exc:
            if isinstance(exc, SyntaxError) and _MODE.search(str(exc)):
                # A later page in a pixel format Pillow has no mode for.
                raise _no_mode("image", str(exc)) from exc
            if _ENDS_EARLY.search(str(exc)):
                raise CorruptFileError(_INCOMPLETE) from exc
            if _TEXT_BOMB.search(str(exc)):
                raise RefusedFileError(_TEXT_REFUSED) from exc
            # Pillow reports truncated or inconsistent data with these.
            raise CorruptFileError(
                f"the image data is damaged ({short_reason(exc)})"
            ) from exc


def heif_refusal(exc: RuntimeError) -> UnsupportedFileError | None:
    """pi-heif's RuntimeError as the refusal it is (a picture over libheif's size
    limit, or coded in a way its wheel cannot decode), which fails the same on
    every attempt; None for any other."""
    message = str(exc)
    if over := _OVER_LIBHEIF_LIMIT.search(message):
        width, height = int(over.group(1)), int(over.group(2))
        return UnsupportedFileError(_too_large(width * height, (width, height)))
    if _NOT_BUILT_IN.search(message):
        return UnsupportedFileError(
            f"This image is coded in a way that cannot be read ({short_reason(exc)}); "
            "save it as JPEG or PNG and upload that."
        )
    return None


def extract_heic(
    path: str | os.PathLike[str], options: ExtractOptions = DEFAULT_OPTIONS
) -> ExtractionResult:
    """OCR a HEIC photo, which Pillow opens through pi-heif's plugin."""
    if register_heif_opener is None:  # extractor_missing, not damage
        raise ImportError("HEIC photos need pi-heif", name="pi_heif")
    return extract_image(path, options)


def _open_and_read(
    path: str | os.PathLike[str], options: ExtractOptions, *, cut_short: bool = False
) -> ExtractionResult:
    with Image.open(path) as image:
        turned_raw_tiff = (
            image.format == "TIFF"
            and image.tag_v2.get(_ORIENTATION, 1) >= _TURNED
            and image.tag_v2.get(_COMPRESSION) == _UNCOMPRESSED
        )
        if not turned_raw_tiff:
            return _read(image, options, cut_short=cut_short)
    # Pillow's own reader of uncompressed TIFF strips scrambles a page stored turned
    # (a scanner's Orientation 5-8, width and height swapped); libtiff reads it
    # upright. The choice is made as each page is opened, so it holds for the read.
    TiffImagePlugin.READ_LIBTIFF = True
    try:
        with Image.open(path) as image:
            return _read(image, options, cut_short=cut_short)
    finally:
        TiffImagePlugin.READ_LIBTIFF = False


def _read(
    image: Image.Image, options: ExtractOptions, *, cut_short: bool = False
) -> ExtractionResult:
    frames = getattr(image, "n_frames", 1)
    if image.format in _ONE_PICTURE:
        frames = 1  # the first image is the picture
    count = min(frames, options.max_pages)
    kind = "JPEG" if image.format == "MPO" else image.format or "image"
    notes = []
    if count < frames:
        notes.append(
            f"Only the first {count:,} of {frames:,} pages were read "
            "(EXTRACTION_MAX_PAGES)."
        )
    if options.ocr_mode == "never":
        note = "OCR is turned off (OCR_MODE=never), so the image was not read."
        return ExtractionResult("", frames, 0.0, kind.lower(), note)
    try:
        ocr = reader(options)
    except OcrUnavailable as exc:
        note = join_notes(f"The image was not read: {exc}", *notes)
        return ExtractionResult("", frames, 0.0, kind.lower(), note)
    text = TextBuilder(options.max_chars, "\n\n")
    confidences: list[int] = []
    rotated: list[int] = []
    thin: list[int] = []
    seconds = ocr.seconds
    for index in range(count):
        if index:  # the first is the image it opened at
            image.seek(index)
        width, height = image.size
        if _too_large_to_read(image.size):
            raise UnsupportedFileError(_too_large(width * height, (width, height)))
        if _too_thin(image.size):
            thin.append(index + 1)
            continue
        result = ocr.read(upright_grey(image, cut_short=cut_short))
        confidences += result.confidences
        if result.rotated:
            rotated.append(index + 1)
        if options.progress:
            options.progress(index + 1, count)
        if result.text and not text.add(result.text):
            break
    if thin:
        which = f"Pages {page_ranges(thin)} are" if len(thin) > 1 else "It is"
        which = f"Page {thin[0]} is" if frames > 1 and len(thin) == 1 else which
        notes.append(f"{which} {_THIN.format(_MAX_THINNESS)}.")
    confidence = sum(confidences) / len(confidences) / 100 if confidences else 0.0
    if not text.text.strip() and len(thin) < count:  # some page was OCRed
        notes.insert(0, "OCR found no text in this image.")
    return ExtractionResult(
        text.text,
        frames,
        round(confidence, 3),
        f"{kind.lower()}+tesseract",
        join_notes(text.note, *notes),
        details={
            "ocr_pages": page_ranges(list(range(1, index + 2))),
            "ocr_page_count": index + 1,
            "ocr_ms": round((ocr.seconds - seconds) * 1000),
            **({"rotated_pages": page_ranges(rotated)} if rotated else {}),
        },
    )


def with_pictures(
    result: ExtractionResult,
    pictures: Iterable[Callable[[], bytes]],
    options: ExtractOptions,
) -> ExtractionResult:
    """A document's result with its pictures read by OCR (each loads its bytes when
    called): when it has no text of its own, as a PDF's scanned pages are, or with
    OCR_MODE=always; and with a "No text" note when there is still none. The
    pictures are looked for only then."""
    own = bool(result.text.strip())
    if own and options.ocr_mode != "always":
        return result
    pictures = list(pictures)
    room = options.max_chars - len(result.text) - 2  # "\n\n" between the two
    if not pictures or room <= 0:
        if own:
            return result
        note = "No text: the document holds only pictures." if pictures else EMPTY_NOTE
        return dataclasses.replace(
            result, text="", confidence=0.0, note=join_notes(note, result.note)
        )
    read = _read_pictures(pictures, dataclasses.replace(options, max_chars=room))
    details = {**result.details, **read.details}
    if not read.text.strip():
        note = (
            "No text: OCR found none in its pictures."
            if read.details.get("ocr_page_count")
            else "No text: the document holds only pictures."
        )
        if own:
            note = ""
        return dataclasses.replace(
            result,
            text=result.text if own else "",
            confidence=result.confidence if own else 0.0,
            note=join_notes(note, read.note, result.note),
            details=details,
        )
    return dataclasses.replace(
        result,
        text="\n\n".join(t for t in (result.text, read.text) if t),
        confidence=round((result.confidence + read.confidence) / 2, 3)
        if own
        else read.confidence,
        extractor=f"{result.extractor}+tesseract",
        note=join_notes(result.note, read.note),
        details=details,
    )


def _read_pictures(
    pictures: Sequence[Callable[[], bytes]], options: ExtractOptions
) -> ExtractionResult:
    """OCR pictures in order, within the bounds of image files: the first
    ``max_pages``, none over MAX_PIXELS. A picture that cannot be decoded (a
    Windows metafile, a damaged one) is passed over: the document's text stands."""
    if options.ocr_mode == "never":
        note = "OCR is turned off (OCR_MODE=never), so its pictures were not read."
        return ExtractionResult("", None, 0.0, "tesseract", note)
    try:
        ocr = reader(options)
    except OcrUnavailable as exc:
        note = f"Its pictures were not read: {exc}"
        return ExtractionResult("", None, 0.0, "tesseract", note)
    count = min(len(pictures), options.max_pages)
    text = TextBuilder(options.max_chars, "\n\n")
    confidences: list[int] = []
    seconds, read, too_large = ocr.seconds, 0, 0
    for index, load in enumerate(pictures[:count]):
        page, over = _picture_page(load())
        too_large += over
        if page is not None:
            found = ocr.read(page)
            read += 1
            confidences += found.confidences
            if found.text and not text.add(found.text):
                break
        if options.progress:
            options.progress(index + 1, count)
    notes = [text.note]
    if count < len(pictures):
        notes.append(
            f"Only the first {count:,} of {len(pictures):,} pictures were read "
            "(EXTRACTION_MAX_PAGES)."
        )
    if too_large:
        notes.append(
            f"{too_large:,} of its pictures were over {_megapixels()} "
            f"or {MAX_SIDE:,} pixels a side: not read."
        )
    confidence = sum(confidences) / len(confidences) / 100 if confidences else 0.0
    return ExtractionResult(
        text.text,
        None,
        round(confidence, 3),
        "tesseract",
        join_notes(*notes),
        details={
            "ocr_page_count": read,
            "ocr_ms": round((ocr.seconds - seconds) * 1000),
        },
    )


def _picture_page(data: bytes) -> tuple[Image.Image | None, bool]:
    """A picture's first image, upright and grey (None when it cannot be decoded),
    and whether it was left unread for being over MAX_PIXELS or MAX_SIDE."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            with Image.open(io.BytesIO(data)) as image:
                if _too_large_to_read(image.size):
                    return None, True
                if _too_thin(image.size):  # a rule, a border: no text
                    return None, False
                return upright_grey(image), False
        except (Image.DecompressionBombWarning, Image.DecompressionBombError):
            return None, True
        except (OSError, SyntaxError, ValueError, EOFError):
            return None, False


def _too_large_to_read(size: tuple[int, int]) -> bool:
    return size[0] * size[1] > MAX_PIXELS or max(size) > MAX_SIDE


def _too_thin(size: tuple[int, int]) -> bool:
    return max(size) > _MAX_THINNESS * min(size)


def _megapixels() -> str:
    return f"the limit of {MAX_PIXELS / 1e6:.0f} megapixels"


def upright_grey(image: Image.Image, *, cut_short: bool = False) -> Image.Image:
    """The page in grey, turned as its EXIF says (photos carry their turn there).
    Grey first: turning a colour photo copies it, at 3-4 times the bytes of grey
    (a 9,000-pixel square photo peaked at 1.9 GB, 1.4 GB so). Greying a picture
    with transparency draws it anew, without the EXIF: its turn is carried over.
    ``cut_short``: the image's data ends early, its missing rows to be paper."""
    ratio = _resolution_ratio(image)  # before Pillow turns a TIFF upright to load it
    page = grey(image)
    if cut_short:
        page = _missing_rows_blank(page)
    page = _square_pixels(page, ratio)
    page.getexif()[_ORIENTATION] = image.getexif().get(_ORIENTATION, 1)
    return ImageOps.exif_transpose(page)


def _missing_rows_blank(page: Image.Image) -> Image.Image:
    """The grey page of a cut-short image with the rows its data never reached
    white: Pillow leaves them one flat shade (black for PNG, grey for JPEG), which
    OCR read as a dark band and found scraps of letters at its edge. They are the
    rows at the foot all of the last row's one shade (none holds any print)."""
    width, height = page.size
    low, high = page.crop((0, height - 1, width, height)).getextrema()
    if low != high or low == 255:
        return page
    # A binary search for the block's first row: rows from ``bottom`` down are
    # flat, from ``above`` down not (-1: the page may be flat all over).
    above, bottom = -1, height - 1
    while bottom - above > 1:
        middle = (above + bottom) // 2
        if page.crop((0, middle, width, height)).getextrema() == (low, low):
            bottom = middle
        else:
            above = middle
    page = page.copy()
    page.paste(255, (0, bottom, width, height))
    return page


def _resolution_ratio(image: Image.Image) -> float:
    """The image's horizontal resolution over its vertical one: 1 for square
    pixels, or when it does not say. A TIFF's tags are its current page's, of
    its page as stored: one stored turned (Orientation 5-8) is loaded upright."""
    if image.format == "TIFF":
        x, y = image.tag_v2.get(_X_RESOLUTION), image.tag_v2.get(_Y_RESOLUTION)
        if image.tag_v2.get(_ORIENTATION, 1) >= _TURNED:
            x, y = y, x
    else:  # PNG's pHYs, JPEG's JFIF density, BMP's header
        x, y = image.info.get("dpi") or image.info.get("resolution") or (None, None)
    try:
        ratio = float(x) / float(y)
    except (TypeError, ValueError, ZeroDivisionError):
        return 1.0
    return ratio if 1 / _MAX_UNEVEN <= ratio <= _MAX_UNEVEN else 1.0


def _square_pixels(page: Image.Image, ratio: float) -> Image.Image:
    """The grey page resampled to square pixels: its lower-resolution side
    enlarged, or, past MAX_PIXELS, its higher-resolution side reduced."""
    if 1 / _UNEVEN < ratio < _UNEVEN:
        return page
    width, height = page.size
    if ratio > 1:  # rows are further apart than columns: too few rows
        size = (width, round(height * ratio))
        if size[0] * size[1] > MAX_PIXELS:
            size = (max(1, round(width / ratio)), height)
    else:
        size = (round(width / ratio), height)
        if size[0] * size[1] > MAX_PIXELS:
            size = (width, max(1, round(height * ratio)))
    return page.resize(size, Image.Resampling.LANCZOS)


def _unidentified(reasons: list[warnings.WarningMessage]) -> ExtractionError:
    """Damage, a file cut short, or a pixel format Pillow lacks (16-bit grey with
    alpha, as ImageMagick writes it): its plugins' reasons tell."""
    for reason in reasons:
        found = _NO_MODE.search(str(reason.message))
        if found:
            return _no_mode(f"{found.group(1)} image", found.group(2))
        if _ENDS_EARLY.search(str(reason.message)):
            return CorruptFileError(_INCOMPLETE)
    return CorruptFileError("the image cannot be decoded")


def _no_mode(what: str, reason: str) -> UnsupportedFileError:
    return UnsupportedFileError(
        f"This {what} uses a pixel format that cannot be read ({reason}); "
        "save it as 8-bit greyscale or colour and upload that."
    )


def _too_large(pixels: int | None, size: tuple[int, int] | None = None) -> str:
    """One plain message with our limit (Pillow's own names two different ones)."""
    limit = _megapixels()
    if size and max(size) > MAX_SIDE and (pixels or 0) <= MAX_PIXELS:
        side = f"the limit of {MAX_SIDE:,} pixels a side"
        over = f"{size[0]:,}×{size[1]:,} pixels, over {side}"
    elif pixels is None:
        over = f"it is over {limit}"
    else:
        megapixels = f"{pixels / 1e6:,.0f} megapixels"
        if size:
            megapixels = f"{size[0]:,}×{size[1]:,} pixels ({megapixels})"
        over = f"{megapixels}, over {limit}"
    return (
        f"This image is too large to read: {over}. Scale it down or save it as a PDF."
    )
