"""The shared real-document corpus: where it is, its manifest, and skip/fail rules.

Tests that need the corpus skip when it is missing, except under ``CI=true``,
where a missing corpus fails them (a CI run must not pass by skipping).

    from tests.corpus import load_manifest, manifest_params, require_corpus, requires_corpus
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
CORPUS_DIR = Path(
    os.environ.get("CORPUS_DIR") or REPO_ROOT.parent / "shared" / "corpus"
)
MANIFEST = CORPUS_DIR / "manifest.csv"
IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}
MISSING = f"real-document corpus not found at {CORPUS_DIR} (set CORPUS_DIR)"


def corpus_available() -> bool:
    """True when the corpus manifest is readable."""
    return MANIFEST.is_file()


def require_corpus() -> Path:
    """Return CORPUS_DIR; skip the calling test if it is missing, fail under CI."""
    if corpus_available():
        return CORPUS_DIR
    if IN_CI:
        pytest.fail(
            f"{MISSING}; CI=true, so corpus tests must not be skipped", pytrace=False
        )
    pytest.skip(MISSING)


# Skips locally when the corpus is missing; under CI the test runs and should
# call require_corpus() (or load_manifest()), which fails loudly.
requires_corpus = pytest.mark.skipif(
    not corpus_available() and not IN_CI, reason=MISSING
)


def normalise(text: str) -> str:
    """Collapse runs of whitespace, as the corpus README compares snippets."""
    return re.sub(r"\s+", " ", text).strip()


def contains_snippet(text: str, snippet: str) -> bool:
    """True when the snippet occurs in the text, whitespace-insensitively."""
    return snippet in text or normalise(snippet) in normalise(text)


def load_manifest() -> list[dict[str, Any]]:
    """The manifest rows; `path` is absolute, `rel_path` as written, `pages` an int or None."""
    base = require_corpus()
    with MANIFEST.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        row["rel_path"] = row["path"]
        row["path"] = base / row["path"]
        row["pages"] = int(row["pages"]) if row["pages"] else None
        match = re.search(r"encoding=([\w-]+)", row["notes"])
        row["encoding"] = match.group(1) if match else None
    return rows


def manifest_params(**where: str) -> list[Any]:
    """Manifest rows as pytest params (id = path), filtered by column values.

    Without the corpus this is one placeholder param (value None) marked with
    `requires_corpus`; the test should start with `require_corpus()`.
    """
    if not corpus_available():
        return [pytest.param(None, id="corpus-missing", marks=requires_corpus)]
    return [
        pytest.param(row, id=row["rel_path"])
        for row in load_manifest()
        if all(row.get(key) == value for key, value in where.items())
    ]
