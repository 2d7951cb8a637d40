"""Full-text search: ranking, phrases, prefixes, snippets, isolation and hostile input,
on whichever database the suite runs against (SQLite FTS5 or PostgreSQL)."""

from __future__ import annotations

import unicodedata
from functools import cache
from pathlib import Path

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from documents.extractors.registry import extract
from documents.models import Document
from documents.search import (
    MARK_END,
    MARK_START,
    SearchTooBroad,
    _searchable,
    fts5_match,
    highlight,
    parse_query,
    search_documents,
)
from jobqueue.models import Status
from tests.corpus import CORPUS_DIR, contains_snippet, load_manifest, requires_corpus

HOSTILE_QUERIES = [
    '"',
    '""',
    '"""',
    '"unbalanced',
    'quote" in the middle',
    "*",
    "**",
    "* *",
    '"*"',
    "AND",
    "OR",
    "NOT",
    "NEAR",
    "AND OR NOT",
    "invoice AND",
    "OR invoice",
    "invoice OR",
    "NOT invoice",
    "invoice NOT",
    "NEAR(invoice payment)",
    "NEAR(invoice payment, 2)",
    "invoice NEAR/2 payment",
    "(",
    ")",
    "((invoice)",
    "invoice)",
    "()",
    ":",
    "text:",
    "text:invoice",
    "original_filename:secret",
    "{text original_filename}: invoice",
    "-text:invoice",
    "^invoice",
    "+invoice",
    "-",
    "--",
    "-invoice",
    "- -invoice",
    "invoice -",
    "invoice*payment",
    "*invoice",
    "inv*oice*",
    "'",
    "''",
    "invoice's",
    "\\",
    "\\'",
    "!!invoice",
    "invoice & payment",
    "invoice | payment",
    "invoice <-> payment",
    "invoice:*",
    "invoice:A",
    "'invoice':*",
    "%",
    "_",
    "%_%",
    "; DROP TABLE documents_document; --",
    "' OR 1=1 --",
    '" OR 1=1 --',
    "\x00",
    "invoice\x00payment",
    "\u0000\u0001\u001f",
    "\ue000marked\ue001",
    "<script>alert(1)</script>",
    "&lt;",
    "ü*",
    "日本語",
    "🙂",
    "a" * 3000,
    "x " * 600,
    "word " * 40,
    '"' * 101,
    "\t\n\r",
    "   ",
]


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


LOREM = "Lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod. " * 3


def make_text_document(owner, name: str, text: str, **fields) -> Document:
    """A processed document whose text is set directly, as a worker would leave it."""
    return Document.objects.create(
        owner=owner,
        original_filename=name,
        file=f"documents/{name}",
        mime_type=fields.pop("mime_type", "text/plain"),
        size=len(text.encode()),
        sha256="0" * 64,
        status=fields.pop("status", Status.COMPLETED),
        text=text,
        **fields,
    )


def names(hits) -> list[str]:
    return [hit.document.original_filename for hit in hits]


@pytest.fixture
def library(user):
    """A small self-made corpus owned by ``user``."""
    docs = {
        "invoice": "Invoice 2024-17 for consulting. The invoice total is due in 30 days. "
        "Please pay the invoice by bank transfer; late invoices cost extra.",
        "letter": "Dear Anna, thank you for the quick brown fox story. "
        + LOREM
        + "An invoice is mentioned once.",
        "fox": "The brown quick fox jumped. Foxes are quick; the fox is brown.",
        "draft": "Draft invoice, not final. " + LOREM,
        "unicode": "Über die Brücke in Zürich. Café crème. " + LOREM,
    }
    return {
        key: make_text_document(user, f"{key}.txt", text) for key, text in docs.items()
    }


# --- parsing: pure functions -------------------------------------------------


def test_parse_plain_words_are_all_required():
    parsed = parse_query("invoice  payment")
    assert [[t.words for t in g] for g in parsed.groups] == [
        [("invoice",)],
        [("payment",)],
    ]
    assert fts5_match(parsed) == '("invoice") AND ("payment")'


