"""How many SQL statements one claim and one completion cost: a regression to chatty
ORM paths fails here. Counted with transactions real (BEGIN/COMMIT included where
the backend sends them as statements)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobqueue.models import Operation
from jobqueue.services import QueueManager

pytestmark = pytest.mark.django_db(transaction=True)

# (claim, completion) per database, BEGIN and COMMIT included: for a task (no
# subject), and for a document, whose status follows its job in the same transaction.
# SQLite: promote + claim, complete + metrics row, and for a document one UPDATE of its
# status; PostgreSQL: one statement each (data-modifying CTEs write the metrics row
# and the document's status too).
EXPECTED = {
    "sqlite": {"task": (4, 4), "document": (5, 5)},
    "postgresql": {"task": (3, 3), "document": (3, 3)},
}


def count(action) -> int:
    with CaptureQueriesContext(connection) as queries:
        action()
    return len(queries)


def test_statements_per_claim_and_completion(make_document):
    queue = QueueManager()
    queue.enqueue_job(Operation.TASK, payload={"task": "x", "backend": "default"})
    queue.enqueue(make_document(b"some text").pk)  # newer, so claimed second
    figures = {}
    for kind in ("task", "document"):
        item = None

        def claim():
            nonlocal item
            item = queue.claim("w1")

        claimed = count(claim)
        completed = count(
            lambda: queue.complete(item.pk, 5, worker_id="w1", attempt=1)  # noqa: B023
        )
        figures[kind] = (claimed, completed)
    assert figures == EXPECTED[connection.vendor]
