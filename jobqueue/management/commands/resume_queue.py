"""Resume processing paused by an operator (the queue dashboard, or pause_queue)."""

from __future__ import annotations

from jobqueue.management.commands import pause_queue


class Command(pause_queue.Command):
    help = "Resume processing paused on the queue dashboard or by pause_queue."
    paused = False
    done = "Processing resumed."
