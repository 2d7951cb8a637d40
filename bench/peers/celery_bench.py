"""Celery with Redis as broker and result backend (so every job's state is recorded).

Run: celery -A celery_bench worker -c K. Redis databases: broker 12, results 13.
"""

import os
import time

import redis
from celery import Celery

BASE = os.environ.get("BENCH_REDIS_BASE", "redis://127.0.0.1:6379")
app = Celery("celery_bench", broker=f"{BASE}/12", backend=f"{BASE}/13")
STAMPS = redis.Redis.from_url(f"{BASE}/14")


@app.task(name="noop")
def noop() -> None:
    return None


@app.task(name="stamp")
def stamp(token: str) -> None:
    STAMPS.hset("bench:started", token, repr(time.time()))
