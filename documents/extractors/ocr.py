"""OCR with Tesseract (through tesserocr): find its language data, read page images.

No Django here: this runs in extraction children. Tesseract is loaded once per child
process and reused for every page it reads.
"""

from __future__ import annotations

import functools
import glob
import importlib.util
import logging
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import Image

    from .base import ExtractOptions

# Where distributions put Tesseract's language data (newest version first on Debian).
_SEARCH = (
    "/usr/share/tesseract-ocr/*/tessdata",  # Debian, Ubuntu
    "/usr/share/tessdata",  # Fedora, Arch, Alpine
    "/usr/local/share/tessdata",  # built from source
    "/usr/local/share/tesseract-ocr/*/tessdata",
    "/opt/homebrew/share/tessdata",  # macOS (Homebrew)
)
LANGUAGES = re.compile(r"^[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*$")
_CONFIDENT = 60  # Tesseract word confidence (0..100) we count as a word read
# A reading with fewer confident words, or a lower mean confidence, may be of a page
# on its side (sideways text reads as scraps at ~30): check the orientation.
_SECOND_LOOK_WORDS = 10
# OSD's answer (its orient_conf) is acted on from _OSD_TURN; below _OSD_SURE (the
# margin Tesseract itself asks of it) a few lines of text fool it, or it gives none.
_OSD_TURN = 1.0
_OSD_SURE = 7.0
# A reading whose mean word confidence is under this may be of text upside down or on
# its side (scraps at 10-60, against ~95 upright): it is tried at the other turns.
_READS_WELL = 75
_BLANK_LINES = re.compile(r"\n\s*\n\s*\n+")
# Tesseract aborts the process on an image side of 32,768 pixels or more (a phone's
# full-page screenshot, a till roll): longer images are read in strips, cut between
# lines, and wider ones scaled down to fit.
_MAX_SIDE = 32_000
_STRIP = 10_000  # a strip's height, give or take the search for a blank row
_CUT_SEARCH = 400  # pixels above a strip's end searched for the blankest row
# Scanned askew: looked for within ±_MAX_SKEW degrees on a copy at most _SKEW_SIDE
# pixels a side (25 ms); turned for at least _MIN_SKEW, when the lines come out
# _CLEARER times more peaked than as scanned. A page fed crooked or photographed
# by hand lies up to 10° off: at ±5°, one 7° off was set 4.4° level, and Tesseract
# read nothing of it (2.6° clockwise is too much for its layout analysis).
_MAX_SKEW = 10
_SKEW_SIDE = 1000
_MIN_SKEW = 0.5
_CLEARER = 1.1
_SOLID_CELL = 3  # dark areas are told from print in cells of this many pixels
# White print on a dark band (a banner, a table's header row, a dark-mode screenshot):
# Tesseract dropped such a band as a picture, or read it as scraps. A page with one
# is read again with its bands turned dark print on light, and the reading with more
# confident words kept (heavy headline print can pass for a band). A band is where
# the page, averaged over ~50 pixels, is darker than _DARK (grey levels).
_BAND_CELL = 4  # the page looked at 1/4 size,
_BAND_RADIUS = 6  # averaged 6 cells either way
_DARK = 100
_LIGHT, _LIGHT_SHARE = 160, 0.01  # a band holds print: 1 % of it lighter than this
# A smudge or a stamp is no band; a heading's bar across an A4 page is 2 % of it.
_MIN_BAND_SHARE = 0.003
# Only bands that read, lightened, as words (one the page's reading lacks) cost the
# page a second reading (3 of the corpus's 5 scans, and a book's cover, paid one for
# nothing: a photo's dark parts, a smudge, a title read already).
_BAND_WORDS = 2
# A page mostly of bands is light print on dark (a dark-mode screenshot, a
# negative): read lightened first, not as it is and then again.
_MOSTLY_DARK = 0.5
_PROBE_PIXELS = 2_000_000
# Paper in a shadow: the lightest of each ~40 pixels square (print is never that
# dense) between _SHADE of the page's paper (its lightest _PAPER_SHARE), over
# _SHADOW_SHARE of the page.
_SHADOW_CELL, _SHADOW_WINDOW = 8, 5
_PAPER_SHARE = 0.05
_SHADE = (0.25, 0.7)
_SHADOW_SHARE = 0.05
# A speckled page: black and white (_PAPER_OR_INK of its pixels within _TONE levels
# of black or white: a clean page after _full_range 0.98, a phone photo 0.2) with
# dark pixels that have no dark neighbour over _SPECKLED of it (clean print none, its
# strokes being wider; a fax with 0.4 % of its pixels flipped 0.23 %).
_TONE = 32
_PAPER_OR_INK = 0.9
_SPECKLED = 0.0005
_WORD = re.compile(r"\w{3,}")
# A page with print has at least this share of its small copy's pixels as strokes
# ("Page 7" alone on an A4 page: 0.05 %; a page of prose: 3 %; blank paper: 0).
_PRINT_SHARE = 0.0002
# Print whose lines are under _SMALL_LINE pixels high (a screenshot's 9-point text, a
# fax's fine print) reads with wrong letters and digits: it is read again enlarged
# to lines of about _GOOD_LINE pixels, at most _MAX_ENLARGED pixels in all.
_SMALL_LINE = 16
_GOOD_LINE = 32
_MAX_ENLARGED = 40_000_000
# Lines under ~9 pixels high are not found as lines at all: a small image (a snippet,
# a thumbnail) that reads as nothing is read again this much larger, within
# _PROBE_PIXELS (a big page that reads as nothing is mostly a blank one).
_TINY_SCALE = 3
logger = logging.getLogger(__name__)


