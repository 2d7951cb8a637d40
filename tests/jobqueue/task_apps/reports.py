"""Another app's tasks (the tests' 'reports' app), on the ``reports`` queue."""

import asyncio

from django_tasks import task


@task(queue_name="reports")
def total(numbers: list[int]) -> int:
    return sum(numbers)


@task(queue_name="reports", priority=10)
async def slow_total(numbers: list[int]) -> int:
    await asyncio.sleep(0)
    return sum(numbers)
