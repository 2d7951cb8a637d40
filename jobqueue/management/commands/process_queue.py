"""Run the worker pool (until stopped), or process what is due once (cron)."""

from __future__ import annotations

import json
import signal
import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor
from django.utils.translation import ngettext

from jobqueue.apps import WORKER_CHECKS
from jobqueue.management.arguments import (
    log_verbosity,
    positive_int,
    positive_seconds,
    whole_number,
    worker_count,
)
from jobqueue.models import QueueControl, QueueItem, stale_after
from jobqueue.retry import MAX_RETRIES
from jobqueue.worker import ExtractionWorker, register_signal_handlers

# ``--once --exit-code``: the run went through, and at least one job failed in it. Apart
# from Django's 1 (the command could not run) and argparse's 2 (bad options).
EXIT_JOBS_FAILED = 3
EXIT_BAD_OPTIONS = 2
retry_count = whole_number(0, MAX_RETRIES)
# As django-tasks' queue names, and the column holding them.
QUEUE_NAME_MAX = 100


def not_migrated(exc: DatabaseError) -> CommandError | None:
    """The sentence for a database this release's migrations have not all reached
    (a worker started before ``migrate``, in an upgrade), which ``exc`` met as a
    missing table or column; None if it is up to date. Asked only after an error."""
    try:
        executor = MigrationExecutor(connection)
        behind = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError:
        return None
    if not behind:
        return None
    count = ngettext("%d migration", "%d migrations", len(behind)) % len(behind)
    return CommandError(
        f"The database is {count} behind this release ({first_line(exc)}): run "
        "manage.py migrate first."
    )


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def stopped(signum: signal.Signals, released: int) -> CommandError:
    """A drain cut short by a signal: the shell's status for it (128 + its number),
    so a cron wrapper or systemd tells it from a drain that finished."""
    jobs = ngettext("%d job was", "%d jobs were", released) % released
    back = f"; {jobs} released back to the queue, uncharged" if released else ""
    return CommandError(
        f"Stopped by {signum.name} before the queue was drained{back}.",
        returncode=128 + signum,
    )


def bad_options(message: str) -> CommandError:
    """Options that do not go together: argparse's exit status, so a cron wrapper
    tells them from a run that could not reach the database (1)."""
    return CommandError(message, returncode=EXIT_BAD_OPTIONS)


