from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="documents:list"), name="home"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("documents/", include("documents.urls")),
    path("api/", include("documents.api_urls")),
    path("queue/", include("jobqueue.urls")),
    path("admin/", admin.site.urls),
]
