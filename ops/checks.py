"""System checks for settings with a fixed set of values, run at start-up; and, with
``check --deploy``, for tokens short enough to guess or shared by cron and metrics.

A wrong value is an error when the process starts (``manage.py check``, ``runserver``,
``migrate``, ``process_queue``), not a surprise when the first job fails. To check a
new setting, add one line to ``ENUMERATED_SETTINGS``: its name, and its values or the
dotted path of the tuple that defines them where they are used.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register
from django.utils.module_loading import import_string

from jobqueue.apps import WORKER_CHECKS

ENUMERATED_SETTINGS: dict[str, tuple[str, ...] | str] = {
    "PDF_ENGINE": "documents.extractors.base.PDF_ENGINES",
    "LOG_FORMAT": ("plain", "json"),
}


def allowed_values(name: str) -> tuple[str, ...]:
    """The values ``name`` may take."""
    values = ENUMERATED_SETTINGS[name]
    return import_string(values) if isinstance(values, str) else values


@register(WORKER_CHECKS)
def check_enumerated_settings(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """One error per enumerated setting whose value is not one of its values."""
    errors = []
    for name in ENUMERATED_SETTINGS:
        value, allowed = getattr(settings, name), allowed_values(name)
        if value not in allowed:
            errors.append(
                Error(
                    f"{name} is {value!r}, which is not a value it can take.",
                    hint=f"Set {name} to one of: {', '.join(allowed)}.",
                    obj=name,
                    id="ops.E001",
                )
            )
    return errors


# The shared secrets of the ops endpoints (cron, metrics): a short one can be guessed
# over HTTP, each try as cheap as a request.
TOKEN_SETTINGS = ("CRON_TOKEN", "METRICS_TOKEN")
MIN_TOKEN_LENGTH = 32


@register(Tags.security, deploy=True)
def check_token_lengths(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    """One warning per ops token set shorter than ``MIN_TOKEN_LENGTH``."""
    return [
        Warning(
            f"{name} is {len(value)} characters long: short enough to guess.",
            hint=f"Use at least {MIN_TOKEN_LENGTH} random characters, e.g. the "
            "output of: python -c 'import secrets; print(secrets.token_urlsafe(32))'",
            obj=name,
            id="ops.W001",
        )
        for name in TOKEN_SETTINGS
        if 0 < len(value := getattr(settings, name)) < MIN_TOKEN_LENGTH
    ]


@register(Tags.security, deploy=True)
def check_tokens_differ(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    """A warning when the cron and metrics tokens are one secret: the scraper's,
    kept in Prometheus' configuration and sent on every scrape, would then also
    start processing (``POST /queue/cron/``), which only cron should."""
    cron, metrics = settings.CRON_TOKEN, settings.METRICS_TOKEN
    if not cron or cron != metrics:
        return []
    return [
        Warning(
            "CRON_TOKEN and METRICS_TOKEN are the same: whoever may read the metrics "
            "may also start processing.",
            hint="Give each its own random value.",
            obj="METRICS_TOKEN",
            id="ops.W002",
        )
    ]
