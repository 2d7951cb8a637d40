"""Text the database cannot store (NUL, lone surrogates) is cleaned in one place,
so such a document completes on both databases instead of failing as ``unknown``."""

from __future__ import annotations

import pytest
from django.db import transaction

from documents.extractors.base import ExtractionResult
from documents.search import search_documents
from documents.services import document_store_result, storable_text

pytestmark = pytest.mark.django_db(transaction=True)


def test_nul_and_lone_surrogates_are_cleaned_before_storing(user, make_document):
    document = make_document()
    result = ExtractionResult(
        text="before\x00after broken\ud800half \udfffend",
        page_count=1,
        confidence=1.0,
        extractor="text",
        note="cut\x00 here",
    )
    with transaction.atomic():
        document_store_result(document_id=document.pk, result=result)
    document.refresh_from_db()
    assert document.text == "beforeafter broken\ufffdhalf \ufffdend"
    assert document.extraction_note == "cut here"
    assert [h.document.pk for h in search_documents(user, "beforeafter")] == [
        document.pk
    ]


def test_storable_text_keeps_everything_else():
    text = "tab\tline\nuni ☃ 𝄞 \x01\x7f\u2028 ﻿"
    assert storable_text(text) == text
