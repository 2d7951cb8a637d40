"""The environment's settings, read strictly (config/settings.py, config/gunicorn.conf.py)."""

from __future__ import annotations

import os
import re
import warnings
from argparse import ArgumentTypeError
from collections.abc import Callable
from typing import Any

import environ
from django.core.exceptions import ImproperlyConfigured

from jobqueue.management.arguments import amount, whole_number


class Env(environ.Env):
    """django-environ, strict: a value a setting cannot take stops the start with a
    sentence naming the variable. django-environ would raise a ValueError naming
    nothing, read "1e3" as 13 and "maybe" as false; a negative limit or a bad rate
    would surface later, as odd answers or a 500 in some request."""

    TRUE, FALSE = (
        ("1", "true", "yes", "on", "y", "ok"),
        ("0", "false", "no", "off", "n"),
    )
    # DRF's throttle rates: N per second, minute, hour or day (it reads the letter).
    RATE = re.compile(r"(\d+)/(s|sec|second|m|min|minute|h|hour|d|day)s?")
    LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
    # The databases the queue's statements are written for (jobqueue/sql).
    DATABASES = ("django.db.backends.postgresql", "django.db.backends.sqlite3")
    DATABASE_URLS = (
        "use PostgreSQL (postgres://user@host:5432/name) or SQLite "
        "(sqlite:////absolute/path.sqlite3)"
    )

    def checked(self, var: str, parse: Callable[[str], Any], default: Any) -> Any:
        raw = self.ENVIRON.get(var)
        if raw is None:
            return default
        try:
            return parse(raw.strip())
        except (ArgumentTypeError, ValueError) as error:
            message = f"{var} (environment or .env): {error}."
            raise ImproperlyConfigured(message) from None

    def int(self, var: str, default: int, low: int = 0, high: int | None = None):
        """A whole number from ``low`` (to ``high``)."""
        return self.checked(var, whole_number(low, high), default)

    def float(self, var: str, default: float, unit="seconds", zero=False):
        """A finite amount of ``unit`` above 0 (or from 0), at most a century."""
        return self.checked(var, amount(unit, allow_zero=zero), default)

    def bool(self, var: str, default: bool) -> bool:
        def parse(value: str) -> bool:
            if value.lower() not in self.TRUE + self.FALSE:
                raise ValueError(f"“{value}” is not 1 or 0 (true/false, yes/no)")
            return value.lower() in self.TRUE

        return self.checked(var, parse, default)

    def rate(self, var: str, default: str) -> str:
        def parse(value: str) -> str:
            match = self.RATE.fullmatch(value.lower())
            if not match or int(match[1]) < 1:
                raise ValueError(
                    f"“{value}” is not N/second, N/minute, N/hour or N/day"
                )
            return value.lower()

        return self.checked(var, parse, default)

    def level(self, var: str, default: str) -> str:
        def parse(value: str) -> str:
            if value.upper() not in self.LEVELS:
                raise ValueError(f"“{value}” is not one of {', '.join(self.LEVELS)}")
            return value.upper()

        return self.checked(var, parse, default)

    def db(self, var: str, default: str) -> dict:
        """A PostgreSQL or SQLite URL. django-environ took anything: an empty or
        mistyped URL stopped the start with a KeyError, and its warning printed the
        URL's password. A SQLite file must be named by its absolute path, as the web
        app, the workers and cron must all open the same one."""

        def parse(value: str) -> dict:
            with warnings.catch_warnings():  # "Engine not recognized": the password
                warnings.simplefilter("ignore")
                config = self.db_url_config(value)
            if config.get("ENGINE") not in self.DATABASES:
                if "://" not in value:
                    raise ValueError(f"not a database URL: {self.DATABASE_URLS}")
                scheme = value.partition("://")[0]  # never the rest: its password
                raise ValueError(
                    f"“{scheme}://…” is not a database the queue runs on: "
                    f"{self.DATABASE_URLS}"
                )
            if config["ENGINE"].endswith("sqlite3") and not os.path.isabs(
                config["NAME"]
            ):
                raise ValueError(
                    f"the SQLite file “{config['NAME']}” is not an absolute path (an "
                    "in-memory database, or one relative to where each process "
                    "starts, is not shared with the workers): write sqlite:// and "
                    "the absolute path, e.g. sqlite:////srv/docqueue/db.sqlite3"
                )
            return config

        return self.checked(var, parse, None) or self.db_url_config(default)

    def path(self, var: str, default: Any, **kwargs: Any) -> environ.Path:
        """An absolute folder. An empty or relative one was taken from the folder
        each process starts in: the web app, the workers and cron would each use
        another, and check_storage would clean the wrong one (``MEDIA_ROOT=``
        in the project folder: the app's own ``documents/`` package)."""

        def parse(value: str) -> str:
            if not os.path.isabs(value):
                raise ValueError(
                    f"“{value}” is not an absolute path: name the folder from the "
                    "root (e.g. /srv/docqueue/files), or leave the variable out for "
                    "the default"
                )
            return value

        self.checked(var, parse, None)
        return super().path(var, default=default, **kwargs)
