"""One app's tasks (the tests' 'mail' app), on the ``mail`` queue."""

import time

from django_tasks import task

from jobqueue.models import QueueItem


@task(queue_name="mail")
def send(to: str) -> dict:
    # The worker has Django: tasks may use the ORM.
    return {"to": to, "queued": QueueItem.objects.count()}


@task(queue_name="mail", takes_context=True)
def flaky(context, fail_until: int) -> int:
    """Fails until its attempt number reaches ``fail_until``."""
    if context.attempt < fail_until:
        raise ValueError(f"attempt {context.attempt} failed")
    return context.attempt


@task(queue_name="mail", takes_context=True)
def stall_once(context, seconds: float) -> int:
    """Its first attempt takes ``seconds``; the next ones return at once."""
    if context.attempt == 1:
        time.sleep(seconds)
    return context.attempt
