"""import_documents walks a folder as a person would: their documents, not the hidden
folders or the project files lying beside them."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from documents.models import Document
from tests.files import ole_bytes, pdf_bytes

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


def test_a_legacy_office_file_in_a_folder_says_what_to_save_it_as(user, tmp_path: Path):
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "minutes.doc").write_bytes(ole_bytes("WordDocument"))
    (folder / "report.pdf").write_bytes(pdf_bytes())
    (folder / "copy.pdf").write_bytes(pdf_bytes())
    (folder / "empty.txt").write_bytes(b"")
    (folder / "tool.exe").write_bytes(b"MZ")

    out = StringIO()
    with pytest.raises(CommandError, match="2 of the files were refused"):
        call_command("import_documents", str(folder), "--owner", "alice", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "Imported 1 of 5 files; skipped 4."
    [doc] = [line for line in lines if "minutes.doc" in line]
    assert "DOCX" in doc and "refused" in doc and "not a supported format" not in doc
    # One count per kind of reason, whatever each message says.
    assert lines[-1] == (
        "Skipped by reason: not a supported format (1), refused (2), duplicate (1)"
    )


def test_a_link_in_a_folder_is_not_followed(user, tmp_path: Path):
    # A drop folder others can write to: a link named like a document would import
    # what it points at (the server's settings, its first user's password).
    secret = tmp_path / "secret.env"
    secret.write_text("SECRET_KEY=not for the owner")
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "letter.txt").write_text("a real letter")
    (folder / "notes.txt").symlink_to(secret)

    out = StringIO()
    with pytest.raises(CommandError, match="1 of the files was refused or unreadable"):
        call_command("import_documents", str(folder), "--owner", "alice", stdout=out)
    assert list(Document.objects.values_list("original_filename", flat=True)) == [
        "letter.txt"
    ]
    assert "notes.txt: unreadable: a symbolic link" in out.getvalue()
    # Named on the command line, the person chose it: it is read.
    call_command(
        "import_documents", str(folder / "notes.txt"), "--owner", "alice", stdout=out
    )
    assert Document.objects.count() == 2
