"""Phone photos and the picture formats people send (HEIC, AVIF, GIF, JPEG 2000):
recognised by their bytes, read by OCR as PNG and JPEG are, and drawn as thumbnails.
Each picture is written here, with Pillow and pillow-heif."""

from __future__ import annotations

import array
import io
import struct

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image, ImageChops, ImageDraw, ImageFont, ImageStat
from pillow_heif import from_bytes, register_heif_opener

from documents.extractors import (
    CorruptFileError,
    ExtractorMissingError,
    UnsupportedFileError,
    detect_mime_type,
    extract,
)
from documents.extractors import image as image_extractor
from documents.models import Document
from documents.thumbnails import HEIGHT, WIDTH, thumbnail_in_child
from jobqueue.child import JobFailed
from jobqueue.models import Status
from jobqueue.worker import process_document_queue
from tests.files import image_bytes, reads, text_image, write

# Pillow writes HEIC with pillow-heif's encoder, a test dependency only; the product
# reads it with pi-heif's decoder, registered again last so that it opens the files.
register_heif_opener()
image_extractor.register_heif_opener()

LINES = ["The quick brown fox jumps over", "the lazy dog near the harbour."]
OTHER = ["Invoice 4711 for seven orchard", "ladders, paid in full."]
API_URL = "/api/documents/"
UPLOAD_URL = "/documents/upload/"
# Key: (Pillow's name for the format, how it is saved, the MIME type stored, a name).
PHOTOS = {
    "heic": ("HEIF", {}, "image/heic", "IMG_0001.heic"),
    "avif": ("AVIF", {}, "image/avif", "photo.avif"),
    "gif": ("GIF", {}, "image/gif", "fax.gif"),
    "jp2": ("JPEG2000", {}, "image/jp2", "scan.jp2"),
    "j2k": ("JPEG2000", {"no_jp2": True}, "image/jp2", "scan.j2k"),  # a codestream
}


def photo(key: str, image: Image.Image | None = None, **params) -> bytes:
    """``image`` (LINES in black on white by default) saved in a format of PHOTOS."""
    pillow_name, saved_as, _, _ = PHOTOS[key]
    image = image or text_image(LINES).convert("RGB")
    return image_bytes(image, pillow_name, **saved_as, **params)


def turned_by_camera(key: str) -> bytes:
    """LINES as a phone stores a photo taken turned: the pixels on their side, and
    EXIF Orientation 6 (turn 90° to show). pillow-heif and Pillow's AVIF writer
    turn that into the file's own rotation box ("irot"), as iPhones write it."""
    stored = text_image(LINES).convert("RGB").rotate(90, expand=True, fillcolor="white")
    exif = Image.Exif()
    exif[274] = 6
    return photo(key, stored, exif=exif.tobytes())


def ten_bit_heic(image: Image.Image) -> bytes:
    """``image`` (grey or colour) as a 10-bit HEIC, as phones save HDR photos."""
    if image.mode == "L":
        deep = image.convert("I").point(lambda v: v * 257).convert("I;16")
        return image_bytes(deep, "HEIF")
    samples = array.array("H", (v * 257 for v in image.tobytes())).tobytes()
    out = io.BytesIO()
    from_bytes("RGB;16", image.size, samples).save(out, format="HEIF")
    return out.getvalue()


def claiming(heic: bytes, side: int) -> bytes:
    """The picture with its size box ("ispe") claiming side × side pixels."""
    at = heic.index(b"ispe") + 8  # past the box's type, version and flags
    return heic[:at] + struct.pack(">II", side, side) + heic[at + 8 :]


def drawn(png: bytes) -> Image.Image:
    """A thumbnail's picture, in grey."""
    picture = Image.open(io.BytesIO(png))
    assert picture.format == "PNG"
    assert picture.width <= WIDTH and picture.height <= HEIGHT
    return picture.convert("L")


# --- Through the API and a worker (both databases) -----------------------------------


