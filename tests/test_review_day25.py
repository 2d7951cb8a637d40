"""Bugs found reviewing day 25's changes (multipart Latin-1 names, the admin's
release as a rescue, the XLSX drawing reader)."""

from __future__ import annotations

import io
import threading
import zipfile
from pathlib import Path

import openpyxl
import pytest
from django.contrib.admin.models import DELETION, LogEntry
from django.db import OperationalError, connection, transaction

from documents.extractors import extract
from documents.models import Document
from documents.services import document_delete, document_reprocess
from tests.documents.test_extract_odf_epub import odf_package
from tests.documents.test_producers13 import placed, shaped

BOUNDARY = "review25"


def upload_body(raw_name: bytes, padding: int) -> bytes:
    """A file part whose header block is under Django's 1,024 bytes as sent."""
    head = (
        f"--{BOUNDARY}\r\n".encode()
        + b'Content-Disposition: form-data; name="file"; filename="'
        + raw_name
        + b'"\r\nContent-Type: text/plain\r\nX-Padding: '
        + b"p" * padding
        + b"\r\n\r\n"
    )
    return head + b"A CV, in plain text.\r\n" + f"--{BOUNDARY}--\r\n".encode()


@pytest.mark.django_db
def test_a_latin1_name_in_a_header_near_the_limit_is_read(user_client):
    """Read as Latin-1, each of the name's 150 accented bytes became two: a part
    header of 1,000 bytes, within Django's 1,024, grew past it, and the upload
    was refused as "Request max total header size exceeded"."""
    name = b"\xe9" * 150 + b".txt"
    body = upload_body(name, padding=0)
    header_bytes = body.index(b"\r\n\r\n") - len(f"--{BOUNDARY}\r\n")
    body = upload_body(name, padding=1000 - header_bytes)
    assert body.index(b"\r\n\r\n") - len(f"--{BOUNDARY}\r\n") == 1000
    response = user_client.generic(
        "POST",
        "/documents/upload/",
        body,
        content_type=f"multipart/form-data; boundary={BOUNDARY}",
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    [document] = Document.objects.all()
    assert document.original_filename.startswith("é" * 10)


# --- XLSX: one drawing related many times --------------------------------------------

DRAWING = (
    b"<wsDr xmlns='http://schemas.openxmlformats.org/drawingml/2006/"
    b"spreadsheetDrawing'><twoCellAnchor><from><col>3</col><colOff>0</colOff>"
    b"<row>1</row><rowOff>0</rowOff></from><sp><txBody xmlns:a='http://schemas."
    b"openxmlformats.org/drawingml/2006/main'><a:p><a:r><a:t>Shared box</a:t></a:r>"
    b"</a:p></txBody></sp></twoCellAnchor></wsDr>"
)
DRAWING_REL = (
    "<Relationship Id='rId{}' Type='http://schemas.openxmlformats.org/"
    "officeDocument/2006/relationships/drawing' Target='../drawings/drawing1.xml'/>"
)


def test_a_drawing_related_many_times_is_read_once(tmp_path: Path) -> None:
    """Each sheet's relationships were followed as found: a hostile workbook
    relating one large drawing thousands of times (from every sheet, many times
    from each) had it parsed as many times, its text repeated with it."""
    book = openpyxl.Workbook()
    for number in range(1, 4):
        book.create_sheet(f"S{number}").append([number])
    out = io.BytesIO()
    book.save(out)
    rels = (
        "<Relationships xmlns='http://schemas.openxmlformats.org/package/2006/"
        "relationships'>"
        + "".join(DRAWING_REL.format(number) for number in range(5))
        + "</Relationships>"
    )
    with zipfile.ZipFile(out, "a") as package:
        package.writestr("xl/drawings/drawing1.xml", DRAWING)
        for number in range(1, 5):
            package.writestr(f"xl/worksheets/_rels/sheet{number}.xml.rels", rels)
    path = tmp_path / "shared.xlsx"
    path.write_bytes(out.getvalue())
    assert extract(path).text.count("Shared box") == 1


# --- An operator's reprocess and delete at once --------------------------------------


@pytest.mark.django_db(transaction=True)
def test_an_operators_reprocess_and_admin_delete_at_once_do_not_deadlock(
    staff_user, user, make_document
):
    """A reprocess locked the asker's row with the owner's, in pk order. The
    admin's delete logs (its LogEntry's foreign key, checked at commit, takes a
    key-share lock on the operator's row) and takes the owner's row: an operator's
    script reprocessing a person's document (the operator's row locked, then
    waiting for the owner's) while the operator deleted it in the admin was a
    deadlock on PostgreSQL, one of the two answered with a 500. What a reprocess
    of another's document adds is the owner's job: only the owner's turn is needed."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite's writers take turns from BEGIN: no row locks")
    assert staff_user.pk < user.pk
    document = make_document()
    outcome: dict[str, object] = {}

    def reprocess() -> None:
        try:
            outcome["job"] = document_reprocess(
                document=Document.objects.get(pk=document.pk), asked_by=staff_user
            )
        except Document.DoesNotExist:
            outcome["job"] = "deleted first: a 404"
        except Exception as error:  # noqa: BLE001 - the test reports it
            outcome["error"] = error
        finally:
            connection.close()

    script = threading.Thread(target=reprocess)
    try:
        # What ModelAdmin.delete_view does, in its transaction: log, then delete.
        with transaction.atomic():
            LogEntry.objects.log_actions(
                staff_user.pk, [document], DELETION, single_object=True
            )
            document_delete(document=document)
            script.start()
            while script.is_alive() and not waiting_for_a_lock():
                script.join(0.05)
    except OperationalError as error:
        outcome["delete"] = error
    script.join(60)
    assert "delete" not in outcome and "error" not in outcome, outcome
    assert not Document.objects.filter(pk=document.pk).exists()


def waiting_for_a_lock() -> bool:
    # pg_locks, not pg_stat_activity: that one is read once per transaction.
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
        return cursor.fetchone()[0] > 0


# --- ODP: a hostile shape transform ------------------------------------------------


def test_a_hostile_impress_transform_is_read_at_once(tmp_path: Path) -> None:
    """A turned shape's place was searched in its draw:transform with a pattern
    that tried every length at every "translate(": a transform of 1 MB of them
    took the extraction most of an hour (quadratic: 80 KB took 18 s), a worker
    held until the hard timeout. The shape's text is read."""
    hostile = "translate(" * 100_000
    slide = (
        '<draw:page draw:name="page1">'
        + shaped("custom-shape", "Hostile", f'draw:transform="{hostile}"')
        + placed("custom-shape", "Placed", "1cm", "1cm")
        + "</draw:page>"
    )
    path = tmp_path / "deck.odp"
    path.write_bytes(odf_package("presentation", slide))
    assert {"Placed", "Hostile"} <= set(extract(path).text.splitlines())


@pytest.mark.parametrize("code", ["00000-0000", "[<=9999999]###-####", "General"])
def test_a_cell_that_is_not_a_number_reads_as_excels_error(code):
    """A hand-written <v>NaN</v> came out through the new formats as "00000-0NaN"."""
    from documents.extractors.number_formats import number_format
    from documents.extractors.xlsx import _cell

    assert _cell(float("nan"), number_format(code)) == "#NUM!"
    assert _cell(float("inf"), number_format(code)) == "#NUM!"
