"""Argument types for the management commands: bad input is refused by argparse with
a sentence saying what is wanted (and a non-zero exit), before anything runs. And
what ``-v`` does to the queue's log."""

from __future__ import annotations

import logging
import math
from argparse import ArgumentTypeError
from collections.abc import Callable


def whole_number(low: int, high: int | None = None) -> Callable[[str], int]:
    """A whole number from ``low`` (up to ``high``)."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise ArgumentTypeError(f"“{value}” is not a whole number") from None
        if number < low or (high is not None and number > high):
            wanted = f"from {low} to {high}" if high is not None else f"{low} or more"
            raise ArgumentTypeError(f"{number} is out of range: use {wanted}")
        return number

    return parse


# A century (of 365 days), the most any amount of time may be in each unit: more is a
# typo, and PostgreSQL's timestamps (and the platform's time_t) overflow long before a
# float does. The one limit on days: the settings, the commands' options, an API
# token's expiry and the admin's clear page.
MAX_DAYS = 36_500
_CENTURY = {"seconds": MAX_DAYS * 86_400, "minutes": MAX_DAYS * 1_440, "days": MAX_DAYS}


def amount(unit: str, *, allow_zero: bool = False) -> Callable[[str], float]:
    """A finite number of ``unit`` (seconds, minutes, days), above 0 (or from 0), and
    at most a century."""
    most = _CENTURY[unit]

    def parse(value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise ArgumentTypeError(f"“{value}” is not a number of {unit}") from None
        if not math.isfinite(number) or number < 0 or (number == 0 and not allow_zero):
            wanted = "0 or more" if allow_zero else "more than 0"
            raise ArgumentTypeError(f"{value} {unit} is not allowed: use {wanted}")
        if number > most:
            raise ArgumentTypeError(f"{value} {unit} is too long: use at most {most:,}")
        return number

    return parse


positive_int = whole_number(1)
# Threads of one process, each with its extraction child: "1000" for "10" is a typo.
worker_count = whole_number(1, 256)
positive_seconds = amount("seconds")


def log_verbosity(verbosity: int) -> None:
    """``-v0`` keeps the queue's INFO lines out of the log (from cron: nothing to
    mail), ``-v2`` and more let its DEBUG lines in; the default leaves the level
    to ``LOG_LEVEL`` (NOTSET: also after an earlier command in the same process)."""
    levels = {0: logging.WARNING, 1: logging.NOTSET}
    logging.getLogger("jobqueue").setLevel(levels.get(verbosity, logging.DEBUG))
