from django.db import migrations, models

ACTIVE = ("pending", "processing", "retry_pending")


def cancel_second_extractions(apps, schema_editor):
    """A document with an active extraction and an active reprocess (possible before
    this constraint) keeps one: the one running, else the older."""
    QueueItem = apps.get_model("jobqueue", "QueueItem")
    active = QueueItem.objects.filter(
        status__in=ACTIVE, operation__in=("extract", "reprocess")
    )
    kept = {}
    for pk, document_id, status in active.order_by("pk").values_list(
        "pk", "document_id", "status"
    ):
        if document_id not in kept or status == "processing":
            kept[document_id] = pk
    active.exclude(pk__in=kept.values()).update(
        status="cancelled",
        claimed_by="",
        error_message="Cancelled: the document's text was already being read.",
    )


class Migration(migrations.Migration):
    dependencies = [
        ("documents", "0007_drop_like_indexes"),
        ("jobqueue", "0006_partial_claim_indexes"),
    ]

    operations = [
        migrations.RunPython(cancel_second_extractions, migrations.RunPython.noop),
        migrations.RemoveConstraint(
            model_name="queueitem",
            name="uniq_active_item_per_document_operation",
        ),
        migrations.AddConstraint(
            model_name="queueitem",
            constraint=models.UniqueConstraint(
                models.F("document"),
                models.Case(
                    models.When(operation="reprocess", then=models.Value("extract")),
                    default=models.F("operation"),
                ),
                condition=models.Q(("status__in", ACTIVE)),
                name="uniq_active_item_per_document_work",
            ),
        ),
    ]