def test_parse_phrase_prefix_exclusion_and_or():
    parsed = parse_query('"quick brown" inv* -draft fox OR cat')
    assert fts5_match(parsed) == (
        '(("quick brown") AND ("inv"*) AND ("fox" OR "cat")) NOT "draft"'
    )


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_fts5_expression_only_contains_quoted_words(query):
    try:
        expression = fts5_match(parse_query(query))
    except SearchTooBroad:
        return
    outside_quotes = expression.split('"')[::2]
    for fragment in outside_quotes:
        assert set(fragment) <= set(" ()*ANDORNT"), expression


def test_parse_ignores_queries_without_words():
    for query in ["", "   ", "*", '""', "-", "AND OR", "(:)", "NOT", "NOT *"]:
        assert not parse_query(query)


def test_NOT_excludes_the_next_term_as_a_minus_does():
    # "NOT" was searched for as a word: "invoice NOT draft" wanted all three.
    assert parse_query("invoice NOT draft") == parse_query("invoice -draft")
    assert parse_query('NOT "final draft" x') == parse_query('-"final draft" x')
    assert parse_query("NOT draft OR memo") == parse_query("-draft memo")
    # Only the capitalised operator, as OR; "not" is a word like any other.
    assert [t.words for g in parse_query("not draft").groups for t in g] == [
        ("not",),
        ("draft",),
    ]


def test_highlight_escapes_before_marking():
    html = highlight(f"<b>{MARK_START}x & y{MARK_END}</b> {MARK_START}dangling")
    assert html == "&lt;b&gt;<mark>x &amp; y</mark>&lt;/b&gt; dangling"


# --- search on the database ----------------------------------------------------


@pytest.mark.django_db
def test_ranks_the_most_relevant_document_first(user, library):
    hits = search_documents(user, "invoice")
    assert names(hits)[0] == "invoice.txt"
    assert {"invoice.txt", "letter.txt", "draft.txt"} <= set(names(hits))
    assert "fox.txt" not in names(hits)
    ranks = [hit.rank for hit in hits]
    assert ranks == sorted(ranks, reverse=True)


@pytest.mark.django_db
def test_file_name_matches_count(user, library):
    make_text_document(user, "quarterly-report.pdf", "Numbers and tables only.")
    assert names(search_documents(user, "quarterly")) == ["quarterly-report.pdf"]


@pytest.mark.django_db
def test_name_matches_come_first_then_the_text_decides(user):
    make_text_document(user, "budget-pending.pdf", "", status=Status.PENDING)
    make_text_document(user, "budget-2024.txt", "The budget. " + LOREM)
    make_text_document(user, "notes.txt", "budget budget budget, all about the budget")
    hits = search_documents(user, "budget")
    assert names(hits) == ["budget-2024.txt", "budget-pending.pdf", "notes.txt"]
    assert [h.rank for h in hits] == sorted((h.rank for h in hits), reverse=True)


@pytest.mark.django_db
def test_phrase_matches_exact_word_order(user, library):
    assert names(search_documents(user, '"quick brown fox"')) == ["letter.txt"]
    assert set(names(search_documents(user, "quick brown fox"))) == {
        "letter.txt",
        "fox.txt",
    }


@pytest.mark.django_db
def test_unbalanced_quote_is_a_phrase_to_the_end(user, library):
    assert names(search_documents(user, '"brown quick')) == ["fox.txt"]


@pytest.mark.django_db
def test_prefix_query(user, library):
    assert set(names(search_documents(user, "consult*"))) == {"invoice.txt"}
    assert "fox.txt" in names(search_documents(user, "foxe*"))
    assert "fox.txt" not in names(search_documents(user, "foxe"))
    assert names(search_documents(user, '"quick bro"*')) == ["letter.txt"]


