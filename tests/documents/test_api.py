"""The API's list (pages, filters, search), DELETE, and its schema and docs page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from django.contrib.staticfiles import finders
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from documents.models import Document, Tag
from jobqueue.models import ExtractionMetric, QueueItem, Status
from tests.conftest import grant_operator, may_delete_documents
from tests.documents.test_api_errors import assert_error
from tests.documents.test_text_not_loaded import full_text_reads

pytestmark = pytest.mark.django_db

API_URL = "/api/documents/"
PDF = "application/pdf"


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def api(user) -> Client:
    return logged_in(user)


def ids(response) -> list[int]:
    assert response.status_code == 200, response.content[:300]
    return [d["id"] for d in response.json()["results"]]


# --- The list ------------------------------------------------------------------------


def test_the_list_is_paged_newest_first(api, make_document, other_user):
    made = [make_document(name=f"{n}.txt") for n in range(25)]
    make_document(name="theirs.txt", owner=other_user)
    first = api.get(API_URL, {"page_size": 10}).json()
    assert first["count"] == 25
    assert [d["id"] for d in first["results"]] == [d.pk for d in made[::-1][:10]]
    assert first["previous"] is None
    assert "text" not in first["results"][0]
    last = api.get(first["next"]).json()
    last = api.get(last["next"]).json()
    assert [d["id"] for d in last["results"]] == [d.pk for d in made[:5][::-1]]
    assert last["next"] is None and "page=2" in last["previous"]
    assert (last["results"][0]["title"], last["results"][0]["tags"]) == ("", [])
    assert len(api.get(API_URL).json()["results"]) == 20  # the default page
    assert_error(api.get(API_URL, {"page": 9}), 404, "not_found")


def test_the_list_filters_by_status_and_type(api, make_document):
    pdf = make_document(name="a.pdf", mime_type=PDF)
    text = make_document(name="b.txt")
    Document.objects.filter(pk=pdf.pk).update(status=Status.FAILED)
    assert ids(api.get(API_URL, {"status": "failed"})) == [pdf.pk]
    assert ids(api.get(API_URL, {"status": "pending"})) == [text.pk]
    assert ids(api.get(API_URL, {"type": "pdf"})) == [pdf.pk]
    assert ids(api.get(API_URL, {"type": PDF})) == [pdf.pk]
    assert ids(api.get(API_URL, {"type": "pdf", "status": "pending"})) == []
    shown = api.get(f"{API_URL}{pdf.pk}/").json()
    assert (shown["type"], shown["type_label"], shown["mime_type"]) == (
        "pdf",
        "PDF",
        PDF,
    )
    error = assert_error(api.get(API_URL, {"status": "lost"}), 400, "invalid")
    assert list(error["fields"]) == ["status"]
    error = assert_error(api.get(API_URL, {"type": "exe"}), 400, "invalid")
    assert "exe" in error["fields"]["type"][0]


def test_the_list_searches_with_filters_and_pages(api, make_document, other_user):
    hits = [make_document(name=f"{n}.txt") for n in range(3)]
    miss = make_document(name="other.txt")
    theirs = make_document(name="theirs.txt", owner=other_user)
    for document in [*hits, theirs]:
        Document.objects.filter(pk=document.pk).update(text="the invoice for May")
    Document.objects.filter(pk=miss.pk).update(text="a letter")
    Document.objects.filter(pk=hits[0].pk).update(status=Status.COMPLETED)

    body = api.get(API_URL, {"q": "invoice"}).json()
    assert body["count"] is None
    assert sorted(d["id"] for d in body["results"]) == sorted(d.pk for d in hits)
    assert ids(api.get(API_URL, {"q": "invoice", "status": "completed"})) == [
        hits[0].pk
    ]
    first = api.get(API_URL, {"q": "invoice", "page_size": 2}).json()
    assert len(first["results"]) == 2 and first["previous"] is None
    second = api.get(first["next"]).json()
    assert len(second["results"]) == 1 and second["next"] is None
    assert second["previous"]
    error = assert_error(api.get(API_URL, {"q": "i*"}), 400, "invalid")
    assert "letters" in error["fields"]["q"][0]


def test_title_and_tags_come_with_each_document_in_bounded_queries(
    api, make_document, user, django_assert_num_queries
):
    for n in range(5):
        document = make_document(name=f"{n}.txt")
        tag = Tag.objects.create(owner=user, name=f"tag {n}")
        document.tags.add(tag)
        Document.objects.filter(pk=document.pk).update(title=f"Title {n}")
    # Session, user, count, page, tags: the same for 5 documents as for 500.
    with django_assert_num_queries(5):
        results = api.get(API_URL).json()["results"]
    assert [(d["title"], d["tags"]) for d in results][0] == ("Title 4", ["tag 4"])


@pytest.mark.parametrize(
    "query",
    [{}, {"status": "completed", "type": "text"}, {"q": "needle"}, {"q": "need*"}],
)
def test_the_list_never_reads_the_text(api, make_document, query):
    document = make_document(name="needle.txt")
    Document.objects.filter(pk=document.pk).update(text="needle " + "x" * 100_000)
    with CaptureQueriesContext(connection) as captured:
        response = api.get(API_URL, query)
    assert response.status_code == 200
    assert full_text_reads(captured.captured_queries) == []


# --- DELETE --------------------------------------------------------------------------


def test_delete_removes_the_document_its_file_and_jobs(
    api, make_document, media_root, django_capture_on_commit_callbacks
):
    document = make_document()
    job = QueueItem.objects.create(document=document, status=Status.FAILED)
    ExtractionMetric.objects.create(job=job, document=document, outcome="failed")
    stored = Path(media_root) / document.file.name
    assert stored.exists()
    with django_capture_on_commit_callbacks(execute=True):
        response = api.delete(f"{API_URL}{document.pk}/")
    assert response.status_code == 204 and response.content == b""
    assert not Document.objects.exists() and not QueueItem.objects.exists()
    assert not stored.exists()
    assert_error(api.delete(f"{API_URL}{document.pk}/"), 404, "not_found")


def test_delete_is_for_the_owner_or_staff_who_may_delete_documents(
    make_document, other_user, django_user_model
):
    document = make_document()
    assert_error(
        logged_in(other_user).delete(f"{API_URL}{document.pk}/"), 404, "not_found"
    )
    viewer = django_user_model.objects.create_user("viewer", is_staff=True)
    error = assert_error(
        logged_in(viewer).delete(f"{API_URL}{document.pk}/"), 403, "permission_denied"
    )
    assert "owner" in error["message"]
    assert_error(Client().delete(f"{API_URL}{document.pk}/"), 401, "not_authenticated")
    assert Document.objects.exists()
    operator = grant_operator(django_user_model.objects.create_user("op"))
    error = assert_error(
        logged_in(operator).delete(f"{API_URL}{document.pk}/"), 403, "permission_denied"
    )
    assert "staff allowed to delete documents" in error["message"]
    allowed = logged_in(may_delete_documents(operator))
    assert allowed.delete(f"{API_URL}{document.pk}").status_code == 204


def test_deleting_a_document_in_processing_refuses_the_late_result(
    api, make_document, queue
):
    document = make_document()
    queue.enqueue(document.pk)
    job = queue.claim("worker-1")
    assert job.document_id == document.pk
    assert api.delete(f"{API_URL}{document.pk}/").status_code == 204
    # The worker finishes afterwards: its result is refused, nothing reappears.
    assert not queue.complete(job.pk, extraction_time_ms=5)
    assert not queue.failed(job.pk, "late", "unknown")
    assert not Document.objects.exists() and not QueueItem.objects.exists()
    assert not ExtractionMetric.objects.exists()


# --- Title and tags -----------------------------------------------------------------


def test_the_owner_sets_title_and_tags(api, make_document, other_user, staff_user):
    document = make_document()
    url = f"{API_URL}{document.pk}/"
    response = api.patch(
        url,
        {"title": "  May  invoice ", "tags": ["Bills", "bills", "2026"]},
        content_type="application/json",
    )
    assert response.status_code == 200
    assert (response.json()["title"], response.json()["tags"]) == (
        "May invoice",
        ["2026", "Bills"],
    )
    response = api.patch(url, {"tags": []}, content_type="application/json")
    assert (response.json()["title"], response.json()["tags"]) == ("May invoice", [])
    assert not Tag.objects.exists()  # a tag no document carries goes

    error = assert_error(
        api.patch(url, {"tags": ["x" * 51]}, content_type="application/json"),
        400,
        "invalid",
    )
    assert "longer than 50" in error["fields"]["tags"][0]
    error = assert_error(
        api.patch(url, {"title": "t" * 256}, content_type="application/json"),
        400,
        "invalid",
    )
    assert list(error["fields"]) == ["title"]
    assert_error(
        logged_in(staff_user).patch(
            url, {"title": "x"}, content_type="application/json"
        ),
        403,
        "permission_denied",
    )
    assert_error(
        logged_in(other_user).patch(
            url, {"title": "x"}, content_type="application/json"
        ),
        404,
        "not_found",
    )


# --- Schema and docs -----------------------------------------------------------------


def test_the_schema_validates_and_describes_every_endpoint(tmp_path):
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    schema = yaml.safe_load(out.read_text())
    assert {path: sorted(ops) for path, ops in schema["paths"].items()} == {
        "/api/documents/": ["get", "post"],
        "/api/documents/{id}/": ["delete", "get", "patch"],
        "/api/documents/{id}/reprocess/": ["post"],
        "/api/documents/{id}/file/": ["get"],
    }
    schemes = schema["components"]["securitySchemes"]
    assert schemes["bearerAuth"] == {"type": "http", "scheme": "bearer"}
    assert schemes["tokenAuth"]["name"] == "Authorization"
    listing = schema["paths"]["/api/documents/"]["get"]
    assert {"page", "page_size", "status", "type", "q"} <= {
        p["name"] for p in listing["parameters"]
    }
    assert {"tokenAuth": []} in listing["security"]
    error = {"$ref": "#/components/schemas/Error"}
    for ops in schema["paths"].values():
        for op in ops.values():
            for code in ("401", "404", "429"):
                assert op["responses"][code]["content"]["application/json"] == {
                    "schema": error
                }
    upload = schema["paths"]["/api/documents/"]["post"]["responses"]
    assert {"202", "409", "413", "507"} <= set(upload)


def test_the_schema_is_served_as_json(client):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    assert "/api/documents/" in response.json()["paths"]


def test_the_docs_page_loads_its_files_from_here_without_inline_code(client):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "<style" not in page and "<script>" not in page
    scripts = re.findall(r'<script src="([^"]+)"', page)
    assert len(scripts) == 3
    assets = scripts[:2] + re.findall(r'<link [^>]*href="([^"]+)"', page)
    for url in assets:
        assert url.startswith("/static/"), url  # the sidecar's copy: no CDN
        assert finders.find(url.removeprefix("/static/")), url
    start = client.get(scripts[2].replace("&amp;", "&"))
    assert start.status_code == 200
    assert start["Content-Type"].startswith("application/javascript")
    assert "/api/schema/" in start.content.decode()


def test_the_uploads_answer_shows_the_document_as_the_next_read_does(api):
    # The queue stamps the row as it writes the status: the 202 shows that stamp.
    upload = api.post(
        API_URL, {"file": SimpleUploadedFile("a.txt", b"Some words.")}
    ).json()
    assert (
        api.get(f"{API_URL}{upload['id']}/").json()["updated_at"]
        == (upload["updated_at"])
    )
