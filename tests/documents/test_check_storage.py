"""check_storage: files without a document are removed (old enough ones), documents
without a file are reported and make the command fail."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("check_storage", *args, stdout=out)
    return out.getvalue()


def test_orphan_files_are_removed_but_recent_and_referenced_ones_spared(
    make_document, media_root
):
    two_hours_ago = time.time() - 7200
    referenced = Path(make_document().file.path)
    folder = media_root / "documents"
    old, young = folder / "old.txt", folder / "young.txt"
    old.write_bytes(b"left by an upload killed before its commit")
    young.write_bytes(b"an upload that may still be committing")
    for path in (referenced, old):
        os.utime(path, (two_hours_ago, two_hours_ago))
    assert run("--dry-run") == (
        "Would remove documents/old.txt\n"
        "Would remove 1 orphan files (42 bytes) (dry run).\n"
        "Every document has its stored file.\n"
    )
    assert old.exists()
    assert run() == (
        "Removed documents/old.txt\n"
        "Removed 1 orphan files (42 bytes).\n"
        "Every document has its stored file.\n"
    )
    assert not old.exists()
    assert young.exists() and referenced.exists()
    assert run("--older-than", "0").startswith("Removed documents/young.txt\n")
    assert referenced.exists()


def test_a_document_whose_file_is_missing_is_reported_and_fails_the_command(
    make_document, media_root
):
    kept = make_document(name="kept.txt")
    lost = make_document(name="lost.txt")
    Path(lost.file.path).unlink()
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 document without a stored file"):
        call_command("check_storage", stdout=out)
    assert f"Missing file of document {lost.pk} “lost.txt”: {lost.file.name}" in (
        out.getvalue()
    )
    assert str(kept.pk) not in out.getvalue().replace(lost.file.name, "")
    # Reported, never changed: the operator restores the file or deletes the row.
    lost.refresh_from_db()
    assert lost.file.name and Path(kept.file.path).exists()


def test_bad_arguments_are_refused():
    with pytest.raises(CommandError, match="use 0 or more"):
        run("--older-than", "-1")
