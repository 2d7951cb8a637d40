"""Every file format, declared once: detection, uploads, the form and messages derive
from FORMATS (no Django: child processes import it)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from .base import EncryptedFileError, ExtractionError, UnsupportedFileError
from .sniff import (
    flat_odf_kind,
    looks_like_email,
    looks_like_html,
    looks_like_pdf,
    looks_like_svg,
    surely_email,
    surely_html,
)


@dataclass(frozen=True, slots=True)
class Format:
    """One file format: how it is recognised, named, accepted and read."""

    key: str
    label: str  # shown to people, e.g. "Word (DOCX)"
    mime_type: str  # stored on the document
    extensions: tuple[str, ...] = ()  # names that promise this format
    # Offered by the upload dialog too, promising nothing (".dat" names data of
    # every kind): the bytes decide.
    offered_extensions: tuple[str, ...] = ()
    extractor: str = ""  # "module:function" in this package; "" for a refused format
    requires: str = ""  # what to install when the extractor's module is missing
    other_mime_types: tuple[str, ...] = ()  # aliases browsers and mail clients send
    # Recognised by its bytes through one of these:
    signatures: tuple[bytes, ...] = ()  # the file starts with one of them
    sniff: Callable[[bytes], bool] | None = None  # a test of the first 64 KiB
    # A stricter test: content this plainly of the format outweighs a plain-text
    # name (.txt, .md, .csv); a match of `sniff` alone is a guess the name overrides.
    # A signature is always sure.
    sure: Callable[[bytes], bool] | None = None
    zip_member: str = ""  # a ZIP container holding this member,
    zip_member_content: bytes = b""  # which starts with this (ODF's "mimetype")
    # Or an Office Open XML package whose main part, the target of its officeDocument
    # relationship, has one of these content types under any name (Word Online saves
    # word/document2.xml).
    main_part_types: tuple[str, ...] = ()
    ole_streams: tuple[str, ...] = ()  # an OLE2 container with one of these streams
    # Text of any kind: the name may choose among text formats (.md, .csv).
    textual: bool = False
    refusal: str = ""  # why a recognised but unreadable format is refused
    refused_as: type[ExtractionError] = UnsupportedFileError

    @property
    def readable(self) -> bool:
        """True when this product extracts text from the format."""
        return bool(self.extractor)

    def signed(self, prefix: bytes) -> bool:
        """True when a file's first bytes are one of this format's signatures."""
        return bool(self.signatures) and prefix.startswith(self.signatures)

    def matches(self, prefix: bytes) -> bool:
        """True when a file's first bytes carry this format's signature."""
        return self.signed(prefix) or (self.sniff is not None and self.sniff(prefix))

    def surely_matches(self, prefix: bytes) -> bool:
        """True when the bytes carry this format's signature or pass its sure test."""
        return self.signed(prefix) or (self.sure is not None and self.sure(prefix))

    def refuse(self) -> ExtractionError:
        """The error for a file of a refused format."""
        return self.refused_as(self.refusal)


def _legacy(
    key: str, label: str, mime: str, streams: tuple[str, ...], app: str, modern: str
) -> Format:
    """A 97-2003 Office format: recognised by its OLE2 streams, refused with advice."""
    return Format(
        key=key,
        label=label,
        mime_type=mime,
        extensions=(f".{key}",),
        ole_streams=streams,
        refusal=(
            f"This is an old {label} file, which cannot be read; open it in {app} or "
            f"LibreOffice, save it as {modern} and upload that."
        ),
    )


def _image(key: str, label: str, mime: str, extensions: tuple[str, ...], **kw):
    reader = {"extractor": "image:extract_image", "requires": "Pillow and tesserocr"}
    return Format(
        key=key, label=label, mime_type=mime, extensions=extensions, **(reader | kw)
    )


