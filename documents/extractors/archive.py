"""ZIP containers (DOCX, XLSX, PPTX, ODT): broken archives and zip bombs are refused
before a library unpacks them."""

from __future__ import annotations

import codecs
import os
import re
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager

from .base import (
    CorruptFileError,
    RefusedFileError,
    UnsupportedFileError,
    short_reason,
)
from .detect import MEMBER_ERRORS, detect_format
from .formats import with_article

MAX_UNCOMPRESSED_BYTES = 200 * 1024 * 1024
MAX_RATIO = 100  # deflate rarely beats ~20x on real XML; bombs reach 1000x+
_RATIO_CHECK_ABOVE = 20 * 1024 * 1024  # tiny files may compress absurdly well
_MB = 1024 * 1024
# Office Open XML saved as Strict: every namespace under this one.
_STRICT_NS = b"http://purl.oclc.org/ooxml/"
_ROOT_BYTES = 4096  # a part's root element, with its namespaces
# The XML prolog, up to a DOCTYPE: Office never writes one, entity bombs do.
_DOCTYPE = re.compile(rb"(?:\s|<\?.*?\?>|<!--.*?-->)*<!DOCTYPE", re.DOTALL)
_PROLOG_BYTES = 64 * 1024


@contextmanager
def checked_zip(
    path: str | os.PathLike[str], kind: str, member: str
) -> Iterator[zipfile.ZipFile]:
    """Open the ZIP container of a `kind` file ("Word (.docx)") that must hold
    `member`; reading it inside the block fails as CorruptFileError."""
    if os.path.getsize(path) == 0:
        raise CorruptFileError("it is empty (0 bytes); the upload may have failed")
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            # zipfile stops at each member's declared size, so declared sizes bound
            # what parsing can inflate to.
            total = sum(info.file_size for info in infos)
            packed = sum(info.compress_size for info in infos) or 1
            if total > MAX_UNCOMPRESSED_BYTES or (
                total > _RATIO_CHECK_ABOVE and total / packed > MAX_RATIO
            ):
                raise RefusedFileError(_too_much(total, packed))
            if member not in {info.filename for info in infos}:
                raise UnsupportedFileError(
                    f"This ZIP archive is not {with_article(kind)} file."
                )
            yield archive
    except zipfile.BadZipFile as exc:
        # A password-protected Office file is an OLE container, not a ZIP.
        fmt = detect_format(path)
        if fmt is not None and not fmt.readable:
            raise fmt.refuse() from exc
        raise CorruptFileError(
            f"it is not a complete ZIP archive ({with_article(kind)} file is one); "
            "the upload may have been cut short"
        ) from exc
    except (OSError, EOFError, NotImplementedError, zlib.error) as exc:
        raise CorruptFileError(
            f"its ZIP archive cannot be read ({short_reason(exc)})"
        ) from exc


def _too_much(total: int, packed: int) -> str:
    size = f"{total // _MB:,} MB"
    why = (
        f"more than the {MAX_UNCOMPRESSED_BYTES // _MB:,} MB allowed"
        if total > MAX_UNCOMPRESSED_BYTES
        else f"{total / packed:,.0f} times its own size"
    )
    return (
        f"This file is refused: it would unpack to {size}, {why}, which is how a "
        "zip bomb looks. Split it into smaller files, or save it without its "
        "embedded media."
    )


def check_zip(path: str | os.PathLike[str], kind: str, member: str) -> None:
    """Refuse a broken archive or a zip bomb before a library opens it."""
    with checked_zip(path, kind, member):
        pass


def strict_ooxml(archive: zipfile.ZipFile, *parts: str) -> bool:
    """Whether an Office package is saved as Strict Open XML, which the libraries
    read as an empty or broken file: its relationships, or the root element of one
    of ``parts``, name Strict's namespaces."""
    names = set(archive.namelist())
    if "_rels/.rels" in names and _STRICT_NS in archive.read("_rels/.rels"):
        return True
    for part in parts:
        if part in names:
            with archive.open(part) as member:
                if _STRICT_NS in member.read(_ROOT_BYTES):
                    return True
    return False


def strict_refusal(app: str, regular: str) -> UnsupportedFileError:
    """The refusal of a Strict Open XML file of ``app`` ("Word"), saying to save it
    as ``regular`` ("Word Document (.docx)")."""
    return UnsupportedFileError(
        f"This {app} file is saved as 'Strict Open XML', which is not supported; "
        f"save it again as a regular {regular}."
    )


def declares_dtd(archive: zipfile.ZipFile, name: str) -> bool:
    """True when an XML part opens with a DOCTYPE (after its declaration, comments
    and processing instructions)."""
    if not name.lower().endswith((".xml", ".rels")):
        return False
    try:
        with archive.open(name) as member:
            head = member.read(_PROLOG_BYTES)
    except MEMBER_ERRORS:
        return False  # damage the library reports in its turn
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        head = head.decode("utf-16", "ignore").encode()
    return bool(_DOCTYPE.match(head.removeprefix(codecs.BOM_UTF8)))
