import gc

from django.apps import AppConfig


class OpsConfig(AppConfig):
    name = "ops"
    verbose_name = "Operations"

    def ready(self) -> None:
        from ops import checks  # noqa: F401 - registers the system checks

        # The last app (see INSTALLED_APPS): start-up is over. What it built stays
        # out of later collections; manage.py had the collector off until now.
        gc.freeze()
        gc.enable()