def _iso_brands(prefix: bytes) -> list[bytes]:
    """An ISO media file's brands (HEIF, AVIF): the major one first, then the
    compatible ones its "ftyp" box lists; none for other files."""
    if prefix[4:8] != b"ftyp":
        return []
    end = min(int.from_bytes(prefix[:4], "big"), len(prefix))
    # Major brand, minor version, then compatible brands to the box's end.
    return [prefix[8:12]] + [prefix[i : i + 4] for i in range(16, end - 3, 4)]


def _iso_brand(*brands: bytes) -> Callable[[bytes], bool]:
    """An ISO media picture of one of these brands: its major brand, or one of its
    compatible brands under the general major brand ("mif1", "msf1")."""

    def branded(prefix: bytes) -> bool:
        major, *compatible = _iso_brands(prefix) or [b""]
        if major in brands:
            return True
        return major in (b"mif1", b"msf1") and any(b in brands for b in compatible)

    return branded


# A BMP's info header is one of a few fixed sizes: "BM" alone also starts prose.
_BMP_HEADER_SIZES = {12, 40, 52, 56, 64, 108, 124}


def _looks_like_bmp(prefix: bytes) -> bool:
    return (
        prefix[:2] == b"BM"
        and len(prefix) >= 18
        and int.from_bytes(prefix[14:18], "little") in _BMP_HEADER_SIZES
    )


def _odf(key: str, kind: str, template: str) -> Format:
    """An OpenDocument format: a ZIP whose "mimetype" member names the `kind` ("text"),
    or its template's ("text-template"), which starts the same."""
    mime = f"application/vnd.oasis.opendocument.{kind}"
    return Format(
        key=key,
        label=f"OpenDocument {kind} ({key.upper()})",
        mime_type=mime,
        extensions=(f".{key}", template),
        extractor=f"odf:extract_{key}",
        requires="lxml",
        other_mime_types=(f"{mime}-template",),
        zip_member="mimetype",
        zip_member_content=mime.encode(),
    )


def _flat_odf(packaged: Format, kind: str) -> Format:
    """LibreOffice's "Flat XML" of an OpenDocument format (.fodt): the package's parts
    in one XML document, recognised by the kind its root names."""
    key = f"f{packaged.key}"

    def names_kind(prefix: bytes) -> bool:
        return flat_odf_kind(prefix) == kind

    return Format(
        key=key,
        label=f"Flat OpenDocument {kind} ({key.upper()})",
        mime_type=f"{packaged.mime_type}-flat-xml",
        extensions=(f".{key}",),
        extractor="odf:extract_flat",
        requires="lxml",
        sniff=names_kind,
        sure=names_kind,  # an XML file whose root says so, whatever its name
        textual=True,
    )


_OOXML = "application/vnd.openxmlformats-officedocument"
PDF = Format(
    key="pdf",
    label="PDF",
    mime_type="application/pdf",
    extensions=(".pdf",),
    extractor="pdf:extract_pdf",
    requires="pypdfium2 and pdfplumber",
    sniff=looks_like_pdf,
)
DOCX = Format(
    key="docx",
    label="Word (DOCX)",
    mime_type=f"{_OOXML}.wordprocessingml.document",
    # Macro-enabled documents and templates hold the same text (macros never run).
    extensions=(".docx", ".docm", ".dotx", ".dotm"),
    extractor="docx:extract_docx",
    requires="python-docx",
    zip_member="word/document.xml",
    main_part_types=(
        f"{_OOXML}.wordprocessingml.document.main+xml",
        "application/vnd.ms-word.document.macroEnabled.main+xml",
        f"{_OOXML}.wordprocessingml.template.main+xml",
        "application/vnd.ms-word.template.macroEnabledTemplate.main+xml",
    ),
)
# Text people keep under other names too: logs, tables, settings, data, docs.
_TEXT_EXTENSIONS = (".txt", ".text", ".log", ".tsv", ".ini", ".cfg", ".conf", ".yaml",
                    ".yml", ".toml", ".json", ".xml", ".rst", ".tex")  # fmt: skip
