"""An operator's audit: settings a process cannot run with stop its start with a
sentence naming the variable, and the commands cron runs are silent with -v0 unless
something is wrong (cron mails whatever a command prints)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import call_command

from tests.conftest import REPO_ROOT


def start(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """``manage.py`` with ``env`` added to this process's environment."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO_ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def setting(name: str, value: str):
    """The value of setting ``name`` in a process started with ``name=value``."""
    result = start(
        {name: value},
        "shell",
        "-v0",
        "-c",
        f"from django.conf import settings; print(repr(settings.{name}))",
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.parametrize(
    ("name", "value", "sentence"),
    [
        # Text for a number: django-environ's ValueError named no variable.
        ("QUEUE_WORKERS", "two", "QUEUE_WORKERS (environment or .env): “two” is not a"),
        ("CRON_BUDGET_SECONDS", "soon", "“soon” is not a number of seconds"),
        # Out of range: each used to start, and misbehave later.
        ("QUEUE_WORKERS", "0", "QUEUE_WORKERS (environment or .env): 0 is out of"),
        ("QUEUE_MAX_RETRIES", "-1", "QUEUE_MAX_RETRIES (environment or .env): -1 is"),
        ("MAX_UPLOAD_MB", "-1", "MAX_UPLOAD_MB (environment or .env): -1 is out of"),
        ("USER_MAX_ACTIVE_JOBS", "-1", "USER_MAX_ACTIVE_JOBS (environment or .env)"),
        ("CRON_BUDGET_SECONDS", "-5", "CRON_BUDGET_SECONDS (environment or .env): -5"),
        ("QUEUE_EXTRACTION_TIMEOUT", "nan", "nan seconds is not allowed"),
        ("LOGIN_LOCKOUT_MINUTES", "-1", "-1 minutes is not allowed"),
        # A typo in a switch read as "off", silently.
        ("THUMBNAILS", "maybe", "THUMBNAILS (environment or .env): “maybe” is not 1"),
        ("SECURE_COOKIES", "", "SECURE_COOKIES (environment or .env): “” is not 1"),
        # Rates were parsed by the first request that met them: a 500.
        ("API_RATE", "fast", "API_RATE (environment or .env): “fast” is not N/sec"),
        ("UPLOAD_RATE", "10/fortnight", "“10/fortnight” is not N/second"),
        # logging's "Unable to configure root logger" named neither.
        ("LOG_LEVEL", "LOUD", "LOG_LEVEL (environment or .env): “LOUD” is not one"),
    ],
)
def test_a_bad_setting_stops_the_start_with_its_name(name, value, sentence):
    result = start({name: value}, "check")
    assert result.returncode != 0
    # One line, the sentence: no traceback of 40 lines before it.
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("Error: ") and sentence in line, result.stderr[-2000:]


def test_a_cron_run_without_its_database_says_so_in_a_sentence():
    result = start(
        {"DATABASE_URL": "postgres://nobody@127.0.0.1:9/none"},
        "process_queue",
        "--once",
    )
    assert result.returncode == 1
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(
        "CommandError: The database could not be used, nothing was done: "
    ), result.stderr[-2000:]


def test_settings_read_numbers_as_written():
    # django-environ kept only digits, dots and commas: "1e3" was 13 seconds.
    assert setting("QUEUE_EXTRACTION_TIMEOUT", "1e3") == "1000.0"
    # A level in lower case, as Python's logging could not take it, and rates in any
    # case (DRF reads the period's first letter, in lower case only).
    assert setting("API_RATE", "10/Minute") == "'10/minute'"
    zero_keeps = setting("QUEUE_KEEP_FINISHED_DAYS", "0")
    assert zero_keeps == "0.0"  # documented: 0 keeps them
    assert setting("DEBUG", "True") == "True"


def test_a_lower_case_log_level_is_taken():
    result = start({"LOG_LEVEL": "debug"}, "check")
    assert result.returncode == 0, result.stderr


@pytest.mark.django_db(transaction=True)
def test_cron_commands_print_nothing_with_v0(make_document):
    make_document(b"some words\n")
    commands = [
        ("process_queue", "--once", "--workers", "1"),
        ("clear_queue", "--older-than", "30"),
        ("rescue_stale_jobs",),
        ("check_storage",),
        ("make_thumbnails",),
        ("ensure_first_user",),  # a user exists: nothing to say
        ("pause_queue",),
        ("resume_queue",),
    ]
    for command in commands:
        out, err = StringIO(), StringIO()
        call_command(*command, verbosity=0, stdout=out, stderr=err)
        assert out.getvalue() == "", (command, out.getvalue())
        assert err.getvalue() == "", (command, err.getvalue())
        # Without -v0 each says what it did.
        out = StringIO()
        call_command(*command, stdout=out, stderr=StringIO())
        assert out.getvalue().strip(), command


@pytest.mark.django_db(transaction=True)
def test_process_queue_json_is_printed_with_v0():
    out = StringIO()
    call_command("process_queue", "--once", "--json", verbosity=0, stdout=out)
    assert json.loads(out.getvalue()) == {
        "processed": 0,
        "completed": 0,
        "failed": 0,
        "paused": False,
    }


@pytest.mark.django_db
def test_check_storage_v0_still_reports_a_missing_file(make_document):
    from django.core.management import CommandError

    document = make_document(b"some words\n")
    document.file.storage.delete(document.file.name)
    out = StringIO()
    with pytest.raises(CommandError, match="without a stored file"):
        call_command("check_storage", verbosity=0, stdout=out)
    assert f"Missing file of document {document.pk}" in out.getvalue()
    assert "orphan" not in out.getvalue()


def test_gunicorn_refuses_zero_web_workers_at_start():
    """WEB_CONCURRENCY=0: gunicorn listened and never answered."""
    result = subprocess.run(
        [
            str(REPO_ROOT / ".venv" / "bin" / "gunicorn"),
            "-c",
            "config/gunicorn.conf.py",
            "--check-config",
        ],
        cwd=REPO_ROOT,
        env={**os.environ, "WEB_CONCURRENCY": "0", "DEBUG": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "WEB_CONCURRENCY (environment or .env): 0 is out of range" in (
        result.stdout + result.stderr
    )


def test_a_pool_stopped_while_the_database_is_away_at_start_exits_cleanly():
    """Ctrl+C while the pool waits for an unreachable database: no traceback, no job
    to release, no heartbeat to mark, exit 0."""
    pool = subprocess.Popen(
        [sys.executable, "manage.py", "process_queue"],
        cwd=REPO_ROOT,
        env={
            **os.environ,
            "DATABASE_URL": "postgres://postgres@/nowhere?host=/nonexistent",
            "DEBUG": "1",
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        for line in pool.stdout:
            if "Database unavailable at start" in line:
                break
        pool.send_signal(signal.SIGINT)
        output, _ = pool.communicate(timeout=60)
    finally:
        if pool.poll() is None:
            pool.kill()
            pool.wait(10)
    assert pool.returncode == 0, output
    assert "Traceback" not in output and "Stopped before the database" in output
