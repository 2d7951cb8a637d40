"""``manage.py process_queue`` as real processes: extraction, signals, crash rescue."""

from __future__ import annotations

import io
import logging
import os
import signal
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.management import call_command
from django.utils import timezone

from documents.extractors.detect import detect_mime_type
from documents.models import Document
from jobqueue import operations
from jobqueue.models import (
    ExtractionMetric,
    Operation,
    QueueItem,
    Status,
    WorkerHeartbeat,
)
from jobqueue.services import QueueManager
from tests.conftest import REPO_ROOT, wait_for, worker_log
from tests.corpus import load_manifest, normalise, requires_corpus
from tests.files import docx_bytes, pdf_bytes

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FAST = ["--poll-interval", "0.1", "--heartbeat-interval", "0.5"]
SLOW_EXTRACTOR = {"QUEUE_EXTRACT_FUNCTION": "tests.extractors_for_tests.extract"}


def store(user, name: str, content: bytes) -> Document:
    """A document as an upload would store it, type detected from the bytes."""
    document = Document(
        owner=user,
        original_filename=name,
        mime_type=detect_mime_type(io.BytesIO(content)) or "application/octet-stream",
        size=len(content),
        sha256="0" * 64,
    )
    document.file.save(name, ContentFile(content), save=False)
    document.save()
    return document


def all_finished(job_ids: list[int]) -> bool:
    return (
        not QueueItem.objects.filter(pk__in=job_ids)
        .exclude(status__in=[Status.COMPLETED, Status.FAILED])
        .exists()
    )


def test_process_queue_extracts_self_made_files_and_survives_bad_ones(
    start_worker, user, queue
):
    good = {
        "made.pdf": (
            pdf_bytes("Quarterly report of the harbour authority"),
            "harbour authority",
        ),
        "made.docx": (
            docx_bytes("Minutes of the orchard committee"),
            "orchard committee",
        ),
        "made.txt": ("Grüße aus Köln".encode("cp1252"), "Grüße aus Köln"),
    }
    bad = {
        "truncated.pdf": pdf_bytes("cut short")[:200],
        "random.pdf": b"%PDF-1.7\n" + os.urandom(4000),
    }
    docs = {name: store(user, name, content) for name, (content, _) in good.items()}
    docs.update({name: store(user, name, content) for name, content in bad.items()})
    job_ids = [queue.enqueue(d.pk) for d in docs.values()]
    proc = start_worker("--workers", "2", *FAST)
    wait_for(lambda: all_finished(job_ids), 90)

    for name, (_, snippet) in good.items():
        docs[name].refresh_from_db()
        assert docs[name].status == Status.COMPLETED, worker_log(proc)
        assert snippet in docs[name].text
    for name in bad:
        docs[name].refresh_from_db()
        assert docs[name].status == Status.FAILED
        assert docs[name].error_type == "corruption"
        assert docs[name].error_message
    assert proc.poll() is None, "the worker must keep running"


@requires_corpus
def test_process_queue_extracts_the_whole_corpus(start_worker, user, queue):
    rows = load_manifest()
    docs = [
        (row, store(user, Path(row["path"]).name, Path(row["path"]).read_bytes()))
        for row in rows
    ]
    job_ids = queue.enqueue_batch([d.pk for _, d in docs])
    assert len(job_ids) == len(rows)
    proc = start_worker("--workers", "2", "--timeout", "120", *FAST)
    wait_for(lambda: all_finished(job_ids), 300, interval=0.5)

    problems = []
    for row, document in docs:
        document.refresh_from_db()
        expect, name = row["expect"], row["path"]
        if expect == "ok":
            if document.status != Status.COMPLETED or normalise(
                row["snippet"]
            ) not in normalise(document.text):
                problems.append(
                    f"{name}: {document.status} {document.error_message[:80]}"
                )
        elif expect == "no_text":  # scans: read by OCR
            if document.status != Status.COMPLETED or not document.text.strip():
                problems.append(f"{name}: expected completed with OCR's text")
        elif expect == "encrypted":
            if (
                document.status != Status.FAILED
                or "password" not in document.error_message
            ):
                problems.append(f"{name}: expected failed with a password message")
        # corrupt/unsupported: failing with a clear type is the floor; recovering is better.
        elif document.status == Status.FAILED:
            if document.error_type not in {"corruption", "unsupported"}:
                problems.append(f"{name}: error type {document.error_type}")
        elif document.status != Status.COMPLETED:
            problems.append(f"{name}: {document.status}")
    assert not problems, "\n".join(problems)
    assert proc.poll() is None


