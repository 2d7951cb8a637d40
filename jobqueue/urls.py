from django.urls import path

from jobqueue import views

app_name = "jobqueue"

urlpatterns = [
    path("cron/", views.cron, name="cron"),
    # APPEND_SLASH cannot redirect a POST: a crontab line without the slash would
    # get a 301 that curl does not follow, and nothing would run.
    path("cron", views.cron),
]
