"""Several documents as one ZIP file, streamed: written as it is sent, never whole
in memory or on disk."""

from __future__ import annotations

import zipfile
from collections.abc import Iterable, Iterator
from pathlib import PurePosixPath

from django.utils import timezone

from documents.models import Document
from documents.uploads import download_name

CHUNK_BYTES = 256 * 1024


class _Pipe:
    """A write-only file whose bytes are taken away as they come (zipfile writes to
    it; the generator below hands them to the response)."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.offset = 0

    def write(self, data: bytes) -> int:
        self.chunks.append(bytes(data))
        self.offset += len(data)
        return len(data)

    def tell(self) -> int:
        return self.offset

    def flush(self) -> None:
        pass

    def take(self) -> bytes:
        data, self.chunks = b"".join(self.chunks), []
        return data


# The archive's own note of the files it could not hold: no document takes its name.
MISSING_NAME = "MISSING.txt"
# Characters Windows refuses in a file name (a name is only shown, never trusted):
# "C:report.txt" is a drive-relative path to some unzip tools, "a|b" no file at all.
NOT_IN_WINDOWS_NAMES = str.maketrans(dict.fromkeys('<>:"|?*\\', "_"))


# Names Windows keeps for devices, whatever their extension ("CON.txt", "nul.tar.gz"):
# unzipping such an entry fails there, or writes to the device instead of a file.
WINDOWS_DEVICE_NAMES = frozenset(
    ["con", "prn", "aux", "nul", "conin$", "conout$"]
    + [f"{port}{n}" for port in ("com", "lpt") for n in "0123456789¹²³"]
)


def entry_name(filename: str) -> str:
    """A document's name as an entry of the archive: its last part, and nothing a
    Windows unzip tool would take for a drive, a folder, a wildcard or a device."""
    name = PurePosixPath(filename.replace("\\", "/")).name
    name = name.translate(NOT_IN_WINDOWS_NAMES).strip(" .")
    # Windows ignores spaces before the first dot: "nul .txt" is NUL too.
    if name.split(".", 1)[0].rstrip(" ").casefold() in WINDOWS_DEVICE_NAMES:
        name = f"_{name}"
    return name or "document"


def unique_names(documents: Iterable[Document]) -> Iterator[tuple[Document, str]]:
    """Each document with a name no other entry has: "a.pdf", "a (2).pdf", ..."""
    seen: set[str] = {MISSING_NAME.casefold()}
    for document in documents:
        path = PurePosixPath(
            entry_name(download_name(document.original_filename, document.mime_type))
        )
        name, n = path.name, 1
        while name.casefold() in seen:
            n += 1
            name = f"{path.stem} ({n}){path.suffix}"
        seen.add(name.casefold())
        yield document, name


def zip_stream(documents: Iterable[Document]) -> Iterator[bytes]:
    """The ZIP file's bytes, chunk by chunk; a document whose file is gone is left out
    and named in MISSING.txt."""
    pipe = _Pipe()
    missing: list[str] = []
    # A pipe cannot seek back, so zipfile writes sizes after each entry (data
    # descriptors) and ZIP64 where needed.
    with zipfile.ZipFile(pipe, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for document, name in unique_names(documents):
            try:
                source = document.file.open("rb")
            except FileNotFoundError:
                missing.append(name)
                continue
            entry_info = _entry(document, name)
            with source, archive.open(entry_info, "w", force_zip64=True) as entry:
                while chunk := source.read(CHUNK_BYTES):
                    entry.write(chunk)
                    yield pipe.take()
        if missing:
            archive.writestr(
                MISSING_NAME, "Files no longer stored:\n" + "\n".join(missing)
            )
    yield pipe.take()


def _entry(document: Document, name: str) -> zipfile.ZipInfo:
    """The entry of ``document``, dated when it was uploaded (in the site's time: a
    ZIP entry's date has no zone); named alone, every entry was dated 1980."""
    uploaded = timezone.localtime(document.created_at)
    info = zipfile.ZipInfo(name, date_time=uploaded.timetuple()[:6])
    info.compress_type = zipfile.ZIP_DEFLATED
    return info