@pytest.mark.django_db
def test_exclusion_and_or(user, library):
    assert "draft.txt" not in names(search_documents(user, "invoice -draft"))
    assert set(names(search_documents(user, "consulting OR foxes"))) == {
        "invoice.txt",
        "fox.txt",
    }


@pytest.mark.django_db
def test_search_is_case_insensitive_and_handles_accents(user, library):
    assert names(search_documents(user, "ZÜRICH")) == ["unicode.txt"]
    assert names(search_documents(user, "brücke")) == ["unicode.txt"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("word", "text"),
    [
        ("नमस्ते", "नमस्ते दुनिया, यह एक परीक्षण है।"),  # Hindi's vowel signs
        ("வணக்கம்", "வணக்கம் உலகம்"),  # Tamil's
        ("كِتَابٌ", "هذا كِتَابٌ جميل"),  # Arabic with its vowels
        ("שָׁלוֹם", "שָׁלוֹם עֲלֵיכֶם"),  # Hebrew with niqqud
    ],
)
def test_words_with_combining_marks_are_found_and_marked_whole(user, word, text):
    # The query was cut at each mark ("नमस" "त"): PostgreSQL, whose index holds the
    # whole word, found nothing, and the highlight marked fragments.
    make_text_document(user, "marks.txt", text)
    (hit,) = search_documents(user, word)
    assert f"<mark>{word}</mark>" in hit.snippet_html


@pytest.mark.django_db
def test_snippet_highlights_the_matched_words(user, library):
    (hit,) = search_documents(user, "consulting")
    assert "<mark>consulting</mark>" in hit.snippet_html
    (hit,) = search_documents(user, "consult*")
    assert "<mark>consulting</mark>" in hit.snippet_html


@pytest.mark.django_db
def test_snippet_is_html_safe(user):
    make_text_document(
        user,
        "evil.txt",
        'Before <script>alert("x")</script> the secret word & <b>bold</b> after.',
    )
    (hit,) = search_documents(user, "secret")
    assert "<script>" not in hit.snippet_html
    assert "<b>" not in hit.snippet_html
    assert "&lt;script&gt;" in hit.snippet_html
    assert "<mark>secret</mark>" in hit.snippet_html


@pytest.mark.django_db
def test_search_page_names_a_document_by_its_title_as_the_list_does(user_client, user):
    # It showed the file name where the list and the page show the owner's title.
    make_text_document(user, "scan0042.txt", "the lease ends", title="Flat lease")
    response = user_client.get(reverse("documents:search"), {"q": "lease"})
    hits = response.content.decode().split('class="hit__title"')[1]
    assert hits.split("</a>")[0].endswith(">Flat lease")
    assert "scan0042.txt" in hits


@pytest.mark.django_db
def test_search_page_escapes_text_and_file_name(user_client, user):
    make_text_document(
        user, "<img src=x onerror=alert(1)>.txt", "<script>pwn()</script> secret"
    )
    response = user_client.get(reverse("documents:search"), {"q": "secret"})
    assert response.status_code == 200
    body = response.content.decode()
    assert "<script>pwn" not in body
    assert "<img src=x" not in body
    # A fragment may start mid-markup (ts_headline starts at a word); it stays escaped.
    assert "pwn()&lt;/script&gt; <mark>secret</mark>" in body
    assert "&lt;img src=x onerror=alert(1)&gt;.txt" in body
    assert "<mark>secret</mark>" in body


@pytest.mark.django_db
def test_a_person_finds_only_their_own_documents(user, other_user, staff_user):
    make_text_document(user, "alice.txt", "shared zebra word")
    make_text_document(other_user, "bob.txt", "shared zebra word")
    assert names(search_documents(user, "zebra")) == ["alice.txt"]
    assert names(search_documents(other_user, "zebra")) == ["bob.txt"]
    assert set(names(search_documents(staff_user, "zebra"))) == {
        "alice.txt",
        "bob.txt",
    }


