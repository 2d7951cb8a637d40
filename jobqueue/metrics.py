"""Prometheus metrics of the queue, computed from the database at scrape time.

Every figure is one aggregate query (counts, a minimum, bucket sums), so a scrape costs
the same with ten jobs or ten million rows read by index; nothing is kept in process
memory, so every web process answers the same figures, whichever one is scraped.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from django.db.models import Count, Q, Sum
from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from jobqueue.models import (
    LIVENESS,
    ExtractionMetric,
    Operation,
    QueueControl,
    QueueItem,
    Status,
    WorkerHeartbeat,
)
from jobqueue.monitoring import oldest_due_seconds, paused_for
from jobqueue.sql import db_now

# Upper bounds (seconds) of the extraction-time histogram: a text file to a long scan.
DURATION_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)


class QueueCollector(Collector):
    """The queue's depth, outcomes, durations and workers, read when scraped."""

    def collect(self) -> Iterator[Metric]:
        yield self.depth()
        yield self.attempts()
        yield self.durations()
        yield self.workers()
        now = db_now()
        yield self.oldest_pending(now)
        paused = paused_for(QueueControl.current(), now)
        yield GaugeMetricFamily(
            "docqueue_paused",
            "1 while an operator has paused processing.",
            value=int(paused is not None),
        )
        yield GaugeMetricFamily(
            "docqueue_paused_seconds",
            "How long processing has been paused by an operator (0 while it runs).",
            value=paused or 0.0,
        )

    def depth(self) -> Metric:
        family = GaugeMetricFamily(
            "docqueue_jobs",
            "Queue items by state and operation.",
            labels=["status", "operation"],
        )
        counts = dict.fromkeys(
            ((s, o) for s in Status.values for o in Operation.values), 0
        )
        rows = QueueItem.objects.values_list("status", "operation").annotate(
            n=Count("id")
        )
        for status, operation, n in rows.order_by():
            counts[status, operation] = n
        for (status, operation), n in counts.items():
            family.add_metric([status, operation], n)
        return family

    def attempts(self) -> Metric:
        family = CounterMetricFamily(
            "docqueue_attempts",
            "Extraction attempts recorded, by outcome and error type (error_type is "
            "empty for completed ones). Clearing old metrics lowers it: a reset.",
            labels=["outcome", "error_type"],
        )
        rows = ExtractionMetric.objects.values_list("outcome", "error_type").annotate(
            n=Count("id")
        )
        # Completions are there from the first scrape, at 0: an alert on their rate
        # ("work waits and nothing completes") sees 0 rather than no series at all.
        counts = {(ExtractionMetric.Outcome.COMPLETED.value, ""): 0}
        counts.update(
            ((outcome, error_type), n)
            for outcome, error_type, n in rows.order_by("outcome", "error_type")
        )
        for (outcome, error_type), n in counts.items():
            family.add_metric([outcome, error_type], n)
        return family

    def durations(self) -> Metric:
        timed = ExtractionMetric.objects.filter(extraction_time_ms__isnull=False)
        sums = {
            f"le_{i}": Count("id", filter=Q(extraction_time_ms__lte=bound * 1000))
            for i, bound in enumerate(DURATION_BUCKETS)
        }
        row = timed.aggregate(total=Count("id"), ms=Sum("extraction_time_ms"), **sums)
        buckets = [
            (floatToGoString(bound), row[f"le_{i}"])
            for i, bound in enumerate(DURATION_BUCKETS)
        ]
        return HistogramMetricFamily(
            "docqueue_extraction_seconds",
            "Time each recorded attempt spent extracting.",
            buckets=[*buckets, ("+Inf", row["total"])],
            sum_value=(row["ms"] or 0) / 1000,
        )

    def workers(self) -> Metric:
        family = GaugeMetricFamily(
            "docqueue_workers",
            "Worker threads by state: alive (recent heartbeat), stale (presumed "
            "dead), stopped.",
            labels=["state"],
        )
        counts = dict(
            WorkerHeartbeat.objects.with_liveness()
            .values_list("liveness")
            .annotate(n=Count("id"))
            .order_by()
        )
        for state in LIVENESS:
            family.add_metric([state], counts.get(state, 0))
        return family

    def oldest_pending(self, now: datetime) -> Metric:
        return GaugeMetricFamily(
            "docqueue_oldest_pending_seconds",
            "How long the job waiting longest to start has waited since it was due "
            "(queued, or its retry or run_after time came); 0 when none is due.",
            value=oldest_due_seconds(now) or 0.0,
        )


def registry() -> CollectorRegistry:
    """A registry holding only the queue's metrics (not the process's defaults)."""
    found = CollectorRegistry(auto_describe=False)
    found.register(QueueCollector())
    return found
