"""Helper actions on the peer queues (runs in bench/.venv-peers), printing JSON.

  seed FRAMEWORK N          enqueue N no-op jobs (dtdb: one transaction; procrastinate:
                            one batch_defer; celery: N .delay() calls)
  latency FRAMEWORK --samples S
                            enqueue one job at a time into an idle worker; the job
                            stamps its start time in Redis; enqueue return → start
  verify FRAMEWORK          job states (dtdb, procrastinate)

FRAMEWORK: dtdb (django-tasks-db), procrastinate, celery.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
BASE = os.environ.get("BENCH_REDIS_BASE", "redis://127.0.0.1:6379")


def _django() -> None:
    import django

    django.setup()


def enqueuers(framework: str) -> tuple[Callable[[int], None], Callable[[str], None]]:
    """(enqueue N no-ops, enqueue one stamp job) for a framework."""
    if framework == "celery":
        import celery_bench

        def many(n: int) -> None:
            for _ in range(n):
                celery_bench.noop.delay()

        return many, lambda token: celery_bench.stamp.delay(token)
    _django()
    from benchapp import tasks

    if framework == "dtdb":
        from django.db import transaction

        def many(n: int) -> None:
            with transaction.atomic():
                for _ in range(n):
                    tasks.noop.enqueue()

        return many, lambda token: tasks.stamp.enqueue(token)
    if framework == "procrastinate":

        def many(n: int) -> None:
            for start in range(0, n, 1000):
                tasks.procrastinate_noop.batch_defer(
                    *({} for _ in range(start, min(n, start + 1000)))
                )

        return many, lambda token: tasks.procrastinate_stamp.defer(token=token)
    raise SystemExit(f"unknown framework {framework!r}")


def seed(framework: str, n: int) -> dict[str, Any]:
    many, _ = enqueuers(framework)
    started = time.perf_counter()
    many(n)
    return {"jobs": n, "seconds": time.perf_counter() - started}


def latency(
    framework: str, samples: int, gap_min: float, gap_max: float, idle: float
) -> dict[str, Any]:
    import redis

    _, one = enqueuers(framework)
    stamps = redis.Redis.from_url(os.environ.get("BENCH_STAMP_REDIS", f"{BASE}/14"))

    def sample() -> tuple[float, float, float]:
        token = uuid.uuid4().hex
        called = time.time()
        one(token)
        enqueued = time.time()  # the enqueue call has returned (committed / sent)
        deadline = time.monotonic() + 30
        while (value := stamps.hget("bench:started", token)) is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{framework} job did not start within 30 s")
            time.sleep(0.002)
        return called, enqueued, float(value)

    sample()  # warm-up
    time.sleep(idle)
    rng = random.Random(42)
    values = []
    for _ in range(samples):
        time.sleep(rng.uniform(gap_min, gap_max))
        values.append(sample())
    return {"samples": values}


def verify(framework: str) -> dict[str, Any]:
    _django()
    from django.db.models import Count

    if framework == "dtdb":
        from django_tasks_db.models import DBTaskResult

        qs = DBTaskResult.objects.values_list("status")
    else:
        from procrastinate.contrib.django.models import ProcrastinateJob

        qs = ProcrastinateJob.objects.values_list("status")
    return {"status": dict(qs.annotate(n=Count("id")).order_by())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    s = sub.add_parser("seed")
    s.add_argument("framework")
    s.add_argument("n", type=int)
    lat = sub.add_parser("latency")
    lat.add_argument("framework")
    lat.add_argument("--samples", type=int, default=50)
    lat.add_argument("--gap-min", type=float, default=0.2)
    lat.add_argument("--gap-max", type=float, default=0.6)
    lat.add_argument("--idle", type=float, default=2.0)
    sub.add_parser("verify").add_argument("framework")
    args = parser.parse_args()
    if args.action == "seed":
        out = seed(args.framework, args.n)
    elif args.action == "latency":
        out = latency(
            args.framework, args.samples, args.gap_min, args.gap_max, args.idle
        )
    else:
        out = verify(args.framework)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
