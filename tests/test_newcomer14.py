"""A team following the README from a fresh clone: a DATABASE_URL naming a database
that does not answer (a typo in its port or name) stops ``make run``'s first command,
``manage.py migrate``, with one sentence, not a traceback; a second ``make run`` names
the first user's note again."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from tests.conftest import REPO_ROOT


def closed_port() -> int:
    """A port on this host that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO_ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_unreachable_database_is_one_sentence_not_a_traceback():
    url = f"postgres://nobody@127.0.0.1:{closed_port()}/docqueue"
    for command in ("migrate", "ensure_first_user", "pause_queue"):
        result = manage({"DATABASE_URL": url}, command)
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stderr
        assert result.stderr.startswith(
            "Error: the database (DATABASE_URL) cannot be reached: connection failed"
        ), result.stderr


def test_traceback_flag_still_shows_the_traceback():
    url = f"postgres://nobody@127.0.0.1:{closed_port()}/docqueue"
    result = manage({"DATABASE_URL": url}, "pause_queue", "--traceback")
    assert result.returncode == 1
    assert "Traceback" in result.stderr
    assert "OperationalError" in result.stderr


@pytest.mark.django_db
def test_second_run_says_where_the_first_password_is(settings, tmp_path):
    """``make run`` a second time: the user exists, and the note it was told of on the
    first run is named again (the first run's output may be long gone)."""
    settings.VAR_DIR = tmp_path
    get_user_model().objects.create_user("someone", password="x-long-password")
    out = StringIO()
    call_command("ensure_first_user", stdout=out)
    assert "Users exist" in out.getvalue()
    assert "first-user.txt" not in out.getvalue()
    (tmp_path / "first-user.txt").write_text("username: admin\npassword: p\n")
    out = StringIO()
    call_command("ensure_first_user", stdout=out)
    assert f"password, as made, is in {tmp_path / 'first-user.txt'}" in out.getvalue()
    assert get_user_model().objects.count() == 1


def test_error_of_a_database_that_answers_keeps_its_traceback(tmp_path):
    """A statement SQLite refuses (an OperationalError too) is no unreachable
    database: the traceback stays, to be read."""
    url = f"sqlite:///{tmp_path / 'answers.sqlite3'}"
    code = "from django.db import connection; connection.cursor().execute('SELECT * FROM t_none')"
    result = manage({"DATABASE_URL": url}, "shell", "-v0", "-c", code)
    assert result.returncode == 1
    assert "Traceback" in result.stderr
    assert "no such table: t_none" in result.stderr
    assert "cannot be reached" not in result.stderr


def older_python() -> str | None:
    """A Python older than 3.11 on this host (Ubuntu 22.04's python3 is 3.10)."""
    for name in ("python3.10", "python3.9"):
        if found := shutil.which(name):
            probe = subprocess.run([found, "--version"], capture_output=True)
            if probe.returncode == 0:
                return found
    found = sorted(glob.glob("/root/.pyenv/versions/3.10*/bin/python3.10"))
    return found[0] if found else None


@pytest.mark.skipif(older_python() is None, reason="no Python older than 3.11 here")
def test_make_run_with_an_older_python_says_so_before_making_a_venv(tmp_path):
    """``make run`` with Python 3.10: pip's only word was that no Pillow 13 fits,
    after a venv of 3.10 had been made."""
    shutil.copy(REPO_ROOT / "requirements.txt", tmp_path)
    result = subprocess.run(
        ["make", "-f", str(REPO_ROOT / "Makefile"), "-C", str(tmp_path)]
        + [".venv/.installed", f"PYTHON={older_python()}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "Python 3.11 or newer is needed" in result.stderr, result.stderr
    assert "make run PYTHON=python3.12" in result.stderr
    assert not (tmp_path / ".venv").exists()
