"""``/healthz`` and ``/readyz`` for orchestrators (Kubernetes probes, systemd, load
balancers)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_safe

from documents.extraction import ocr_problem
from jobqueue.models import WorkerHeartbeat

logger = logging.getLogger(__name__)

OK = "ok"


def database() -> str:
    """The database answers a query."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return OK


def migrations() -> str:
    """Every migration is applied (the schema matches the code)."""
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if plan:
        return f"{len(plan)} migrations not applied: run manage.py migrate."
    return OK


def workers() -> str:
    """At least one worker has sent a heartbeat recently."""
    alive = WorkerHeartbeat.objects.in_state("alive").exists()
    return OK if alive else "No live worker: start manage.py process_queue."


def ocr() -> str:
    """Scans and photos can be read: Tesseract and its language data are there
    (always "ok" with OCR_MODE=never)."""
    return ocr_problem() or OK


READINESS_CHECKS: dict[str, Callable[[], str]] = {
    "database": database,
    "migrations": migrations,
    "workers": workers,
    "ocr": ocr,
}


# The checks that failed at this process's last probe. A probe asks every few
# seconds: a database away for an hour is one traceback when it goes and one line
# when it is back, not a traceback at each probe.
_failing: set[str] = set()


def readiness() -> tuple[bool, dict[str, str]]:
    """Every check's answer; ready when all are "ok". Later checks are skipped
    when the database is unreachable (they would only repeat it)."""
    results: dict[str, str] = {}
    for name, check in READINESS_CHECKS.items():
        try:
            results[name] = check()
        except Exception as exc:  # noqa: BLE001 - any failure means not ready
            # The details go to the log: the probe is public.
            if name in _failing:
                logger.debug("Readiness check %s still failing: %s", name, exc)
            else:
                logger.exception("Readiness check %s failed", name)
                _failing.add(name)
            results[name] = "failed (see the log)"
            if name == "database":
                break
        else:
            if name in _failing:
                _failing.discard(name)
                logger.info("Readiness check %s passes again", name)
    ready = all(results.get(name) == OK for name in READINESS_CHECKS)
    return ready, results


@require_safe
def healthz(request: HttpRequest) -> HttpResponse:
    """The process is up and answering; the database is not asked."""
    return JsonResponse({"status": "ok"})


@require_safe
def readyz(request: HttpRequest) -> HttpResponse:
    """200 when every readiness check passes, else 503; each check's answer."""
    ready, checks = readiness()
    body = {"status": "ready" if ready else "not ready", "checks": checks}
    response = JsonResponse(body, status=200 if ready else 503)
    # "Not ready" is the probe's answer, not the server's fault: django.request would
    # log each one at ERROR, an error a probe (every few seconds) while workers
    # restart. A failed check is logged above, with its reason.
    response._has_been_logged = True
    return response