TEXT = Format(
    key="text",
    label="Plain text",
    mime_type="text/plain",
    extensions=_TEXT_EXTENSIONS,
    extractor="text:extract_text",
    requires="chardetng-py",
    textual=True,
)

# Templates (.ott, .ots, .otp) hold the same content as documents.
ODT = _odf("odt", "text", ".ott")
ODS = _odf("ods", "spreadsheet", ".ots")
ODP = _odf("odp", "presentation", ".otp")
FODT = _flat_odf(ODT, "text")
FODS = _flat_odf(ODS, "spreadsheet")
FODP = _flat_odf(ODP, "presentation")
XLSX = Format(
    key="xlsx",
    label="Excel (XLSX)",
    mime_type=f"{_OOXML}.spreadsheetml.sheet",
    # Macro-enabled workbooks and templates hold the same sheets (macros never run).
    extensions=(".xlsx", ".xlsm", ".xltx", ".xltm"),
    extractor="xlsx:extract_xlsx",
    requires="openpyxl",
    zip_member="xl/workbook.xml",
)
PPTX = Format(
    key="pptx",
    label="PowerPoint (PPTX)",
    mime_type=f"{_OOXML}.presentationml.presentation",
    # Shows and templates hold the same slides (macros never run).
    extensions=(".pptx", ".pptm", ".ppsx", ".ppsm", ".potx", ".potm"),
    extractor="pptx:extract_pptx",
    requires="python-pptx",
    zip_member="ppt/presentation.xml",
)
EPUB = Format(
    key="epub",
    label="E-book (EPUB)",
    mime_type="application/epub+zip",
    extensions=(".epub",),
    extractor="epub:extract_epub",
    requires="lxml",
    zip_member="mimetype",
    zip_member_content=b"application/epub+zip",
)
RTF = Format(
    key="rtf",
    label="RTF",
    mime_type="application/rtf",
    extensions=(".rtf",),
    extractor="rtf:extract_rtf",
    requires="striprtf",
    other_mime_types=("text/rtf",),
    signatures=(b"{\\rtf",),
    textual=True,
)
EMAIL = Format(
    key="eml",
    label="E-mail (EML)",
    mime_type="message/rfc822",
    extensions=(".eml",),
    extractor="mail:extract_email",
    sniff=looks_like_email,
    sure=surely_email,
    textual=True,
)

# Apple Mail's .emlx: the message's length in bytes on a line of its own, the
# message, then a property list of Mail's own (flags, dates) that is not read.
_EMLX_LENGTH = re.compile(rb"\A([0-9]{1,12})[ \t]*\r?\n")
_PLIST = b"<?xml"  # Mail's property list starts so


def emlx_message(data: bytes) -> bytes | None:
    """The message an .emlx file holds, without the property list after it (all
    that follows its length line when the length is past the end, as in a file
    cut short); None when the data does not open with a length line. A length
    that does not end where the property list starts (line ends converted on a
    copy: a byte more or fewer a line) gives way to where it starts."""
    found = _EMLX_LENGTH.match(data)
    if found is None:
        return None
    start, end = found.end(), found.end() + int(found[1])
    if end < len(data) and not data[end : end + 64].lstrip().startswith(_PLIST):
        plist = data.rfind(b"\n" + _PLIST, start)
        end = end if plist < 0 else plist + 1
    return data[start:end]


def _looks_like_emlx(prefix: bytes) -> bool:
    message = emlx_message(prefix)
    return message is not None and looks_like_email(message)


def _surely_emlx(prefix: bytes) -> bool:
    message = emlx_message(prefix)
    return message is not None and surely_email(message)


