"""Review: hostile pictures through the new decoders end with a clear error (an
error type that is not retried), never an exception the worker files as unknown."""

from __future__ import annotations

import struct

import pytest
from PIL import Image

from documents.extractors import UnsupportedFileError
from documents.extractors.image import extract_image
from documents.thumbnails import thumbnail_in_child
from jobqueue.child import JobFailed
from tests.documents.test_extract_photos import claiming, photo
from tests.files import image_bytes, write


def test_a_heic_claiming_more_pixels_than_libheif_allows_is_too_large(tmp_path):
    # 60,000² is past libheif's own limit (2³⁰ pixels): it refuses the file with a
    # RuntimeError of its own before Pillow's limit is asked.
    small = photo("heic", Image.new("RGB", (64, 48), "white"))
    path = write(tmp_path, "bomb.heic", claiming(small, 60_000))
    with pytest.raises(UnsupportedFileError, match="too large to read"):
        extract_image(path)
    with pytest.raises(JobFailed, match="too large") as not_drawn:
        thumbnail_in_child(str(path), "image/heic", "", "")
    assert not_drawn.value.error_type == "unsupported"


def test_a_heic_libheif_cannot_decode_is_not_drawn_as_unsupported(
    tmp_path, monkeypatch
):
    # What libheif's wheel has no decoder for (a JPEG- or VVC-coded HEIF) fails
    # the same on every attempt: unsupported, as reading it says, not unknown.
    def not_built_in(*args, **kwargs):
        raise RuntimeError("Unsupported feature: Unsupported codec")

    monkeypatch.setattr("documents.thumbnails._scaled", not_built_in)
    path = write(tmp_path, "vvc.heic", photo("heic"))
    with pytest.raises(JobFailed) as not_drawn:
        thumbnail_in_child(str(path), "image/heic", "", "")
    assert not_drawn.value.error_type == "unsupported"


def test_a_gif_with_a_huge_logical_screen_is_too_large(tmp_path):
    gif = bytearray(image_bytes(Image.new("L", (64, 48), 255), "GIF"))
    gif[6:10] = struct.pack("<HH", 65_535, 65_535)  # the logical screen's size
    path = write(tmp_path, "screen.gif", bytes(gif))
    with pytest.raises(UnsupportedFileError, match="too large to read"):
        extract_image(path)
    with pytest.raises(JobFailed, match="too large"):
        thumbnail_in_child(str(path), "image/gif", "", "")