def test_sigterm_lets_the_current_job_finish_and_marks_heartbeats_stopped(
    start_worker, user, queue
):
    running = queue.enqueue(store(user, "slow.txt", b"sleep:2 then text").pk)
    waiting = [
        queue.enqueue(store(user, f"w{n}.txt", b"sleep:2 later").pk) for n in range(3)
    ]
    proc = start_worker("--workers", "1", *FAST, env=SLOW_EXTRACTOR)
    wait_for(lambda: QueueItem.objects.get(pk=running).status == Status.PROCESSING, 60)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0, worker_log(proc)

    assert QueueItem.objects.get(pk=running).status == Status.COMPLETED
    statuses = set(
        QueueItem.objects.filter(pk__in=waiting).values_list("status", flat=True)
    )
    assert statuses == {Status.PENDING}, "nothing started after SIGTERM, nothing lost"
    assert set(WorkerHeartbeat.objects.values_list("status", flat=True)) == {"stopped"}


# A fresh process whose worker thread starts the pool (with its first job for a
# child, as process_queue's do) asks the pool's fork server for a bare child, one
# that never ran the pool's initializer, and exits with what became of that child
# when it sent itself SIGINT.
FIRST_BREATH = """
import multiprocessing, signal, sys, threading
import django

django.setup()
from jobqueue.runner import JobRunner
from jobqueue.services import QueueManager

runner = JobRunner(queue=QueueManager(), processes=1)
runner.start()
worker_thread = threading.Thread(target=runner.children)
worker_thread.start()
worker_thread.join()
child = multiprocessing.get_context("forkserver").Process(
    target=signal.raise_signal, args=(signal.SIGINT,)
)
child.start()
child.join(30)
runner.close()
sys.exit(child.exitcode)
"""


