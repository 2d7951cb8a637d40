"""Timing the product's pages in a child process where Django is set up: shared by
the scale benchmarks (staff_scale, operator_scale, people_scale)."""

from __future__ import annotations

import time
from typing import Any


def time_requests(
    client: Any, path: str, repeat: int, data: dict | None = None
) -> tuple[list[float], list[dict], int]:
    """``repeat`` timed requests of ``path`` (GET, or POST of ``data``) after one
    untimed that warms the caches: the times in ms, the statements of the last
    request (Django's captured queries), and its status code."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    times = []
    for attempt in range(repeat + 1):
        with CaptureQueriesContext(connection) as captured:
            start = time.perf_counter()
            if data is None:
                response = client.get(path, secure=True)
            else:
                response = client.post(path, data, secure=True)
            if hasattr(response, "streaming_content"):
                b"".join(response.streaming_content)
            elapsed = (time.perf_counter() - start) * 1000
        if attempt:
            times.append(elapsed)
    return times, captured.captured_queries, response.status_code


def plan(sql: str) -> str:
    """A query's plan (ANALYZE on PostgreSQL), one line a step."""
    from django.db import connection

    if not sql.lstrip().upper().startswith(("SELECT", "WITH")):
        return "(not a query)"
    prefix = (
        "EXPLAIN (ANALYZE, BUFFERS) "
        if connection.vendor == "postgresql"
        else "EXPLAIN QUERY PLAN "
    )
    with connection.cursor() as cursor:
        try:
            cursor.execute(prefix + sql)
        except Exception as error:  # noqa: BLE001 - a plan is a nicety
            return f"(no plan: {error})"
        return "\n".join(str(row[-1]) for row in cursor.fetchall())
