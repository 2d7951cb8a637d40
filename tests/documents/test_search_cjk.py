"""Chinese, Japanese, Korean and Thai words are found inside sentences (CJK bigrams,
migration 0011), on whichever database the suite runs against."""

from __future__ import annotations

import importlib
import random
import unicodedata

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from documents.extractors.base import ExtractionResult
from documents.grams import CJK_RANGES, GRAMS_MAX_BYTES, bigrams, search_grams
from documents.models import Document
from documents.search import parse_query, search_documents
from documents.services import (
    document_create,
    document_store_result,
    document_update_details,
)
from documents.uploads import CheckedUpload
from jobqueue.models import Status

pytestmark = pytest.mark.django_db

SENTENCES = {
    "zh.txt": "我们明天去北京开会，然后回上海。",
    "ja.txt": "私は東京に住んでいます。毎朝コーヒーを飲みます。",
    "ko.txt": "저는 서울에서 일하고 부산에 살아요.",
    "th.txt": "ฉันชอบเรียนภาษาไทยที่มหาวิทยาลัย",
    "en.txt": "An English letter about Tokyo and Seoul, nothing else.",
}


def make_text_document(owner, name: str, text: str, *, title: str = "") -> Document:
    """A processed document whose text is stored as a worker stores it."""
    document = Document.objects.create(
        owner=owner,
        original_filename=name,
        file=f"documents/{name}",
        mime_type="text/plain",
        size=len(text.encode()),
        sha256="0" * 64,
        status=Status.COMPLETED,
    )
    store(document, text)
    if title:
        document_update_details(document=document, title=title, tag_names=[])
    return document


def store(document: Document, text: str) -> None:
    result = ExtractionResult(text=text, page_count=1, confidence=1.0, extractor="t")
    document_store_result(document_id=document.pk, result=result)


def names(user, query: str) -> list[str]:
    return sorted(
        hit.document.original_filename for hit in search_documents(user, query)
    )


@pytest.fixture
def sentences(user):
    return {name: make_text_document(user, name, t) for name, t in SENTENCES.items()}


def test_bigrams_of_a_run_and_its_neighbours():
    assert bigrams("東京都に住む") == "東京 京都 都に に住 住む む"
    assert bigrams("東 and 서울에서") == "東 서울 울에 에서 서"
    # What a word holds besides those scripts comes along; other words do not.
    assert bigrams("On 2024年3月 in Tokyo") == "2024 年 3 月"
    assert bigrams("Plain ASCII, and café crème") == ""
    assert search_grams(text="café", title="Über", original_filename="x.pdf") == ""


def test_postgres_takes_out_of_the_text_what_the_grams_hold():
    # Migration 0011 keeps its own copy; a change here needs a migration there.
    migration = importlib.import_module("documents.migrations.0011_search_grams")
    assert migration._CJK_RANGES == CJK_RANGES


@pytest.mark.parametrize(
    ("word", "name"),
    [
        ("北京", "zh.txt"),
        ("上海", "zh.txt"),
        ("東京", "ja.txt"),
        ("住んで", "ja.txt"),  # kanji and kana
        ("コーヒー", "ja.txt"),
        ("서울", "ko.txt"),  # without its particle 에서
        ("부산", "ko.txt"),
        ("ภาษาไทย", "th.txt"),
        ("มหาวิทยาลัย", "th.txt"),
    ],
)
def test_a_word_inside_a_sentence_is_found(user, sentences, word, name):
    assert names(user, word) == [name]


def test_one_character_is_a_word_wherever_it_stands_in_its_run(user, sentences):
    assert names(user, "東") == ["ja.txt"]
    assert names(user, "京") == ["ja.txt", "zh.txt"]  # 東京, 北京
    assert names(user, "む") == []
    make_text_document(user, "sumu.txt", "東京都に住む")
    assert names(user, "む") == ["sumu.txt"]  # the last character of its run
    # A single character is not refused as a too short prefix.
    assert parse_query("東*").groups


