"""Small self-made documents for tests, byte-for-byte the same on every run."""

from __future__ import annotations

import datetime
import io
import math
import struct
import zipfile
import zlib
from collections.abc import Callable, Sequence
from email.message import EmailMessage
from pathlib import Path

import docx
from fpdf import FPDF
from fpdf.enums import TextMode
from PIL import Image, ImageDraw, ImageFont

FIXED_TIME = (2020, 1, 1, 0, 0, 0)


def pdf_bytes(text: str = "Quarterly report of the queue", pages: int = 1) -> bytes:
    """A PDF whose page n says ``text (page n)``."""
    pdf = FPDF()
    pdf.set_creation_date(datetime.datetime(*FIXED_TIME, tzinfo=datetime.UTC))
    pdf.set_font("helvetica", size=12)
    for n in range(pages):
        pdf.add_page()
        pdf.multi_cell(0, 10, f"{text} (page {n + 1})")
    return bytes(pdf.output())


def docx_bytes(text: str = "Minutes of the meeting") -> bytes:
    """A DOCX with one paragraph; zip dates fixed so the bytes repeat."""
    document = docx.Document()
    document.add_paragraph(text)
    saved = io.BytesIO()
    document.save(saved)
    return _fixed_zip(saved.getvalue())


def ole_bytes(*streams: str) -> bytes:
    """An OLE2 compound file (the container of .doc/.xls/.ppt) holding the named
    streams, 4 KiB each: enough for readers to list them."""
    sector, free, end, fat_mark = 512, 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD
    none = free  # "no sibling" is the same value as a free sector
    per_stream = 8  # 4 KiB: at the mini-stream cutoff, so stored in regular sectors
    fat = [fat_mark, end]  # sector 0: the FAT itself; sector 1: the directory
    for n in range(len(streams)):
        first = 2 + n * per_stream
        fat += [*range(first + 1, first + per_stream), end]
    assert len(fat) <= 128 and len(streams) <= 3, "one FAT and directory sector"
    header = struct.pack(
        "<8s16sHHHHH6sIIIIIIIII",
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
        bytes(16),
        0x3E, 3, 0xFFFE, 9, 6, bytes(6),
        0, 1, 1, 0, 4096, end, 0, end, 0,
    ) + struct.pack("<109I", 0, *[free] * 108)  # fmt: skip

    def entry(name: str, kind: int, right: int, child: int, start: int, size: int):
        encoded = name.encode("utf-16-le") + b"\x00\x00"
        return struct.pack(
            "<64sHBBIII16sIQQIQ",
            encoded, len(encoded), kind, 1, none, right, child,
            bytes(16), 0, 0, 0, start, size,
        )  # fmt: skip

    directory = entry("Root Entry", 5, none, 1 if streams else none, end, 0)
    for n, name in enumerate(streams):
        right = n + 2 if n + 1 < len(streams) else none
        directory += entry(name, 2, right, none, 2 + n * per_stream, 4096)
    directory = directory.ljust(sector, b"\x00")
    fat_sector = struct.pack(f"<{len(fat)}I", *fat).ljust(sector, b"\xff")
    data = b"".join(name.encode().ljust(4096, b"\x00") for name in streams)
    return header + fat_sector + directory + data


def _fixed_zip(data: bytes) -> bytes:
    """The same ZIP with fixed dates, so the bytes repeat from run to run."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as source,
        zipfile.ZipFile(out, "w") as target,
    ):
        for info in source.infolist():
            info.date_time = FIXED_TIME
            target.writestr(info, source.read(info.filename))
    return out.getvalue()


def rezipped(data: bytes, change: Callable[[str, bytes], tuple[str, bytes]]) -> bytes:
    """The same ZIP with each member's name and bytes passed through ``change``."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            info.filename, content = change(info.filename, source.read(info.filename))
            target.writestr(info, content)
    return out.getvalue()


def with_member(data: bytes, member: str, change) -> bytes:
    """The same ZIP with one member's bytes passed through ``change``."""
    return rezipped(
        data,
        lambda name, content: (name, change(content) if name == member else content),
    )


def replaced_everywhere(data: bytes, pairs: list[tuple[bytes, bytes]]) -> bytes:
    """The same ZIP with each (old, new) pair of bytes replaced in every member (a
    package's namespaces, as Strict Open XML writes them)."""

    def replace(name: str, content: bytes) -> tuple[str, bytes]:
        for old, new in pairs:
            content = content.replace(old, new)
        return name, content

    return rezipped(data, replace)


