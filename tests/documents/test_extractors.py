"""Extractors: type detection, the three formats, bad input, and the real corpus."""

from __future__ import annotations

import io
import pickle
import random
import sys
import zipfile
from pathlib import Path

import docx
import pytest
from fpdf import FPDF
from PIL import Image

from documents.extractors import (
    BLANK_NOTE,
    CorruptFileError,
    EncryptedFileError,
    ExtractionError,
    ExtractionResult,
    ExtractorMissingError,
    UnsupportedFileError,
    archive,
    classify,
    detect_mime_type,
    extract,
    formats,
)
from documents.extractors import text as text_extractor
from documents.extractors.child import extract_in_child
from jobqueue.child import JobFailed
from tests.corpus import contains_snippet, manifest_params, require_corpus
from tests.files import hand_made_pdf, with_doctype, with_member, xlsx_bytes

ENGINES = ["auto", "pdfium", "pdfplumber"]
PDF, DOCX, TEXT = (f.mime_type for f in (formats.PDF, formats.DOCX, formats.TEXT))

# --- builders for self-made files -------------------------------------------------


def write_pdf(path: Path, pages: list[str], *, encrypt: dict | None = None) -> Path:
    """A PDF with one page per string ("" makes a blank page)."""
    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for text in pages:
        pdf.add_page()
        if text:
            pdf.multi_cell(0, 8, text)
    if encrypt:
        pdf.set_encryption(**encrypt)
    pdf.output(str(path))
    return path


def write_image_pdf(path: Path, tmp_path: Path) -> Path:
    image = tmp_path / "scan.png"
    Image.new("RGB", (200, 100), "white").save(image)
    pdf = FPDF()
    pdf.add_page()
    pdf.image(str(image), x=10, y=10, w=100)
    pdf.output(str(path))
    return path


