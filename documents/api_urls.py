from django.urls import path, re_path

from documents import api
from documents.api_errors import api_not_found

app_name = "api"


def both(route: str, view, name: str) -> list:
    """The route with and without its trailing slash: Django's APPEND_SLASH cannot
    redirect a POST, so ``POST /api/documents`` is served, not refused."""
    return [path(route, view, name=name), path(route.rstrip("/"), view)]


urlpatterns = [
    *both("documents/", api.documents, "documents"),
    *both("documents/<int:pk>/", api.document_detail, "document"),
    *both("documents/<int:pk>/reprocess/", api.document_reprocess_view, "reprocess"),
    # Anything else under /api/ is a JSON 404, not Django's HTML page.
    re_path(r"^.*$", api_not_found),
]
