from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_out
from django.db.models.signals import pre_delete


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
        pre_delete.connect(
            _delete_their_documents,
            sender=get_user_model(),
            dispatch_uid="documents.delete_their_documents",
        )


def _say_logged_out(sender: Any, request: Any, **kwargs: Any) -> None:
    """The login page a logout lands on says it happened."""
    if request is not None:
        from django.contrib import messages

        # fail_silently: a logout outside the middleware (the test client's) has
        # nowhere to put it.
        messages.info(request, "You are logged out.", fail_silently=True)


def _delete_their_documents(sender: Any, instance: Any, **kwargs: Any) -> None:
    """A person deleted (the admin's Users, ``user.delete()``) takes their documents
    through the service, so that their files and pages go too once it commits: the
    database's cascade would delete the rows and leave the files behind."""
    from documents.models import Document
    from documents.services import document_delete_many

    document_delete_many(
        documents=Document.objects.filter(owner=instance).without_text()
    )