@pytest.mark.django_db(transaction=True)
def test_each_format_uploads_and_a_worker_reads_its_words(user_client, media_root):
    # They were refused at upload: "save it as JPEG or PNG".
    heic = photo("heic")
    files = {name: photo(key) for key, (_, _, _, name) in PHOTOS.items()}
    files["cut.heic"] = heic[: len(heic) * 2 // 3]  # a transfer that left off
    for name, content in files.items():
        response = user_client.post(
            API_URL, {"file": SimpleUploadedFile(name, content)}
        )
        assert response.status_code == 202, response.content

    counts = process_document_queue()

    assert counts == {"processed": 6, "completed": 5, "failed": 1}
    for key, (_, _, mime_type, name) in PHOTOS.items():
        document = Document.objects.get(original_filename=name)
        assert (document.mime_type, document.status) == (mime_type, Status.COMPLETED)
        assert reads(document.text, LINES), (key, document.text)
        assert document.page_count == 1
    cut = Document.objects.get(original_filename="cut.heic")
    assert (cut.status, cut.error_type) == (Status.FAILED, "corruption")
    assert "incomplete" in cut.error_message


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("key", "name"),
    [("heic", "IMG_0001.jpg"), ("avif", "photo.png"), ("gif", "scan.jpg")],
)
def test_a_picture_named_as_another_picture_is_kept_as_what_its_bytes_say(
    user_client, media_root, tmp_path, key, name
):
    # An iPhone's photo renamed ".jpg" by a mail program, a browser's saved AVIF.
    content = photo(key)
    mime_type = PHOTOS[key][2]
    assert detect_mime_type(write(tmp_path, "upload.bin", content)) == mime_type
    response = user_client.post(UPLOAD_URL, {"file": SimpleUploadedFile(name, content)})
    assert response.status_code == 302
    assert Document.objects.get(original_filename=name).mime_type == mime_type
    # A name promising another kind of file than a picture is still a mismatch.
    response = user_client.post(
        UPLOAD_URL, {"file": SimpleUploadedFile("report.pdf", content)}
    )
    assert response.status_code == 400
    assert "named like a PDF" in response.content.decode()


# --- What a phone or a web page hands over --------------------------------------------