def test_a_phrase_needs_its_characters_together(user, sentences):
    make_text_document(user, "kyoto.txt", "京都に東の人が住んでいる")
    assert names(user, '"東京に住んで"') == ["ja.txt"]
    assert names(user, "東京に住んで") == ["ja.txt"]
    assert names(user, "住んで") == ["ja.txt", "kyoto.txt"]
    assert names(user, '"京都に東"') == ["kyoto.txt"]
    # Words of two runs, one after the other: the first ends its run.
    assert names(user, '"住んでいます 毎朝"') == ["ja.txt"]
    assert names(user, '"東京 毎朝"') == []
    assert names(user, '"毎朝 住んでいます"') == []


def test_exclusion_and_or_work_on_those_words(user, sentences):
    make_text_document(user, "both.txt", "東京と北京に行った")
    assert names(user, "東京 -北京") == ["ja.txt"]
    assert names(user, "北京 NOT 東京") == ["zh.txt"]
    assert names(user, "서울 OR ภาษาไทย") == ["ko.txt", "th.txt"]
    assert "ja.txt" not in names(user, "-東京")
    assert "en.txt" in names(user, "-東京")


def test_latin_words_attached_to_those_scripts_are_found(user):
    make_text_document(user, "dates.txt", "会議は2024年3月15日です。価格は100円でした")
    assert names(user, "2024年") == ["dates.txt"]
    assert names(user, "2024") == ["dates.txt"]
    assert names(user, "100円") == ["dates.txt"]
    assert names(user, "2025年") == []


def test_titles_and_file_names_in_those_scripts_are_found(user):
    upload = CheckedUpload(
        file=SimpleUploadedFile("x.txt", b"hello"),
        filename="東京出張レポート.txt",
        mime_type="text/plain",
    )
    named = document_create(owner=user, upload=upload)
    titled = make_text_document(user, "scan.pdf", "no words of those scripts")
    document_update_details(document=titled, title="大阪支店の議事録", tag_names=[])
    assert names(user, "出張") == ["東京出張レポート.txt"]
    assert names(user, "議事") == ["scan.pdf"]
    # The new title replaces the old one's grams.
    document_update_details(document=titled, title="名古屋", tag_names=[])
    assert names(user, "議事") == []
    assert names(user, "名古屋") == ["scan.pdf"]
    document_update_details(document=titled, title="", tag_names=[])
    assert names(user, "名古屋") == []
    assert named.search_grams.startswith("東京")


@pytest.mark.parametrize(
    ("query", "text"),
    [
        (
            "서울",
            unicodedata.normalize("NFD", "저는 서울에서 일해요"),
        ),  # letters (jamo)
        (unicodedata.normalize("NFD", "서울"), "저는 서울에서 일해요"),
        (unicodedata.normalize("NFD", "서울에"), "저는 서울에서 일해요"),  # its grams
        ("서울에서", unicodedata.normalize("NFD", "저는 서울에서 일해요")),
        ("ガイド", unicodedata.normalize("NFD", "旅行ガイドです")),  # voiced kana
    ],
)
def test_words_are_found_whichever_unicode_form_either_side_has(user, query, text):
    make_text_document(user, "nfd.txt", text)
    assert names(user, query) == ["nfd.txt"]


def test_a_title_or_file_name_in_those_scripts_ranks_first(user, sentences):
    # As a Latin title does: the name's grams weigh as the name (migration 0012).
    titled = make_text_document(user, "scan.pdf", "no words of those scripts")
    document_update_details(document=titled, title="東京出張レポート", tag_names=[])
    upload = CheckedUpload(
        file=SimpleUploadedFile("x.txt", b"hello"),
        filename=unicodedata.normalize("NFD", "서울 회의록.txt"),  # from a Mac
        mime_type="text/plain",
    )
    named = document_create(owner=user, upload=upload)
    ja, ko = sentences["ja.txt"], sentences["ko.txt"]
    for query, expected in [
        ("東京", [(titled, True), (ja, False)]),
        ("東京出張", [(titled, True)]),
        ("서울", [(named, True), (ko, False)]),
    ]:
        hits = search_documents(user, query)
        assert [(hit.document, hit.in_name) for hit in hits] == expected