@pytest.mark.django_db
def test_search_page_is_isolated_between_users(client, other_user, user):
    make_text_document(user, "alice-secret.txt", "the alpaca password is hunter2")
    client.force_login(other_user)
    response = client.get(reverse("documents:search"), {"q": "alpaca"})
    assert response.status_code == 200
    assert b"alice-secret" not in response.content
    assert b"No results" in response.content


@pytest.mark.django_db
def test_index_follows_text_changes_and_deletes(user):
    document = make_text_document(user, "changing.txt", "original aardvark")
    assert names(search_documents(user, "aardvark")) == ["changing.txt"]
    Document.objects.filter(pk=document.pk).update(text="replaced by a platypus")
    assert search_documents(user, "aardvark") == []
    assert names(search_documents(user, "platypus")) == ["changing.txt"]
    document.delete()
    assert search_documents(user, "platypus") == []


@pytest.mark.django_db
def test_limit_is_respected(user):
    for i in range(5):
        make_text_document(user, f"many-{i}.txt", "common words here")
    assert len(search_documents(user, "common", limit=3)) == 3
    assert search_documents(user, "common", limit=0) == []


@pytest.mark.django_db
@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_hostile_queries_never_fail(user_client, user, library, query):
    response = user_client.get(reverse("documents:search"), {"q": query})
    # A NUL anywhere in an address is refused before any view (config.middleware);
    # a one-letter prefix is refused as too broad.
    assert response.status_code == (400 if "\x00" in query or query == "ü*" else 200)
    bounded_search(user, query)


def bounded_search(user, query: str) -> None:
    """A search that either answers or says it is too broad: nothing else."""
    try:
        search_documents(user, query)
    except SearchTooBroad as error:
        assert "too" in str(error)


@pytest.mark.django_db
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(query=st.text(max_size=60))
def test_any_text_is_a_valid_query(user, query):
    make_text_document(user, "h.txt", "hypothesis text with some words")
    bounded_search(user, query)


@pytest.mark.django_db
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    query=st.lists(
        st.sampled_from(
            ['"', "*", "-", "OR", "AND", "NOT", "(", ")", ":", "'", "\\", "!", "&", "|"]
            + ["<->", "word", "wo", "x.y", "a-b", " ", "NEAR", "^", "+", "{", "}"]
        ),
        max_size=12,
    ).map("".join)
)
def test_operator_soup_is_a_valid_query(user, query):
    bounded_search(user, query)


# --- the shared real-document corpus ----------------------------------------------

CORPUS_SAMPLES = [
    "txt/sample-english.bom.txt",
    "txt/iso-8859-1_ude_1.txt",
    "txt/windows-1252_ude_1.txt",
    "docx/eng_spa_mult.docx",
    "pdf/multicolumn.pdf",
    "pdf/SPARSE-2024-INV-1234_borderless_table.pdf",
]


@cache
def corpus_texts() -> dict[str, tuple[str, str]]:
    """Extracted text and expected snippet of each sample (extracted once per run)."""
    rows = {row["rel_path"]: row for row in load_manifest()}
    return {
        rel: (extract(Path(CORPUS_DIR, rel)).text, rows[rel]["snippet"])
        for rel in CORPUS_SAMPLES
    }


@pytest.fixture
def corpus_library(user):
    for rel, (text, _snippet) in corpus_texts().items():
        make_text_document(user, Path(rel).name, text)


@requires_corpus
@pytest.mark.django_db
@pytest.mark.parametrize("rel_path", CORPUS_SAMPLES)
def test_corpus_snippet_finds_its_document_first(user, corpus_library, rel_path):
    text, snippet = corpus_texts()[rel_path]
    assert contains_snippet(text, snippet)
    hits = search_documents(user, f'"{snippet}"')
    assert names(hits)[:1] == [Path(rel_path).name]
    assert "<mark>" in hits[0].snippet_html


