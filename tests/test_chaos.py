"""A small chaos run: ``process_queue`` processes SIGKILLed (whole process group) while
they work; no job is lost, stuck or completed twice, and every document agrees with
its job. The full run, with figures, is ``bench/chaos.py``.
"""

from __future__ import annotations

import random

import pytest

from bench.chaos import Monkey, Seeder, chaos, drain, kill_group, load_corpus, verify

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

SLOW_TEXT = "sleep:1 a slow document that is killed mid-extraction"


def test_sigkilled_workers_lose_no_job_and_complete_none_twice(
    child_env, user, tmp_path
):
    # Slow documents (tests.extractors_for_tests sleeps on them) keep the workers
    # busy, so kills land mid-job; small corpus files and NOOP jobs fill the rest.
    slow = tmp_path / "slow.txt"
    slow.write_text(SLOW_TEXT)
    rows = [{"path": str(slow), "expect": "ok", "snippet": SLOW_TEXT}] * 3
    rows += [
        row
        for row in load_corpus({"ok", "corrupt", "unsupported"})
        if int(row["bytes"]) < 100_000
    ]
    seeder = Seeder(user, rows, corpus_share=0.4)
    seeder.add(200)
    env = {
        **child_env,
        "QUEUE_STALE_WORKER_SECONDS": "3",
        "QUEUE_EXTRACT_FUNCTION": "tests.extractors_for_tests.extract",
        "LOG_LEVEL": "WARNING",
    }
    monkey = Monkey(env, tmp_path, rng=random.Random(5))
    monkey.flags += ["--timeout", "60"]
    try:
        monkey.start_all()
        chaos(
            monkey,
            seeder,
            seconds=12,
            kill_every=(1.5, 3.0),
            low_water=30,
            top_up=60,
            busy_only=True,
        )
        drain(monkey, 90)
        exit_codes = monkey.stop_all()
    finally:
        for proc in monkey.running:
            kill_group(proc)
    report = verify(seeder.jobs, rows, monkey.killed_pids)

    assert report.problems() == [], monkey.logs()
    assert not report.lost and not report.stuck_processing
    assert not report.completed_twice
    assert monkey.kills >= 3 and monkey.groups_left_behind == 0
    assert report.interrupted >= 1, "a kill should have landed mid-job"
    assert report.jobs >= 200 and report.completed + report.failed == report.jobs
    assert exit_codes == [0, 0], "the survivors stop gracefully"
