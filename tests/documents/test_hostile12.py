"""Hostile winmail.dat, e-mail, archive and image files: each answered at once with
what was read and a clear note, or refused with a clear reason, and the worker goes
on. No timing thresholds: the tests assert what tnefparse was given, or the outcome
the job records."""

from __future__ import annotations

import struct
import zlib
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from PIL import Image
from tnefparse import tnef as tnefparse
from tnefparse.mapi import IMESSAGE_SIG

from documents.extractors import extract
from documents.extractors.base import RefusedFileError, UnsupportedFileError
from documents.services import document_create
from documents.uploads import check_upload
from jobqueue.models import Status
from tests.files import tnef_bytes

SIGNATURE = struct.pack("<IH", 0x223E9F78, 0x0001)
RENDERING = struct.pack("<HIHHI", 1, 0xFFFFFFFF, 0, 0, 0)


def attribute(name: int, data: bytes, level: int = 1) -> bytes:
    """A TNEF attribute of byte type: level, id, length, data, checksum."""
    head = struct.pack("<BHHI", level, name, 0x0006, len(data))
    return head + data + struct.pack("<H", sum(data) & 0xFFFF)


def forwarding(message: bytes, *files: tuple[str, bytes]) -> bytes:
    """A winmail.dat of ``files``, then a forwarded message (the bytes after
    Outlook's marker of one)."""
    prop = struct.pack("<HHII", 0x000D, 0x3701, 1, len(IMESSAGE_SIG + message))
    value = IMESSAGE_SIG + message
    props = struct.pack("<I", 1) + prop + value + b"\0" * (-len(value) % 4)
    forwarded = attribute(0x9002, RENDERING, 2) + attribute(0x9005, props, 2)
    return tnef_bytes(*files) + forwarded


def test_tnefparse_is_given_each_attribute_once(tmp_path: Path, monkeypatch) -> None:
    # tnefparse read each attribute from a copy of the rest of the file: 2,000
    # attributes in 50 MB copied 50 GB (20 s). Counted here: the bytes it is given.
    given = []

    class Counted(tnefparse.TNEFObject):
        def __init__(self, data: bytes, do_checksum: bool = False) -> None:
            given.append(len(data))
            super().__init__(data, do_checksum)

    monkeypatch.setattr(tnefparse, "TNEFObject", Counted)
    winmail = tnef_bytes(("notes.txt", b"Meter reading 4711"))
    winmail += attribute(0x0001, b"x" * 1000) * 1000
    path = tmp_path / "winmail.dat"
    path.write_bytes(winmail)
    result = extract(path)
    assert result.text == "Attachment: notes.txt\nMeter reading 4711\n\n" + (
        "Attachments: notes.txt"
    )
    assert sum(given) == len(winmail) - len(SIGNATURE)


def test_a_forwarded_message_in_a_winmail_dat_is_read_as_an_attachment(
    tmp_path: Path,
) -> None:
    inner = tnef_bytes(("inner.txt", b"Inner notes"), body="Forwarded body")
    path = tmp_path / "winmail.dat"
    path.write_bytes(forwarding(inner, ("notes.txt", b"Meter reading 4711")))
    result = extract(path)
    # Its own files are named only (one level deep, as any attachment's).
    assert result.text.splitlines() == [
        "Attachment: notes.txt",
        "Meter reading 4711",
        "",
        "Attachment: (unnamed attachment)",
        "Forwarded body",
        "",
        "Attachments: inner.txt",
        "",
        "Attachments: notes.txt, (unnamed attachment)",
    ]
    assert result.note == ""


def test_a_damaged_forwarded_message_costs_only_itself(tmp_path: Path) -> None:
    # tnefparse took the forwarded message apart itself, unchecked: damage in it
    # lost every file of the winmail.dat.
    path = tmp_path / "winmail.dat"
    path.write_bytes(forwarding(b"not TNEF", ("notes.txt", b"Meter reading 4711")))
    result = extract(path)
    assert "Attachment: notes.txt\nMeter reading 4711" in result.text
    assert result.note == ""


@pytest.mark.django_db(transaction=True)
def test_a_forwarded_message_that_would_spin_is_noted_by_the_worker(user) -> None:
    # 132 bytes: a forwarded message counting 2**32 - 1 properties, which tnefparse
    # looped on for hours (the job timed out, and was retried).
    spinning = SIGNATURE + attribute(0x9003, struct.pack("<I", 2**32 - 1))
    upload = SimpleUploadedFile("winmail.dat", forwarding(spinning))
    document = document_create(owner=user, upload=check_upload(upload))
    call_command(
        "process_queue", "--once", "--timeout", "10", "--max-retries", "0",
        stdout=StringIO(),
    )  # fmt: skip
    document.refresh_from_db()
    assert (document.status, document.error_message) == (Status.COMPLETED, "")
    assert document.text == "Attachments: (unnamed attachment)"
    assert document.extraction_note == (
        "Attachments not read: (unnamed attachment) (The file is damaged: its "
        "Outlook contents (TNEF) cannot be read)."
    )


# --- E-mail ----------------------------------------------------------------------------

