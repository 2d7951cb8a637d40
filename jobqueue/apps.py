from django.apps import AppConfig

# The tag of the system checks a worker runs when it starts (``process_queue``): the
# settings and data its jobs need. The rest (templates, URLs, admin) are the web
# app's, and would cost every worker start a third of a second.
WORKER_CHECKS = "worker"


class JobqueueConfig(AppConfig):
    name = "jobqueue"
    verbose_name = "Queue"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from jobqueue import tasks

        tasks.register()