class Command(BaseCommand):
    help = (
        "Process the queue with a pool of workers (Ctrl+C stops gracefully), or "
        "what is due now (--once)."
    )
    requires_system_checks = [WORKER_CHECKS]

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--workers",
            type=worker_count,
            default=None,
            help="Worker threads, each with its extraction process (default: "
            f"QUEUE_WORKERS, {settings.QUEUE_WORKERS}; with --once, 1 as the cron "
            "endpoint).",
        )
        parser.add_argument(
            "--max-retries",
            type=retry_count,
            default=settings.QUEUE_MAX_RETRIES,
            help=f"Retries of a failed job before it stays failed, 0 to {MAX_RETRIES} "
            f"(default: QUEUE_MAX_RETRIES, {settings.QUEUE_MAX_RETRIES}).",
        )
        parser.add_argument(
            "--timeout",
            type=positive_seconds,
            default=settings.QUEUE_EXTRACTION_TIMEOUT,
            help="Seconds an extraction may go without progress before it is "
            "stopped as timed out (default: QUEUE_EXTRACTION_TIMEOUT, "
            f"{settings.QUEUE_EXTRACTION_TIMEOUT:g}). A document "
            "read page by page gets that long for each page; anything else for "
            "the whole job.",
        )
        parser.add_argument(
            "--heartbeat-interval",
            type=positive_seconds,
            default=settings.QUEUE_HEARTBEAT_INTERVAL,
            help="Seconds between heartbeats (default: QUEUE_HEARTBEAT_INTERVAL, "
            f"{settings.QUEUE_HEARTBEAT_INTERVAL:g}).",
        )
        parser.add_argument(
            "--poll-interval",
            type=positive_seconds,
            default=settings.QUEUE_POLL_INTERVAL,
            help="Seconds between looks for new jobs when idle, where the database's "
            "wake-up signal is not watched; where it is, idle workers look when woken, "
            "when a retry falls due, and every 5 s at most (default: "
            f"QUEUE_POLL_INTERVAL, {settings.QUEUE_POLL_INTERVAL:g}).",
        )
        parser.add_argument(
            "--stop-timeout",
            type=positive_seconds,
            default=60.0,
            help="On SIGTERM/SIGINT, seconds current jobs may take to finish before "
            "they are released; with --once, the budget's end still applies if "
            "sooner (default: 60).",
        )
        parser.add_argument(
            "--queue",
            action="append",
            dest="queues",
            metavar="NAME",
            help="Take jobs from this named queue only (repeatable; default: all; "
            f"at most {QUEUE_NAME_MAX} characters).",
        )
        parser.add_argument(
            "--once", action="store_true", help="Process what is due now, then exit."
        )
        parser.add_argument(
            "--limit",
            type=positive_int,
            default=None,
            help="With --once: at most N jobs.",
        )
        parser.add_argument(
            "--budget",
            type=positive_seconds,
            default=None,
            metavar="SECONDS",
            help="With --once: take no job that would not finish within this time; "
            "one still running at the end is stopped, charged as a timeout if it "
            "started in the budget's first half, else released uncharged (default: "
            f"CRON_BUDGET_SECONDS, {settings.CRON_BUDGET_SECONDS:g}).",
        )
        parser.add_argument(
            "--json",
            action="store_true",
            dest="as_json",
            help="With --once: print one JSON object instead of the sentence: "
            '{"processed", "completed", "failed", "paused"}, as POST /queue/cron/ '
            'answers; stopped by a signal, also "stopped_by" (its name) and '
            '"released" (the jobs given back to the queue).',
        )
        parser.add_argument(
            "--exit-code",
            action="store_true",
            help=f"With --once: exit with status {EXIT_JOBS_FAILED} when a job failed "
            "in this run (default: 0 whatever the jobs' outcomes; 1 when the command "
            "could not run, 2 for bad options; 128 + the signal's number when "
            "stopped by one: 143 for SIGTERM, 130 for Ctrl+C).",
        )

    def handle(
        self,
        *,
        workers: int | None,
        max_retries: int,
        timeout: float,
        heartbeat_interval: float,
        poll_interval: float,
        stop_timeout: float,
        once: bool,
        limit: int | None,
        budget: float | None,
        queues: list[str] | None,
        as_json: bool,
        exit_code: bool,
        verbosity: int,
        **options,
    ) -> None:
        if not once and (limit is not None or budget is not None):
            # A cron line without --once would start a pool that never ends, each run.
            raise bad_options("--limit and --budget apply only with --once.")
        if not once and (as_json or exit_code):
            raise bad_options("--json and --exit-code apply only with --once.")
        if 3 * heartbeat_interval > stale_after():
            # Workers run with the settings judge this one by stale_after(): beating
            # less often, it would look dead to them, and its jobs would run twice.
            raise bad_options(
                f"--heartbeat-interval {heartbeat_interval:g} is too long: other "
                "workers would take this one for dead. Use at most a third of "
                f"{stale_after():g} s (QUEUE_STALE_WORKER_SECONDS), or raise that "
                "setting."
            )
        for name in queues or ():
            if not name.strip():
                # An empty crontab variable ("--queue $QUEUE"): the workers would
                # wait for jobs of a queue nothing names.
                raise bad_options("--queue needs a queue's name; it was given none.")
            if len(name) > QUEUE_NAME_MAX:
                # No job is ever queued under it: the workers would wait forever.
                raise bad_options(
                    f"--queue “{name[:20]}…” cannot name a queue: a name has at most "
                    f"{QUEUE_NAME_MAX} characters ({len(name)} given)."
                )
        log_verbosity(verbosity)
        for name in queues or ():
            # A typo would otherwise wait for jobs that never come, without a word.
            if not QueueItem.objects.filter(queue_name=name).exists():
                self.stderr.write(f"No job has used the queue “{name}” yet.")
        options = {
            "max_retries": max_retries,
            "extraction_timeout": timeout,
            "heartbeat_interval": heartbeat_interval,
            "poll_interval": poll_interval,
            "queues": queues,
        }
        if once:
            # A drain of what is due now: one thread as the cron endpoint, unless
            # told otherwise.
            worker = ExtractionWorker(num_workers=workers or 1, name="cron", **options)
            register_signal_handlers(worker, stop_timeout=stop_timeout)
            try:
                counts = self._run_once(
                    worker,
                    limit,
                    settings.CRON_BUDGET_SECONDS if budget is None else budget,
                    as_json=as_json,
                    quiet=verbosity == 0,
                )
            except DatabaseError as exc:  # before any job: a sentence, exit 1
                raise not_migrated(exc) or CommandError(
                    f"The database could not be used, nothing was done: "
                    f"{first_line(exc)}"
                ) from None
            if "stopped_by" in counts:
                raise stopped(worker.stopped_by, counts["released"])
            if exit_code and counts["failed"]:
                raise CommandError(
                    f"{counts['failed']} of {counts['processed']} jobs failed in "
                    "this run.",
                    returncode=EXIT_JOBS_FAILED,
                )
            return
        workers = workers or settings.QUEUE_WORKERS
        worker = ExtractionWorker(num_workers=workers, **options)
        register_signal_handlers(worker, stop_timeout=stop_timeout)
        try:
            worker.start()
        except DatabaseError as exc:
            if (behind := not_migrated(exc)) is not None:
                raise behind from None
            raise
        if worker.is_running():  # not stopped while it waited for the database
            threads = ngettext("%d worker", "%d workers", workers) % workers
            self.stdout.write(f"Processing the queue with {threads}. Ctrl+C to stop.")
        worker.wait_stopped()
        self.stdout.write("Stopped.")

    def _run_once(
        self,
        worker: ExtractionWorker,
        limit: int | None,
        budget: float,
        *,
        as_json: bool,
        quiet: bool = False,
    ) -> dict[str, int | bool]:
        """Drain what is due; print and return the counts, and whether an operator
        has paused processing (then nothing is done). ``quiet`` (-v0): no sentence,
        so cron mails nothing; the JSON, asked for, is printed all the same."""
        paused = QueueControl.is_paused()
        counts = {"processed": 0, "completed": 0, "failed": 0}
        if not paused:
            progress = None
            if self.stdout.isatty():
                from tqdm import tqdm

                progress = tqdm(unit="job", desc="Processing", file=sys.stderr)
            try:
                counts = worker.drain(
                    limit,
                    time_budget=budget,
                    on_progress=progress.update if progress is not None else None,
                )
            finally:
                # Not ``if progress``: a bar of unknown length has no truth value.
                if progress is not None:
                    progress.close()
        counts = {**counts, "paused": paused}
        if worker.stopped_by is not None:
            # New keys only when stopped: a finished run's object is the endpoint's.
            counts["stopped_by"] = worker.stopped_by.name
            counts["released"] = worker.jobs_released()
        if as_json:
            self.stdout.write(json.dumps(counts))
        elif quiet:
            pass
        elif paused:
            self.stdout.write("Processing is paused by an operator: nothing done.")
        else:
            jobs = ngettext("%d job", "%d jobs", counts["processed"])
            self.stdout.write(
                f"Processed {jobs % counts['processed']}: {counts['completed']} "
                f"completed, {counts['failed']} failed."
            )
        return counts
