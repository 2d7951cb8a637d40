"""Hostile files: refused at the door with a clear reason, or taken by real workers and
ended with the right error type within the timeout and memory cap, while the worker
keeps running and good documents queued alongside come out right. Plus a bounded
hypothesis fuzz of type detection and of the extractors' error mapping.
"""

from __future__ import annotations

import io
import random
import re
import tempfile
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import docx
import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import DataError
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from documents.extractors.base import ExtractionError, ExtractionResult
from documents.extractors.detect import detect_mime_type
from documents.extractors.formats import FORMATS
from documents.extractors.registry import extract
from documents.models import Document
from documents.services import document_create
from documents.uploads import check_upload
from jobqueue import operations
from jobqueue.child import run_job
from jobqueue.models import ErrorType, ExtractionMetric, QueueItem, Status
from jobqueue.worker import process_document_queue
from tests.conftest import wait_for, worker_log
from tests.corpus import CORPUS_DIR, corpus_available, load_manifest, normalise
from tests.files import docx_bytes, pdf_bytes

ERROR_TYPES = set(ErrorType.values)
TIMEOUT = 15  # seconds: the worker's hard limit per extraction in this test
WORKER = ["--workers", "2", "--timeout", str(TIMEOUT), "--max-retries", "1"]
WORKER += ["--poll-interval", "0.2", "--heartbeat-interval", "0.5"]
MISBEHAVE = {"QUEUE_EXTRACT_FUNCTION": "tests.extractors_for_tests.extract"}

# --- Hand-made hostile files -----------------------------------------------------------