EMLX = Format(
    key="emlx",
    label="Apple Mail message (EMLX)",
    mime_type="message/x-emlx",
    extensions=(".emlx",),  # ".partial.emlx" too: the attachments kept apart
    extractor="mail:extract_emlx",
    sniff=_looks_like_emlx,
    sure=_surely_emlx,
    textual=True,
)
HTML = Format(
    key="html",
    label="HTML",
    mime_type="text/html",
    extensions=(".html", ".htm", ".xhtml"),
    extractor="html:extract_html",
    requires="lxml",
    other_mime_types=("application/xhtml+xml",),
    sniff=looks_like_html,
    sure=surely_html,
    textual=True,
)
MARKDOWN = Format(
    key="markdown",
    label="Markdown",
    mime_type="text/markdown",
    extensions=(".md", ".markdown"),
    extractor="text:extract_text",
    requires="chardetng-py",
    other_mime_types=("text/x-markdown",),
    textual=True,
)
CSV = Format(
    key="csv",
    label="CSV",
    mime_type="text/csv",
    extensions=(".csv",),
    extractor="text:extract_text",
    requires="chardetng-py",
    textual=True,
)

# Outlook's winmail.dat, saved from a message (where Outlook or Exchange sent it in
# place of the body and attachments) and uploaded on its own: no extension of its
# own, as ".dat" names data of every kind.
WINMAIL = Format(
    key="tnef",
    label="Outlook winmail.dat (TNEF)",
    mime_type="application/vnd.ms-tnef",
    extensions=(".tnef",),
    offered_extensions=(".dat",),  # winmail.dat: the dialog greyed it out
    extractor="winmail:extract_winmail",
    requires="tnefparse and compressed-rtf",
    other_mime_types=("application/ms-tnef",),
    signatures=(b"\x78\x9f\x3e\x22",),  # 0x223E9F78, little-endian
)

