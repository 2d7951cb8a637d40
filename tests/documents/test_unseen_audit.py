"""Documents from producers the tests had not used (LibreOffice's exports, mail
programs' HTML), run through the extraction as a worker runs it: each test is a
defect they showed, its fixture made here at test time."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from documents.extractors import extract
from jobqueue.models import QueueItem, Status
from tests.conftest import wait_for
from tests.files import eml_bytes, write

# LibreOffice's "Save as HTML" (and Outlook's, Thunderbird's) wraps a paragraph's
# source at 80 columns; the footnote's anchor is a link around <sup>.
WRAPPED_HTML = b"""<!DOCTYPE html>
<html><head><meta http-equiv="content-type" content="text/html; charset=utf-8"/>
<title></title></head><body lang="en-US" dir="ltr">
<div title="header"><p style="line-height: 100%; margin-bottom: 0in">Harbour
\trunning head</p></div>
<p style="line-height: 100%; margin-bottom: 0in">Body paragraph one
mentions the lighthouse<a class="sdfootnoteanc" href="#sdfootnote1sym"><sup>1</sup></a>
and the pier.</p>
<table><tr><td>Anchors
</td><td>1,234.50
</td></tr></table>
<pre>kept
  as written</pre>
</body></html>
"""


def test_html_source_line_breaks_are_spaces_not_line_ends(tmp_path: Path) -> None:
    # Each source line was a line of its own: "Body paragraph one" / "mentions the
    # lighthouse1" / "and the pier.", a row's cells on three lines.
    result = extract(write(tmp_path, "export.html", WRAPPED_HTML))
    assert result.text.splitlines() == [
        "Harbour running head",
        "Body paragraph one mentions the lighthouse1 and the pier.",
        "Anchors 1,234.50",
        "kept",
        "  as written",
    ]


def test_a_mails_wrapped_html_body_reads_in_paragraphs(tmp_path: Path) -> None:
    html = (
        "<html><body><p>Dear team,</p><p>the meeting on the\n"
        "harbour budget moves to\nFriday.</p></body></html>\n"
    )
    data = eml_bytes(text=None, html=html, attachments=())
    result = extract(write(tmp_path, "budget.eml", data))
    assert "the meeting on the harbour budget moves to Friday." in result.text.split(
        "\n"
    )


@pytest.mark.django_db(transaction=True)
def test_a_worker_stores_wrapped_html_as_paragraphs(run_worker, make_document):
    document = make_document(WRAPPED_HTML, name="export.html", mime_type="text/html")
    worker = run_worker()
    job = QueueItem.objects.get(pk=worker.enqueue(document.pk))
    wait_for(lambda: QueueItem.objects.get(pk=job.pk).status == Status.COMPLETED, 30)
    document.refresh_from_db()
    assert "Body paragraph one mentions the lighthouse1 and the pier." in (
        document.text.splitlines()
    )


# --- LibreOffice's own exports, where it is installed ----------------------------------

FLAT_ODT = """<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
 xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"
 xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
 xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"
 xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"
 xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"
 office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.text">
<office:master-styles><style:master-page style:name="Standard">
<style:header><text:p>Harbour running head</text:p></style:header>
<style:footer><text:p>Harbour page footer</text:p></style:footer>
</style:master-page></office:master-styles>
<office:body><office:text>
<text:p>Body paragraph one mentions the lighthouse<text:note text:note-class="footnote">
<text:note-citation>1</text:note-citation><text:note-body><text:p>Built in
1874</text:p></text:note-body></text:note> and the pier.</text:p>
<text:p><draw:frame draw:name="box" text:anchor-type="paragraph" svg:width="6cm"
 svg:height="2cm"><draw:text-box><text:p>Text in a frame</text:p></draw:text-box>
</draw:frame>After the frame.</text:p>
<table:table table:name="Outer"><table:table-column/><table:table-row>
<table:table-cell><table:table table:name="Inner"><table:table-column/>
<table:table-row><table:table-cell><text:p>Nested cell</text:p></table:table-cell>
</table:table-row></table:table></table:table-cell></table:table-row></table:table>
</office:text></office:body></office:document>
"""


@pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice is missing")
@pytest.mark.parametrize("fmt", ["html", "docx", "odt", "rtf"])
def test_libreoffice_exports_keep_every_part_of_the_page(
    tmp_path: Path, fmt: str
) -> None:
    source = write(tmp_path, "survey.fodt", FLAT_ODT.encode())
    subprocess.run(
        ["soffice", "--headless", "--convert-to", fmt, "--outdir", str(tmp_path),
         str(source)],
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        timeout=120,
        check=True,
    )  # fmt: skip
    lines = extract(tmp_path / f"survey.{fmt}").text.splitlines()
    for line in ("Harbour running head", "Harbour page footer", "Text in a frame"):
        assert line in lines
    assert any(
        line.startswith("Body paragraph one mentions the lighthouse")
        and line.endswith("and the pier.")
        for line in lines
    )
    assert any("Nested cell" in line for line in lines)
    assert any("Built in 1874" in line for line in lines)
