"""Fifth audit, as an attacker: uploads crafted to hurt the web process (detection
runs there on whatever is sent), anonymous bodies spooled to disk, and the headers
of the machines' endpoints, which answer before the security middleware."""

from __future__ import annotations

import io
import struct

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from documents.models import Document
from documents.tokens import create_token

pytestmark = pytest.mark.django_db

ENDOFCHAIN, FREESECT, FATSECT, NOSTREAM = 0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFD, 0xFFFFFFFF


def deep_ole(entries: int = 3000) -> bytes:
    """An OLE file (the container of .doc and .xls) whose directory is one chain of
    siblings ``entries`` long: olefile walks it by recursion."""
    dir_sectors = (entries + 3) // 4
    fat_sectors = (dir_sectors + 1 + 127) // 128 + 1
    fat = [FATSECT] * fat_sectors
    fat += [fat_sectors + i + 1 for i in range(dir_sectors - 1)] + [ENDOFCHAIN]
    fat += [FREESECT] * (fat_sectors * 128 - len(fat))
    header = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(16)
    header += struct.pack(
        "<5H6s9L", 0x3E, 3, 0xFFFE, 9, 6, bytes(6), 0, fat_sectors, fat_sectors,
        0, 4096, ENDOFCHAIN, 0, ENDOFCHAIN, 0,
    )  # fmt: skip
    header += struct.pack(
        "<109L", *range(fat_sectors), *[FREESECT] * (109 - fat_sectors)
    )

    def entry(name: str, kind: int, right: int, child: int) -> bytes:
        encoded = (name + "\0").encode("utf-16-le")
        return struct.pack(
            "<64sHBBLLL16sL16sLLL", encoded, len(encoded), kind, 1, NOSTREAM,
            right, child, bytes(16), 0, bytes(16), ENDOFCHAIN, 0, 0,
        )  # fmt: skip

    directory = entry("Root Entry", 5, NOSTREAM, 1) + b"".join(
        entry(f"s{n}", 2, n + 1 if n < entries - 1 else NOSTREAM, NOSTREAM)
        for n in range(1, entries)
    )
    directory = directory.ljust(dir_sectors * 512, b"\0")
    return header + struct.pack(f"<{len(fat)}L", *fat) + directory


def zip_with_directory(entries: int, name_length: int = 40) -> bytes:
    """A ZIP whose central directory lists ``entries`` empty files (nothing else)."""
    directory = io.BytesIO()
    for n in range(entries):
        name = f"{n:0{name_length}d}".encode()
        directory.write(
            struct.pack(
                "<4s6H3L5H2L", b"PK\x01\x02", 20, 20, *[0] * 7, len(name), *[0] * 6
            )
        )
        directory.write(name)
    local = b"PK\x03\x04" + bytes(26)
    size = directory.tell()
    end = struct.pack(
        "<4s4H2LH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, size, len(local), 0
    )
    return local + directory.getvalue() + end


def api_upload(user, name: str, content: bytes):
    _token, key = create_token(user)
    client = Client(HTTP_AUTHORIZATION=f"Token {key}")
    return client.post("/api/documents/", {"file": SimpleUploadedFile(name, content)})


def form_upload(user, name: str, content: bytes):
    client = Client()
    client.force_login(user)
    return client.post(
        "/documents/upload/", {"file": SimpleUploadedFile(name, content)}
    )


@pytest.mark.parametrize("name", ["report.doc", "sheet.xls", "notes.txt"])
def test_a_crafted_ole_directory_is_refused_with_a_reason_not_a_server_error(
    user, name
):
    """A 380 KB file whose OLE directory nests 3000 deep raised RecursionError out
    of detection: a 500 (and a long traceback in the log) for every upload."""
    content = deep_ole()
    response = api_upload(user, name, content)
    assert response.status_code == 400, response.content
    assert "directory of parts nests too deep" in response.json()["error"]["message"]
    response = form_upload(user, name, content)
    assert response.status_code == 400
    assert "directory of parts nests too deep" in response.content.decode()
    assert not Document.objects.exists()


def test_a_zip_listing_a_huge_directory_is_refused_before_it_is_opened(
    user, monkeypatch
):
    """Opening a ZIP reads its whole central directory: a 46 MB one listing 900,000
    entries held a web process for 20 s and 500 MB, twice per file."""
    import zipfile

    opened = []
    real = zipfile.ZipFile

    def spy(*args, **kwargs):
        opened.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(zipfile, "ZipFile", spy)
    content = zip_with_directory(30_000)  # 2.6 MB of directory
    response = api_upload(user, "letter.docx", content)
    assert response.status_code == 400, response.content
    assert "ZIP archive listing far more files" in response.json()["error"]["message"]
    assert not opened
    # A directory of a real document's size is read as before.
    response = api_upload(user, "letter.docx", zip_with_directory(50))
    assert response.status_code == 400
    assert "not a document we can read" in response.json()["error"]["message"]
    assert opened


def test_an_anonymous_request_cannot_send_a_large_body(user):
    """Anyone could post a full form's worth of files (1 GB) to the log-in page,
    and it was read and spooled to disk before the page said no."""
    big = SimpleUploadedFile("big.bin", b"x" * (2 * 1024 * 1024))
    response = Client().post("/accounts/login/", {"username": "x", "f": big})
    assert response.status_code == 413
    assert "Log in to upload files" in response.content.decode()
    big.seek(0)
    assert Client().post("/admin/login/", {"f": big}).status_code == 413
    # A person logged in still uploads a file of that size.
    text = SimpleUploadedFile("big.txt", b"hello world\n" * 200_000)
    client = Client()
    client.force_login(user)
    assert client.post("/documents/upload/", {"file": text}).status_code == 302
    assert Document.objects.count() == 1


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics"])
def test_the_machines_endpoints_send_the_security_headers(settings, path):
    settings.METRICS_PUBLIC = True
    response = Client().get(path)
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Security-Policy"].startswith("default-src 'none'")
    assert response["X-Frame-Options"] == "DENY"
    assert response["Cache-Control"] == "no-store"