# Photos and scans: read by OCR.
IMAGES = (
    _image("png", "PNG image", "image/png", (".png",), signatures=(b"\x89PNG\r\n\x1a\n",)),
    _image("jpeg", "JPEG image", "image/jpeg", (".jpg", ".jpeg", ".jpe"),
           signatures=(b"\xff\xd8\xff",), other_mime_types=("image/pjpeg", "image/jpg")),
    _image("tiff", "TIFF image", "image/tiff", (".tif", ".tiff"),
           signatures=(b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")),  # BigTIFF
    _image("webp", "WebP image", "image/webp", (".webp",),
           sniff=lambda p: p[:4] == b"RIFF" and p[8:12] == b"WEBP"),
    _image("bmp", "BMP image", "image/bmp", (".bmp",), sniff=_looks_like_bmp,
           other_mime_types=("image/x-ms-bmp",)),
    # AVIF before HEIC: both may carry the general HEIF brand ("mif1").
    _image("avif", "AVIF image", "image/avif", (".avif",),
           sniff=_iso_brand(b"avif", b"avis")),
    # An iPhone's photos; pi-heif (libheif in its wheel) decodes them.
    _image("heic", "HEIC photo", "image/heic", (".heic", ".heif", ".hif"),
           extractor="image:extract_heic", requires="Pillow, pi-heif and tesserocr",
           other_mime_types=("image/heif", "image/heic-sequence", "image/heif-sequence"),
           sniff=_iso_brand(b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis",
                            b"hevm", b"hevs", b"mif1", b"msf1")),
    _image("gif", "GIF image", "image/gif", (".gif",),
           signatures=(b"GIF87a", b"GIF89a")),
    # A JP2 file, or a bare JPEG 2000 codestream (.j2k).
    _image("jp2", "JPEG 2000 image", "image/jp2", (".jp2", ".j2k", ".j2c", ".jpx"),
           signatures=(b"\x00\x00\x00\x0cjP  \r\n\x87\n", b"\xffO\xffQ"),
           other_mime_types=("image/jpx",)),
)  # fmt: skip


# Abbreviations said letter by letter take "an" before these letters: an HTML, an RTF.
_VOWEL_SOUNDING_LETTERS = "AEFHILMNORSX"


def with_article(noun: str) -> str:
    """The noun after "a" or "an" as it is said: "a PDF", "an HTML", "an Excel (XLSX)",
    "an OpenDocument text (ODT)", "an E-mail (EML)", "a Word (DOCX)"."""
    word = noun.split(maxsplit=1)[0] if noun.strip() else ""
    if len(word) > 1 and word.isupper():  # PDF, RTF, HTML, CSV: letter by letter
        vowel = word[0] in _VOWEL_SOUNDING_LETTERS
    else:
        vowel = word[:1].lower() in "aeio" or (
            word[:1].lower() == "u" and not word.lower().startswith(("uni", "us"))
        )
    return f"{'an' if vowel else 'a'} {noun}"


def _refused_picture(
    key: str, label: str, mime: str, extensions: tuple[str, ...], **kw
) -> Format:
    """A picture format OCR does not read: told apart, and refused with advice."""
    return Format(
        key=key,
        label=label,
        mime_type=mime,
        extensions=extensions,
        refusal=(
            f"This is {with_article(label)}, which cannot be read; save it as JPEG or "
            "PNG (or print it to PDF) and upload that."
        ),
        **kw,
    )


def _looks_like_icon(prefix: bytes) -> bool:
    """A Windows icon (type 1) or cursor (type 2): its header, then a directory
    entry whose reserved byte is 0 and whose image starts after the directory
    ("\\0\\0\\1\\0" alone starts other binary data too)."""
    if len(prefix) < 22 or prefix[:4] not in (b"\x00\x00\x01\x00", b"\x00\x00\x02\x00"):
        return False
    count = int.from_bytes(prefix[4:6], "little")
    offset = int.from_bytes(prefix[18:22], "little")
    return count > 0 and prefix[9] == 0 and offset >= 6 + 16 * count


# Told apart so that the refusal says what the file is and what to do.
REFUSED_PICTURES = (
    _refused_picture("psd", "Photoshop (PSD) image", "image/vnd.adobe.photoshop",
                     (".psd",), signatures=(b"8BPS",)),
    _refused_picture("ico", "Windows icon (ICO)", "image/vnd.microsoft.icon",
                     (".ico", ".cur"), sniff=_looks_like_icon,
                     other_mime_types=("image/x-icon",)),
    # Drawn, not scanned: read as HTML, its lines of text (each placed on its own)
    # run together, and most drawings hold theirs as outlines. An inline <svg> that
    # HTML follows is HTML.
    _refused_picture("svg", "SVG image", "image/svg+xml", (".svg",),
                     sniff=looks_like_svg, textual=True),
)  # fmt: skip

# In detection order: the first format whose bytes match wins; textual formats are
# tried only on text, and text that matches none of them is TEXT.
FORMATS: tuple[Format, ...] = (
    PDF,
    DOCX,
    ODT,
    XLSX,
    ODS,
    PPTX,
    ODP,
    EPUB,
    RTF,
    EMAIL,
    EMLX,
    WINMAIL,
    HTML,
    TEXT,
    MARKDOWN,
    CSV,
    FODT,
    FODS,
    FODP,
    *IMAGES,
    *REFUSED_PICTURES,
    _legacy("doc", "Word 97-2003 (DOC)", "application/msword", ("WordDocument",),
            "Word", "a Word Document (DOCX)"),
    _legacy("xls", "Excel 97-2003 (XLS)", "application/vnd.ms-excel",
            ("Workbook", "Book"),  # "Book": Excel 5/95
            "Excel", "an Excel Workbook (XLSX)"),
    _legacy("ppt", "PowerPoint 97-2003 (PPT)", "application/vnd.ms-powerpoint",
            ("PowerPoint Document",), "PowerPoint", "a PowerPoint Presentation (PPTX)"),
    # Outlook's messages are OLE2 containers too: not an old Office file to re-save.
    Format(
        key="msg",
        label="Outlook message (MSG)",
        mime_type="application/vnd.ms-outlook",
        extensions=(".msg",),
        ole_streams=("__properties_version1.0",),
        refusal=(
            "This is an Outlook message (.msg), which cannot be read; save it from "
            "Outlook as HTML or plain text, or as an .eml file from a mail program "
            "that writes them, and upload that."
        ),
    ),
    Format(
        key="encrypted-office",
        label="password-protected Office document",
        mime_type="application/x-encrypted-office",
        ole_streams=("EncryptedPackage",),
        refusal=(
            "This Office document is protected by a password, so its text cannot be "
            "read; save a copy without a password and upload that."
        ),
        refused_as=EncryptedFileError,
    ),
)  # fmt: skip

_BY_MIME = {
    mime: fmt for fmt in FORMATS for mime in (fmt.mime_type, *fmt.other_mime_types)
}
_BY_EXTENSION = {ext: fmt for fmt in FORMATS for ext in fmt.extensions}
READABLE = tuple(fmt for fmt in FORMATS if fmt.readable)


def by_mime_type(mime_type: str | None) -> Format | None:
    """The format stored under a MIME type (parameters such as charset ignored)."""
    return _BY_MIME.get((mime_type or "").split(";")[0].strip().lower())


def by_extension(filename: str) -> Format | None:
    """The format a file name promises by its extension, if any."""
    _, dot, extension = filename.rpartition(".")
    return _BY_EXTENSION.get(f".{extension.lower()}") if dot else None


def by_name(name: str) -> Format | None:
    """The readable format a person or a script names: its key ("pdf"), its MIME
    type, or an extension ("docx", ".docx")."""
    return (
        by_mime_type(name)
        or next((fmt for fmt in READABLE if fmt.key == name.lower()), None)
        or by_extension("." + name.removeprefix("."))
    )


def label_for(mime_type: str | None) -> str:
    """A person's name for a MIME type ("Word (DOCX)"), never the raw string."""
    fmt = by_mime_type(mime_type)
    return fmt.label if fmt else "Other"


def accepted_labels() -> str:
    """E.g. "PDF, Word (DOCX) or Plain text"."""
    *rest, last = (fmt.label for fmt in READABLE)
    return f"{', '.join(rest)} or {last}" if rest else last


def type_choices() -> list[tuple[str, str]]:
    """(MIME type, label) of every readable format, by label: for filters."""
    return sorted(
        ((fmt.mime_type, fmt.label) for fmt in READABLE), key=lambda c: c[1].lower()
    )


def accept_attribute() -> str:
    """The file input's `accept`: every readable extension and MIME type."""
    extensions = [
        ext for fmt in READABLE for ext in (*fmt.extensions, *fmt.offered_extensions)
    ]
    mimes = [
        mime for fmt in READABLE for mime in (fmt.mime_type, *fmt.other_mime_types)
    ]
    return ",".join(extensions + mimes)


def named_format(
    detected: Format, filename: str, prefix: bytes | None = None
) -> Format | None:
    """The format to read a file as, given its bytes (`detected` from them, and their
    `prefix` when known) and its name; None when the name promises another kind of
    file than the bytes hold."""
    claimed = by_extension(filename)
    if claimed is None or claimed == detected:
        return detected
    if detected.textual and claimed.textual:
        # Bytes can't tell Markdown or CSV from plain text.
        if detected == TEXT:
            return claimed
        # A README opening with <p align="center">, a memo with "From:" and "To:"
        # lines: a name saying plain text outweighs a guess, not a sure sign (a
        # signature, a whole HTML page, a mail system's headers).
        plain = claimed.extractor == TEXT.extractor
        if plain and prefix is not None and not detected.surely_matches(prefix):
            return claimed
        return detected
    if detected in IMAGES and claimed in (*IMAGES, *REFUSED_PICTURES):
        # A picture is a picture to OCR: a WebP saved as ".jpg" (browsers keep the
        # address's name), a JPEG renamed ".png".
        return detected
    return None
