"""Tasks for test_tasks_upstream14: django-tasks' own test tasks (tests/tasks.py of
django-tasks 0.12.0 and django-tasks-db) that the earlier ports left out."""

from __future__ import annotations

from typing import Any

from django_tasks import TaskContext, task


@task()
def noop(*args: Any, **kwargs: Any) -> None:
    return None


@task()
def failing_task_system_exit() -> None:
    raise SystemExit("This task failed due to SystemExit")


@task()
def failing_task_keyboard_interrupt() -> None:
    raise KeyboardInterrupt("This task failed due to KeyboardInterrupt")


@task()
def failing_value_error() -> None:
    raise ValueError("This task failed due to ValueError")


@task(takes_context=True)
def context_snapshot(context: TaskContext, *args: Any, **kwargs: Any) -> dict:
    result = context.task_result
    return {
        "status": str(result.status),
        "attempts": result.attempts,
        "started": result.started_at is not None,
        "last_attempted": result.last_attempted_at is not None,
        "finished": result.finished_at is not None,
        "enqueued": result.enqueued_at is not None,
        "args": result.args,
        "kwargs": result.kwargs,
        "backend": result.backend,
        "queue_name": result.task.queue_name,
        "priority": result.task.priority,
    }


@task(takes_context=True)
def fail_once(context: TaskContext) -> int:
    if context.attempt == 1:
        raise ValueError("first attempt")
    return context.attempt


@task()
def chain(depth: int) -> int:
    if depth > 0:
        chain.enqueue(depth - 1)
    return depth


@task()
def shape(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            "keys": list(value),
            "types": [type(v).__name__ for v in value.values()],
        }
    return type(value).__name__


@task()
async def async_keyboard_interrupt() -> None:
    raise KeyboardInterrupt("This task failed due to KeyboardInterrupt")


@task()
async def async_system_exit() -> None:
    raise SystemExit("This task failed due to SystemExit")


@task()
async def async_count_tasks() -> int:
    from jobqueue.models import Operation, QueueItem

    return await QueueItem.objects.filter(operation=Operation.TASK).acount()


@task()
def sleep_for(seconds: float, path: str) -> None:
    import os
    import time

    time.sleep(seconds)
    # One line a run, whatever process runs it: a task run twice shows twice.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, f"{os.getpid()}\n".encode())
    finally:
        os.close(fd)


@task()
def wait_for_file(path: str) -> str:
    """Run until ``path`` exists (at most a minute): a task the test ends."""
    import os
    import time

    deadline = time.monotonic() + 60
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.02)
    return "done"


@task()
def close_connections(how: str) -> str:
    from django import db

    if how == "close":
        db.connection.close()
    elif how == "close_all":
        db.connections.close_all()
    else:
        db.close_old_connections()
    return how


@task()
async def async_fan_out(count: int) -> list[str]:
    ids = []
    for n in range(count):
        result = await noop.aenqueue(n)
        again = await noop.aget_result(result.id)
        ids.append(again.id)
    return ids