def write_docx(path: Path) -> Path:
    """Paragraphs, a table with a nested table, and three kinds of header/footer."""
    document = docx.Document()
    document.add_paragraph("Opening paragraph.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "A1"
    table.cell(0, 1).text = "B1"
    table.cell(1, 0).text = "A2"
    inner = table.cell(1, 1).add_table(rows=1, cols=2)
    inner.cell(0, 0).text = "nested left"
    inner.cell(0, 1).text = "nested right"
    document.add_paragraph("Closing paragraph.")
    section = document.sections[0]
    section.header.paragraphs[0].text = "Default header"
    section.footer.paragraphs[0].text = "Default footer"
    section.different_first_page_header_footer = True
    section.first_page_header.paragraphs[0].text = "First-page header"
    document.settings.odd_and_even_pages_header_footer = True
    section.even_page_footer.paragraphs[0].text = "Even-page footer"
    document.save(str(path))
    return path


def write_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def truncated(source: Path, target: Path) -> Path:
    data = source.read_bytes()
    target.write_bytes(data[: len(data) // 2])
    return target


LATIN1_TEXT = (
    "Nas páginas que em seguida se lêem acha-se tão bem determinado o caráter "
    "da nação, que não é possível à crítica duvidar da sua exactidão. "
    "Ação, coração, informação e educação são palavras comuns em português."
)
CP1252_TEXT = (
    "Die Deutsche Schule gehört zum Netzwerk der mehr als 140 Deutschen "
    "Auslandsschulen. Das Schulgeld beträgt 1.200 € im Jahr – „günstig“, "
    "sagen die Eltern, und die Schüler lernen früh Französisch."
)


@pytest.fixture
def pdf_file(tmp_path: Path) -> Path:
    return write_pdf(tmp_path / "one.pdf", ["Hello from a one page PDF."])


@pytest.fixture
def docx_file(tmp_path: Path) -> Path:
    return write_docx(tmp_path / "doc.docx")


# --- base: result and errors --------------------------------------------------------


def test_result_rejects_confidence_outside_zero_to_one() -> None:
    with pytest.raises(ValueError, match="confidence"):
        ExtractionResult("x", 1, 1.5, "text")
    result = ExtractionResult("abc", None, 0.5, "text")
    assert result.chars == 3
    assert not result.is_empty


@pytest.mark.parametrize(
    ("exc", "error_type"),
    [
        (CorruptFileError("bad xref"), "corruption"),
        (EncryptedFileError(), "corruption"),
        (UnsupportedFileError(), "unsupported"),
        (ExtractorMissingError(), "extractor_missing"),
        (ModuleNotFoundError("No module named 'pypdfium2'"), "extractor_missing"),
        (ImportError("cannot import name"), "extractor_missing"),
        (TimeoutError(), "timeout"),
        (MemoryError(), "unknown"),
        (RuntimeError("boom"), "unknown"),
    ],
)
def test_classify_maps_exceptions_to_error_types(
    exc: BaseException, error_type: str
) -> None:
    assert classify(exc) == error_type


@pytest.mark.parametrize(
    "value",
    [
        CorruptFileError("the end is missing"),
        EncryptedFileError(),
        UnsupportedFileError("Not a PDF."),
        ExtractionResult("text", 2, 0.75, "pdfium", "a note"),
    ],
    ids=["corrupt", "encrypted", "unsupported", "result"],
)
def test_results_and_errors_survive_pickling(value: object) -> None:
    """They cross the process boundary between the extraction child and the worker."""
    copy = pickle.loads(pickle.dumps(value))  # noqa: S301 - our own bytes
    assert type(copy) is type(value)
    assert str(copy) == str(value)


def test_error_messages_are_human() -> None:
    assert (
        str(CorruptFileError("the end is missing"))
        == "The file is damaged: the end is missing"
    )
    assert "password" in str(EncryptedFileError())
    assert isinstance(EncryptedFileError(), CorruptFileError)
    assert "not in a format that can be read" in str(UnsupportedFileError())


# --- detection ------------------------------------------------------------------------


def test_detects_each_type_from_bytes_not_name(
    tmp_path: Path, pdf_file: Path, docx_file: Path
) -> None:
    pdf_as_docx = tmp_path / "report.docx"
    pdf_as_docx.write_bytes(pdf_file.read_bytes())
    docx_as_pdf = tmp_path / "report.pdf"
    docx_as_pdf.write_bytes(docx_file.read_bytes())
    text_as_pdf = tmp_path / "notes.pdf"
    text_as_pdf.write_text("just some notes\n", encoding="utf-8")
    assert detect_mime_type(pdf_file) == PDF
    assert detect_mime_type(docx_file) == DOCX
    assert detect_mime_type(pdf_as_docx) == PDF
    assert detect_mime_type(docx_as_pdf) == DOCX
    assert detect_mime_type(text_as_pdf) == TEXT


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", None),
        (b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(64), "image/png"),
        (b"8BPS\x00\x01" + bytes(64), None),
        (random.Random(0).randbytes(4096), None),
        (b"plain ascii text\nsecond line\n", TEXT),
        ("café crème brûlée\n".encode(), TEXT),
        (LATIN1_TEXT.encode("latin-1"), TEXT),
        (CP1252_TEXT.encode("cp1252"), TEXT),
        ("UTF-16 text with a BOM".encode("utf-16"), TEXT),
        (b"text with a \x00 NUL byte in it", None),
        (b"junk before the header\n%PDF-1.4\n1 0 obj\n<<>>\nendobj\n", PDF),
        (b"3 0 obj <</Type/Page>> endobj\ntrailer <<>>\n", PDF),  # header lost
    ],
    ids=[
        "empty",
        "png",
        "psd",
        "random",
        "ascii",
        "utf8",
        "latin1",
        "cp1252",
        "utf16",
        "nul",
        "pdf-late-header",
        "pdf-headerless",
    ],
)
def test_detect_mime_type_from_content(
    tmp_path: Path, data: bytes, expected: str | None
) -> None:
    path = tmp_path / "upload.bin"
    path.write_bytes(data)
    assert detect_mime_type(path) == expected


def test_detect_zips(tmp_path: Path, docx_file: Path) -> None:
    other = write_zip(tmp_path / "photos.docx", {"a.txt": b"hello"})
    assert detect_mime_type(other) is None
    # A cut-short DOCX has no central directory; it is still a (damaged) Word file.
    assert detect_mime_type(truncated(docx_file, tmp_path / "half.docx")) == DOCX


def test_detect_accepts_a_file_object_and_restores_its_position(pdf_file: Path) -> None:
    fh = io.BytesIO(pdf_file.read_bytes())
    fh.seek(5)
    assert detect_mime_type(fh) == PDF
    assert fh.tell() == 5


# --- registry -------------------------------------------------------------------------


def test_registry_rejects_unknown_types(tmp_path: Path) -> None:
    blob = tmp_path / "blob.pdf"
    blob.write_bytes(b"\x7fELF" + random.Random(1).randbytes(2048))
    with pytest.raises(UnsupportedFileError, match="contents are not PDF") as info:
        extract(blob)
    assert info.value.error_type == "unsupported"
    with pytest.raises(UnsupportedFileError):
        extract(blob, mime_type="application/x-unknown")


def test_unreadable_office_container_gets_a_specific_message(tmp_path: Path) -> None:
    ole = tmp_path / "old.doc"
    ole.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512))
    with pytest.raises(UnsupportedFileError, match="old Office file"):
        extract(ole)


