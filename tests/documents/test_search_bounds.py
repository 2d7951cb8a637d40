"""Search is bounded whatever it is given: a one-letter prefix over a 49 MB document
answers at once ("too broad" or results), a runaway query is stopped by the product's
own time limit (PostgreSQL's statement timeout, SQLite's progress handler), and results
come a page at a time, filters combined with the query."""

from __future__ import annotations

import pytest
from django.db import connection, connections
from django.urls import reverse

from documents import api, search
from documents.search import SearchTooBroad, search_documents
from jobqueue.models import Status
from tests.documents.test_search import make_text_document, names

pytestmark = pytest.mark.django_db


def big_text(megabytes: int = 49) -> str:
    """``megabytes`` of words, most of them starting with "a", all different-ish."""
    block = " ".join(f"a{n:x} b{n % 97} alpha" for n in range(20_000)) + "\n"
    return "needle at the start. " + block * (megabytes * 1024 * 1024 // len(block))


@pytest.fixture
def huge(user):
    return make_text_document(user, "huge.txt", big_text())


def test_one_letter_prefix_over_49_mb_is_refused_at_once(user_client, user, huge):
    with pytest.raises(SearchTooBroad, match="at least 2 letters"):
        search_documents(user, "a*")
    response = user_client.get(reverse("documents:search"), {"q": "a*"})
    assert response.status_code == 400
    assert "at least 2 letters" in response.content.decode()


def test_a_broad_prefix_over_49_mb_answers_or_says_too_broad(settings, user, huge):
    settings.SEARCH_MIN_PREFIX_CHARS = 1
    # With the product's default limit: an answer, or "too broad"; never a hang.
    try:
        hits = search_documents(user, "a*")
    except SearchTooBroad as error:
        assert "too broad" in str(error)
    else:
        assert names(hits) == ["huge.txt"]
        assert "<mark>" in hits[0].snippet_html


@pytest.mark.django_db(transaction=True)
def test_runaway_search_is_stopped_by_the_products_time_limit(settings, user, huge):
    """The product's own abort ends the search: SQLite's progress handler cuts the
    49 MB prefix query at 1 ms; PostgreSQL's statement timeout cuts a search that
    waits on a table another connection has locked."""
    settings.SEARCH_MIN_PREFIX_CHARS = 1
    locker = None
    if connection.vendor == "postgresql":
        settings.SEARCH_TIMEOUT_SECONDS = 0.2
        locker = connections.create_connection("default")
        locker.set_autocommit(False)
        locker.cursor().execute(
            "LOCK TABLE documents_document IN ACCESS EXCLUSIVE MODE"
        )
    else:
        settings.SEARCH_TIMEOUT_SECONDS = 0.001
    try:
        with pytest.raises(SearchTooBroad, match="too broad"):
            search_documents(user, "a*")
    finally:
        if locker is not None:
            locker.rollback()
            locker.close()
    # The connection is clean afterwards: no handler, no timeout, no broken transaction.
    settings.SEARCH_TIMEOUT_SECONDS = 2.0
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
    assert names(search_documents(user, "needle")) == ["huge.txt"]


def test_snippet_of_a_huge_document_is_cut_from_its_beginning(user, huge):
    (hit,) = search_documents(user, "needle")
    assert "<mark>needle</mark>" in hit.snippet_html
    assert len(hit.snippet_html) < 1000


@pytest.fixture
def many(user):
    for i in range(45):
        make_text_document(
            user,
            f"doc-{i:02}.{'pdf' if i % 3 == 0 else 'txt'}",
            f"common words number {i}",
            mime_type="application/pdf" if i % 3 == 0 else "text/plain",
            status=Status.FAILED if i % 5 == 0 else Status.COMPLETED,
        )


def test_results_come_a_page_at_a_time(user_client, many):
    url = reverse("documents:search")
    seen = []
    for page in (1, 2, 3):
        response = user_client.get(url, {"q": "common", "page": page})
        assert response.status_code == 200
        hits = response.context["hits"]
        seen += [hit.document.pk for hit in hits]
        assert response.context["has_next"] == (page < 3)
    assert len(seen) == len(set(seen)) == 45
    body = user_client.get(url, {"q": "common", "page": 2}).content.decode()
    assert "Results 21–40" in body
    assert 'rel="next"' in body and 'rel="prev"' in body
    for bad in ("abc", "-1", "0", "99999999999999999999", "1.5"):
        response = user_client.get(url, {"q": "common", "page": bad})
        assert response.status_code == 200
    assert user_client.get(url, {"q": "common", "page": "9999"}).context["page"] == 50


def test_filters_combine_with_the_query(user, user_client, many):
    pdfs = search_documents(user, "common", limit=50, mime_type="application/pdf")
    assert len(pdfs) == 15
    failed_pdfs = search_documents(
        user, "common", limit=50, mime_type="application/pdf", status="failed"
    )
    assert {h.document.original_filename for h in failed_pdfs} == {
        f"doc-{i:02}.pdf" for i in range(0, 45, 15)
    }
    response = user_client.get(
        reverse("documents:search"),
        {"q": "common", "status": "failed", "type": "application/pdf"},
    )
    assert len(response.context["hits"]) == 3
    response = user_client.get(
        reverse("documents:search"), {"q": "common", "status": "failed", "type": "pdf"}
    )
    assert len(response.context["hits"]) == 3
    # Unknown filter values are ignored, not errors.
    response = user_client.get(
        reverse("documents:search"), {"q": "common", "status": "x", "type": "y/z"}
    )
    assert len(response.context["hits"]) == 20


def test_postgres_ranks_the_newest_matches_of_a_broad_query(monkeypatch, user, many):
    """PostgreSQL ranks at most POSTGRES_MAX_RANKED matches (the newest): ranking
    reads each whole tsvector. SQLite's bm25 reads only the index and ranks all."""
    monkeypatch.setattr(search, "POSTGRES_MAX_RANKED", 10)
    hits = search_documents(user, "common", limit=50)
    if connection.vendor == "postgresql":
        assert sorted(h.document.original_filename for h in hits) == sorted(
            f"doc-{i:02}.{'pdf' if i % 3 == 0 else 'txt'}" for i in range(35, 45)
        )
    else:
        assert len(hits) == 45


def test_the_api_answers_a_page_past_the_end_as_its_list_does(user_client, many):
    # The list said 404 "Invalid page." past its last page; a search said 200 with
    # no results. Both now say 404, naming the page.
    url = "/api/documents/"
    last = user_client.get(url, {"q": "common", "page": 3})
    assert last.status_code == 200
    assert len(last.json()["results"]) == 5 and last.json()["next"] is None
    for query in ({"page": 4}, {"q": "common", "page": 4}, {"q": "-common", "page": 2}):
        response = user_client.get(url, query)
        assert response.status_code == 404, query
        message = response.json()["error"]["message"]
        assert message.startswith(f"There is no page {query['page']}")
    for bad in ("0", "abc"):
        for query in ({"page": bad}, {"q": "common", "page": bad}):
            response = user_client.get(url, query)
            assert response.status_code == 400
            assert list(response.json()["error"]["fields"]) == ["page"]
    # A first page with nothing on it is an empty page, with or without ?q=.
    empty = user_client.get(url, {"q": "nowhere"})
    assert (empty.status_code, empty.json()["results"]) == (200, [])


def test_the_api_offers_no_next_page_beyond_the_deepest_search(
    monkeypatch, user_client, many
):
    monkeypatch.setattr(search, "MAX_OFFSET", 20)
    monkeypatch.setattr(api, "MAX_OFFSET", 20)
    first = user_client.get("/api/documents/", {"q": "common", "page_size": 20})
    second = user_client.get(first.json()["next"]).json()
    assert len(second["results"]) == 20
    # Page 3 starts beyond the deepest offset a search reads: no link to a 404.
    assert second["next"] is None


def test_the_search_page_past_the_end_answers_as_the_list_does(user_client, many):
    """The web list (Django's Paginator.get_page) answers 200 past its last page; the
    search page says "No more results", 200 too, with a way back."""
    listing = user_client.get(reverse("documents:list"), {"page": 99})
    search_page = user_client.get(
        reverse("documents:search"), {"q": "common", "page": 4}
    )
    assert listing.status_code == search_page.status_code == 200
    body = search_page.content.decode()
    assert "No more results" in body and 'rel="prev"' in body
