"""The environment's settings, read strictly (config/settings.py, config/gunicorn.conf.py)."""

from __future__ import annotations

import re
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