def pdf_document(objects: list[bytes]) -> bytes:
    """A well-formed PDF of the given objects (numbered from 1; 1 is the catalog)."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\n" % (len(objects) + 1)
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def pdf_stream(data: bytes, extra: bytes = b"") -> bytes:
    return b"<< /Length %d %s>>\nstream\n%s\nendstream" % (len(data), extra, data)


CATALOG = b"<< /Type /Catalog /Pages 2 0 R >>"
ONE_PAGE_TREE = b"<< /Type /Pages /Count 1 /Kids [3 0 R] >>"
PAGE = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 50] %s>>"
FONT = b"/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> "
LAST_PAGE_TEXT = "the last of ten thousand pages"


def many_pages_pdf(pages: int = 10_000) -> bytes:
    """A flat page tree of empty pages; only the last one has text."""
    kids = b" ".join(b"%d 0 R" % (n + 3) for n in range(pages))
    objects = [CATALOG, b"<< /Type /Pages /Count %d /Kids [%s] >>" % (pages, kids)]
    objects += [PAGE % b""] * (pages - 1)
    objects.append(PAGE % (FONT + b"/Contents %d 0 R " % (pages + 3)))
    text = f"BT /F1 9 Tf 5 20 Td ({LAST_PAGE_TEXT}) Tj ET".encode()
    return pdf_document([*objects, pdf_stream(text)])


def nested_arrays_pdf(depth: int = 100_000) -> bytes:
    return pdf_document(
        [
            CATALOG,
            ONE_PAGE_TREE,
            PAGE % (b"/Deep " + b"[" * depth + b"]" * depth + b" "),
        ]
    )


def deep_page_tree_pdf(depth: int = 5_000) -> bytes:
    """Pages inside pages inside pages...: recursion bait for page-tree walkers."""
    objects = [CATALOG]
    for level in range(depth):
        number = level + 2
        parent = b"/Parent %d 0 R " % (number - 1) if level else b""
        objects.append(
            b"<< /Type /Pages %s/Count 1 /Kids [%d 0 R] >>" % (parent, number + 1)
        )
    objects.append(
        b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 9 9] >>" % (depth + 1)
    )
    return pdf_document(objects)


def content_bomb_pdf(megabytes: int = 300) -> bytes:
    """A page whose content stream inflates from ~300 KB to ``megabytes`` MB."""
    packer = zlib.compressobj(9)
    chunk = b"\0" * (1 << 20)
    data = b"".join(packer.compress(chunk) for _ in range(megabytes)) + packer.flush()
    stream = pdf_stream(data, b"/Filter /FlateDecode ")
    return pdf_document([CATALOG, ONE_PAGE_TREE, PAGE % b"/Contents 4 0 R ", stream])


DOCX_XML_HEAD = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
    b"<w:body>"
)
DOCX_XML_TAIL = b"</w:body></w:document>"


def docx_with(document_xml: Iterable[bytes]) -> bytes:
    """A real .docx (made by python-docx) whose word/document.xml is replaced."""
    made = io.BytesIO()
    docx.Document().save(made)
    source = zipfile.ZipFile(made)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            if info.filename != "word/document.xml":
                archive.writestr(info, source.read(info.filename))
                continue
            part = zipfile.ZipInfo("word/document.xml")
            part.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(part, "w", force_zip64=True) as fh:
                for chunk in document_xml:
                    fh.write(chunk)
    return out.getvalue()


def docx_bomb(megabytes: int) -> bytes:
    """Honest sizes: ``megabytes`` MB of XML that deflate to almost nothing."""
    paragraph = b"<w:p><w:r><w:t>" + b" " * 1000 + b"</w:t></w:r></w:p>"
    repeat = megabytes * 1024 * 1024 // len(paragraph)
    return docx_with(
        [DOCX_XML_HEAD, *([paragraph * 1024] * (repeat // 1024)), DOCX_XML_TAIL]
    )


def docx_lying_bomb(megabytes: int = 50) -> bytes:
    """A bomb whose central directory declares word/document.xml as 1 KB."""
    data = bytearray(docx_bomb(megabytes))
    name = b"word/document.xml"
    for entry in re.finditer(rb"PK\x01\x02", bytes(data)):
        start = entry.start()
        if data[start + 46 : start + 46 + len(name)] == name:
            data[start + 24 : start + 28] = (1024).to_bytes(4, "little")
    return bytes(data)


def docx_billion_laughs(levels: int = 10) -> bytes:
    entities = b"".join(
        b'<!ENTITY a%d "%s">' % (n + 1, b"&a%d;" % n * 10) for n in range(levels)
    )
    doctype = b'<!DOCTYPE w:document [<!ENTITY a0 "lol">' + entities + b"]>"
    body = b"<w:p><w:r><w:t>&a%d;</w:t></w:r></w:p>" % levels
    head = DOCX_XML_HEAD.replace(b"?>", b"?>" + doctype, 1)
    return docx_with([head, body, DOCX_XML_TAIL])


def docx_deep_nesting(depth: int = 100_000) -> bytes:
    cell = b"<w:tbl><w:tr><w:tc>"
    end = b"</w:tc></w:tr></w:tbl>"
    body = b"<w:p><w:r><w:t>deep</w:t></w:r></w:p>"
    return docx_with([DOCX_XML_HEAD, cell * depth, body, end * depth, DOCX_XML_TAIL])


BIG_TEXT_END = "END OF THE LONG TEXT FILE"


def big_text(megabytes: int = 30) -> bytes:
    line = "Line of a long but honest plain-text upload; ÄÖÜ survive.\n".encode()
    return line * (megabytes * 1024 * 1024 // len(line)) + BIG_TEXT_END.encode()


def distinct_words(count: int = 120_000) -> list[str]:
    """Chinese-like words, all different: together too many for one tsvector."""
    return [
        "".join(chr(0x4E00 + code % 20_000) for code in (n, n // 20_000, 7 * n, 13 * n))
        for n in range(count)
    ]


# --- What each file must end as --------------------------------------------------------

CLEAN_FAILURE = {"failed:corruption", "failed:unsupported"}
REFUSED = {"refused:empty", "refused:unsupported", "refused:mismatch"}
ANY_CLEAN = {"completed"} | CLEAN_FAILURE | REFUSED


@dataclass
class Case:
    """A file to upload and the outcomes it may end with."""

    name: str
    content: bytes
    allowed: set[str]
    check: Callable[[Document], str | None] | None = None  # '' or None when fine
    good: bool = False
    outcome: str = ""
    document: Document | None = None
    refusal: str = ""


def has_text(snippet: str) -> Callable[[Document], str | None]:
    def check(document: Document) -> str | None:
        if normalise(snippet) not in normalise(document.text):
            return f"text lacks {snippet!r}"
        return None

    return check


def cut_with_a_note(document: Document) -> str | None:
    if BIG_TEXT_END in document.text or "cut at 10,000,000" not in (
        document.extraction_note
    ):
        return f"not cut at the limit: {document.extraction_note!r}"
    return None


def message_says(*words: str) -> Callable[[Document], str | None]:
    def check(document: Document) -> str | None:
        missing = [w for w in words if w not in document.error_message]
        return (
            f"message {document.error_message!r} lacks {missing}" if missing else None
        )

    return check


def corpus_cases() -> list[Case]:
    """Every file of broken/, and every corpus PDF cut at 10%, 50% and 90%."""
    if not corpus_available():
        return []
    cases = []
    for row in load_manifest():
        data = Path(row["path"]).read_bytes()
        name = Path(row["path"]).name
        if row["rel_path"].startswith("broken/"):
            if row["expect"] == "ok":
                cases.append(Case(name, data, {"completed"}, has_text(row["snippet"])))
            else:
                cases.append(Case(name, data, ANY_CLEAN))
        if row["kind"] == "pdf" and not row["rel_path"].startswith("broken/"):
            allowed = (
                {"failed:corruption"}
                if row["expect"] == "encrypted"
                else {"completed"} | CLEAN_FAILURE
            )
            for share in (10, 50, 90):
                cut = data[: len(data) * share // 100]
                cases.append(Case(f"cut{share}-{name}", cut, allowed))
    return cases


def generated_cases() -> list[Case]:
    rng = random.Random(7)
    words = distinct_words()
    cases = [
        Case(f"random-{size}.bin", rng.randbytes(size), ANY_CLEAN)
        for size in (1, 100, 4096, 65536, 1 << 20)
    ]
    cases += [
        Case("random.pdf", b"%PDF-1.7\n" + rng.randbytes(100_000), CLEAN_FAILURE),
        Case("random.docx", b"PK\x03\x04" + rng.randbytes(10_000), ANY_CLEAN),
        Case(
            "many-pages.pdf",
            many_pages_pdf(),
            {"completed"},
            # EXTRACTION_MAX_PAGES (5,000) stops it, with a note saying so.
            lambda d: (
                None
                if d.page_count == 10_000
                and LAST_PAGE_TEXT not in d.text
                and "Only the first 5,000 of 10,000 pages" in d.extraction_note
                else f"{d.page_count} pages, note {d.extraction_note!r}"
            ),
        ),
        Case("nested-arrays.pdf", nested_arrays_pdf(), {"completed"} | CLEAN_FAILURE),
        Case("deep-page-tree.pdf", deep_page_tree_pdf(), {"completed"} | CLEAN_FAILURE),
        Case("content-bomb.pdf", content_bomb_pdf(), {"completed"} | CLEAN_FAILURE),
        Case(
            "bomb-250mb.docx",
            docx_bomb(250),
            {"failed:corruption"},
            message_says("zip bomb"),
        ),
        Case(
            "bomb-ratio.docx",
            docx_bomb(40),
            {"failed:corruption"},
            message_says("zip bomb"),
        ),
        Case("bomb-lying.docx", docx_lying_bomb(), {"failed:corruption"}),
        Case("laughs.docx", docx_billion_laughs(), {"completed", "failed:corruption"}),
        Case("deep.docx", docx_deep_nesting(), {"completed", "failed:corruption"}),
        # 30 MB of text: cut at EXTRACTED_TEXT_MAX_CHARS (10 million), with a note.
        Case("big.txt", big_text(), {"completed"}, cut_with_a_note),
        Case(
            "many-words.txt",
            ("，".join(words) + "。").encode(),
            {"completed"},
            has_text(words[-1]),
        ),
        # Through tests.extractors_for_tests: hang, crash, eat memory.
        Case("hang.txt", b"sleep:600", {"failed:timeout"}, message_says("longer than")),
        Case("crash.txt", b"exit", {"failed:unknown"}, message_says("crashed")),
        Case("hog.txt", b"memory", {"failed:unknown"}),
    ]
    return cases


def good_cases() -> list[Case]:
    made = [
        Case("good.pdf", pdf_bytes("Minutes of the harbour authority"), {"completed"}),
        Case("good.docx", docx_bytes("Report of the orchard committee"), {"completed"}),
        Case("good.txt", "Grüße aus Köln".encode("cp1252"), {"completed"}),
    ]
    for case, snippet in zip(
        made, ("harbour authority", "orchard committee", "Grüße aus Köln"), strict=True
    ):
        case.check, case.good = has_text(snippet), True
    return made


def upload_and_queue(case: Case, owner) -> None:
    """The door (check_upload) and, if it lets the file in, the upload service."""
    try:
        checked = check_upload(SimpleUploadedFile(case.name, case.content))
    except ValidationError as error:
        case.outcome = f"refused:{error.code}"
        case.refusal = " ".join(error.messages)
        return
    case.document = document_create(owner=owner, upload=checked, allow_duplicate=True)


def finish(case: Case) -> str | None:
    """Read the outcome; a problem description, or None."""
    if case.document is not None:
        case.document.refresh_from_db()
        status, error_type = case.document.status, case.document.error_type
        case.outcome = (
            "completed" if status == Status.COMPLETED else f"{status}:{error_type}"
        )
        if status == Status.FAILED and not case.document.error_message:
            return "failed without a message"
        if status == Status.FAILED and error_type not in ERROR_TYPES:
            return f"invalid error type {error_type!r}"
    elif case.name not in case.refusal:
        return f"refusal does not name the file: {case.refusal!r}"
    if case.outcome not in case.allowed:
        detail = case.document.error_message[:120] if case.document else case.refusal
        return f"{case.outcome} ({detail}); allowed {sorted(case.allowed)}"
    if case.check and case.document is not None:
        return case.check(case.document)
    return None


# --- At the door -----------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "content", "code", "words"),
    [
        ("empty.pdf", b"", "empty", "is empty (0 bytes)"),
        ("random.bin", random.Random(1).randbytes(4096), "unsupported", "not a file"),
        (
            "image.pdf",
            b"\x89PNG\r\n\x1a\n" + bytes(200),
            "mismatch",
            "named like a PDF",
        ),
        ("layers.psd", b"8BPS\x00\x01" + bytes(200), "unsupported", "not a file"),
        ("notes.pdf", b"just some plain text\n", "mismatch", "named like a PDF"),
        ("paper.docx", pdf_bytes("a pdf"), "mismatch", "named like a Word (DOCX)"),
        (
            "old.doc",
            b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600),
            "unsupported",
            "not",
        ),
    ],
)
def test_the_door_refuses_with_a_reason_that_names_the_file(name, content, code, words):
    with pytest.raises(ValidationError) as refused:
        check_upload(SimpleUploadedFile(name, content))
    assert refused.value.code == code
    message = " ".join(refused.value.messages)
    assert name in message and words in message


@pytest.mark.django_db
def test_the_door_refuses_files_over_the_limit(settings):
    settings.MAX_UPLOAD_MB = 1
    with pytest.raises(ValidationError) as refused:
        check_upload(SimpleUploadedFile("big.txt", b"a" * (1024 * 1024 + 1)))
    assert refused.value.code == "too_large"
    assert "the limit is 1.0" in refused.value.messages[0]


@pytest.mark.django_db
def test_the_door_refuses_the_corpus_files_a_person_could_mislabel():
    if not corpus_available():
        pytest.skip("corpus missing")
    broken = CORPUS_DIR / "broken"
    expected = {
        "empty.pdf": "empty",
        "zero-byte.docx": "empty",
        "png-renamed.pdf": "mismatch",
        "text-renamed.pdf": "mismatch",
        "pdf-renamed.docx": "mismatch",
    }
    for name, code in expected.items():
        with pytest.raises(ValidationError) as refused:
            check_upload(SimpleUploadedFile(name, (broken / name).read_bytes()))
        assert refused.value.code == code, name


# --- Through real workers --------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_hostile_files_end_cleanly_and_good_ones_are_untouched(start_worker, user):
    hostile = corpus_cases() + generated_cases()
    good = good_cases()
    # Good documents at the start, the middle and the end of the queue.
    middle = len(hostile) // 2
    cases = [good[0], *hostile[:middle], good[1], *hostile[middle:], good[2]]
    for case in cases:
        upload_and_queue(case, user)
    jobs = QueueItem.objects.filter(
        document__in=[c.document for c in cases if c.document]
    )
    proc = start_worker(*WORKER, env=MISBEHAVE)

    def finished() -> bool:
        assert proc.poll() is None, worker_log(proc)
        return not jobs.exclude(status__in=[Status.COMPLETED, Status.FAILED]).exists()

    wait_for(finished, 110, interval=0.5)

    problems = [f"{c.name}: {p}" for c in cases if (p := finish(c))]
    assert not problems, "\n".join(problems)
    # Shown with ``pytest -rP``: the figures for bench/RESULTS.md (Reliability).
    outcomes = Counter(c.outcome for c in cases)
    print(f"{len(cases)} files: {dict(sorted(outcomes.items()))}")  # noqa: T201
    assert all(c.outcome == "completed" for c in good)
    assert proc.poll() is None, "the worker must keep running"
    log = worker_log(proc)
    assert "hit an error" not in log, log[-3000:]
    # Each attempt ended within the hard timeout (plus the time to record it).
    slowest = max(
        ExtractionMetric.objects.filter(job__in=jobs).values_list(
            "extraction_time_ms", flat=True
        ),
        default=0,
    )
    assert slowest < (TIMEOUT + 10) * 1000
    hang = next(c for c in cases if c.name == "hang.txt")
    assert QueueItem.objects.get(document=hang.document).attempts == 2


@pytest.mark.django_db(transaction=True)
def test_a_failure_the_database_refuses_to_record_ends_the_job_not_a_loop(
    queue, monkeypatch
):
    """A kind's ``on_failure`` writes (or a value out of range) that the database
    refuses: the job was left processing, released, and run again for ever."""

    def run(item):
        raise ValueError("the job's own failure")

    def on_failure(item, outcome):  # a write the database refuses as data
        QueueItem.objects.filter(pk=item.pk).update(operation=None)

    kind = operations.JobKind(name="hostile_failure", run=run, on_failure=on_failure)
    monkeypatch.setitem(operations._kinds, kind.name, kind)
    job_id = queue.enqueue_job(kind.name, payload={}).pk
    counts = process_document_queue(time_budget=5)
    assert counts == {"processed": 1, "completed": 0, "failed": 1}
    job = QueueItem.objects.get(pk=job_id)
    assert (job.status, job.attempts, job.error_type) == (
        Status.FAILED,
        1,
        ErrorType.UNKNOWN,
    )
    assert "refused to record its failure" in job.error_message
    assert "the job's own failure" in job.error_message


@pytest.mark.django_db(transaction=True)
def test_a_result_the_database_refuses_fails_the_attempt_instead_of_hanging(
    make_document, queue, monkeypatch
):
    """E.g. PostgreSQL's 1 MB search-vector limit: the job must not stay processing,
    and extracting again would give the same text, so it fails for good, with a
    message free of the database's internals."""

    def refuse(**kwargs) -> None:
        raise DataError("string is too long for tsvector")

    monkeypatch.setattr("documents.services.document_store_result", refuse)
    job_id = queue.enqueue(make_document(b"some text").pk)
    assert process_document_queue() == {"processed": 1, "completed": 0, "failed": 1}
    job = QueueItem.objects.get(pk=job_id)
    assert job.status == Status.FAILED
    assert job.error_type == ErrorType.UNSUPPORTED
    assert "refused to store" in job.error_message
    assert "tsvector" not in job.error_message
    document = Document.objects.get(pk=job.document_id)
    assert (document.status, document.text) == (Status.FAILED, "")


