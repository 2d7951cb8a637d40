"""An outside audit against the guide's examples (seeds/000_…), run as written: a
worker stopped from one of its own event callbacks, and the guide's signal-handler
script stopped by SIGTERM while it extracts."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import time

import pytest

from jobqueue.models import QueueItem, Status, WorkerHeartbeat
from tests.conftest import REPO_ROOT, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

SLOW_EXTRACTOR = "tests.extractors_for_tests.extract"


@pytest.mark.parametrize("event", ["job_started", "job_completed"])
def test_stop_called_from_an_event_callback_stops_the_pool(
    run_worker, make_document, caplog, event
):
    """``worker.on("job_completed", lambda job, result: worker.stop())``: stop()
    joined every work thread, the calling one too, and raised "cannot join current
    thread" half-way: heartbeats left busy, children running, and a script's end
    (or ``wait_stopped``) waiting for ever."""
    worker = run_worker(num_workers=2)
    returned: list[bool] = []
    worker.on(event, lambda job, _: returned.append(worker.stop(timeout=10)))
    job_id = worker.enqueue(make_document(b"stop after me\n").pk)
    with caplog.at_level(logging.ERROR, logger="jobqueue.worker"):
        assert worker.wait_stopped(30), "the stop never completed"
    assert not any("callback failed" in r.getMessage() for r in caplog.records)
    assert returned == [False]  # nothing is known stopped while the callback runs
    assert not worker.is_running()
    # The job whose callback stopped the pool is finished, not released.
    assert QueueItem.objects.get(pk=job_id).status == Status.COMPLETED
    assert set(WorkerHeartbeat.objects.values_list("status", flat=True)) == {
        WorkerHeartbeat.State.STOPPED
    }


GUIDE_SCRIPT = """
import django
django.setup()
from jobqueue.worker import ExtractionWorker, register_signal_handlers

worker = ExtractionWorker(num_workers=2, heartbeat_interval=0.5)
# Install handlers for SIGTERM and SIGINT
register_signal_handlers(worker)
# Now Ctrl+C or kill will gracefully shutdown
worker.start()
"""


def test_the_guides_signal_handler_script_finishes_its_job_on_sigterm(
    child_env, make_document, tmp_path
):
    """The guide's "Signal Handlers" example as a script of its own: SIGTERM while it
    extracts finishes the job, marks the heartbeats stopped, exits 0, and says so in
    its log (the line came after the flag the script's main thread waits for, and
    was lost as the process exited)."""
    script = tmp_path / "guide.py"
    script.write_text(GUIDE_SCRIPT)
    log = tmp_path / "guide.log"
    job = make_document(b"sleep:1.5\n")
    from jobqueue.services import QueueManager

    job_id = QueueManager().enqueue(job.pk)
    env = {
        **child_env,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PYTHONPATH": str(REPO_ROOT),
        "QUEUE_EXTRACT_FUNCTION": SLOW_EXTRACTOR,
    }
    with open(log, "w+b") as out:
        proc = subprocess.Popen(
            [sys.executable, str(script)],
            cwd=REPO_ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_for(
                lambda: QueueItem.objects.get(pk=job_id).status == Status.PROCESSING,
                30,
            )
            time.sleep(0.3)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        output = log.read_text()
    assert QueueItem.objects.get(pk=job_id).status == Status.COMPLETED
    assert set(WorkerHeartbeat.objects.values_list("status", flat=True)) == {
        WorkerHeartbeat.State.STOPPED
    }
    assert "Received SIGTERM" in output
    assert "Workers stopped (clean)" in output, output
