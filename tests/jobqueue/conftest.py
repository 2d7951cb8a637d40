"""Fixtures of the queue's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django_tasks.signals import task_finished


@pytest.fixture
def finished() -> Iterator[list]:
    """The results ``task_finished`` announces during the test."""
    received = []

    def on_finished(sender, task_result, **kwargs):
        received.append(task_result)

    task_finished.connect(on_finished)
    yield received
    task_finished.disconnect(on_finished)
