"""The project's settings with the ``early`` app installed first (test_tasks_audit5)."""

from config.settings import *  # noqa: F403

INSTALLED_APPS = ["tests.jobqueue.task_apps.early", *INSTALLED_APPS]  # noqa: F405
