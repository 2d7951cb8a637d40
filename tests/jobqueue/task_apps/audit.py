"""Tasks for the outside audit of the tasks backend (test_tasks_audit)."""

from __future__ import annotations

import threading
from typing import Any

from django_tasks import TaskContext, task

from jobqueue.tasks import QueueBackend

# Set by the test to let ``wait`` finish; ``waiting`` says it has started.
release = threading.Event()
waiting = threading.Event()


@task()
def add(a: int, b: int = 0) -> int:
    return a + b


@task()
def shaped() -> Any:
    return {"pair": (1, 2), "raw": b"bytes"}


@task()
def boom() -> None:
    raise KeyError("boom")


@task(takes_context=True)
def wait(context: TaskContext) -> str:
    waiting.set()
    release.wait(30)
    return context.task_result.id


def _hidden(value: Any = None) -> Any:
    return value


# A task whose function's own path (``_hidden``) is not the task: a worker importing
# that path finds a plain function.
aliased = task()(_hidden)


class Holder:
    # A function in a class body: no ``<locals>`` in its name, but no module-level
    # path a worker could import either.
    @task()
    def method_task() -> None:
        return None


class AuditBackend(QueueBackend):
    """This queue's backend under another class, as a project might subclass it."""
