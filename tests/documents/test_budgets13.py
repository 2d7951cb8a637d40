"""Budgets of long documents: a multi-page TIFF follows a PDF's page bound (the
same EXTRACTION_MAX_PAGES note, the same progress that keeps its timeout from
firing while pages are read); a DOCX's empty paragraphs cost no searches."""

from __future__ import annotations

import io
import zipfile

import pytest

from documents.extractors import docx, extract
from documents.models import Document
from jobqueue.models import QueueItem, Status
from tests.conftest import wait_for, worker_log
from tests.files import scan_pdf_bytes, text_image, write

FAST = ["--poll-interval", "0.1", "--heartbeat-interval", "0.5"]
PAGES = [["First page of the scan."], ["Second page here."], ["Third page here."]]
W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def tiff_bytes(pages: list[list[str]]) -> bytes:
    images = [text_image(lines) for lines in pages]
    out = io.BytesIO()
    images[0].save(out, "TIFF", save_all=True, append_images=images[1:])
    return out.getvalue()


def docx_bytes(body: str) -> bytes:
    """A minimal DOCX whose body is `body` (WordprocessingML, prefix w:)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as package:
        package.writestr(
            "[Content_Types].xml",
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-'
            'types"><Default Extension="rels" ContentType="application/vnd.openxml'
            'formats-package.relationships+xml"/><Default Extension="xml" Content'
            'Type="application/xml"/><Override PartName="/word/document.xml" Conte'
            'ntType="application/vnd.openxmlformats-officedocument.wordprocessingm'
            'l.document.main+xml"/></Types>',
        )
        package.writestr(
            "_rels/.rels",
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/'
            'relationships"><Relationship Id="rId1" Type="http://schemas.openxmlfo'
            "rmats.org/officeDocument/2006/relationships/officeDocument"
            '" Target="word/document.xml"/></Relationships>',
        )
        package.writestr(
            "word/document.xml",
            f'<w:document xmlns:w="{W}"><w:body>{body}</w:body></w:document>',
        )
    return out.getvalue()


def reported_to(reported: list[tuple[int, int]]):
    return lambda done, total: reported.append((done, total))


def line(text: str) -> str:
    return f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>"


# --- Item 1: a TIFF's pages are bounded as a PDF's are ------------------------------


def test_a_tiff_and_a_scanned_pdf_stop_at_the_page_bound_with_one_note(tmp_path):
    tiff = write(tmp_path, "scan.tiff", tiff_bytes(PAGES))
    pdf = write(tmp_path, "scan.pdf", scan_pdf_bytes([text_image(p) for p in PAGES]))
    for path in (tiff, pdf):
        reported: list[tuple[int, int]] = []
        result = extract(path, max_pages=1, progress=reported_to(reported))
        assert result.page_count == 3
        assert "First" in result.text and "Second" not in result.text
        assert "Only the first 1 of 3 pages were read (EXTRACTION_MAX_PAGES)." in (
            result.note
        )
        assert reported[-1] == (1, 1)  # each page read is progress for the timeout


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_completes_a_long_tiff_at_the_page_bound_with_the_note(
    user, start_worker, queue
):
    from tests.jobqueue.test_worker_processes import store

    scan = store(user, "scan.tiff", tiff_bytes(PAGES))
    job = queue.enqueue(scan.pk)
    proc = start_worker(
        "--workers", "1", "--max-retries", "0", *FAST,
        env={"EXTRACTION_MAX_PAGES": "2", "THUMBNAILS": "0"},
    )  # fmt: skip
    wait_for(
        lambda: (
            QueueItem.objects.get(pk=job).status in (Status.COMPLETED, Status.FAILED)
        ),
        120,
        interval=0.2,
    )
    item, scan = QueueItem.objects.get(pk=job), Document.objects.get(pk=scan.pk)
    assert item.status == Status.COMPLETED, worker_log(proc)
    assert (item.attempts, scan.page_count) == (1, 3)
    assert "Second" in scan.text and "Third" not in scan.text
    assert "Only the first 2 of 3 pages were read" in scan.extraction_note


# --- Item 3: empty paragraphs ---------------------------------------------------------


def test_bare_empty_paragraphs_are_not_searched(tmp_path, monkeypatch):
    # A generated DOCX of 400,000 <w:p/> took 9 CPU s, each searched for text,
    # styles, graphics and tracked marks (bench/docx_empty_paragraphs.py).
    searched = []
    own_text = docx._own_text
    monkeypatch.setattr(
        docx, "_own_text", lambda p, *rest: searched.append(p) or own_text(p, *rest)
    )
    body = line("Start.") + "<w:p/>" * 500 + line("End.")
    result = extract(write(tmp_path, "empty.docx", docx_bytes(body)))
    assert result.text == "Start." + "\n" * 501 + "End."
    assert len(searched) == 2


def test_a_bare_paragraph_still_takes_a_paragraph_run_on_into_it(tmp_path):
    # A paragraph whose mark is deleted (tracked) runs on into the next one, bare
    # or not: its text stays on one line, with its list number.
    numbered = (
        '<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr>'
        '<w:rPr><w:del w:id="1" w:author="A"/></w:rPr></w:pPr>'
        "<w:r><w:t>Kept text</w:t></w:r></w:p>"
    )
    body = line("Start.") + numbered + "<w:p/>" + line("After.")
    result = extract(write(tmp_path, "joined.docx", docx_bytes(body)))
    assert result.text.splitlines() == ["Start.", "Kept text", "After."]


def test_outside_tables_yields_empty_blocks_in_order_and_skips_other_leaves():
    from lxml import etree

    from documents.extractors.base import outside_tables

    root = etree.fromstring(
        "<body><p/><br/><p>one</p><tbl><p>cell</p></tbl><p/><sect><p/></sect></body>"
    )
    found = [(el.tag, el.text) for el in outside_tables(root, "tbl", ("p",), ("p",))]
    assert found == [
        ("p", None), ("p", "one"), ("tbl", None), ("p", None), ("p", None)
    ]  # fmt: skip