@requires_corpus
@pytest.mark.django_db
def test_corpus_ranking_and_snippet(user, corpus_library):
    hits = search_documents(user, "Brussels")
    assert names(hits)[0] == "multicolumn.pdf"
    assert "<mark>Brussels</mark>" in hits[0].snippet_html
    hits = search_documents(user, "discrepanc*")
    assert names(hits)[0] == "SPARSE-2024-INV-1234_borderless_table.pdf"
    assert MARK_START not in hits[0].snippet_html


def test_query_size_is_bounded():
    parsed = parse_query(" OR ".join(f"w{i}" for i in range(100)) + " -x -y")
    assert sum(map(len, parsed.groups)) + len(parsed.excluded) == 16


# --- what the person is told about their query --------------------------------------


def test_terms_beyond_the_sixteenth_are_named_in_a_notice():
    # They were dropped silently: "w16 w17" found documents without either.
    parsed = parse_query(" ".join(f"w{i}" for i in range(18)))
    assert parsed.notice == (
        "Only the first 16 words and phrases were searched for; “w16 w17” was left out."
    )
    assert parse_query(" ".join(f"w{i}" for i in range(16))).notice == ""
    long = parse_query(" ".join(f'"w{i} and more"' for i in range(40))).notice
    assert long.startswith("Only the first 16 words and phrases")
    assert long.endswith("…” was left out.")
    # One long phrase: cut at MAX_QUERY_CHARS, and said so.
    cut = parse_query('"' + "word " * 120 + '"').notice
    assert cut.startswith("Only the first 500 characters were searched for; “word")


@pytest.mark.django_db
def test_the_search_page_and_the_api_say_which_terms_were_left_out(user_client, user):
    make_text_document(user, "words.txt", " ".join(f"w{i}" for i in range(16)))
    query = " ".join(f"w{i}" for i in range(18))
    response = user_client.get(reverse("documents:search"), {"q": query})
    assert names(response.context["hits"]) == ["words.txt"]
    assert "“w16 w17” was left out" in response.content.decode()
    body = user_client.get("/api/documents/", {"q": query}).json()
    assert [d["filename"] for d in body["results"]] == ["words.txt"]
    assert "“w16 w17” was left out" in body["notice"]
    assert user_client.get("/api/documents/", {"q": "w1"}).json()["notice"] is None
    response = user_client.get(reverse("documents:search"), {"q": "w1"})
    assert 'id="search-notice"' not in response.content.decode()


# --- accents and Unicode's two spellings, alike on both databases --------------------

NFD_E = "e\u0301"  # "é" typed as "e" and a combining acute accent


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "text"),
    [
        ("cafe", "Un café crème."),  # PostgreSQL's index held "café" only
        ("CAFE", "Un café crème."),
        ("café", "A cafe on the corner."),
        ("Zurich", "Über die Brücke in Zürich."),
        ("naive facade", "A naïve façade."),
        ("nguyen viet", "Nguyễn Việt"),  # Vietnamese: two accents on one letter
        ("caf*", "Un café crème."),
        ('"cafe creme"', "Un café crème."),
        (f"caf{NFD_E}", "Un café crème."),  # typed decomposed, stored composed
        ("café", f"Un caf{NFD_E} crème."),  # typed composed, stored decomposed
        ("καλημε\u0301ρα", "καλημέρα κόσμε"),  # Greek keeps its accent, in NFC
        ("カ\u3099イト\u3099", "ガイド"),  # Japanese kana typed decomposed
        # A letter NFC itself decomposes (क़), typed as the text holds it: found too.
        ("\u0958\u093f\u0932\u093e", "\u0958\u093f\u0932\u093e \u0939\u0948"),
        # Other scripts stored decomposed (FTS5 holds the text as it came).
        ("ऱ्हास", unicodedata.normalize("NFD", "ऱ्हास झाला")),  # Marathi
    ],
)
def test_accents_and_unicode_forms_are_folded_alike(user, query, text):
    make_text_document(user, "folded.txt", text)
    assert names(search_documents(user, query)) == ["folded.txt"]