def test_the_snippet_marks_the_word_inside_its_run(user, sentences):
    [hit] = search_documents(user, "東京")
    assert "私は<mark>東京</mark>に住んでいます" in hit.snippet_html
    [hit] = search_documents(user, "서울")
    assert "<mark>서울</mark>에서" in hit.snippet_html


def test_the_snippet_of_a_long_run_is_cut_around_the_word(user):
    text = "あ" * 5000 + "東京" + "い" * 5000
    make_text_document(user, "long.txt", text)
    [hit] = search_documents(user, "東京")
    assert "<mark>東京</mark>" in hit.snippet_html
    assert len(hit.snippet_html) < 200


def test_new_text_replaces_the_grams(user, sentences):
    document = sentences["ja.txt"]
    store(document, "大阪で働いています")  # reprocessed: other words
    assert names(user, "東京") == []
    assert names(user, "大阪") == ["ja.txt"]
    store(document, "Only English now")
    document.refresh_from_db()
    assert document.search_grams == ""
    assert names(user, "大阪") == []


def test_grams_stop_at_their_budget_and_a_huge_text_is_still_stored(user):
    rng = random.Random(7)
    ideographs = [chr(c) for c in range(0x4E00, 0x9FFF)]
    text = "冒頭の言葉" + "".join(rng.choices(ideographs, k=250_000))
    document = make_text_document(user, "huge.txt", text)
    document.refresh_from_db()
    unique = set(document.search_grams.split())
    assert sum(len(g.encode()) + 5 for g in unique) <= GRAMS_MAX_BYTES
    assert names(user, "冒頭") == ["huge.txt"]


@pytest.mark.django_db(transaction=True)
def test_documents_stored_before_the_migration_are_found_after_it(user):
    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    executor = MigrationExecutor(connection)
    target = [("documents", "0010_search_folds_accents")]
    executor.migrate(target)
    try:
        old_apps = executor.loader.project_state(target).apps
        OldDocument = old_apps.get_model("documents", "Document")
        OldDocument.objects.create(
            owner_id=user.pk,
            original_filename="before.txt",
            title="大阪の記録",
            file="documents/before.txt",
            mime_type="text/plain",
            size=1,
            sha256="0" * 64,
            status=Status.COMPLETED,
            text="私は東京に住んでいます。",
        )
        assert search_documents(user, "東京") == []
    finally:
        MigrationExecutor(connection).migrate(leaves)
    assert names(user, "東京") == ["before.txt"]
    assert names(user, "大阪") == ["before.txt"]
    make_text_document(user, "after.txt", "東京タワー")
    assert names(user, "東京") == ["after.txt", "before.txt"]


@pytest.mark.django_db(transaction=True)
def test_names_indexed_before_their_grams_had_the_name_weight_rank_first_after(user):
    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    executor = MigrationExecutor(connection)
    target = [("documents", "0011_search_grams")]
    executor.migrate(target)
    try:
        old_apps = executor.loader.project_state(target).apps
        OldDocument = old_apps.get_model("documents", "Document")
        for name, title, text in [
            ("titled.txt", "大阪支店の議事録", "Minutes."),
            ("body.txt", "", "大阪支店で会いましょう"),
        ]:
            OldDocument.objects.create(
                owner_id=user.pk,
                original_filename=name,
                title=title,
                file=f"documents/{name}",
                mime_type="text/plain",
                size=1,
                sha256="0" * 64,
                status=Status.COMPLETED,
                text=text,
                search_grams=" ".join(filter(None, [bigrams(title), bigrams(text)])),
            )
        hits = search_documents(user, "支店")
        assert [hit.in_name for hit in hits] == [False, False]
    finally:
        MigrationExecutor(connection).migrate(leaves)
    hits = search_documents(user, "支店")
    assert [(h.document.original_filename, h.in_name) for h in hits] == [
        ("titled.txt", True),
        ("body.txt", False),
    ]