def test_empty_file_is_reported_as_damaged(tmp_path: Path) -> None:
    for name in ("empty.pdf", "empty.docx", "empty.txt"):
        path = tmp_path / name
        path.write_bytes(b"")
        with pytest.raises(CorruptFileError, match="empty"):
            extract(path)


def test_missing_library_is_extractor_missing(
    pdf_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `import pypdfium2` now fails, and the PDF module must be imported afresh.
    monkeypatch.setitem(sys.modules, "pypdfium2", None)
    monkeypatch.delitem(sys.modules, "documents.extractors.pdf", raising=False)
    with pytest.raises(ExtractorMissingError) as info:
        extract(pdf_file, pdf_engine="pdfium")
    assert classify(info.value) == "extractor_missing"


def test_given_mime_type_skips_detection(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text("a,b\n1,2\n", encoding="utf-8")
    assert extract(path, mime_type="text/csv").text == "a,b\n1,2\n"


def test_messages_never_show_where_the_server_keeps_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = tmp_path / "media" / "documents" / "189c.xlsx"
    stored.parent.mkdir(parents=True)
    # openpyxl says "could not read worksheets from <path>" over several lines.
    stored.write_bytes(
        with_member(xlsx_bytes([["a", 1]]), "xl/worksheets/sheet1.xml", with_doctype)
    )
    with pytest.raises(CorruptFileError) as info:
        extract(stored)
    assert str(tmp_path) not in str(info.value) and "\n" not in str(info.value)
    assert len(str(info.value)) < 200
    # Whatever a reader lets through, and whatever fails unexpectedly in the child.
    stored.write_bytes(b"plain words\n")

    def leaky(path, options):
        raise CorruptFileError(f"cannot open {path} (see /var/log/x/y.log)")

    monkeypatch.setattr(text_extractor, "extract_text", leaky)
    with pytest.raises(CorruptFileError) as info:
        extract(stored)
    assert str(info.value) == ("The file is damaged: cannot open the file (see …)")

    def crashing(path, options):
        raise RuntimeError(f"[Errno 5] Input/output error: {path!r}")

    monkeypatch.setattr(text_extractor, "extract_text", crashing)
    with pytest.raises(JobFailed) as failed:
        extract_in_child("documents.extractors.registry.extract", str(stored), TEXT, {})
    assert failed.value.error_type == "unknown"
    assert str(failed.value) == "RuntimeError: [Errno 5] Input/output error: 'the file'"


# --- PDF ------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_pdf_engines_extract_text(tmp_path: Path, engine: str) -> None:
    path = write_pdf(
        tmp_path / "three.pdf", ["First page text.", "", "Last page says goodbye."]
    )
    result = extract(path, pdf_engine=engine)
    assert result.extractor == ("pdfium" if engine == "auto" else engine)
    assert result.page_count == 3
    assert "First page text." in result.text
    assert "Last page says goodbye." in result.text
    assert result.confidence == 1.0  # a blank page is not a missing text layer
    assert result.note == ""


@pytest.mark.parametrize("engine", ENGINES)
def test_image_only_pdf_has_no_text_and_says_so(tmp_path: Path, engine: str) -> None:
    path = write_image_pdf(tmp_path / "scan.pdf", tmp_path)
    result = extract(path, pdf_engine=engine)  # a picture without words
    assert (result.text, result.confidence) == ("", 0.0)
    assert result.note == "No text: OCR found none on these scanned pages."
    result = extract(path, pdf_engine=engine, ocr_mode="never")
    assert (result.text, result.confidence) == ("", 0.0)
    assert result.note == "OCR is turned off (OCR_MODE=never)."


@pytest.mark.parametrize("engine", ENGINES)
def test_blank_pdf_is_not_called_a_scan(tmp_path: Path, engine: str) -> None:
    result = extract(write_pdf(tmp_path / "blank.pdf", ["", ""]), pdf_engine=engine)
    assert (result.text, result.confidence, result.page_count) == ("", 0.0, 2)
    assert result.note == BLANK_NOTE


def test_partly_scanned_pdf_lowers_confidence(tmp_path: Path) -> None:
    image = tmp_path / "scan.png"
    Image.new("RGB", (50, 50), "white").save(image)
    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    pdf.add_page()
    pdf.cell(0, 10, "A typed page.")
    pdf.add_page()
    pdf.image(str(image), x=10, y=10, w=50)
    pdf.output(str(tmp_path / "mixed.pdf"))
    result = extract(tmp_path / "mixed.pdf")
    assert "A typed page." in result.text
    assert result.confidence == 0.5
    assert "1 of 2 pages" in result.note


@pytest.mark.parametrize("engine", ENGINES)
def test_pdf_with_user_password_is_refused(tmp_path: Path, engine: str) -> None:
    path = write_pdf(
        tmp_path / "locked.pdf",
        ["Secret text."],
        encrypt={"owner_password": "owner", "user_password": "user"},
    )
    with pytest.raises(EncryptedFileError) as info:
        extract(path, pdf_engine=engine)
    assert info.value.error_type == "corruption"
    assert "password" in str(info.value)


@pytest.mark.parametrize("engine", ENGINES)
def test_pdf_with_owner_password_only_opens(tmp_path: Path, engine: str) -> None:
    path = write_pdf(
        tmp_path / "perm.pdf", ["Readable text."], encrypt={"owner_password": "owner"}
    )
    assert "Readable text." in extract(path, pdf_engine=engine).text


@pytest.fixture(scope="module")
def half_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An upload cut off halfway (its page tree and xref are in the lost half)."""
    folder = tmp_path_factory.mktemp("truncated")
    text = " ".join(f"Sentence number {i} of a long document." for i in range(60))
    return truncated(write_pdf(folder / "full.pdf", [text] * 4), folder / "half.pdf")


@pytest.mark.parametrize("engine", ENGINES)
def test_truncated_pdf_is_damaged(half_pdf: Path, engine: str) -> None:
    with pytest.raises(CorruptFileError, match="damaged"):
        extract(half_pdf, pdf_engine=engine)


def test_pdf_header_without_a_body_is_damaged(tmp_path: Path) -> None:
    path = tmp_path / "stub.pdf"
    path.write_bytes(b"%PDF-1.4\n%%EOF\n")
    with pytest.raises(CorruptFileError, match="damaged"):
        extract(path)


def test_auto_adds_annotation_text_that_pdfium_alone_misses(tmp_path: Path) -> None:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    pdf.add_page()
    pdf.cell(0, 10, "Page body.")
    pdf.text_annotation(x=20, y=40, text="Reviewer comment: check the totals")
    pdf.output(str(tmp_path / "annotated.pdf"))
    auto = extract(tmp_path / "annotated.pdf")
    assert "Page body." in auto.text
    assert "Comment: Reviewer comment: check the totals" in auto.text
    assert (
        "Reviewer comment"
        not in extract(tmp_path / "annotated.pdf", pdf_engine="pdfium").text
    )


def page_with_annotations(annotations: list[bytes], catalog: bytes = b"") -> bytes:
    """One page saying "Body." with these annotation dictionaries (objects 10...)."""
    body = b"BT /F1 12 Tf 72 700 Td (Body.) Tj ET"
    numbers = range(10, 10 + len(annotations))
    refs = b" ".join(b"%d 0 R" % n for n in numbers)
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R %s >>" % catalog.replace(b"REFS", refs),
        2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources "
        b"<< /Font << /F1 5 0 R >> >> /Contents 4 0 R /Annots [%s] >>" % refs,
        4: b"<< /Length %d >>\nstream\n%s\nendstream" % (len(body), body),
        5: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    }
    for number, annotation in zip(numbers, annotations, strict=True):
        objects[number] = (
            b"<< /Type /Annot /P 3 0 R /Rect [72 600 300 620] %s >>" % annotation
        )
    return hand_made_pdf(objects)


def test_auto_reads_the_comments_of_highlights_shapes_and_stamps(
    tmp_path: Path,
) -> None:
    # Only sticky notes and text boxes were read; a comment on a highlight, the
    # commonest kind in a review, was lost. A popup repeats its parent's comment.
    quads = b"/QuadPoints [72 715 400 715 72 695 400 695]"
    comments = {
        b"Highlight": b"Check with finance.",
        b"Underline": b"Wrong date.",
        b"Square": b"Signature missing here.",
        b"Stamp": b"Approved by the controller.",
    }
    annotations = [
        b"/Subtype /%s %s /Contents (%s)" % (kind, quads, text)
        for kind, text in comments.items()
    ]
    annotations.append(b"/Subtype /Popup /Contents (Check with finance.)")
    path = tmp_path / "review.pdf"
    path.write_bytes(page_with_annotations(annotations))
    assert extract(path).text.split("\n") == [
        "Body.",
        *(f"Comment: {text.decode()}" for text in comments.values()),
    ]


@pytest.mark.parametrize("hybrid", [False, True])
def test_auto_reads_each_form_field_once_also_in_a_hybrid_xfa_form(
    tmp_path: Path, hybrid: bool
) -> None:
    # Forms saved by Adobe LiveCycle carry an XFA template beside their fields:
    # PDFium calls them XFA forms, and no value was read. Values were also told
    # apart by their text, so a second field saying "Porto" was lost, and a list
    # box's choice was never read.
    def field(name: bytes, value: bytes, kind: bytes = b"/Tx", more: bytes = b""):
        return b"/Subtype /Widget /FT %s /T (%s) /V (%s) /F 4 %s" % (
            kind,
            name,
            value,
            more,
        )

    fields = [
        field(b"home", b"Porto"),
        field(b"work", b"Porto"),
        field(b"zone", b"Zone B", b"/Ch", b"/Opt [(Zone A) (Zone B)]"),
    ]
    xfa = b"/XFA [(template) 4 0 R]" if hybrid else b""
    catalog = b"/AcroForm << /Fields [REFS] %s >>" % xfa
    path = tmp_path / "form.pdf"
    path.write_bytes(page_with_annotations(fields, catalog))
    assert extract(path).text.split("\n") == ["Body.", "Porto", "Porto", "Zone B"]


def test_auto_reads_a_label_grid_drawn_column_by_column_row_by_row(
    tmp_path: Path,
) -> None:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    pdf.add_page()
    grid = [["Alpha", "Bravo", "Charlie"], ["Delta", "Echo", "Foxtrot"]]
    for col in range(3):  # the content stream goes down each column
        for row in range(2):
            pdf.text(x=20 + 50 * col, y=40 + 60 * row, text=grid[row][col])
    pdf.output(str(tmp_path / "grid.pdf"))
    auto = extract(tmp_path / "grid.pdf")
    assert auto.extractor == "pdfium+pdfplumber"
    assert "Alpha Bravo Charlie" in auto.text
    assert "Delta Echo Foxtrot" in auto.text
    # PDFium alone reads it row by row too now (its lines, in place of the drawing).
    pdfium = extract(tmp_path / "grid.pdf", pdf_engine="pdfium").text
    assert pdfium.splitlines() == ["Alpha Bravo Charlie", "Delta Echo Foxtrot"]


def test_unknown_pdf_engine_is_a_programming_error(pdf_file: Path) -> None:
    with pytest.raises(ValueError, match="engine"):
        extract(pdf_file, pdf_engine="tesseract")


# --- DOCX -----------------------------------------------------------------------------


def test_docx_body_tables_then_headers_and_footers_in_order(docx_file: Path) -> None:
    result = extract(docx_file)
    lines = [line for line in result.text.splitlines() if line]
    assert result.extractor == "docx"
    # A row a line; a nested table of one row is a line of its cell.
    assert lines[:3] == [
        "Opening paragraph.",
        "A1\tB1",
        "A2\tnested left nested right",
    ]
    assert lines[3] == "Closing paragraph."
    for part in (
        "Default header",
        "Default footer",
        "First-page header",
        "Even-page footer",
    ):
        assert part in lines[4:]
    assert result.confidence == 1.0


def test_docx_tracked_changes_keep_insertions_and_drop_deletions(
    tmp_path: Path,
) -> None:
    from docx.oxml import parse_xml
    from docx.oxml.ns import nsdecls

    document = docx.Document()
    paragraph = document.add_paragraph("Kept ")
    paragraph._p.append(
        parse_xml(
            f'<w:ins {nsdecls("w")} w:id="1" w:author="a">'
            "<w:r><w:t>inserted</w:t></w:r></w:ins>"
        )
    )
    paragraph._p.append(
        parse_xml(
            f'<w:del {nsdecls("w")} w:id="2" w:author="a">'
            "<w:r><w:delText>deleted</w:delText></w:r></w:del>"
        )
    )
    document.save(str(tmp_path / "tracked.docx"))
    assert extract(tmp_path / "tracked.docx").text == "Kept inserted"


def test_docx_named_pdf_is_read_as_docx(tmp_path: Path, docx_file: Path) -> None:
    renamed = tmp_path / "actually-word.pdf"
    renamed.write_bytes(docx_file.read_bytes())
    assert "nested right" in extract(renamed).text


WORD_MAIN = b"application/vnd.openxmlformats-officedocument.wordprocessingml"


@pytest.mark.parametrize(
    ("name", "main_type"),
    [
        ("macros.docm", b"application/vnd.ms-word.document.macroEnabled.main+xml"),
        ("letter.dotx", WORD_MAIN + b".template.main+xml"),
        (
            "letter.dotm",
            b"application/vnd.ms-word.template.macroEnabledTemplate.main+xml",
        ),
    ],
)
def test_macro_enabled_documents_and_templates_are_read(
    tmp_path: Path, docx_file: Path, name: str, main_type: bytes
) -> None:
    path = tmp_path / name
    path.write_bytes(
        with_member(
            docx_file.read_bytes(),
            "[Content_Types].xml",
            lambda types: types.replace(WORD_MAIN + b".document.main+xml", main_type),
        )
    )
    assert "nested right" in extract(path).text


def test_a_word_package_of_another_main_part_is_unsupported(
    tmp_path: Path, docx_file: Path
) -> None:
    path = tmp_path / "odd.docx"
    path.write_bytes(
        with_member(
            docx_file.read_bytes(),
            "[Content_Types].xml",
            lambda types: types.replace(
                WORD_MAIN + b".document.main+xml", b"application/x-unknown+xml"
            ),
        )
    )
    with pytest.raises(UnsupportedFileError, match="save it as .docx"):
        extract(path, mime_type=DOCX)


def test_damaged_docx_is_corrupt(tmp_path: Path, docx_file: Path) -> None:
    half = truncated(docx_file, tmp_path / "half.docx")
    with pytest.raises(CorruptFileError, match="cut short"):
        extract(half)
    empty = tmp_path / "zero.docx"
    empty.write_bytes(b"")
    with pytest.raises(CorruptFileError, match="empty"):
        extract(empty, mime_type=DOCX)


def test_not_a_zip_given_as_docx_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "fake.docx"
    path.write_text("I am not a zip archive", encoding="utf-8")
    with pytest.raises(CorruptFileError, match="ZIP"):
        extract(path, mime_type=DOCX)


def test_zip_without_word_document_is_unsupported(tmp_path: Path) -> None:
    path = write_zip(tmp_path / "archive.docx", {"readme.txt": b"hello"})
    with pytest.raises(UnsupportedFileError, match="ZIP archive"):
        extract(path)  # detection: not a DOCX
    with pytest.raises(UnsupportedFileError):
        extract(path, mime_type=DOCX)


def test_strict_ooxml_is_unsupported(tmp_path: Path) -> None:
    rels = b'<Relationships><Relationship Type="http://purl.oclc.org/ooxml/officeDocument/relationships/officeDocument" Target="word/document.xml"/></Relationships>'
    path = write_zip(
        tmp_path / "strict.docx",
        {"_rels/.rels": rels, "word/document.xml": b"<w:document/>"},
    )
    with pytest.raises(UnsupportedFileError, match="Strict"):
        extract(path)


def test_docx_zip_bomb_is_refused_before_parsing(
    tmp_path: Path, docx_file: Path
) -> None:
    with zipfile.ZipFile(docx_file) as source:
        members = {name: source.read(name) for name in source.namelist()}
    members["word/media/filler.bin"] = bytes(30 * 1024 * 1024)  # ~1000:1 deflated
    bomb = write_zip(tmp_path / "bomb.docx", members)
    assert bomb.stat().st_size < 1024 * 1024
    with pytest.raises(CorruptFileError, match="zip bomb") as info:
        extract(bomb)
    # Permanent like damage, but nothing in it is damaged: it is refused.
    message = str(info.value)
    assert message.startswith("This file is refused: it would unpack to 3")
    assert "damaged" not in message


def test_docx_over_the_size_limit_is_refused(
    docx_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archive, "MAX_UNCOMPRESSED_BYTES", 1000)
    with pytest.raises(CorruptFileError, match="more than the 0 MB allowed") as info:
        extract(docx_file)
    assert "damaged" not in str(info.value)


# --- plain text -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("encoding", "text"),
    [
        ("utf-8", "Grüße aus Köln – 東京 – שלום\n"),
        ("utf-8-sig", "Byte order mark first.\n"),
        ("utf-16", "UTF-16 with its BOM: ½ ¾ €\n"),
        ("utf-16-be", None),
        ("latin-1", LATIN1_TEXT),
        ("cp1252", CP1252_TEXT),
    ],
)
def test_text_decodes_each_encoding(
    tmp_path: Path, encoding: str, text: str | None
) -> None:
    if encoding == "utf-16-be":  # with an explicit BOM, as editors write it
        text = "Big-endian UTF-16 text.\n"
        data = b"\xfe\xff" + text.encode("utf-16-be")
    else:
        data = text.encode(encoding)
    path = tmp_path / "notes.dat"
    path.write_bytes(data)
    result = extract(path)
    assert result.extractor == "text"
    assert result.text == text
    assert result.page_count is None


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            "name,city\nJosé,Zürich\nFrançois,Besançon\nMüller,Köln\n".encode(
                "latin-1"
            ),
            "cp1252",
        ),
        (b"item,price\nCoffee,3.50 \x80\nTea,2.80 \x80\n", "cp1252"),
        ("La col·lecció d’art és tancada.\n".encode("cp1252"), "cp1252"),
        ("Grüße aus Köln".encode("cp1252"), "cp1252"),
        # Short text of other code pages keeps its own.
        ("Привет, как дела? Всё хорошо.".encode("cp1251"), "cp1251"),
        ("Καλημέρα κόσμε".encode("cp1253"), "cp1253"),
        ("Příliš žluťoučký kůň úpěl ďábelské ódy".encode("cp1250"), "cp1250"),
        ("こんにちは世界、元気ですか".encode("shift_jis"), "cp932"),
    ],
    ids=[
        "latin1-csv",
        "euro",
        "catalan",
        "german",
        "russian",
        "greek",
        "czech",
        "sjis",
    ],
)
def test_short_western_text_is_cp1252_and_others_keep_their_code_page(
    tmp_path: Path, data: bytes, expected: str
) -> None:
    path = tmp_path / "short.csv"
    path.write_bytes(data)
    result = extract(path)
    assert result.text == data.decode(expected)
    assert f"decoded as {expected} (a best guess)" in result.note


def test_text_newlines_are_normalised(tmp_path: Path) -> None:
    path = tmp_path / "dos.txt"
    path.write_bytes(b"one\r\ntwo\rthree\n")
    assert extract(path).text == "one\ntwo\nthree\n"


def test_text_with_invalid_bytes_after_a_bom_is_damaged(tmp_path: Path) -> None:
    path = tmp_path / "broken.txt"
    path.write_bytes(b"\xef\xbb\xbfvalid start \xff\xfe\xfd broken")
    with pytest.raises(CorruptFileError, match="utf-8"):
        extract(path, mime_type=TEXT)


def test_a_stray_byte_after_a_bom_costs_that_byte_not_the_file(
    tmp_path: Path,
) -> None:
    # One cp1252 "é" pasted into a UTF-8 CSV refused the whole file as damaged.
    rows = "".join(f"{n};Lisboa;{n * 3}\n" for n in range(200))
    data = b"\xef\xbb\xbfid;city;total\n" + rows.encode() + b"201;Caf\xe9;603\n"
    path = tmp_path / "export.csv"
    path.write_bytes(data)
    result = extract(path)
    assert result.text.endswith("201;Caf\ufffd;603\n")
    assert "199;Lisboa;597" in result.text
    assert "not valid UTF-8 were replaced by � (1)" in result.note


def test_utf8_cut_in_a_character_by_the_read_limit_is_still_utf8(
    tmp_path: Path,
) -> None:
    # Past the read window (4 bytes a character of the text limit), the window's
    # last character was cut in two, the text taken for cp1252: "Ã©Ã©".
    path = tmp_path / "journal.txt"
    path.write_bytes(b"x" + "é".encode() * 3000)
    result = extract(path, max_chars=1000)
    assert result.text == "x" + "é" * 999
    assert "best guess" not in result.note and "replaced" not in result.note


def test_a_stray_byte_in_utf8_is_said_to_be_replaced(tmp_path: Path) -> None:
    # The note said "not valid UTF-8: decoded as utf-8", and not what was done.
    path = tmp_path / "names.txt"
    path.write_bytes("Zoë, José, Łódź, Ærø, Ñandú, Øre\n".encode() * 5 + b"Caf\xe9\n")
    result = extract(path)
    assert result.text.endswith("Caf\ufffd\n")
    assert result.note == "Bytes that are not valid UTF-8 were replaced by � (1)."


def test_random_bytes_are_unsupported(tmp_path: Path) -> None:
    path = tmp_path / "noise.txt"
    path.write_bytes(random.Random(2).randbytes(10_000))
    with pytest.raises(UnsupportedFileError):
        extract(path)


# --- the real corpus --------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("row", manifest_params())
def test_corpus_file(row: dict | None) -> None:
    """Every manifest row, through detection and the default (auto) extraction."""
    require_corpus()
    expect = row["expect"]
    try:
        result = extract(row["path"])
    except ExtractionError as exc:
        message = str(exc)
        assert message[:1].isupper() and "Traceback" not in message
        if expect == "encrypted":
            assert isinstance(exc, EncryptedFileError)
            assert "password" in message
        else:
            assert expect in ("corrupt", "unsupported"), (
                f"{expect} file failed: {message}"
            )
            assert exc.error_type in ("corruption", "unsupported")
        return
    assert expect != "encrypted", "text must never come out of a password-protected PDF"
    assert 0.0 <= result.confidence <= 1.0
    if expect == "ok":
        assert contains_snippet(result.text, row["snippet"]), row["snippet"]
        assert result.confidence > 0.5
    elif expect == "no_text":  # scans and outlined text: OCR reads them
        assert result.text.strip()
        assert result.extractor.endswith("+tesseract")
    if result.extractor.startswith("pdfium") and row["pages"]:
        assert result.page_count == row["pages"]


@pytest.mark.parametrize(
    ("name", "snippet", "found_by"),
    [
        # PDFium keeps right-to-left text in reading order; pdfplumber reverses it.
        ("pdf/hebrew-issue11656.pdf", "שלום עולם מה שלום כולם", {"auto", "pdfium"}),
        # A font without a usable Unicode map: only pdfminer decodes it.
        (
            "pdf/czech-issue-791-non-unicode-cmap.pdf",
            "Peněžní prostředky na účtech",
            {"auto", "pdfplumber"},
        ),
    ],
    ids=["hebrew-rtl", "czech-cmap"],
)
def test_corpus_engine_trade_offs(name: str, snippet: str, found_by: set[str]) -> None:
    path = require_corpus() / name
    found = {
        engine
        for engine in ENGINES
        if contains_snippet(extract(path, pdf_engine=engine).text, snippet)
    }
    assert found == found_by


def test_corpus_form_field_values_come_out_in_auto_only() -> None:
    path = require_corpus() / "pdf/libreoffice-form.pdf"
    auto = extract(path).text
    assert "Alice" in auto and "Bob" in auto  # typed into the form's text fields
    assert "Alice" not in extract(path, pdf_engine="pdfium").text
