from django.urls import path

from jobqueue import views

app_name = "jobqueue"

urlpatterns = [
    path("cron/", views.cron, name="cron"),
]