# --- Fuzzing ---------------------------------------------------------------------------


def _seed_files() -> list[bytes]:
    """Small real files to mutate: a made PDF and DOCX, and small corpus files."""
    seeds = [pdf_bytes("fuzz seed text"), docx_bytes("fuzz seed text"), b"plain text\n"]
    if corpus_available():
        rows = [r for r in load_manifest() if Path(r["path"]).stat().st_size < 60_000]
        seeds += [Path(r["path"]).read_bytes() for r in rows[:12]]
    return seeds


SEEDS = _seed_files()


@st.composite
def hostile_bytes(draw) -> bytes:
    """Arbitrary bytes, magic prefixes with junk, and real files cut or bit-flipped."""
    kind = draw(st.sampled_from(["raw", "prefixed", "mutated", "cut"]))
    if kind == "raw":
        return draw(st.binary(max_size=4096))
    if kind == "prefixed":
        prefix = draw(
            st.sampled_from([b"%PDF-1.", b"PK\x03\x04", b"\xef\xbb\xbf", b"\xff\xfe"])
        )
        return prefix + draw(st.binary(max_size=4096))
    seed = draw(st.sampled_from(SEEDS))
    if kind == "cut":
        return seed[: draw(st.integers(0, len(seed)))]
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 20))):
        position = draw(st.integers(0, len(data) - 1))
        data[position] = draw(st.integers(0, 255))
    return bytes(data)


