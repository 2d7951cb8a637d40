"""Prometheus metrics of the queue, computed from the database at scrape time.

Every family is one statement reading a bounded number of rows, however long the
history: the attempts and durations add the housekeeping's totals to the metrics rows
of the last minutes, the depth its count of finished items to the active ones and
those queued since. Nothing is kept in process memory, so every web process answers
the same figures, whichever one is scraped.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from datetime import datetime
from itertools import accumulate

from django.db.models import (
    BigIntegerField,
    Count,
    Exists,
    Expression,
    Model,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.functions import Coalesce
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
    DURATION_BUCKETS,
    LIVENESS,
    UNTIMED,
    ExtractionMetric,
    FinishedCount,
    MetricsFold,
    MetricTotal,
    Operation,
    QueueControl,
    QueueItem,
    Status,
    WorkerHeartbeat,
    attempt_totals,
)
from jobqueue.monitoring import oldest_due_seconds, paused_for
from jobqueue.sql import DbNow, db_now

# A count of finished items older than this (no worker's housekeeping has run since:
# a deployment driven by cron, or every worker stopped) is not used: a scrape counts
# them all itself, as exact as ever.
COUNT_STALE_SECONDS = 300


def fresh_count() -> QuerySet:
    """``MetricsFold``'s row if the housekeeping counted the finished items
    (``FinishedCount``) within ``COUNT_STALE_SECONDS``; none otherwise."""
    return MetricsFold.objects.filter(pk=1, counted_at__gte=DbNow(-COUNT_STALE_SECONDS))


class QueueCollector(Collector):
    """The queue's depth, outcomes, durations and workers, read when scraped."""

    def collect(self) -> Iterator[Metric]:
        yield self.depth()
        yield from self.attempts_and_durations()
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
        """Items by state and operation in one statement (one snapshot): the
        active ones, and the finished ones as the housekeeping counted them within
        ``COUNT_STALE_SECONDS`` plus those of ids above its count (the last
        minute's); without such a count, every finished item."""
        family = GaugeMetricFamily(
            "docqueue_jobs",
            "Queue items by state and operation.",
            labels=["status", "operation"],
        )
        fresh = fresh_count()
        counted = FinishedCount.objects.filter(Exists(fresh)).values_list(
            "status", "operation", "items"
        )
        # The finished items above the count's last id, read by id; every active
        # one, off the status index.
        through = Coalesce(
            Subquery(fresh.values("counted_through")), 0, output_field=BigIntegerField()
        )
        since = QueueItem.objects.finished().filter(ids_above(QueueItem, through))
        counts = dict.fromkeys(
            ((s, o) for s in Status.values for o in Operation.values), 0
        )
        rows = counted.order_by().union(
            *(
                part.values_list("status", "operation")
                .annotate(n=Count("id"))
                .order_by()
                for part in (QueueItem.objects.active(), since)
            ),
            all=True,
        )
        for status, operation, n in rows:
            counts[status, operation] = counts.get((status, operation), 0) + n
        for (status, operation), n in counts.items():
            family.add_metric([status, operation], n)
        return family

    def attempts_and_durations(self) -> tuple[Metric, Metric]:
        """The attempts counter and the extraction-time histogram, from the folded
        totals plus the metrics rows above the watermark: one statement (one
        snapshot, so a fold committing meanwhile is seen whole or not at all)
        reading a few rows whatever the history."""
        through = Coalesce(
            Subquery(MetricsFold.objects.filter(pk=1).values("folded_through")),
            0,
            output_field=BigIntegerField(),
        )
        recent = attempt_totals(
            ExtractionMetric.objects.filter(ids_above(ExtractionMetric, through))
        )
        folded = MetricTotal.objects.values_list(
            "outcome", "error_type", "duration_bucket", "attempts", "extraction_ms"
        ).order_by()
        # Completions are there from the first scrape, at 0: an alert on their rate
        # ("work waits and nothing completes") sees 0 rather than no series at all.
        counts = {(ExtractionMetric.Outcome.COMPLETED.value, ""): 0}
        in_bucket = [0] * (len(DURATION_BUCKETS) + 1)
        total_ms = 0
        for outcome, error_type, bucket, n, ms in folded.union(recent, all=True):
            counts[outcome, error_type] = counts.get((outcome, error_type), 0) + n
            if bucket != UNTIMED:
                in_bucket[bisect_left(DURATION_BUCKETS, float(bucket))] += n
                total_ms += ms or 0
        attempts = CounterMetricFamily(
            "docqueue_attempts",
            "Extraction attempts recorded, by outcome and error type (error_type is "
            "empty for completed ones).",
            labels=["outcome", "error_type"],
        )
        for key in sorted(counts):
            attempts.add_metric(list(key), counts[key])
        bounds = [*map(floatToGoString, DURATION_BUCKETS), "+Inf"]
        durations = HistogramMetricFamily(
            "docqueue_extraction_seconds",
            "Time each recorded attempt spent extracting.",
            buckets=list(zip(bounds, accumulate(in_bucket), strict=True)),
            sum_value=total_ms / 1000,
        )
        return attempts, durations

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


def ids_above(model: type[Model], through: Expression) -> Q:
    """Rows of ids above ``through``, up to the newest: with both bounds unknown
    when it plans, PostgreSQL takes the range for 0.5 % of the table, where one
    bound alone is a third of it (and a parallel scan for the last minutes' rows)."""
    newest = model.objects.order_by("-pk").values("pk")[:1]
    return Q(pk__gt=through, pk__lte=Subquery(newest))


def registry() -> CollectorRegistry:
    """A registry holding only the queue's metrics (not the process's defaults)."""
    found = CollectorRegistry(auto_describe=False)
    found.register(QueueCollector())
    return found
