"""Send jobs of dead workers, or jobs processing for too long, back to the queue."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils.translation import ngettext

from jobqueue.management.arguments import amount
from jobqueue.models import QueueItem, Status, stale_after, stale_job_after
from jobqueue.services import QueueManager

# Options refused: argparse's exit status, as process_queue's, so a cron wrapper tells
# them from a run that could not reach the database (1).
EXIT_BAD_OPTIONS = 2


class Command(BaseCommand):
    help = (
        "Rescue jobs whose worker stopped heartbeating, and jobs processing longer "
        "than --minutes. Each rescue counts as an attempt."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--minutes",
            type=amount("minutes"),
            default=None,
            help="Also rescue jobs processing longer than this, and at least as long "
            "as QUEUE_EXTRACTION_TIMEOUT (default: as the workers rescue them, "
            "QUEUE_STALE_JOB_MINUTES, or twice QUEUE_EXTRACTION_TIMEOUT if more: "
            f"{stale_job_after():g}).",
        )
        parser.add_argument(
            "--heartbeat-seconds",
            type=amount("seconds"),
            default=None,
            help="A worker silent for this long is presumed dead (default: "
            "QUEUE_STALE_WORKER_SECONDS, and at least three heartbeat intervals: "
            f"{stale_after():g}).",
        )

    def handle(
        self,
        *,
        minutes: float | None,
        heartbeat_seconds: float | None,
        verbosity: int,
        **options,
    ) -> None:
        # A worker stops an extraction at its timeout: a job older than that (with
        # no progress) is not running any more; a younger one may be.
        timeout_minutes = settings.QUEUE_EXTRACTION_TIMEOUT / 60
        if minutes is None:
            minutes = stale_job_after()
        elif minutes < timeout_minutes:
            raise CommandError(
                f"--minutes {minutes:g} would take jobs from live workers: use at "
                f"least the extraction timeout ({timeout_minutes:g} minutes, "
                "QUEUE_EXTRACTION_TIMEOUT).",
                returncode=EXIT_BAD_OPTIONS,
            )
        beats = 3 * settings.QUEUE_HEARTBEAT_INTERVAL
        if heartbeat_seconds is not None and heartbeat_seconds < beats:
            # A live worker can be silent for nearly three beats: its jobs would be
            # taken from it and run twice.
            raise CommandError(
                f"--heartbeat-seconds {heartbeat_seconds:g} would take live workers "
                f"for dead: use at least three heartbeat intervals ({beats:g} s).",
                returncode=EXIT_BAD_OPTIONS,
            )
        queue = QueueManager()
        threshold = heartbeat_seconds or stale_after()
        # Run right after a database outage, every worker's heartbeat is stale:
        # the live ones get the time they take to beat again, and keep their jobs.
        holders = queue.silent_holders(threshold)
        if holders and verbosity:
            # The wait takes up to a third of the threshold: not a hang. A note
            # on stderr: stdout says what was done.
            self.stderr.write(
                ngettext(
                    "Waiting for %(count)d silent worker holding jobs: a live one "
                    "beats again within a third of %(silent)g s.",
                    "Waiting for %(count)d silent workers holding jobs: live ones "
                    "beat again within a third of %(silent)g s.",
                    len(holders),
                )
                % {"count": len(holders), "silent": threshold}
            )
        queue.wait_for_silent_workers(threshold, silent=holders)
        dead = queue.rescue_stale_workers(threshold)
        slow = queue.cleanup_stale_jobs(stale_threshold_minutes=minutes)
        if verbosity == 0:  # from cron: the rescues are logged (WARNING) anyway
            return
        jobs = ngettext("%d job", "%d jobs", dead) % dead
        stuck = ngettext("%d job", "%d jobs", slow) % slow
        self.stdout.write(
            f"Rescued {jobs} of dead workers and {stuck} stuck over {minutes:g} minutes."
        )
        # Run right after killing a worker, it rescues nothing yet: say why, and when.
        held = QueueItem.objects.filter(status=Status.PROCESSING).count()
        if held:
            self.stdout.write(
                ngettext(
                    "%(count)d job is still processing: its worker was heard from, "
                    "or took it, within the last %(silent)g s. A worker killed since "
                    "is taken for dead once silent that long: run this again then.",
                    "%(count)d jobs are still processing: their workers were heard "
                    "from, or took them, within the last %(silent)g s. A worker killed "
                    "since is taken for dead once silent that long: run this again "
                    "then.",
                    held,
                )
                % {"count": held, "silent": threshold}
            )