def test_a_child_ignores_ctrl_c_from_its_first_instruction(child_env):
    # A Ctrl+C in the terminal reaches the whole process group; a child that died of
    # it before its initializer ignored it would lose its job's extraction.
    done = subprocess.run(
        [sys.executable, "-c", FIRST_BREATH],
        cwd=REPO_ROOT,
        env={**child_env, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    # 0: it raised SIGINT at itself and lived on; 1: KeyboardInterrupt killed it.
    assert done.returncode == 0, done.stderr[-2000:]


def child_pids(pid: int) -> list[str]:
    return [
        child
        for task in Path(f"/proc/{pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    ]


def test_a_worker_starts_its_children_with_the_first_job_that_needs_one(
    start_worker, user, queue
):
    # A no-op runs in the worker's thread, as a task does: no fork server for it.
    QueueManager(Operation.NOOP).enqueue(store(user, "a.txt", b"a").pk)
    proc = start_worker("--workers", "1", *FAST)
    wait_for(lambda: QueueItem.objects.filter(status=Status.COMPLETED).exists(), 60)
    assert child_pids(proc.pid) == []

    job = queue.enqueue(store(user, "b.txt", b"words to read").pk)
    wait_for(lambda: QueueItem.objects.get(pk=job).status == Status.COMPLETED, 60)
    assert child_pids(proc.pid)  # the fork server (and the resource tracker)


def test_ctrl_c_in_the_terminal_lets_the_current_job_finish(start_worker, user, queue):
    job_id = queue.enqueue(store(user, "slow.txt", b"sleep:2 then text").pk)
    proc = start_worker("--workers", "1", *FAST, env=SLOW_EXTRACTOR)
    wait_for(lambda: QueueItem.objects.get(pk=job_id).status == Status.PROCESSING, 60)
    # As a terminal sends it: to the whole process group, children included.
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(30) == 0, worker_log(proc)
    assert QueueItem.objects.get(pk=job_id).status == Status.COMPLETED


def test_second_sigint_stops_at_once_and_releases_the_job(start_worker, user, queue):
    job_id = queue.enqueue(store(user, "hang.txt", b"sleep:60").pk)
    proc = start_worker("--workers", "1", *FAST, env=SLOW_EXTRACTOR)
    wait_for(lambda: QueueItem.objects.get(pk=job_id).status == Status.PROCESSING, 60)
    proc.send_signal(signal.SIGINT)
    try:
        wait_for(lambda: "again to stop now" in worker_log(proc), 30)
    except AssertionError:
        raise AssertionError(f"no first-signal message:\n{worker_log(proc)}") from None
    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == 0, worker_log(proc)
    job = QueueItem.objects.get(pk=job_id)
    assert job.status == Status.PENDING and job.attempts == 0
    assert set(WorkerHeartbeat.objects.values_list("status", flat=True)) == {"stopped"}


def test_an_operator_stops_a_running_extraction(start_worker, user, queue):
    hung = queue.enqueue(store(user, "hang.txt", b"sleep:120").pk)
    after = queue.enqueue(store(user, "after.txt", b"plain words after it").pk)
    # Heartbeats far apart: the stop wakes the worker, it need not wait for a beat.
    slow_beats = ["--poll-interval", "0.1", "--heartbeat-interval", "30"]
    env = {**SLOW_EXTRACTOR, "QUEUE_STALE_WORKER_SECONDS": "120"}
    proc = start_worker("--workers", "1", *slow_beats, env=env)
    # Logged once its child runs (stopped earlier, it waits for the next heartbeat).
    wait_for(lambda: f"started job {hung} " in worker_log(proc), 60)

    assert QueueManager().stop_many([hung]) == [hung]
    # Its child is ended: the next job runs now, not two minutes later.
    try:
        wait_for(lambda: QueueItem.objects.get(pk=after).status == Status.COMPLETED, 20)
    except AssertionError:
        raise AssertionError(worker_log(proc)) from None
    job = QueueItem.objects.get(pk=hung)
    assert (job.status, job.attempts) == (Status.CANCELLED, 1)
    assert Document.objects.get(pk=job.document_id).status == Status.CANCELLED
    wait_for(lambda: f"job {hung} stopped by an operator" in worker_log(proc), 10)
    assert "rescued" not in worker_log(proc)
    assert not ExtractionMetric.objects.filter(job_id=hung).exists()
    assert proc.poll() is None


def test_sigkilled_worker_job_is_rescued_and_completed_exactly_once(
    start_worker, user, queue
):
    job_id = queue.enqueue(store(user, "victim.txt", b"sleep:3 survives").pk)
    env = {**SLOW_EXTRACTOR, "QUEUE_STALE_WORKER_SECONDS": "2"}
    victim = start_worker("--workers", "1", *FAST, env=env)
    wait_for(lambda: QueueItem.objects.get(pk=job_id).status == Status.PROCESSING, 60)
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait(10)
    assert QueueItem.objects.get(pk=job_id).status == Status.PROCESSING

    rescuer = start_worker("--workers", "1", *FAST, env=env)
    wait_for(lambda: QueueItem.objects.get(pk=job_id).status == Status.COMPLETED, 60)
    job = QueueItem.objects.get(pk=job_id)
    assert job.attempts == 2, "the lost attempt counts"
    outcomes = list(
        ExtractionMetric.objects.filter(job=job).values_list("outcome", flat=True)
    )
    assert sorted(outcomes) == ["completed", "rescued"]
    assert Document.objects.get(pk=job.document_id).text.startswith("sleep:3 survives")
    assert rescuer.poll() is None


def test_a_document_that_kills_its_worker_every_time_ends_failed(
    start_worker, user, queue, settings
):
    # The workers' heartbeat interval (FAST), which rescue_stale_jobs checks against.
    settings.QUEUE_HEARTBEAT_INTERVAL = 0.5
    job_id = queue.enqueue(store(user, "killer.txt", b"sleep:60").pk)
    env = {**SLOW_EXTRACTOR, "QUEUE_STALE_WORKER_SECONDS": "1"}
    for attempt in (1, 2):
        # The second rescues the first attempt by its budget, and the item keeps it.
        proc = start_worker("--workers", "1", "--max-retries", "1", *FAST, env=env)
        wait_for(
            lambda a=attempt: QueueItem.objects.filter(
                pk=job_id, status=Status.PROCESSING, attempts=a
            ).exists(),
            60,
        )
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)

    # Nobody runs now: the operators' command rescues it, and with no retries left
    # the job fails instead of looping.
    def rescued() -> bool:
        call_command(
            "rescue_stale_jobs", "--heartbeat-seconds", "1.5", stdout=io.StringIO()
        )
        return QueueItem.objects.get(pk=job_id).status != Status.PROCESSING

    wait_for(rescued, 30, interval=0.5)
    job = QueueItem.objects.get(pk=job_id)
    assert job.status == Status.FAILED
    assert "No retries left" in job.error_message


def test_a_worker_rescues_by_its_own_retry_budget(start_worker, user, queue):
    """A worker run with ``--max-retries`` gives a job it rescues the retries it
    gives a job that fails: here a job enqueued with a budget of 1, whose worker
    died in its second attempt, is taken up again, not failed for good."""
    job_id = queue.enqueue(store(user, "lost.txt", b"lost, then found").pk)
    QueueItem.objects.filter(pk=job_id).update(
        status=Status.PROCESSING,
        attempts=2,
        max_retries=1,
        claimed_by="gone-host:1:w1",
        started_at=timezone.now() - timedelta(minutes=10),
    )
    worker = start_worker("--once", "--max-retries", "5", *FAST)
    assert worker.wait(60) == 0, worker_log(worker)
    job = QueueItem.objects.get(pk=job_id)
    assert (job.status, job.attempts, job.max_retries) == (Status.COMPLETED, 3, 5)
    outcomes = ExtractionMetric.objects.filter(job_id=job_id).order_by("id")
    assert list(outcomes.values_list("attempt", "outcome")) == [
        (2, "rescued"),
        (3, "completed"),
    ]


def test_once_processes_what_is_due_and_exits(user, queue, child_env):
    job_ids = [queue.enqueue(store(user, f"o{n}.txt", b"once").pk) for n in range(3)]
    result = subprocess.run(
        [sys.executable, "manage.py", "process_queue", "--once", "--limit", "2"],
        cwd=REPO_ROOT,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Processed 2 jobs: 2 completed, 0 failed." in result.stdout
    statuses = sorted(
        QueueItem.objects.filter(pk__in=job_ids).values_list("status", flat=True)
    )
    assert statuses == ["completed", "completed", "pending"]


GUIDE_SCRIPT = """
import time

import django

django.setup()

from jobqueue.worker import ExtractionWorker, register_signal_handlers

# As the guide writes its examples: no ``if __name__ == "__main__"`` guard, and the
# script ends once the pool has started.
print("the script ran", flush=True)
worker = ExtractionWorker(num_workers=2, poll_interval=0.1, heartbeat_interval=0.5)
register_signal_handlers(worker)
worker.start()
first, *others = {ids}
worker.enqueue(first)
while not worker.get_status()["stats"]["jobs_completed"]:
    time.sleep(0.05)
for document_id in others:  # these are done after the script's last line
    worker.enqueue(document_id)
"""


def test_a_script_written_as_the_guide_runs_once_and_until_stopped(
    user, child_env, tmp_path
):
    """Extraction children must not run the script again (forkserver would, as
    ``__mp_main__``), and the pool must outlive the script's last line until a
    signal stops it gracefully."""
    docs = [store(user, f"g{n}.pdf", pdf_bytes(f"guide page {n}")) for n in range(3)]
    script = tmp_path / "guide.py"
    script.write_text(GUIDE_SCRIPT.format(ids=[d.pk for d in docs]))
    log = tmp_path / "guide.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env={**child_env, "PYTHONPATH": str(REPO_ROOT)},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_for(
            lambda: QueueItem.objects.filter(status=Status.COMPLETED).count() == 3, 60
        )
        assert proc.poll() is None, log.read_text()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    output = log.read_text()
    assert output.count("the script ran") == 1, output
    assert Document.objects.count() == 3
    assert QueueItem.objects.count() == 3, "one job per document, none enqueued twice"
    for document in docs:
        document.refresh_from_db()
        assert f"guide page {document.original_filename[1]}" in document.text
    assert set(WorkerHeartbeat.objects.values_list("status", flat=True)) == {"stopped"}


def test_a_job_begun_after_the_stop_cancelled_the_others_is_released_too(
    run_worker, monkeypatch, caplog
):
    """The stop cancels the children's jobs that its threads hold; a job whose start
    was slow (the children's first start, a file fetched from remote storage) was
    not held yet, ran on past the stop and was cut by the pool's kill: charged as a
    crash, or refused as rescued. It is cancelled as soon as it begins, and released
    uncharged by its thread."""
    preparing, go = threading.Event(), threading.Event()

    def prepare(item) -> dict:
        preparing.set()
        go.wait(30)
        return {}

    kind = operations.JobKind(name="slow_start", child="signal.pause", prepare=prepare)
    monkeypatch.setitem(operations._kinds, kind.name, kind)
    worker = run_worker()
    job = QueueManager().enqueue_job(kind.name, payload={})
    assert preparing.wait(30)
    stopping = threading.Thread(target=worker.stop, args=(0.2,))
    with caplog.at_level(logging.INFO, logger="jobqueue.worker"):
        stopping.start()
        wait_for(worker._abort.is_set, 30)  # the held jobs are cancelled: none yet
        go.set()
        stopping.join(30)
    job.refresh_from_db()
    assert (job.status, job.attempts) == (Status.PENDING, 0)
    said = [r.getMessage() for r in caplog.records]
    assert f"[{worker._states[0].worker_id}] released job {job.pk}" in said, said
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], said
