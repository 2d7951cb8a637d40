"""Pages listing many documents never load the ``text`` column: only the detail page
reads its beginning (a bounded slice), and the .txt download reads all of it."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from documents.models import Document
from jobqueue.models import ExtractionMetric, QueueItem, Status

pytestmark = pytest.mark.django_db

BIG_TEXT = "needle " + "x" * 300_000
# A column reference to the document's text, however the query spells it.
TEXT_COLUMN = re.compile(r'("documents_document"\."text"|\bd\.text\b)', re.IGNORECASE)
# Functions that read a bounded slice of the text.
BOUNDED = re.compile(r"\b(SUBSTR|SUBSTRING|LEFT|LENGTH|CHAR_LENGTH)\(", re.IGNORECASE)


def full_text_reads(queries: list[dict]) -> list[str]:
    """Queries that name the text column outside a bounded slice or a length."""
    found = []
    for query in queries:
        sql = query["sql"]
        for match in TEXT_COLUMN.finditer(sql):
            before = sql[: match.start()]
            if not BOUNDED.search(before[-40:]):
                found.append(sql)
                break
    return found


@pytest.fixture
def world(user, make_document, django_user_model):
    document = make_document(b"needle\n", "needle.txt")
    Document.objects.filter(pk=document.pk).update(
        text=BIG_TEXT, status=Status.COMPLETED
    )
    job = QueueItem.objects.create(document=document, status=Status.FAILED)
    ExtractionMetric.objects.create(job=job, document=document, outcome="failed")
    return document


PEOPLE_PAGES = [
    "/documents/",
    "/documents/?status=completed&sort=name",
    "/documents/search/?q=needle",
    "/documents/search/?q=need*",
    "/documents/status/?id={pk}",
    "/documents/{pk}/status/",
    "/api/documents/",
]
ADMIN_PAGES = [
    "/admin/documents/document/",
    "/admin/documents/document/?q=needle",
    "/admin/jobqueue/queueitem/",
    "/admin/jobqueue/queueitem/{job}/change/",
    "/admin/jobqueue/extractionmetric/",
    "/admin/jobqueue/queueitem/dashboard/",
]


@pytest.mark.parametrize("url", PEOPLE_PAGES + ADMIN_PAGES)
def test_lists_never_load_the_text(world, user, django_user_model, url):
    client = Client()
    if url.startswith("/admin/"):
        client.force_login(django_user_model.objects.create_superuser("root"))
    else:
        client.force_login(user)
    url = url.format(pk=world.pk, job=QueueItem.objects.get().pk)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    assert not full_text_reads(queries.captured_queries)


def test_detail_page_reads_only_the_beginning_and_links_the_full_text(
    world, user_client
):
    with CaptureQueriesContext(connection) as queries:
        page = user_client.get(f"/documents/{world.pk}/")
    assert not full_text_reads(queries.captured_queries)
    html = page.content.decode()
    assert "needle" in html
    assert len(html) < len(BIG_TEXT)
    assert f"/documents/{world.pk}/text/" in html
    download = user_client.get(f"/documents/{world.pk}/text/")
    assert download["Content-Type"] == "text/plain; charset=utf-8"
    assert 'filename="needle.txt"' in download["Content-Disposition"]
    assert download.content.decode() == BIG_TEXT


def test_the_checker_sees_a_full_text_read(world, user):
    with CaptureQueriesContext(connection) as queries:
        list(Document.objects.all())
    assert full_text_reads(queries.captured_queries)