class OcrUnavailable(Exception):  # noqa: N818 - a state to report, not a failure
    """OCR cannot run on this machine; the message says why and how to fix it."""


def tessdata_candidates() -> list[str]:
    """Folders that may hold ``*.traineddata``: TESSDATA_PREFIX alone when set."""
    prefix = os.environ.get("TESSDATA_PREFIX")
    if prefix:  # an explicit choice: nothing else is looked at
        return [prefix, os.path.join(prefix, "tessdata")]
    found: list[str] = []
    for pattern in _SEARCH:
        found += sorted(glob.glob(pattern), reverse=True)
    return found


def missing_languages(languages: str, tessdata: str | None) -> list[str]:
    """The languages (and ``osd`` is not one) without a traineddata file there."""
    return [
        lang
        for lang in languages.split("+")
        if not tessdata or not os.path.isfile(_data_file(tessdata, lang))
    ]


def find_tessdata(languages: str) -> str | None:
    """The first candidate folder holding every language asked for, else None."""
    for folder in tessdata_candidates():
        if not missing_languages(languages, folder):
            return folder
    return None


def has_osd(tessdata: str) -> bool:
    """Orientation detection needs Tesseract's ``osd`` data (tesseract-ocr-osd)."""
    return os.path.isfile(_data_file(tessdata, "osd"))


def unavailable_reason(languages: str, tessdata: str | None = None) -> str | None:
    """Why OCR cannot run with these languages, with the fix; None when it can.
    The reason is shown to people (a document's note, the public readiness probe):
    it names no folder of the server, which goes to the log instead."""
    # Found, not imported: importing Tesseract costs every worker's start 20 ms.
    if importlib.util.find_spec("tesserocr") is None:
        return (
            "OCR is unavailable on this server: the tesserocr package is not "
            "installed (pip install -r requirements.txt)."
        )
    folder = tessdata or find_tessdata(languages)
    missing = missing_languages(languages, folder)
    if not missing:
        return None
    _log_missing("+".join(missing), os.environ.get("TESSDATA_PREFIX") or folder)
    packages = " ".join(f"tesseract-ocr-{m.lower().replace('_', '-')}" for m in missing)
    return (
        f"OCR is unavailable on this server: Tesseract's language data for "
        f"{'+'.join(missing)} is not installed. Install it (Debian: apt-get install "
        f"{packages} tesseract-ocr-osd) or set TESSDATA_PREFIX to a folder holding "
        f"{missing[0]}.traineddata."
    )


