"""Tasks written the way django-tasks documents them, for the contract tests."""

from __future__ import annotations

import time
from typing import Any

from django_tasks import TaskContext, task


@task()
def echo(value: Any = None) -> Any:
    return value


@task(takes_context=True)
def context_of(context: TaskContext) -> dict:
    result = context.task_result
    return {
        "attempt": context.attempt,
        "status": str(result.status),
        "worker_ids": result.worker_ids,
        "id": result.id,
    }


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text for this one")


@task()
def raise_unprintable() -> None:
    raise Unprintable()


@task(takes_context=True)
def fail_first(context: TaskContext) -> list:
    if context.attempt == 1:
        raise ValueError("first attempt")
    return context.task_result.worker_ids


@task()
def make(kind: str) -> object:
    return {"nan": float("nan"), "nul": "a\x00b", "inf": float("inf")}[kind]


@task(takes_context=True)
async def async_context_of(context: TaskContext, value: int) -> list:
    return [context.attempt, value]


@task()
def query_elsewhere(path: str) -> None:
    """A task reading a database of its own, one that is not there."""
    from django.db.utils import ConnectionHandler

    away = {"ENGINE": "django.db.backends.sqlite3", "NAME": path}
    other = ConnectionHandler({"default": away, "analytics": away})
    with other["analytics"].cursor() as cursor:
        cursor.execute("SELECT 1")


@task()
def nap(seconds: float) -> str:
    time.sleep(seconds)
    return "rested"


@task()
def outrun_the_statement_timeout() -> None:
    """A query of the task's own that the server stops (PostgreSQL)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SET statement_timeout = 50")
        try:
            cursor.execute("SELECT pg_sleep(2)")
        finally:
            cursor.execute("RESET statement_timeout")
