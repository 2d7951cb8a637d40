from django.apps import AppConfig


class JobqueueConfig(AppConfig):
    name = "jobqueue"
    verbose_name = "Queue"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from jobqueue import tasks

        tasks.register()
