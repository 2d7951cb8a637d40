"""Upgrades (an outside audit): a database of the oldest release's schema keeps its
documents, jobs and API tokens through ``migrate``; migrating back stops with an error
where the old schema cannot hold what the queue stored since, changing nothing more;
the README's upgrade steps name what an upgrade needs."""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command, get_commands
from django.db import IntegrityError, connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from documents.models import Document
from documents.search import search_documents
from jobqueue.models import QueueItem, Status

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()
# The first release whose queue ran documents (c1bfc90): its two apps' last migrations.
OLDEST = [("documents", "0002_search_index"), ("jobqueue", "0001_initial")]
DRF_KEY = "0123456789abcdef0123456789abcdef01234567"  # 40 hex, as DRF made them


def leaves() -> list[tuple[str, str]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def migrate(targets: list[tuple[str, str]]):
    """Migrate the test database to ``targets``; the apps of that state."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_a_database_of_the_oldest_release_keeps_documents_jobs_and_tokens(
    django_user_model,
):
    newest = leaves()
    old = migrate(OLDEST)
    try:
        alice = django_user_model.objects.create_user("alice", password="pw-alice-1")
        OldDocument = old.get_model("documents", "Document")  # noqa: N806
        OldItem = old.get_model("jobqueue", "QueueItem")  # noqa: N806

        def document(name: str, text: str, status: str):
            return OldDocument.objects.create(
                owner_id=alice.pk,
                original_filename=name,
                file=f"documents/{name}",
                mime_type="text/plain",
                size=len(text),
                sha256=name.ljust(64, "0"),
                status=status,
                text=text,
            )

        read = document("read.txt", "Notes about the okapi", "completed")
        waiting = document("waiting.txt", "", "pending")
        retrying = document("retrying.txt", "", "retry_pending")
        OldItem.objects.create(document_id=read.pk, status="completed", attempts=1)
        extract = OldItem.objects.create(document_id=waiting.pk, status="pending")
        # Two active jobs of one document's text, which that release allowed.
        second = OldItem.objects.create(
            document_id=waiting.pk, operation="reprocess", status="pending"
        )
        retry = OldItem.objects.create(
            document_id=retrying.pk, status="retry_pending", attempts=1, max_retries=3
        )
        with connection.cursor() as cursor:
            cursor.execute(
                "CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY,"
                " created timestamp NULL, user_id integer NOT NULL)"
            )
            cursor.execute(
                "INSERT INTO authtoken_token (key, user_id) VALUES (%s, %s)",
                [DRF_KEY, alice.pk],
            )
    finally:
        migrate(newest)

    assert Document.objects.get(pk=read.pk).text == "Notes about the okapi"
    assert [h.document.pk for h in search_documents(alice, "okapi")] == [read.pk]
    jobs = {item.pk: item for item in QueueItem.objects.all()}
    assert len(jobs) == 4
    assert (jobs[extract.pk].status, jobs[extract.pk].attempts) == (Status.PENDING, 0)
    assert jobs[second.pk].status == Status.CANCELLED  # the extraction does its work
    assert (jobs[retry.pk].status, jobs[retry.pk].attempts) == (Status.RETRY_PENDING, 1)
    assert "authtoken_token" not in connection.introspection.table_names()
    answer = Client().get("/api/documents/", HTTP_AUTHORIZATION=f"Token {DRF_KEY}")
    assert answer.status_code == 200
    assert answer.json()["count"] == 3


@pytest.mark.django_db(transaction=True)
def test_migrating_back_past_generic_jobs_with_a_task_stops_and_keeps_the_task():
    newest = leaves()
    task = QueueItem.objects.create(operation="task", payload={"x": 1})
    try:
        with pytest.raises(IntegrityError):
            MigrationExecutor(connection).migrate(
                [("jobqueue", "0003_progress_and_details")]
            )
        applied = MigrationExecutor(connection).loader.applied_migrations
        assert ("jobqueue", "0004_generic_jobs") in applied
        assert QueueItem.objects.get(pk=task.pk).payload == {"x": 1}
    finally:
        MigrationExecutor(connection).migrate(newest)


def upgrades() -> str:
    assert "**Upgrades.**" in README
    return " ".join(README.split("**Upgrades.**", 1)[1].split("\n\n", 1)[0].split())


def test_the_readme_upgrade_steps_back_up_first_and_name_the_way_back():
    text = upgrades()
    assert text.index("Back up") < text.index("manage.py migrate")
    assert "migrate --plan" in text  # whether gunicorn must stop too
    assert "make_thumbnails" in text  # documents read before thumbnails
    assert "**Going back.**" in README
    back = README.split("**Going back.**", 1)[1].split("\n\n", 1)[0]
    assert "Restore the backup" in back


def test_the_commands_the_readme_upgrade_steps_name_exist():
    text = upgrades()
    named = set(re.findall(r"manage\.py (\w+)", text))
    assert {"pause_queue", "resume_queue", "migrate"} <= named
    assert named <= set(get_commands())


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="a GIN index option")
def test_a_search_index_built_by_the_first_0008_loses_its_pending_list():
    # 0008 as it first ran (6fb598c) built the index with a pending list.
    newest = leaves()
    with connection.cursor() as cursor:
        cursor.execute("ALTER INDEX documents_search_vector_gin SET (fastupdate = on)")
    migrate([("documents", "0012_name_grams")])
    migrate(newest)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT reloptions FROM pg_class WHERE relname = 'documents_search_vector_gin'"
        )
        assert cursor.fetchone()[0] == ["fastupdate=off"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("args", [["--once"], []], ids=["once", "pool"])
def test_workers_started_before_migrate_say_to_run_it(args):
    newest = leaves()
    migrate(OLDEST)
    try:
        with pytest.raises(CommandError) as refused:
            call_command("process_queue", *args, "--workers", "1", stdout=StringIO())
    finally:
        migrate(newest)
    assert refused.value.returncode == 1
    assert "migrations behind this release" in str(refused.value)
    assert "run manage.py migrate first" in str(refused.value)