HEAD = b"From: a@example.com\r\nTo: b@example.com\r\nSubject: Parts\r\n"


def nested(depth: int) -> bytes:
    """Multiparts inside each other ``depth`` deep, text at the bottom."""
    out = HEAD + b'Content-Type: multipart/mixed; boundary="b0"\r\n\r\n'
    for n in range(1, depth):
        out += b'--b%d\r\nContent-Type: multipart/mixed; boundary="b%d"\r\n\r\n' % (
            n - 1,
            n,
        )
    out += b"--b%d\r\nContent-Type: text/plain\r\n\r\nDeep text\r\n" % (depth - 1)
    return out + b"".join(b"--b%d--\r\n" % n for n in reversed(range(depth)))


def test_an_e_mail_nested_past_reason_is_refused_with_a_reason(tmp_path: Path) -> None:
    # The parser's RecursionError: an "unknown" failure, retried, its message
    # Python's ("maximum recursion depth exceeded ...").
    path = tmp_path / "deep.eml"
    path.write_bytes(nested(3000))
    with pytest.raises(RefusedFileError, match="hundreds of levels deep"):
        extract(path)
    path.write_bytes(nested(20))  # deep, yet as a mail program may write
    assert extract(path).text.endswith("Deep text")


def test_an_e_mail_of_thousands_of_parts_is_read_in_part(tmp_path: Path) -> None:
    # The parser takes ~0.5 ms a part and each header asked ~0.3 ms more: 200,000
    # parts (14 MB) took minutes, the job timed out and was retried.
    parts = b"".join(
        b"--b\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; "
        b'filename="f%d.txt"\r\n\r\nNote %d\r\n' % (n, n)
        for n in range(1200)
    )
    path = tmp_path / "parts.eml"
    path.write_bytes(
        HEAD + b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n'
        b"--b\r\nContent-Type: text/plain\r\n\r\nBody text\r\n" + parts + b"--b--\r\n"
    )
    result = extract(path)
    names = result.text.splitlines()[-1].removeprefix("Attachments: ").split(", ")
    assert names == [f"f{n}.txt" for n in range(499)]  # and the body: 500 parts
    assert result.text.splitlines()[4] == "Body text"
    assert "more than 500 parts (attachments and body parts)" in result.note


def test_an_overlong_header_is_cut(tmp_path: Path) -> None:
    # A header of 2 million words took minutes to parse.
    path = tmp_path / "subject.eml"
    words = b"word " * 40_000
    path.write_bytes(b"From: a@example.com\r\nSubject: " + words + b"\r\n\r\nBody\r\n")
    subject = extract(path).text.splitlines()[1]
    assert subject == "Subject: " + " ".join(["word"] * 20_000)


# --- Images ----------------------------------------------------------------------------


def blank_png(path: Path, size: tuple[int, int]) -> Path:
    Image.new("1", size, 1).save(path)
    return path


def test_an_image_too_long_for_ocr_is_refused_with_a_reason(tmp_path: Path) -> None:
    # OCR reads a tall page in strips of 10,000 rows: a 1×89,000,000 PNG (173 KB)
    # took minutes, within Pillow's pixel limit.
    path = blank_png(tmp_path / "tall.png", (1, 150_000))
    with pytest.raises(UnsupportedFileError) as refused:
        extract(path)
    assert str(refused.value) == (
        "This image is too large to read: 1×150,000 pixels, over the limit of "
        "100,000 pixels a side. Scale it down or save it as a PDF."
    )


@pytest.mark.django_db(transaction=True)
def test_a_picture_too_thin_for_text_is_noted_not_read_by_the_worker(
    user, tmp_path: Path
) -> None:
    # Tesseract aborted the extraction's process on it (84 bytes): "crashed", and
    # retried.
    path = blank_png(tmp_path / "rule.png", (20_000, 1))
    upload = SimpleUploadedFile("rule.png", path.read_bytes())
    document = document_create(owner=user, upload=check_upload(upload))
    call_command("process_queue", "--once", "--max-retries", "0", stdout=StringIO())
    document.refresh_from_db()
    assert (document.status, document.error_message) == (Status.COMPLETED, "")
    # Not "OCR found no text": OCR never looked (review24).
    assert document.extraction_note == (
        "It is more than 1,000 times as long as it is wide, too thin to hold text: "
        "not read."
    )


def test_a_png_whose_comment_is_a_bomb_is_refused_for_that(tmp_path: Path) -> None:
    # Was "The file is damaged: the image data is damaged (Decompressed data too
    # large for PngImagePlugin.MAX_TEXT_CHUNK)": blamed the picture, named Pillow.
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    head = struct.pack(">IIBBBBB", 8, 8, 8, 0, 0, 0, 0)
    comment = b"Comment\0\0" + zlib.compress(b"a" * (8 * 2**20), 9)
    path = tmp_path / "comment.png"
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", head)
        + chunk(b"zTXt", comment)
        + chunk(b"IDAT", zlib.compress((b"\0" + b"\xff" * 8) * 8))
        + chunk(b"IEND", b"")
    )
    with pytest.raises(RefusedFileError, match="its text .a comment or metadata."):
        extract(path)
