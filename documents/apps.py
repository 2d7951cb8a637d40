from django.apps import AppConfig


class DocumentsConfig(AppConfig):
    name = "documents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from documents import (
            checks,  # noqa: F401 - registers the system checks
            jobs,
        )

        jobs.register()
