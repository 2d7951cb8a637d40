"""import_documents walks a folder as a person would: their documents, not the hidden
folders or the project files lying beside them."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from documents.models import Document

pytestmark = pytest.mark.django_db


def test_hidden_entries_and_unsupported_names_are_left_out(user, tmp_path: Path):
    folder = tmp_path / "inbox"
    (folder / ".git" / "objects").mkdir(parents=True)
    (folder / ".git" / "objects" / "notes.txt").write_text("git internals")
    (folder / ".hidden.txt").write_text("a dot file")
    (folder / "sub").mkdir()
    (folder / "sub" / "letter.txt").write_text("a real letter")
    (folder / "notes.md").write_text("# Notes\n\nmarkdown words")
    (folder / "README").write_text("how to use this folder")
    (folder / "manifest.csv.bak").write_text("file,expected")
    (folder / "script.py").write_text("print('hello')\n")

    out = StringIO()
    call_command("import_documents", str(folder), "--owner", "alice", stdout=out)
    text = out.getvalue()
    imported = set(Document.objects.values_list("original_filename", flat=True))
    assert imported == {"letter.txt", "notes.md"}
    assert text.startswith("Imported 2 of 5 files; skipped 3.")
    assert "README: not a supported format" in text
    assert "script.py: not a supported format" in text
    assert "Left out 2 hidden files or folders." in text
    assert ".git" not in text.replace("Left out", "")


def test_a_file_named_explicitly_is_judged_by_its_content(user, tmp_path: Path):
    named = tmp_path / "NOTES"
    named.write_text("plain words without an extension")
    call_command("import_documents", str(named), "--owner", "alice", stdout=StringIO())
    assert Document.objects.get().original_filename == "NOTES"
