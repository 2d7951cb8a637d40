"""import_documents run on the folders people have: names in another encoding or
with control characters, links to folders, folders it cannot list."""

from __future__ import annotations

import io
import os
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from documents.models import Document

pytestmark = pytest.mark.django_db


def _import(folder: Path, out) -> None:
    call_command("import_documents", str(folder), "--owner", "alice", stdout=out)


def test_a_latin_1_name_neither_breaks_the_summary_nor_loses_its_letters(
    user, tmp_path: Path
):
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / os.fsdecode(b"caf\xe9.txt")).write_text("a letter from the cafe")
    (folder / os.fsdecode(b"men\xfa.txt")).write_text("")  # refused: listed
    # A strict UTF-8 stdout, as under LANG=en_US.UTF-8: a raw byte was a traceback.
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", errors="strict")
    with pytest.raises(CommandError, match="1 of the files was refused"):
        _import(folder, out)
    out.flush()
    assert (
        "skipped " + str(folder) + "/men\\xfa.txt: refused" in raw.getvalue().decode()
    )
    assert list(Document.objects.values_list("original_filename", flat=True)) == [
        "caf\ufffd.txt"
    ]


def test_control_characters_in_a_name_stay_on_its_line(user, tmp_path: Path):
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "two\nlines.txt").write_text("")
    (folder / "x\x1b[2Jclear.txt").write_text("")
    out = StringIO()
    with pytest.raises(CommandError):
        _import(folder, out)
    lines = out.getvalue().splitlines()
    assert f"  skipped {folder}/two\\nlines.txt: refused" in "\n".join(lines)
    assert f"  skipped {folder}/x\\x1b[2Jclear.txt: refused" in "\n".join(lines)
    assert "\x1b" not in out.getvalue()


def test_a_link_to_a_folder_is_listed_not_followed(user, tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "private.txt").write_text("not for the owner")
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "letter.txt").write_text("a real letter")
    (folder / "more").symlink_to(elsewhere)
    out = StringIO()
    with pytest.raises(CommandError, match="1 of the files was refused or unreadable"):
        _import(folder, out)
    assert list(Document.objects.values_list("original_filename", flat=True)) == [
        "letter.txt"
    ]
    text = out.getvalue()
    assert text.startswith("Imported 1 of 2 files; skipped 1.")
    assert f"skipped {folder}/more: unreadable: a symbolic link" in text


def test_a_folder_that_cannot_be_listed_is_said_so(user, tmp_path, monkeypatch):
    folder = tmp_path / "inbox"
    (folder / "locked").mkdir(parents=True)
    (folder / "locked" / "hidden-from-us.txt").write_text("never seen")
    (folder / "letter.txt").write_text("a real letter")
    # chmod 000 does not stop root, who runs the tests: refuse the listing as the
    # system refuses it to anyone else.
    scandir = os.scandir

    def refusing(path="."):
        if os.fspath(path) == str(folder / "locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
    out = StringIO()
    with pytest.raises(CommandError, match="1 of the files was refused or unreadable"):
        _import(folder, out)
    assert f"skipped {folder}/locked: unreadable: Permission denied" in out.getvalue()


def test_first_user_is_not_made_when_its_password_cannot_be_kept(settings, tmp_path):
    from django.contrib.auth import get_user_model

    # VAR_DIR a file, not a folder: the note cannot be written, even by root.
    settings.VAR_DIR = tmp_path / "var"
    settings.VAR_DIR.write_text("not a folder")
    with pytest.raises(CommandError, match="no user was created"):
        call_command("ensure_first_user", stdout=StringIO())
    assert not get_user_model().objects.exists()


def test_first_users_note_is_private_from_the_start(settings, tmp_path):
    # A link left where the note goes must not carry the password elsewhere (a
    # plain write follows it), and the note is never readable by others.
    settings.VAR_DIR = tmp_path / "var"
    settings.VAR_DIR.mkdir()
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("kept")
    elsewhere.chmod(0o644)
    (settings.VAR_DIR / "first-user.txt").symlink_to(elsewhere)
    call_command("ensure_first_user", stdout=StringIO())
    note = settings.VAR_DIR / "first-user.txt"
    assert not note.is_symlink() and "password: " in note.read_text()
    assert note.stat().st_mode & 0o777 == 0o600
    assert elsewhere.read_text() == "kept" and elsewhere.stat().st_mode & 0o777 == 0o644
