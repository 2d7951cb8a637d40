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

# Error pages: JSON in the API's shape for /api/ paths, Django's pages elsewhere.
handler400 = "documents.api_errors.bad_request"
handler403 = "documents.api_errors.permission_denied"
handler404 = "documents.api_errors.page_not_found"
handler500 = "documents.api_errors.server_error"