def odt_package(content: str, styles: str = "", manifest: str = "") -> bytes:
    """An ODT package of these content.xml, styles.xml and manifest (their whole
    XML; the last two left out when empty), its mimetype first and stored."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as odt:
        odt.writestr(
            zipfile.ZipInfo("mimetype"),
            "application/vnd.oasis.opendocument.text",
            compress_type=zipfile.ZIP_STORED,
        )
        odt.writestr("content.xml", content)
        if styles:
            odt.writestr("styles.xml", styles)
        if manifest:
            odt.writestr("META-INF/manifest.xml", manifest)
    return out.getvalue()


# Ten levels of ten: a billion "lol"s once expanded, a few hundred bytes declared.
BILLION_LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol0 "lol">'
    + "".join(f'<!ENTITY lol{n} "{f"&lol{n - 1};" * 10}">' for n in range(1, 10))
    + "]>"
).encode()


def with_doctype(xml: bytes, entity: bytes = b"&lol9;") -> bytes:
    """An XML part with the billion-laughs DOCTYPE in front and its entity used as
    the root's first child, as a hostile file would carry it."""
    if xml.startswith(b"<?xml"):
        xml = xml[xml.index(b"?>") + 2 :].lstrip()
    end = xml.index(b">") + 1  # the end of the root's start tag
    return BILLION_LAUGHS + xml[:end] + entity + xml[end:]


def odt_bytes(*paragraphs: str, heading: str = "Minutes") -> bytes:
    """An OpenDocument text with a heading, paragraphs and a small table."""
    from odfdo import Document, Header, Paragraph, Table

    document = Document("text")
    document.body.append(Header(1, heading))
    for text in paragraphs:
        document.body.append(Paragraph(text))
    table = Table("Budget", width=2, height=1)
    table.set_value((0, 0), "rent")
    table.set_value((1, 0), "900")
    document.body.append(table)
    saved = io.BytesIO()
    document.save(saved)
    return _fixed_zip(saved.getvalue())


def xlsx_bytes(rows: list[list[object]], title: str = "Budget") -> bytes:
    """A workbook with one sheet of the given rows."""
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = title
    for row in rows:
        sheet.append(row)
    saved = io.BytesIO()
    workbook.save(saved)
    return _fixed_zip(saved.getvalue())


def pptx_bytes(title: str, body: str, notes: str = "") -> bytes:
    """A one-slide presentation: title, a bullet and speaker notes."""
    import pptx

    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])
    slide.shapes.title.text = title
    slide.placeholders[1].text = body
    if notes:
        slide.notes_slide.notes_text_frame.text = notes
    saved = io.BytesIO()
    presentation.save(saved)
    return _fixed_zip(saved.getvalue())


def rtf_bytes(*paragraphs: str) -> bytes:
    """An RTF document (cp1252), one \\par per paragraph."""
    body = "".join(
        "".join(c if ord(c) < 128 else f"\\'{c.encode('cp1252')[0]:02x}" for c in p)
        + "\\par\n"
        for p in paragraphs
    )
    return (
        "{\\rtf1\\ansi\\ansicpg1252\\deff0{\\fonttbl{\\f0\\fswiss Helvetica;}}"
        f"\\f0\\fs24 {body}}}"
    ).encode("ascii")


def mail_message(*attachments: tuple[str, str, bytes]) -> EmailMessage:
    """A message with a text body and (file name, MIME type, content) attachments."""
    msg = EmailMessage()
    msg["From"] = "Alice <alice@example.com>"
    msg["To"] = "bob@example.com"
    msg["Subject"] = "Site visit"
    msg.set_content("Hi Bob, the papers are attached.")
    for name, mime, content in attachments:
        maintype, subtype = mime.split("/")
        msg.add_attachment(content, maintype=maintype, subtype=subtype, filename=name)
    return msg


