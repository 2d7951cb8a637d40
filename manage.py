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
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
