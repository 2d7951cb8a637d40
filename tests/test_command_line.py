"""Every project command says what it does (--help) and refuses bad input with a
message and a non-zero exit, before doing anything."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest
from django.core.management import (
    CommandError,
    call_command,
    get_commands,
    load_command_class,
)

from tests.conftest import REPO_ROOT

PROJECT_APPS = {"documents", "jobqueue"}
# Options every Django command has: their help is Django's.
DJANGO_OPTIONS = {
    "help",
    "version",
    "verbosity",
    "settings",
    "pythonpath",
    "traceback",
    "no_color",
    "force_color",
    "skip_checks",
}
COMMANDS = sorted(name for name, app in get_commands().items() if app in PROJECT_APPS)

BAD_INPUT = {
    "process_queue": [
        (["--workers", "0"], "out of range"),
        (["--timeout", "nan"], "not allowed"),
        (["--poll-interval", "soon"], "not a number of seconds"),
        # Without --once they would start a pool that never ends, from every cron run.
        (["--limit", "5"], "only with --once"),
        (["--budget", "20"], "only with --once"),
        (["--once", "--budget", "1e12"], "too long"),
        (["--timeout", "1e300"], "too long"),
        (["--workers", "1000"], "out of range"),
        # Other workers would take this one for dead, and run its jobs again.
        (["--heartbeat-interval", "90"], "too long"),
        # PostgreSQL's integer column: every failure's record failed, the job looped.
        (["--max-retries", "1001"], "out of range"),
        (["--queue", "q" * 101], "at most 100 characters"),
        (["--queue", " "], "given none"),
    ],
    "clear_queue": [
        ([], "--older-than"),
        (["--older-than", "-1"], "not allowed"),
        (["--older-than", "7", "--status", "pending"], "invalid choice"),
        (["--older-than", "1e9"], "too long"),
    ],
    "rescue_stale_jobs": [
        (["--minutes", "-5"], "not allowed"),
        (["--heartbeat-seconds", "inf"], "not allowed"),
        (["--minutes", "1e12"], "too long"),
        # A live worker's heartbeat is up to three intervals old.
        (["--heartbeat-seconds", "1"], "live workers"),
    ],
    "import_documents": [
        (["--owner", "nobody", "."], "No user named"),
        (["--owner", "alice", "no/such/folder"], "neither a file nor a folder"),
        (["--owner", "alice", "--priority", "1000", "."], "out of range"),
        (["."], "--owner"),
    ],
    "create_api_token": [
        (["nobody"], "No user named"),
        (["alice", "--expires-days", "0"], "out of range"),
        ([], "username"),
    ],
    "ensure_first_user": [(["--username", "no spaces here"], "Enter a valid")],
    "check_storage": [(["--older-than", "-3"], "not allowed")],
    "make_thumbnails": [(["--everything"], "unrecognized arguments")],
    "pause_queue": [(["--now"], "unrecognized arguments")],
    "resume_queue": [(["now"], "unrecognized arguments")],
}


def test_every_project_command_has_bad_input_cases():
    assert set(COMMANDS) == set(BAD_INPUT)


@pytest.mark.parametrize("name", COMMANDS)
def test_help_says_what_the_command_and_each_option_do(name):
    app = get_commands()[name]
    parser = load_command_class(app, name).create_parser("manage.py", name)
    assert len(parser.description or "") > 30, name
    for action in parser._actions:
        if action.dest in DJANGO_OPTIONS:
            continue
        assert action.help and action.help != argparse.SUPPRESS, (name, action.dest)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        (name, args, message)
        for name, cases in BAD_INPUT.items()
        for args, message in cases
    ],
)
def test_bad_input_is_refused_with_a_message(user, name, args, message):
    if name == "ensure_first_user":
        user.delete()  # it only acts when there is no user yet
    with pytest.raises(CommandError, match=message):
        call_command(name, *args)


def test_from_a_shell_help_exits_0_and_bad_input_2():
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )

    helped = run("clear_queue", "--help")
    assert helped.returncode == 0
    assert "Delete completed, failed and cancelled" in helped.stdout
    refused = run("clear_queue", "--older-than", "soon")
    assert refused.returncode == 2
    assert "“soon” is not a number of days" in refused.stderr