def tnef_bytes(*files: tuple[str, bytes], body: str = "", rtf: bytes = b"") -> bytes:
    """Outlook's winmail.dat (TNEF, [MS-OXTNEF]): a message whose body is plain text
    and/or RTF (compressed, as Outlook stores it), and a (name, content) attachment
    per file, its name as Outlook gives it (long, Unicode)."""
    from compressed_rtf import compress

    def attribute(level: int, kind: int, name: int, data: bytes) -> bytes:
        # Level (message 1, attachment 2), id (name, then type), length, data, and
        # the data's checksum: its bytes summed, modulo 65536.
        head = struct.pack("<BHHI", level, name, kind, len(data))
        return head + data + struct.pack("<H", sum(data) & 0xFFFF)

    def properties(*values: tuple[int, int, bytes]) -> bytes:
        # Each MAPI property: type, tag, one value of its length, padded to 4.
        out = struct.pack("<I", len(values))
        for kind, tag, value in values:
            padded = value.ljust(-(-len(value) // 4) * 4, b"\x00")
            out += struct.pack("<HHII", kind, tag, 1, len(value)) + padded
        return out

    unicode, binary, byte, dword, string = 0x001F, 0x0102, 0x0006, 0x0008, 0x0001
    body_properties = [(unicode, 0x1000, (body + "\0").encode("utf-16-le"))] * bool(
        body
    ) + [(binary, 0x1009, compress(rtf))] * bool(rtf)
    out = struct.pack("<IH", 0x223E9F78, 0x0001)
    out += attribute(1, dword, 0x9006, struct.pack("<I", 0x00010000))  # version
    out += attribute(1, byte, 0x9007, struct.pack("<II", 1252, 0))  # code page
    out += attribute(1, byte, 0x9003, properties(*body_properties))
    for name, content in files:
        # Rendering (a file, not shown in the body), short name, data, long name.
        out += attribute(2, byte, 0x9002, struct.pack("<HIHHI", 1, 0xFFFFFFFF, 0, 0, 0))
        out += attribute(2, string, 0x8010, name.encode("cp1252", "replace") + b"\0")
        out += attribute(2, byte, 0x800F, content)
        long_name = (name + "\0").encode("utf-16-le")
        out += attribute(2, byte, 0x9005, properties((unicode, 0x3707, long_name)))
    return out


def pdf_with_files(text: str, *files: tuple[str, bytes]) -> bytes:
    """A one-page PDF saying ``text``, with (name, content) files embedded in it
    (its Attachments panel: the EmbeddedFiles name tree)."""
    pdf = FPDF()
    pdf.set_creation_date(datetime.datetime(*FIXED_TIME, tzinfo=datetime.UTC))
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 10, text)
    when = datetime.datetime(*FIXED_TIME, tzinfo=datetime.UTC)
    for name, content in files:
        pdf.embed_file(bytes=content, basename=name, modification_date=when)
    return bytes(pdf.output())


def eml_bytes(
    text: str | None = "Hello Bob,\nthe report is attached.",
    html: str | None = None,
    attachments: tuple[str, ...] = ("report.pdf",),
) -> bytes:
    """An e-mail with a text and/or HTML body and named attachments."""
    from email.message import EmailMessage

    message = EmailMessage()
    message["From"] = "Alice Example <alice@example.org>"
    message["To"] = "bob@example.org"
    message["Subject"] = "Quarterly report"
    message["Date"] = "Wed, 01 Jan 2020 10:00:00 +0000"
    if text is not None:
        message.set_content(text)
    if html is not None:
        if text is None:
            message.set_content(html, subtype="html")
        else:
            message.add_alternative(html, subtype="html")
    for name in attachments:
        # A real PDF: attached documents are read, and a broken one is noted.
        message.add_attachment(
            pdf_bytes(f"Attached {name}"),
            maintype="application",
            subtype="pdf",
            filename=name,
        )
    return bytes(message)


def write(tmp_path: Path, name: str, content: bytes) -> Path:
    """``content`` as the file ``name`` in ``tmp_path``."""
    path = tmp_path / name
    path.write_bytes(content)
    return path


def words(text: str) -> set[str]:
    return {w.strip(".,").lower() for w in text.split()}


def reads(text: str, lines: list[str]) -> bool:
    """Every word of ``lines`` is in ``text`` (OCR may break lines differently)."""
    return words(" ".join(lines)) <= words(text)


# A page of plain prose, for scans made with text_image.
PROSE_LINES = [
    "The committee met on Tuesday morning to review",
    "the quarterly budget and the harbour renovation.",
    "Several members raised concerns about the cost",
    "of timber and steel, which rose twelve percent.",
    "Volunteers will paint the community hall in",
    "October, and the garden club will plant trees.",
]


def text_image(lines: list[str], *, size: int = 36, turn: int = 0) -> Image.Image:
    """Black text on white, like a scanned page (small, to keep OCR fast);
    ``turn`` degrees counter-clockwise makes a page lying on its side."""
    font = ImageFont.load_default(size=size)
    width = max(int(font.getlength(line)) for line in lines) + 2 * size
    image = Image.new("L", (width, (len(lines) + 1) * size * 3 // 2 + size), 255)
    draw = ImageDraw.Draw(image)
    for n, line in enumerate(lines):
        draw.text((size, size + n * size * 3 // 2), line, font=font, fill=0)
    return image.rotate(turn, expand=True, fillcolor=255) if turn else image


def image_bytes(image: Image.Image, fmt: str = "PNG", **params) -> bytes:
    """The image saved in a format (PNG, JPEG, TIFF, WEBP, BMP)."""
    out = io.BytesIO()
    image.save(out, fmt, **params)
    return out.getvalue()


def scan_pdf_bytes(
    pages: list[Image.Image | str], layers: dict[int, str] | None = None
) -> bytes:
    """A PDF with a page per item: an image fills its page (a scan), a string is
    typed text (born-digital), so a list of both makes a mixed PDF. ``layers``
    gives scanned pages (by index) an invisible text layer, as scanners' OCR does."""
    pdf = FPDF()
    pdf.set_creation_date(datetime.datetime(*FIXED_TIME, tzinfo=datetime.UTC))
    pdf.set_font("helvetica", size=12)
    for n, page in enumerate(pages):
        pdf.add_page()
        if isinstance(page, str):
            pdf.multi_cell(0, 10, page)
        else:
            width = min(pdf.epw, pdf.eph * page.width / page.height)
            pdf.image(page, x=pdf.l_margin, y=pdf.t_margin, w=width)
            if layers and n in layers:
                pdf.text_mode = TextMode.INVISIBLE
                pdf.multi_cell(0, 5, layers[n])
                pdf.text_mode = TextMode.FILL
    return bytes(pdf.output())


def stamped_scan_pdf_bytes(lines: list[str], stamp: str, x: float = 150) -> bytes:
    """A one-page scan of ``lines`` with ``stamp`` typed at its foot (a Bates
    number, a fax header): a real text layer of a few words on an image."""
    page = Image.new("L", (1240, 1754), 255)
    page.paste(text_image(lines), (100, 150))
    pdf = FPDF()
    pdf.add_page()
    pdf.image(page, x=0, y=0, w=210, h=297)
    pdf.set_font("helvetica", size=8)
    pdf.text(x, 290, stamp)
    return bytes(pdf.output())


def bomb_png_bytes(side: int = 10_000) -> bytes:
    """A PNG of a few hundred bytes that claims side × side pixels: 10,000² is
    over Pillow's limit (a warning there), 30,000² over twice it (an error)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    header = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)  # 1-bit grey
    rows = zlib.compress((b"\x00" + bytes((side + 7) // 8)) * 16)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", rows)
        + chunk(b"IEND", b"")
    )


def hand_made_pdf(objects: dict[int, bytes]) -> bytes:
    """A PDF of the given numbered objects (1 is the catalog; numbers may skip),
    with its xref."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n%s\nendobj\n" % (number, objects[number])
    size = max(objects) + 1
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    out += b"".join(
        b"%010d 00000 n \n" % offsets[n] if n in offsets else b"0000000000 65535 f \n"
        for n in range(1, size)
    )
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        size,
        xref,
    )
    return bytes(out)


def shaped_rtl_pdf(
    lines: list[str],
    angle: int = 0,
    visual: Callable[[str], Sequence[str]] = lambda line: line[::-1],
) -> bytes:
    """Right-to-left lines as Chrome's "Save as PDF" writes the Arabic it shapes: a
    line's glyphs drawn from left to right, so its last letter first, each under an
    ActualText naming its letters (the font maps none); baselines turned ``angle``
    degrees counter-clockwise. ``visual``: a line's glyphs (the letters each names,
    one but for a ligature's) in the order they lie from left to right."""
    cos, sin = (
        round(math.cos(math.radians(angle))),
        round(math.sin(math.radians(angle))),
    )
    ops = ["BT /F1 14 Tf /ReversedChars BMC"]
    for n, line in enumerate(lines):
        for k, glyph in enumerate(visual(line)):
            # Helvetica's "x" is 7 points wide at 14 points: glyphs side by side.
            dx, dy = 7 * k - 200, 200 - 20 * n
            x, y = 300 + dx * cos - dy * sin, 500 + dx * sin + dy * cos
            actual = glyph.encode("utf-16-be").hex()
            ops.append(
                f"/Span <</ActualText <FEFF{actual}>>> BDC "
                f"{cos} {sin} {-sin} {cos} {x} {y} Tm (x) Tj EMC"
            )
    content = "\n".join([*ops, "EMC ET"]).encode()
    return hand_made_pdf(
        {
            1: b"<< /Type /Catalog /Pages 2 0 R >>",
            2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
            4: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            5: b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        }
    )


def placed_text_pdf(
    texts: list[tuple[float, float, str]], *, rotate: int = 0, size: int = 10
) -> bytes:
    """A one-page PDF (Letter) drawing each ``(x, y, text)`` in Helvetica at
    ``size`` points, in the order given: the content stream's order, whatever the
    reading order. ``x, y`` in points from the bottom left; ``rotate`` is the
    page's /Rotate (a viewer's "rotate page" saves one)."""
    ops = [f"BT /F1 {size} Tf"]
    for x, y, text in texts:
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        ops.append(f"1 0 0 1 {x} {y} Tm ({escaped}) Tj")
    content = "\n".join([*ops, "ET"]).encode("latin-1")
    return hand_made_pdf(
        {
            1: b"<< /Type /Catalog /Pages 2 0 R >>",
            2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Rotate %d "
            b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>" % rotate,
            4: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            5: b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        }
    )