@pytest.mark.django_db
def test_file_names_and_titles_fold_their_accents_too(user):
    make_text_document(user, "Résumé.pdf", "", title="Lettre à Zoë")
    make_text_document(user, f"R{NFD_E}sum{NFD_E} (Mac).pdf", "")
    assert set(names(search_documents(user, "resume"))) == {
        "Résumé.pdf",
        f"R{NFD_E}sum{NFD_E} (Mac).pdf",
    }
    assert names(search_documents(user, "zoe")) == ["Résumé.pdf"]


@pytest.mark.django_db
def test_accents_stay_where_a_letter_differs_by_them(user):
    # FTS5 folds only Latin letters' accents, so PostgreSQL does as well: "й" is not
    # "и" in Russian, nor "ά" (with its tonos) the same word typed without it.
    make_text_document(user, "ru.txt", "мой дом")
    make_text_document(user, "el.txt", "καλημέρα")
    assert search_documents(user, "мои") == []
    assert search_documents(user, "καλημερα") == []
    assert names(search_documents(user, "мой")) == ["ru.txt"]


@pytest.mark.django_db
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL's index folds in SQL"
)
def test_postgres_folds_the_index_as_the_search_folds_queries():
    samples = [
        "Café CAFÉ",
        f"caf{NFD_E}",
        "Nguyễn Việt ǣ ø ß Å",
        "x\u0303 α\u0301 й ガ 한국어 नमस्ते",
        "plain ascii",
        "",
    ]
    with connection.cursor() as cursor:
        for sample in samples:
            cursor.execute("SELECT documents_search_fold(%s)", [sample])
            assert cursor.fetchone()[0] == _searchable(sample), sample


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL's index folds in SQL"
)
def test_migrating_indexes_again_the_documents_indexed_before_the_fold(user):
    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    MigrationExecutor(connection).migrate([("documents", "0009_fts_only_on_change")])
    try:
        make_text_document(user, "before.txt", "Un café crème")
        assert search_documents(user, "cafe") == []
    finally:
        MigrationExecutor(connection).migrate(leaves)
    assert names(search_documents(user, "cafe")) == ["before.txt"]
    make_text_document(user, "after.txt", "Un autre café")
    assert set(names(search_documents(user, "cafe"))) == {"before.txt", "after.txt"}


# --- a query of exclusions only ------------------------------------------------------


@pytest.mark.django_db
def test_a_query_of_exclusions_only_finds_every_other_document(
    user, other_user, library
):
    # It found nothing at all.
    make_text_document(other_user, "theirs.txt", "no such word")
    assert names(search_documents(user, "-draft")) == [
        "unicode.txt",
        "fox.txt",
        "letter.txt",
        "invoice.txt",
    ]
    assert names(search_documents(user, "NOT invoice -café")) == ["fox.txt"]
    assert names(search_documents(user, '-"quick brown" -foxes')) == [
        "unicode.txt",
        "draft.txt",
        "invoice.txt",
    ]
    assert names(search_documents(user, "-draft", limit=2, offset=1)) == [
        "fox.txt",
        "letter.txt",
    ]
    assert names(search_documents(user, "-draft", status=Status.PENDING)) == []


@pytest.mark.django_db
def test_the_search_page_lists_documents_without_the_excluded_word(
    user_client, user, library
):
    make_text_document(user, "waiting.pdf", "", status=Status.PENDING)
    response = user_client.get(reverse("documents:search"), {"q": "NOT invoice"})
    assert response.status_code == 200
    assert names(response.context["hits"]) == [
        "waiting.pdf",
        "unicode.txt",
        "fox.txt",
    ]
    body = response.content.decode()
    assert "Results 1–3" in body
    # A document without text does not claim that its name matches.
    assert "The title or file name matches" not in body
    api = user_client.get("/api/documents/", {"q": "-invoice"}).json()
    assert [d["filename"] for d in api["results"]] == names(response.context["hits"])
