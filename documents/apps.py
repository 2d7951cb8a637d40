from django.apps import AppConfig


class DocumentsConfig(AppConfig):
    name = "documents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from documents import (
            api_schema,  # noqa: F401 - registers the token scheme
            checks,  # noqa: F401 - registers the system checks
            jobs,
        )

        jobs.register()
