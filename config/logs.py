"""The log's shape, one for every process: Django's (settings.LOGGING) and gunicorn's
own lines (its start, its workers, its access log), so that a log collector reads one
format from the web unit and the workers alike.

Both formats stamp records in UTC, ISO 8601 with milliseconds and a Z
(2025-01-31T14:05:09.042Z): the same on every host, whatever TIME_ZONE or TZ say, so
logs of several hosts sort and merge as they are. Set on the formatters as attributes
(dictConfig's "."), stdlib's formatTime does the rest.
"""

from __future__ import annotations

import logging
import time
from typing import Any

_UTC_TIMESTAMPS = {
    "converter": time.gmtime,
    "default_time_format": "%Y-%m-%dT%H:%M:%S",
    "default_msec_format": "%s.%03dZ",
}


class WarnInOneLine(logging.Filter):
    """A request refused for its Host header, logged as a warning in one line, not
    an error with a traceback of 14: scanners send them by the thousand to any
    address on the internet. A name missing from ALLOWED_HOSTS still shows."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = record.exc_text = None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def logging_config(log_format: str, level: str) -> dict[str, Any]:
    """dictConfig's dictionary: every record to stderr, as ``log_format`` says
    (``json``: one object per line; else plain lines), from ``level`` up."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "plain": {
                "()": "logging.Formatter",
                "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
                ".": _UTC_TIMESTAMPS,
            },
            "json": {
                "()": "pythonjsonlogger.json.JsonFormatter",
                "format": "%(asctime)s %(levelname)s %(name)s %(message)s",
                "rename_fields": {
                    "asctime": "time",
                    "levelname": "level",
                    "name": "logger",
                },
                ".": _UTC_TIMESTAMPS,
            },
        },
        "filters": {"one_line": {"()": WarnInOneLine}},
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "json" if log_format == "json" else "plain",
            }
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            # axes logs every login at INFO; lock-outs come at WARNING.
            "axes": {"level": "WARNING"},
            # django-environ says at INFO, in every process, that there is no .env
            # file: where the environment holds the settings, there need not be.
            "environ": {"level": "WARNING"},
            # Django's default logging gives this logger a console handler of its
            # own while DEBUG is on (make run's .env), which wrote each record a
            # second time, a bare message: none here, so ours writes it once.
            "django": {"handlers": []},
            "django.security.DisallowedHost": {"filters": ["one_line"]},
            # gunicorn's own, which it would write in formats of its own (its
            # access log to stdout): through the console, once each.
            "gunicorn.error": {"handlers": ["console"], "propagate": False},
            "gunicorn.access": {
                "handlers": ["console"],
                "level": "INFO",
                "propagate": False,
            },
        },
    }