def test_a_phone_photo_of_a_page_reads_in_heic_as_in_jpeg(tmp_path):
    # A page on a desk, seen a little askew, with light falling off and sensor noise.
    lines = [*LINES, *OTHER, "Please quote the invoice number."]
    font = ImageFont.load_default(size=30)
    desk = Image.new("RGB", (1400, 1000), (120, 100, 80))
    page = ImageDraw.Draw(desk)
    page.rectangle((100, 100, 1300, 900), fill=(246, 244, 238))
    for n, line in enumerate(lines):
        page.text((170, 170 + n * 70), line, font=font, fill=(30, 30, 40))
    corners = (30, 40, 0, 1000, 1400, 960, 1370, 0)  # the page's corners in view
    view = desk.transform(desk.size, Image.Transform.QUAD, corners)
    light = Image.radial_gradient("L").resize(view.size).point(lambda v: 255 - v // 3)
    view = ImageChops.multiply(view, Image.merge("RGB", [light] * 3))
    noise = Image.effect_noise(view.size, 20).convert("RGB")
    view = ImageChops.add(view, noise, offset=-128)
    for name, fmt in (("photo.jpg", "JPEG"), ("photo.heic", "HEIF")):
        result = extract(write(tmp_path, name, image_bytes(view, fmt, quality=85)))
        assert reads(result.text, lines), (name, result.text)


@pytest.mark.parametrize("key", ["heic", "avif"])
def test_a_photo_taken_turned_is_read_and_drawn_upright_turned_once(tmp_path, key):
    # libheif turns a HEIC by its rotation box itself; Pillow hands an AVIF's over
    # as its EXIF orientation. Turned twice, the page lay on its side again.
    path = write(tmp_path, f"turned.{key}", turned_by_camera(key))
    result = extract(path)
    assert reads(result.text, LINES), result.text
    assert "rotated_pages" not in result.details  # upright without OSD's help
    thumbnail = drawn(thumbnail_in_child(str(path), PHOTOS[key][2], "", ""))
    assert thumbnail.width > thumbnail.height  # the text's lines run across


def test_a_heic_burst_or_live_photo_is_read_as_its_primary_image(tmp_path):
    # Its images are views of one moment, not pages; the one shown is the primary,
    # here the second (it was read as the first, the wrong one).
    first = text_image(LINES).convert("RGB")
    primary = text_image(OTHER).convert("RGB").resize(first.size)
    heic = photo("heic", first, save_all=True, append_images=[primary], primary_index=1)
    path = write(tmp_path, "burst.heic", heic)
    result = extract(path)
    assert result.page_count == 1
    assert reads(result.text, OTHER) and "fox" not in result.text, result.text


@pytest.mark.parametrize("key", ["gif", "avif"])
def test_an_animation_is_read_as_its_first_frame(tmp_path, key):
    # Frames of an animation are not pages: they were read each as a page.
    first = text_image(LINES).convert("RGB")
    later = text_image(OTHER).convert("RGB").resize(first.size)
    path = write(
        tmp_path, f"moving.{key}", photo(key, save_all=True, append_images=[later])
    )
    with Image.open(path) as animation:
        assert animation.n_frames == 2
    result = extract(path)
    assert result.page_count == 1
    assert reads(result.text, LINES) and "orchard" not in result.text, result.text


def test_a_ten_bit_heic_photo_is_read_and_drawn_in_its_own_tones(tmp_path):
    # Grey paper (200) and dark ink (60), as a phone's HDR photo holds them.
    page = text_image(LINES).point(lambda v: 60 + v * 140 // 255)
    colour = write(tmp_path, "hdr.heic", ten_bit_heic(page.convert("RGB")))
    assert reads(extract(colour).text, LINES)
    grey = write(tmp_path, "hdr-grey.heic", ten_bit_heic(page))
    with Image.open(grey) as deep:
        assert deep.mode == "I;16"  # pi-heif keeps grey's 10 bits, in 16
    assert reads(extract(grey).text, LINES)
    # Converted as it was, all but the blackest ink came out white.
    thumbnail = drawn(thumbnail_in_child(str(grey), "image/heic", "", ""))
    assert 150 < ImageStat.Stat(thumbnail).mean[0] < 230


@pytest.mark.parametrize("key", ["heic", "avif", "jp2", "gif"])
def test_a_picture_with_transparency_is_read_on_white_paper(tmp_path, key):
    # Ink only, on a clear background (a cut-out, a sticker): read on white.
    ink = text_image(LINES).point(lambda v: 255 - v)
    cut_out = Image.new("RGBA", ink.size, (0, 0, 0, 0))
    cut_out.putalpha(ink)
    result = extract(write(tmp_path, f"clear.{key}", photo(key, cut_out)))
    assert reads(result.text, LINES), result.text


# --- Refused with their reason --------------------------------------------------------


@pytest.mark.parametrize("side", [10_000, 30_000])
def test_a_heic_over_the_pixel_limit_is_refused_as_too_large(tmp_path, side):
    path = write(tmp_path, "huge.heic", claiming(photo("heic"), side))
    with pytest.raises(UnsupportedFileError, match="too large to read") as refused:
        extract(path)
    assert refused.value.error_type == "unsupported"
    with pytest.raises(JobFailed, match="too large") as not_drawn:
        thumbnail_in_child(str(path), "image/heic", "", "")
    assert not_drawn.value.error_type == "unsupported"


@pytest.mark.parametrize(
    ("key", "said"),
    [
        ("heic", "image file is incomplete"),
        ("avif", "The file is damaged"),
        ("jp2", "The file is damaged"),
        ("j2k", "The file is damaged"),
    ],
)
def test_a_picture_cut_short_fails_as_damaged_saying_so(tmp_path, key, said):
    # What a HEIC holds cannot be read in part: libheif's words were "Extent in
    # iloc box references data outside of file bounds (points to file position…".
    whole = photo(key)
    path = write(tmp_path, f"cut.{key}", whole[: len(whole) * 2 // 3])
    with pytest.raises(CorruptFileError, match=said) as failed:
        extract(path)
    assert failed.value.error_type == "corruption"


def test_a_damaged_gif_fails_as_damaged(tmp_path):
    # A GIF cut short is read as far as it goes, as a PNG is; one whose data is
    # garbage after its header cannot be decoded at all.
    gif = photo("gif")
    path = write(tmp_path, "noise.gif", gif[:13] + bytes(range(256)) * 4)
    with pytest.raises(CorruptFileError, match="cannot be decoded") as failed:
        extract(path)
    assert failed.value.error_type == "corruption"


def test_an_avif_marked_with_the_general_heif_brand_is_read_as_an_avif(tmp_path):
    # "mif1" before "avif" in its brands: it was taken for a HEIC, and libheif,
    # which has no AV1 decoder in pi-heif's wheel, failed it as an error.
    avif = photo("avif")
    path = write(tmp_path, "photo.avif", avif[:8] + b"mif1" + avif[12:])
    assert detect_mime_type(path) == "image/avif"
    assert reads(extract(path).text, LINES)


def test_a_heic_coded_in_a_way_libheif_cannot_decode_is_refused(tmp_path):
    # An AV1 picture under HEIC's brand: pi-heif's RuntimeError was an
    # "unknown" failure, tried again and again.
    avif = photo("avif")
    heic = avif[:8] + b"heic" + avif[12:16] + b"heicmif1miaf" + avif[28:]
    path = write(tmp_path, "odd.heic", heic)
    assert detect_mime_type(path) == "image/heic"
    with pytest.raises(UnsupportedFileError, match="coded in a way") as refused:
        extract(path)
    assert refused.value.error_type == "unsupported"


def test_without_pi_heif_a_heic_photo_waits_for_its_extractor(tmp_path, monkeypatch):
    # A missing library is "extractor_missing" (tried again once it is installed),
    # not a damaged photo.
    path = write(tmp_path, "IMG_0001.heic", photo("heic"))
    monkeypatch.setattr(image_extractor, "register_heif_opener", None)
    with pytest.raises(ExtractorMissingError, match="pi_heif") as missing:
        extract(path)
    assert missing.value.error_type == "extractor_missing"


# --- Thumbnails -----------------------------------------------------------------------


@pytest.mark.parametrize("key", list(PHOTOS))
def test_each_format_is_drawn_as_a_thumbnail_of_its_picture(tmp_path, key):
    big = text_image(["Invoice 4711"] * 12, size=60).convert("RGB")
    path = write(tmp_path, f"picture.{key}", photo(key, big))
    thumbnail = drawn(thumbnail_in_child(str(path), PHOTOS[key][2], "", ""))
    assert max(thumbnail.width / WIDTH, thumbnail.height / HEIGHT) == pytest.approx(
        1, abs=0.01
    )
    assert thumbnail.getextrema()[0] < 100  # ink on it: a picture, not a blank


@pytest.mark.django_db(transaction=True)
def test_a_worker_draws_a_heic_photos_thumbnail(user_client, media_root, settings):
    settings.THUMBNAILS = True
    content = photo("heic", text_image(["Invoice 4711"] * 3, size=60).convert("RGB"))
    response = user_client.post(
        API_URL, {"file": SimpleUploadedFile("IMG_0002.heic", content)}
    )
    assert response.status_code == 202
    # Its text, then its thumbnail, queued once the text was read.
    assert process_document_queue() == {"processed": 2, "completed": 2, "failed": 0}
    document = Document.objects.get()
    with document.file.storage.open(document.thumbnail) as stored:
        thumbnail = drawn(stored.read())
    # The photo, wide as its lines are, not a page-shaped text card.
    assert thumbnail.width > thumbnail.height
