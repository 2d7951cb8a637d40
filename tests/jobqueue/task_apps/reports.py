"""Another app's tasks (the tests' 'reports' app), on the ``reports`` queue."""

import asyncio
import time
import uuid
from pathlib import Path

from django_tasks import task


@task(queue_name="reports")
def total(numbers: list[int]) -> int:
    return sum(numbers)


@task(queue_name="reports", priority=10)
async def slow_total(numbers: list[int]) -> int:
    await asyncio.sleep(0)
    return sum(numbers)


@task(queue_name="reports")
def logged(name: str, directory: str) -> str:
    """Takes a moment, then leaves an empty file ``name.<random>`` in ``directory``:
    how often it ran (an empty file: it still runs where no file may grow)."""
    time.sleep(0.1)
    (Path(directory) / f"{name}.{uuid.uuid4().hex}").touch()
    return name
