"""What /metrics reads, bounded however long the history: totals of
extraction_metrics folded up to a watermark (beside the last minutes' rows), and
counts of finished queue items (beside the active ones and those queued since); and a
partial index of failed items for the dashboard's latest failures."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobqueue", "0008_sqlite_datetime_on_postgresql"),
    ]

    operations = [
        migrations.CreateModel(
            name="FinishedCount",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True,
                        primary_key=True,
                        serialize=False,
                        verbose_name="ID",
                    ),
                ),
                ("status", models.CharField(max_length=16)),
                ("operation", models.CharField(max_length=16)),
                ("items", models.PositiveBigIntegerField(default=0)),
            ],
            options={
                "db_table": "extraction_queue_finished_counts",
            },
        ),
        migrations.CreateModel(
            name="MetricsFold",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True,
                        primary_key=True,
                        serialize=False,
                        verbose_name="ID",
                    ),
                ),
                ("folded_through", models.BigIntegerField(default=0)),
                ("folded_at", models.DateTimeField(blank=True, null=True)),
                ("counted_through", models.BigIntegerField(default=0)),
                ("counted_at", models.DateTimeField(blank=True, null=True)),
            ],
            options={
                "db_table": "extraction_metrics_fold",
            },
        ),
        migrations.CreateModel(
            name="MetricTotal",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True,
                        primary_key=True,
                        serialize=False,
                        verbose_name="ID",
                    ),
                ),
                ("outcome", models.CharField(max_length=16)),
                ("error_type", models.CharField(blank=True, max_length=32)),
                ("duration_bucket", models.CharField(blank=True, max_length=16)),
                ("attempts", models.PositiveBigIntegerField(default=0)),
                ("extraction_ms", models.PositiveBigIntegerField(default=0)),
            ],
            options={
                "db_table": "extraction_metric_totals",
            },
        ),
        migrations.AddIndex(
            model_name="queueitem",
            index=models.Index(
                condition=models.Q(("status", "failed")),
                fields=["finished_at", "id"],
                name="idx_queue_failed_recent",
            ),
        ),
        migrations.AddConstraint(
            model_name="metrictotal",
            constraint=models.UniqueConstraint(
                fields=("outcome", "error_type", "duration_bucket"),
                name="uniq_metric_total",
            ),
        ),
    ]
