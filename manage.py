#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import gc
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # Start-up imports some 600 modules whose objects live as long as the process,
    # and the collector would walk them again and again: a fifth of a worker's
    # start-up. The last app's ready() (ops) turns it back on.
    gc.disable()
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        settings.INSTALLED_APPS  # noqa: B018 - reads the environment, once
    except (ImproperlyConfigured, ValueError) as exc:  # ValueError: a bad TIME_ZONE
        # A setting the environment got wrong: its sentence, not a traceback.
        sys.exit(f"Error: {exc}")
    from django.db import OperationalError

    try:
        execute_from_command_line(sys.argv)
    except OperationalError as exc:
        # A DATABASE_URL naming a server that is down, a wrong port, password or
        # database name: its sentence, not 40 lines of traceback. An error of a
        # database that answers (a lock, a failed statement) keeps its traceback.
        if "--traceback" in sys.argv or database_answers(exc):
            raise
        sys.exit(f"Error: the database (DATABASE_URL) cannot be reached: {exc}")


def database_answers(exc: BaseException) -> bool:
    """Whether the error came from a database that answered, not from opening a
    connection to it (Django's ``get_new_connection``, either backend). Read from
    the traceback: the command has closed its connections by now, and connecting
    again to find out could wait as long again on a host that never answers."""
    import traceback

    return not any(
        frame.f_code.co_name == "get_new_connection"
        for frame, _ in traceback.walk_tb(exc.__traceback__)
    )


if __name__ == "__main__":
    main()