@functools.cache
def _log_missing(languages: str, where: str | None) -> None:
    # Once per process: the dashboard and every scan ask again.
    where = where or f"the usual places ({', '.join(_SEARCH)})"
    logger.warning("OCR unavailable: no Tesseract data for %s in %s", languages, where)


def _data_file(folder: str, language: str) -> str:
    return os.path.join(folder, f"{language}.traineddata")


@dataclass(slots=True)
class OcrPage:
    """What Tesseract read on one page image."""

    text: str
    confidences: list[int] = field(default_factory=list)  # per word, 0..100
    rotated: int = 0  # degrees the image was turned before reading
    line_height: int = 0  # the median height of its lines of text, in pixels

    @property
    def confident_words(self) -> int:
        return sum(1 for c in self.confidences if c >= _CONFIDENT)

    @property
    def with_doubts(self) -> bool:
        """Some word read without confidence."""
        return self.confident_words < len(self.confidences)

    @property
    def doubtful(self) -> bool:
        """Too little read with confidence: perhaps the page lies on its side."""
        if self.confident_words < _SECOND_LOOK_WORDS:
            return True
        return sum(self.confidences) < _CONFIDENT * len(self.confidences)

    @property
    def poor(self) -> bool:
        """Read as scraps: perhaps the page lies upside down (nothing read is not)."""
        return bool(self.confidences) and self.mean < _READS_WELL

    @property
    def mean(self) -> float:
        return sum(self.confidences) / len(self.confidences) if self.confidences else 0

    @property
    def weight(self) -> int:
        """The confidence of the words read with confidence, summed: one word read
        well weighs less than a page read well."""
        return sum(c for c in self.confidences if c >= _CONFIDENT)


