"""The benchmark's jobs for django-tasks-db and Procrastinate (autodiscovered).

``noop`` does nothing. ``stamp`` records when it started (wall clock, in Redis), which
is how the latency benchmark sees a job start on every peer alike.
"""

import os
import time

import redis
from django.conf import settings
from django_tasks import task

STAMPS = redis.Redis.from_url(
    os.environ.get("BENCH_STAMP_REDIS", "redis://127.0.0.1:6379/14")
)


@task()
def noop() -> None:
    return None


@task()
def stamp(token: str) -> None:
    STAMPS.hset("bench:started", token, repr(time.time()))


if "procrastinate.contrib.django" in settings.INSTALLED_APPS:
    from procrastinate.contrib.django import app

    @app.task(name="noop")
    def procrastinate_noop() -> None:
        return None

    @app.task(name="stamp")
    def procrastinate_stamp(token: str) -> None:
        STAMPS.hset("bench:started", token, repr(time.time()))
