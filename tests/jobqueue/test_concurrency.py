"""Real races: separate OS processes on the test database, released at one instant."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections import Counter

import pytest
from django.db import connection, connections

from documents.models import Document
from jobqueue.models import ExtractionMetric, QueueItem, Status
from jobqueue.services import QueueManager
from tests.conftest import REPO_ROOT, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

# Each child sets Django up itself, says it is ready, waits for the start file, runs
# its part of the race and prints what it saw as JSON.
CHILD = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path

    import django

    django.setup()

    from django.db import connection

    from jobqueue.services import QueueManager

    mode, worker_id, ready_dir, start_file, args = sys.argv[1:6]
    args = json.loads(args)
    queue = QueueManager()
    result = {"worker": worker_id, "errors": [], "values": [], "claimed_by": {}}
    try:
        connection.ensure_connection()
        (Path(ready_dir) / worker_id).touch()
        while not Path(start_file).exists():
            time.sleep(0.001)
        if mode == "claim":
            # A batch claims for several threads of one worker at once.
            threads = [f"{worker_id}.{n}" for n in range(args.get("batch", 0))]
            while len(result["errors"]) < 20:
                try:
                    if threads:
                        jobs = queue.claim_batch(threads)
                    else:
                        jobs = [job] if (job := queue.claim(worker_id)) else []
                    if not jobs:
                        break
                    time.sleep(0.002)  # the extraction a real worker would do here
                    for job in jobs:
                        if not queue.complete(job.pk, worker_id=job.claimed_by):
                            result["errors"].append(f"complete({job.pk}) refused")
                        result["values"].append(job.pk)
                        result["claimed_by"][job.pk] = job.claimed_by
                except Exception as exc:
                    result["errors"].append(f"{type(exc).__name__}: {exc}")
        elif mode == "enqueue":
            # Each child its own operation, if given.
            operations = args.get("operations")
            if operations:
                queue = QueueManager(operations[int(worker_id.rsplit("-", 1)[1])])
            for document_id in args["ids"]:
                try:
                    result["values"].append(
                        queue.enqueue(document_id, deduplicate=args["deduplicate"])
                    )
                except Exception as exc:
                    result["errors"].append(f"{type(exc).__name__}: {exc}")
        elif mode == "batch":
            try:
                result["values"] = queue.enqueue_batch(args["ids"])
            except Exception as exc:
                result["errors"].append(f"{type(exc).__name__}: {exc}")
        elif mode == "upload":
            from django.contrib.auth import get_user_model
            from django.core.files.uploadedfile import SimpleUploadedFile

            from documents.services import DuplicateUpload, document_create
            from documents.uploads import CheckedUpload

            upload = CheckedUpload(
                file=SimpleUploadedFile("same.txt", args["content"].encode()),
                filename="same.txt",
                mime_type="text/plain",
            )
            owner = get_user_model().objects.get(pk=args["owner"])
            try:
                result["values"].append(document_create(owner=owner, upload=upload).pk)
            except DuplicateUpload:
                result["values"].append("duplicate")
            except Exception as exc:
                result["errors"].append(f"{type(exc).__name__}: {exc}")
    finally:
        connection.close()
    print(json.dumps(result))
    """
)


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):
    """The users of conftest need no slow hashing here."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def race(child_env, tmp_path):
    """Run N children of one mode, release them together, return their results."""
    procs: list[subprocess.Popen] = []

    def run(mode: str, workers: int, **args) -> list[dict]:
        ready_dir = tmp_path / f"ready-{mode}"
        ready_dir.mkdir()
        start_file = tmp_path / f"start-{mode}"
        for n in range(workers):
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-c",
                        CHILD,
                        mode,
                        f"{mode}-{n}",
                        str(ready_dir),
                        str(start_file),
                        json.dumps(args),
                    ],
                    cwd=REPO_ROOT,
                    env={**child_env, "DJANGO_SETTINGS_MODULE": "config.settings"},
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )

        def all_ready() -> bool:
            for proc in procs:
                if proc.poll() is not None:
                    raise AssertionError(f"child died early: {proc.communicate()}")
            return len(list(ready_dir.iterdir())) == workers

        wait_for(all_ready, timeout=60, interval=0.02)
        start_file.touch()
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            results.append(json.loads(out.strip().splitlines()[-1]))
        return results

    yield run
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def make_documents(owner, count: int) -> list[int]:
    Document.objects.bulk_create(
        Document(
            owner=owner,
            original_filename=f"doc-{n}.txt",
            file=f"documents/doc-{n}.txt",
            mime_type="text/plain",
            size=1,
            sha256="0" * 64,
        )
        for n in range(count)
    )
    return list(Document.objects.order_by("pk").values_list("pk", flat=True))


@pytest.mark.parametrize("batch", [0, 3], ids=["one-by-one", "batches-of-3"])
def test_four_processes_claim_two_hundred_jobs_each_exactly_once(user, race, batch):
    job_ids = QueueManager().enqueue_batch(make_documents(user, 200))
    assert len(job_ids) == 200

    results = race("claim", workers=4, batch=batch)

    assert [r["errors"] for r in results] == [[]] * 4  # no "database is locked"
    claimed = [job_id for r in results for job_id in r["values"]]
    duplicates = [job_id for job_id, n in Counter(claimed).items() if n > 1]
    assert duplicates == []
    assert sorted(claimed) == sorted(job_ids)
    # More than one process won jobs: the claims really competed.
    assert sum(1 for r in results if r["values"]) >= 2
    # The database agrees: one attempt each, completed by the process that claimed it.
    rows = QueueItem.objects.values_list("pk", "status", "attempts", "claimed_by")
    claimer = {
        int(job_id): worker
        for r in results
        for job_id, worker in r["claimed_by"].items()
    }
    # Each job to the claiming process (one of its threads, with a batch).
    assert all(
        worker.split(".")[0] == r["worker"]
        for r in results
        for worker in r["claimed_by"].values()
    )
    assert {(pk, status, attempts) for pk, status, attempts, _ in rows} == {
        (job_id, Status.COMPLETED, 1) for job_id in job_ids
    }
    assert {pk: worker for pk, _, _, worker in rows} == claimer
    assert ExtractionMetric.objects.filter(outcome="completed").count() == 200
    assert set(Document.objects.values_list("status", flat=True)) == {Status.COMPLETED}


def test_two_processes_enqueueing_the_same_documents_make_one_job_each(user, race):
    document_ids = make_documents(user, 50)

    results = race("enqueue", workers=2, ids=document_ids, deduplicate=True)

    assert [r["errors"] for r in results] == [[], []]
    for n, document_id in enumerate(document_ids):
        returned = [r["values"][n] for r in results]
        # One process created the job; the other was told it is already queued.
        assert returned.count(None) == 1, (document_id, returned)
    assert QueueItem.objects.active().count() == 50
    assert sorted(
        QueueItem.objects.active().values_list("document_id", flat=True)
    ) == sorted(document_ids)


def test_two_processes_enqueueing_without_dedup_get_the_same_job(user, race):
    document_ids = make_documents(user, 50)

    results = race("enqueue", workers=2, ids=document_ids, deduplicate=False)

    assert [r["errors"] for r in results] == [[], []]
    first, second = (r["values"] for r in results)
    assert first == second
    assert None not in first
    assert QueueItem.objects.count() == 50


def test_an_extraction_and_a_reprocess_racing_make_one_job_each(user, race):
    document_ids = make_documents(user, 50)

    results = race(
        "enqueue",
        workers=2,
        ids=document_ids,
        deduplicate=True,
        operations=["extract", "reprocess"],
    )

    assert [r["errors"] for r in results] == [[], []]
    for n, document_id in enumerate(document_ids):
        returned = [r["values"][n] for r in results]
        assert returned.count(None) == 1, (document_id, returned)
    assert sorted(
        QueueItem.objects.active().values_list("document_id", flat=True)
    ) == sorted(document_ids)


def test_two_processes_batch_enqueueing_the_same_documents_split_them(user, race):
    document_ids = make_documents(user, 100)

    results = race("batch", workers=2, ids=document_ids)

    assert [r["errors"] for r in results] == [[], []]
    first, second = (set(r["values"]) for r in results)
    assert not first & second
    active = set(QueueItem.objects.active().values_list("pk", flat=True))
    assert first | second == active
    assert len(active) == QueueItem.objects.count() == 100


def test_the_same_file_uploaded_four_times_at_once_is_kept_once(user, race):
    # The duplicate check read, then wrote: a double click or a client's retry kept
    # two to seven copies of eight.
    content = "the same minutes, sent four times at once\n"
    results = race("upload", 4, owner=user.pk, content=content)
    assert [r["errors"] for r in results] == [[]] * 4
    outcomes = Counter(r["values"][0] == "duplicate" for r in results)
    assert outcomes == {True: 3, False: 1}
    assert Document.objects.filter(owner=user).count() == 1


@pytest.mark.skipif(
    not connection.features.has_select_for_update_skip_locked,
    reason="SQLite locks the whole database; claims serialise instead",
)
def test_claim_skips_a_job_locked_by_another_transaction(make_document):
    queue = QueueManager()
    first = queue.enqueue(make_document(name="a.txt").pk, priority=5)
    second = queue.enqueue(make_document(name="b.txt").pk)
    other = connections.create_connection("default")
    try:
        other.set_autocommit(False)
        with other.cursor() as cursor:
            cursor.execute(
                "SELECT id FROM extraction_queue WHERE id = %s FOR UPDATE", [first]
            )
        assert queue.claim("w1").pk == second
        assert queue.claim("w1") is None
        assert queue.get_job(first).status == Status.PENDING
    finally:
        other.rollback()
        other.close()
    assert queue.claim("w1").pk == first
