"""An app whose package imports its tasks, so its ``@task`` runs while Django loads
the apps (as django-modelsearch's, Wagtail's search, does): the backend is built
before any model can be imported."""

from tests.jobqueue.task_apps.early import tasks  # noqa: F401