class Reader:
    """Tesseract with the given languages, plus orientation detection if installed."""

    def __init__(self, tessdata: str, languages: str) -> None:
        import tesserocr

        path = os.path.join(tessdata, "")  # Tesseract wants the trailing separator
        try:
            self.api = tesserocr.PyTessBaseAPI(
                path=path,
                lang=languages,
                psm=tesserocr.PSM.AUTO,
                # Sauvola's local threshold, not Otsu's one for the whole page: a
                # photo's sensor noise on a mostly blank page made Otsu's reading
                # take a minute and find no text (bench/ocr_bench.py, noisy photos).
                variables={"thresholding_method": "2"},
            )
            self.osd = (
                tesserocr.PyTessBaseAPI(
                    path=path, lang="osd", psm=tesserocr.PSM.OSD_ONLY
                )
                if has_osd(tessdata)
                else None
            )
        except RuntimeError as exc:  # "Failed to init API": unreadable data files
            # Tesseract's message names the folder too: for the log only.
            logger.warning("Tesseract cannot load %s from %s: %s", languages, path, exc)
            raise OcrUnavailable(
                f"OCR is unavailable on this server: Tesseract could not load its "
                f"language data for {languages}."
            ) from exc
        self.seconds = 0.0  # time spent reading, for the metrics

    def read(self, image: Image.Image) -> OcrPage:
        """The text on a page image, turned upright first if it lies on its side."""
        if max(image.size) > _MAX_SIDE:
            return self._read_in_strips(grey(image))
        started = time.monotonic()
        try:
            image = _straightened(_full_range(grey(image)))
            lightened, bands, dark = _bands_lightened(image)
            if dark >= _MOSTLY_DARK:
                page, image = self._read_dark(image, lightened)
            else:
                page = self._recognise(image)
                # Only pages with dark bands pay for a look at them, and only bands
                # with print in them for a second reading of the page.
                if bands and self._new_print(lightened.crop(bands), page):
                    page, image = self._better(page, image, lightened)
                # A fax line's noise, specks of a pixel or two, breaks letters into
                # scraps: a speckled page read with doubts is read again despeckled
                # (before the shadow's reading, whose black and white a photo's
                # noise would pass for speckled).
                if page.with_doubts:
                    clean = _despeckled(image)
                    if clean is not None:
                        page, image = self._better(page, image, clean)
                # Tesseract finds the lines in a shadow (its threshold is local)
                # but reads their letters from the grey page, where dim paper
                # garbles them: a page read with doubts that has a shadow is read
                # again in Tesseract's own black and white (not a dark picture's
                # page, read without doubt).
                if page.with_doubts and _shadowed(image):
                    page, image = self._better(page, image, self._thresholded(image))
            # Most pages are upright: only a page that read badly pays for the
            # orientation check, and only a better second reading replaces the first.
            if self.osd is not None and page.doubtful:
                page, image = self._upright(image, page)
            scale = _enlargement(page.line_height, image.size)
            if scale > 1:  # only pages of small print pay for a second reading
                larger = self._recognise(_scaled(image, scale))
                if larger.confident_words >= page.confident_words:
                    larger.rotated = page.rotated
                    page = larger
            # Tesseract's layout analysis can take a whole photographed page for a
            # picture (a dark desk round it, a shadow across it, its lines bent by
            # the camera's angle) and read nothing of it: a page with print that
            # reads as nothing is read again as one block of text.
            if not page.text and _has_print(image):
                block = self._read_as_block(image)
                # Read as words, not a picture's scraps (~30 on average).
                if block.confident_words and block.mean >= _CONFIDENT:
                    block.rotated = page.rotated
                    page = block
            return page
        finally:
            self.seconds += time.monotonic() - started

    def _better(
        self, page: OcrPage, image: Image.Image, other: Image.Image
    ) -> tuple[OcrPage, Image.Image]:
        """The reading of ``other`` with ``other`` if it is more confident than
        ``page``, the reading of ``image``; else ``page`` and ``image``."""
        second = self._recognise(other)
        if second.confident_words > page.confident_words:
            return second, other
        return page, image

    def _read_in_strips(self, image: Image.Image) -> OcrPage:
        if image.width > _MAX_SIDE:
            height = max(1, round(image.height * _MAX_SIDE / image.width))
            image = image.resize((_MAX_SIDE, height))
        pages = [self.read(strip) for strip in _strips(image)]
        return OcrPage(
            "\n\n".join(page.text for page in pages if page.text),
            [confidence for page in pages for confidence in page.confidences],
        )

    def _recognise(self, image: Image.Image) -> OcrPage:
        import tesserocr

        self.api.SetImage(image)
        text = self.api.GetUTF8Text()
        confidences = [c for c in self.api.AllWordConfidences() if c >= 0]
        lines = tesserocr.RIL.TEXTLINE
        heights = sorted(
            box[3] - box[1]
            for line in tesserocr.iterate_level(self.api.GetIterator(), lines)
            if (box := line.BoundingBox(lines))
        )
        self.api.Clear()
        text = _BLANK_LINES.sub("\n\n", text).strip()
        if not text:
            return OcrPage("")
        middle = heights[len(heights) // 2] if heights else 0
        return OcrPage(text, confidences, line_height=middle)

    def _read_as_block(self, image: Image.Image) -> OcrPage:
        """``image`` read as one block of text, without Tesseract's page layout
        analysis (which tells text from pictures and columns from each other)."""
        import tesserocr

        self.api.SetPageSegMode(tesserocr.PSM.SINGLE_BLOCK)
        try:
            return self._recognise(image)
        finally:
            self.api.SetPageSegMode(tesserocr.PSM.AUTO)

    def _thresholded(self, image: Image.Image) -> Image.Image:
        """The page as Tesseract binarises it (Sauvola's local threshold), grey."""
        self.api.SetImage(image)
        try:
            return self.api.GetThresholdedImage().convert("L")
        finally:
            self.api.Clear()

    def _read_dark(
        self, image: Image.Image, lightened: Image.Image
    ) -> tuple[OcrPage, Image.Image]:
        """A page mostly dark with light print (a dark-mode screenshot), read
        lightened: as it is, Tesseract found its words but could give its lines out
        of order. Read as it is too only when the lightened reading is doubtful."""
        page = self._recognise(lightened)
        if page.doubtful:
            second = self._recognise(image)
            if second.confident_words > page.confident_words:
                return second, image
        return page, lightened

    def _new_print(self, bands: Image.Image, page: OcrPage) -> bool:
        """Whether ``bands``, lightened, hold words ``page`` was read without (a
        bold headline, read already, passes for a band too)."""
        # A band's print is a heading's or a banner's, large: a look at a page's
        # worth of bands (a book's cover) need not cost a page's reading.
        scale = min(1.0, (_PROBE_PIXELS / (bands.width * bands.height)) ** 0.5)
        probe = self._recognise(_scaled(bands, scale) if scale < 1 else bands)
        if probe.confident_words < _BAND_WORDS:
            return False
        seen = set(_WORD.findall(page.text.lower()))
        return any(word not in seen for word in _WORD.findall(probe.text.lower()))

    def _upright(
        self, image: Image.Image, page: OcrPage
    ) -> tuple[OcrPage, Image.Image]:
        """A doubtful page read turned as OSD says, if that reads better; and when
        OSD is not sure and the page still reads as scraps, read at the other turns
        too (at most three readings more), keeping the best.

        OSD often cannot tell the turn of a few lines (a label, a short note), and
        Tesseract reads lines on their side as if turned one way: text turned 90°
        or 180° came out upside down, as scraps. Turned 180° first, it reads right."""
        angle, confidence = self._orientation(image)
        best, upright, tried = page, image, {0}
        if angle and confidence >= _OSD_TURN:
            tried.add(angle)
            turned = _turned(image, angle)
            reading = self._recognise(turned)
            if reading.confident_words > page.confident_words:
                reading.rotated = angle
                best, upright = reading, turned
        if confidence >= _OSD_SURE or not best.poor:
            return best, upright
        for turn in (angle, 180, 90, 270):  # OSD's guess first, even an unsure one
            if turn in tried:
                continue
            tried.add(turn)
            turned = _turned(image, turn)
            reading = self._recognise(turned)
            # Better on both counts: a lucky scrap of a photo does not turn it.
            if reading.weight > best.weight and reading.mean > best.mean:
                reading.rotated = turn
                best, upright = reading, turned
                if not best.poor:
                    break
        return best, upright

    def _orientation(self, image: Image.Image) -> tuple[int, float]:
        """OSD's turn for the page (degrees counter-clockwise) and its confidence;
        0, 0 when it cannot tell."""
        self.osd.SetImage(image)
        try:
            found = self.osd.DetectOrientationScript()
        except RuntimeError:  # too little text to tell
            found = None
        finally:
            self.osd.Clear()
        if not found:
            return 0, 0.0
        return int(found["orient_deg"]) % 360, float(found.get("orient_conf", 0))


def _strips(image: Image.Image) -> Iterator[Image.Image]:
    """``image`` cut across into strips of about ``_STRIP`` rows, each cut at the
    lightest row near its end (the gap between two lines of text)."""
    from PIL import Image

    top = 0
    while image.height - top > _STRIP:
        end = top + _STRIP
        window = image.crop((0, end - _CUT_SEARCH, image.width, end))
        # Each row averaged to one pixel: the lightest holds the least ink.
        rows = window.resize((1, _CUT_SEARCH), Image.Resampling.BOX).tobytes()
        cut = end - _CUT_SEARCH + max(range(_CUT_SEARCH), key=rows.__getitem__)
        yield image.crop((0, top, image.width, cut))
        top = cut
    yield image.crop((0, top, image.width, image.height))


_readers: dict[tuple[str, str], Reader] = {}


def reader(options: ExtractOptions) -> Reader:
    """This process's Reader for the options' languages; OcrUnavailable if none."""
    reason = unavailable_reason(options.ocr_languages, options.tessdata)
    if reason:
        raise OcrUnavailable(reason)
    tessdata = options.tessdata or find_tessdata(options.ocr_languages)
    key = (tessdata, options.ocr_languages)
    if key not in _readers:
        _readers[key] = Reader(*key)
    return _readers[key]


def _turned(image: Image.Image, turn: int) -> Image.Image:
    """The page turned ``turn`` degrees, then set level: a page on its side is level
    only once upright (its lines run down it), and Tesseract read nothing of one
    that lay 4° off besides."""
    turned = image.rotate(turn, expand=True)
    return _straightened(turned) if turn % 180 else turned


def _straightened(image: Image.Image) -> Image.Image:
    """The page turned level if it was scanned askew: Tesseract, which straightens
    only quarter turns, loses lines of a page two or three degrees off."""
    from PIL import Image

    angle = _skew(image)
    if not angle:
        return image
    return image.rotate(
        angle, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=255
    )


def _skew(image: Image.Image) -> float:
    """The turn (degrees, counter-clockwise) that sets a page's lines level, or 0.

    Lines of text are level where the ink, summed along each row, is most unevenly
    spread (dense rows of letters, empty rows between them): tried every degree
    within ``_MAX_SKEW``, then every half degree beside the best, on a copy half the
    size of the small one (a quarter of the time a try), then every eighth around
    the best on the small copy itself."""
    from PIL import Image

    small = _inked_part(image)
    # Box-averaged, not bicubic: a third of the time (a page's 20 ms), same angles.
    small.thumbnail((_SKEW_SIDE, _SKEW_SIDE), Image.Resampling.BOX, reducing_gap=1.0)
    ink = _print(small)  # turned in, the corners stay empty
    rough = ink.reduce(2) if min(ink.size) >= 2 else ink

    def spread(angle: float, ink: Image.Image) -> int:
        turned = ink.rotate(angle, resample=Image.Resampling.NEAREST, fillcolor=0)
        rows = turned.resize((1, turned.height), Image.Resampling.BOX).tobytes()
        return sum(row * row for row in rows)

    @functools.cache  # the best angle and 0 are asked for again below
    def peakedness(angle: float) -> int:
        return spread(angle, ink)

    # Every degree, then the half degrees either side of the best: the lines stand
    # out of the noise over a degree or so on either side of their angle.
    coarse = max(range(-_MAX_SKEW, _MAX_SKEW + 1), key=lambda a: spread(a, rough))
    coarse = max((coarse - 0.5, coarse, coarse + 0.5), key=lambda a: spread(a, rough))
    angle = max((coarse + step / 8 for step in range(-4, 5)), key=peakedness)
    # A blank page is as peaked at every angle: it stays as it is.
    if abs(angle) < _MIN_SKEW or peakedness(angle) <= _CLEARER * peakedness(0):
        return 0.0
    return angle


def _inked_part(image: Image.Image) -> Image.Image:
    """The part of the page that holds anything darker than paper (a copy): a few
    lines atop a long strip, made small whole, were too few pixels to tell
    their lines from noise, and a strip of a till roll was turned 10° for nothing."""
    cell = _BAND_CELL
    box = image.reduce(cell).point(lambda v: 255 if v < 128 else 0).getbbox()
    if not box:
        return image.copy()
    left, top, right, bottom = (side * cell for side in box)
    margin = cell * 4
    return image.crop(
        (
            max(0, left - margin),
            max(0, top - margin),
            min(image.width, right + margin),
            min(image.height, bottom + margin),
        )
    )


def _print(small: Image.Image) -> Image.Image:
    """The dark pixels of ``small`` (a page's copy at most ``_SKEW_SIDE`` a side)
    that are print, white on black: dark areas wider than a stroke (a desk round a
    photographed page, a scanner's black border, a photo) are left out. Counted as
    print, their level edges outweighed the lines of text: a phone photo's page
    turned 2° was read as level, and its first lines lost."""
    from PIL import Image, ImageChops

    dark = small.point(lambda v: 255 if v < 128 else 0)
    # Cells of 3×3 pixels all dark, opened (a bold stroke is thinner than 3 cells)
    # and grown by a cell over the area's blurred rim.
    cells = dark.reduce(_SOLID_CELL).point(lambda v: 255 if v == 255 else 0)
    solid = _nearby(_nearby(cells, 1, lightest=False), 2).resize(
        small.size, Image.Resampling.NEAREST
    )
    return ImageChops.subtract(dark, solid)


def _has_print(image: Image.Image) -> bool:
    """Whether the page holds print (strokes darker than the paper, dark areas
    left out): a blank page or a dark picture does not pay for another reading."""
    small = image.copy()
    small.thumbnail((_SKEW_SIDE, _SKEW_SIDE))
    ink = _print(small).histogram()[255]
    return ink >= _PRINT_SHARE * small.width * small.height


def _despeckled(image: Image.Image) -> Image.Image | None:
    """``image`` with each pixel the median of its 3×3 neighbourhood if it is a
    speckled black and white page (a fax, a scanner's black and white mode); else
    None. A photo's sensor noise is left to Tesseract's own threshold."""
    from PIL import ImageChops, ImageFilter

    counts, pixels = image.histogram(), image.width * image.height
    if sum(counts[:_TONE]) + sum(counts[-_TONE:]) < _PAPER_OR_INK * pixels:
        return None
    dark = image.point(lambda v: 255 if v < 128 else 0)
    # Any of its 8 neighbours dark: those beside it, then the rows of three above
    # and below (4 offsets and 4 passes over the page, not 8 and 7).
    beside = ImageChops.lighter(
        ImageChops.offset(dark, 1, 0), ImageChops.offset(dark, -1, 0)
    )
    row = ImageChops.lighter(dark, beside)
    near = functools.reduce(
        ImageChops.lighter,
        (beside, ImageChops.offset(row, 0, 1), ImageChops.offset(row, 0, -1)),
    )
    alone = ImageChops.subtract(dark, near).histogram()[255]
    if alone < _SPECKLED * pixels:
        return None
    return image.filter(ImageFilter.MedianFilter(3))


def _shadowed(image: Image.Image) -> bool:
    """Whether part of the page lies in a shadow (a phone's or a hand's over a
    photographed page, a book's gutter): paper there dimmed to a fraction of the
    page's lightest, a desk round the page being darker still."""
    paper = _nearby(image.reduce(_SHADOW_CELL), _SHADOW_WINDOW // 2)
    counts = paper.histogram()
    lightest, seen = 255, 0
    while seen + counts[lightest] < _PAPER_SHARE * sum(counts) and lightest:
        seen += counts[lightest]
        lightest -= 1
    low, high = (round(lightest * share) for share in _SHADE)
    return sum(counts[low : high + 1]) >= _SHADOW_SHARE * sum(counts)


def _nearby(image: Image.Image, reach: int, *, lightest: bool = True) -> Image.Image:
    """Each pixel the lightest (or darkest) within ``reach`` pixels either way, as
    ``MaxFilter(2 * reach + 1)`` (or ``MinFilter``) gives it, a row then a column
    at a time: a tenth of the rank filter's time (17 ms a page)."""
    from PIL import ImageChops, ImageOps

    # Round the edges what never wins, for what wraps round in an offset.
    image = ImageOps.expand(image, reach, fill=0 if lightest else 255)
    for dx, dy in ((1, 0), (0, 1)):
        image = functools.reduce(
            ImageChops.lighter if lightest else ImageChops.darker,
            (
                ImageChops.offset(image, step * dx, step * dy)
                for step in range(-reach, reach + 1)
            ),
        )
    return image.crop((reach, reach, image.width - reach, image.height - reach))


def _bands_lightened(
    image: Image.Image,
) -> tuple[Image.Image, tuple[int, int, int, int] | None, float]:
    """The grey page with its dark bands (white print on black or colour) turned
    light with dark print, the box around them and the share of the page they
    cover; the page itself, None and 0 when it has none (a few ms to tell)."""
    from PIL import Image, ImageFilter, ImageOps, ImageStat

    small = image.reduce(_BAND_CELL).filter(ImageFilter.BoxBlur(_BAND_RADIUS))
    bands = small.point(lambda v: 255 if v < _DARK else 0)
    box = bands.getbbox()
    share = bands.histogram()[255] / (small.width * small.height) if box else 0.0
    if share < _MIN_BAND_SHARE:
        return image, None, 0.0
    # A shadow on a photographed page is dark too, but holds no light print.
    light = image.point(lambda v: 255 if v > _LIGHT else 0).reduce(_BAND_CELL)
    if ImageStat.Stat(light, mask=bands).mean[0] < _LIGHT_SHARE * 255:
        return image, None, 0.0
    bands = bands.resize(image.size, Image.Resampling.NEAREST)
    lightened = Image.composite(ImageOps.invert(image), image, bands)
    return (
        lightened,
        tuple(
            min(side * _BAND_CELL, most)
            for side, most in zip(box, image.size * 2, strict=True)
        ),
        share,
    )


def _enlargement(line_height: int, size: tuple[int, int]) -> float:
    """How much to enlarge a page read with lines ``line_height`` pixels high (0:
    none found): 1 for print large enough, or a large page without any, and never
    past _MAX_ENLARGED or _MAX_SIDE."""
    width, height = size
    if not line_height:
        tiny = width * height * _TINY_SCALE**2 <= _PROBE_PIXELS
        return _TINY_SCALE if tiny else 1.0
    if line_height >= _SMALL_LINE:
        return 1.0
    room = min((_MAX_ENLARGED / (width * height)) ** 0.5, _MAX_SIDE / max(size))
    return max(1.0, min(_GOOD_LINE / line_height, room))


def _scaled(image: Image.Image, scale: float) -> Image.Image:
    from PIL import Image

    size = (round(image.width * scale), round(image.height * scale))
    return image.resize(size, Image.Resampling.LANCZOS)


def _full_range(image: Image.Image) -> Image.Image:
    """The grey image stretched from its darkest pixel to black and its lightest to
    white: faint print (pencil, a pale photocopy) is lighter than Sauvola's local
    threshold, a fixed share below the paper's brightness, and would read as nothing."""
    from PIL import ImageOps

    return ImageOps.autocontrast(image)


def grey(image: Image.Image) -> Image.Image:
    """An 8-bit grey image; transparency becomes paper (``_paper``), not black."""
    from PIL import Image

    if image.mode == "L":
        return image
    if image.mode in ("P", "PA", "RGBA", "LA", "RGBa", "La"):
        if image.mode != "RGBA":  # converting to its own mode would copy it
            image = image.convert("RGBA")
        paper = Image.new("RGBA", image.size, _paper(image))
        paper.alpha_composite(image)
        image = paper
    elif image.mode.startswith("I"):  # 16/32-bit grey: scale into 8 bits
        image = image.point(lambda v: v / 256).convert("L")
    return image.convert("L")


def _paper(image: Image.Image) -> str:
    """The colour to show a transparent image on: white, unless what it draws is
    light (white print on a clear background, a logo made for dark pages), which
    would vanish on white."""
    from PIL import ImageStat

    alpha = image.getchannel("A")
    if alpha.getextrema()[0] == 255:  # opaque: the paper never shows
        return "white"
    drawn = ImageStat.Stat(image.convert("L"), mask=alpha.point(lambda v: v > 127))
    return "black" if drawn.count[0] and drawn.mean[0] > 127 else "white"
