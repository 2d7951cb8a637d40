"""Pause all processing, as the pause switch of the admin's queue dashboard does:
for a deploy or a migration, from a script."""

from __future__ import annotations

import getpass

from django.core.management.base import BaseCommand

from jobqueue.management.arguments import log_verbosity
from jobqueue.models import QueueControl


class Command(BaseCommand):
    help = (
        "Pause all processing: every worker finishes its current jobs and takes no "
        "new ones until resume_queue (or the queue dashboard) resumes it."
    )
    paused = True
    done = (
        "Processing paused: workers finish their current jobs and take no new ones. "
        "manage.py resume_queue resumes it."
    )

    def handle(self, *, verbosity: int, **options) -> None:
        log_verbosity(verbosity)
        try:
            who = getpass.getuser()
        except (KeyError, OSError):  # a container's user without a passwd entry
            who = "?"
        changed = QueueControl.set_paused(self.paused, by=f"{who} (manage.py)")
        if verbosity == 0:  # from a script: nothing to print
            return
        if changed:
            self.stdout.write(self.done)
            return
        control = QueueControl.objects.get(pk=1)
        changed_at = f"{control.changed_at:%Y-%m-%d %H:%M} UTC"
        self.stdout.write(f"{control.unchanged(changed_at)}.")
