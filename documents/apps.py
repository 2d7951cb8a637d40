from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.contrib.auth.signals import user_logged_out


class DocumentsConfig(AppConfig):
    name = "documents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from documents import (
            checks,  # noqa: F401 - registers the system checks
            jobs,
        )

        jobs.register()
        user_logged_out.connect(_say_logged_out, dispatch_uid="documents.logged_out")


def _say_logged_out(sender: Any, request: Any, **kwargs: Any) -> None:
    """The login page a logout lands on says it happened."""
    if request is not None:
        from django.contrib import messages

        # fail_silently: a logout outside the middleware (the test client's) has
        # nowhere to put it.
        messages.info(request, "You are logged out.", fail_silently=True)