# Any readable format: Hypothesis also tries the byte strings the detector looks for
# ("{\\rtf"), which are files of that format.
DETECTABLE = {fmt.mime_type for fmt in FORMATS if fmt.readable}


FUZZ = hypothesis_settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
    database=None,
)


@FUZZ
@given(hostile_bytes())
def test_type_detection_never_raises(data):
    assert detect_mime_type(io.BytesIO(data)) in {None, *DETECTABLE}
    with tempfile.NamedTemporaryFile() as fh:
        fh.write(data)
        fh.flush()
        assert detect_mime_type(fh.name) in {None, *DETECTABLE}


@FUZZ
@given(hostile_bytes())
def test_extractors_return_a_result_or_a_typed_error(data):
    with tempfile.NamedTemporaryFile() as fh:
        fh.write(data)
        fh.flush()
        try:
            result = extract(fh.name)
        except ExtractionError as error:
            assert error.error_type in ERROR_TYPES
            assert str(error)
        else:
            assert isinstance(result, ExtractionResult)
        status, value, message = run_job(
            "documents.extractors.child.extract_in_child",
            {
                "function": "documents.extractors.registry.extract",
                "path": fh.name,
                "mime_type": None,
                "options": {},
            },
        )
    if status == "ok":
        assert isinstance(value, ExtractionResult)
    else:
        assert status == "error" and value in ERROR_TYPES and message


def test_pdf_error_type_does_not_depend_on_the_previous_file(tmp_path):
    """PDFium leaves a stale error code behind; the next file's type must not use it."""
    if not corpus_available():
        pytest.skip("corpus missing")
    brotli = CORPUS_DIR / "pdf" / "Brotli-Prototype-FileA.pdf"
    first = _error_type(brotli)
    for previous in ("pdf/password-example.pdf", "broken/invalid.pdf"):
        _error_type(CORPUS_DIR / previous)
        assert _error_type(brotli) == first == "unsupported"


def _error_type(path: Path) -> str:
    try:
        extract(path)
    except ExtractionError as error:
        return error.error_type
    return "ok"
