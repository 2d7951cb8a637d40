"""Run ``manage.py`` with this process's Python clock off by ``CLOCK_SKEW_SECONDS``.

Tests start workers through it to prove the queue runs on the database's clock: a host
whose clock is wrong must not rescue, retry or look dead any earlier or later.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import timedelta

from django.utils import timezone

SKEW = float(os.environ["CLOCK_SKEW_SECONDS"])
_time, _now = time.time, timezone.now
time.time = lambda: _time() + SKEW
timezone.now = lambda: _now() + timedelta(seconds=SKEW)

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(["manage.py", *sys.argv[1:]])
