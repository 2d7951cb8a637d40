from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from documents import (
    api,
    api_schema,  # noqa: F401 - registers the token scheme with the schema views
)
from documents.api_errors import api_not_found

app_name = "api"


class SchemaView(SpectacularAPIView):
    """The OpenAPI schema: YAML, or JSON; another ``?format=`` is 406, not 404."""

    content_negotiation_class = api.KnownFormats


class DocsView(SpectacularSwaggerSplitView):
    """Swagger UI over the schema; a ``?format=`` other than html is 406."""

    content_negotiation_class = api.KnownFormats


def both(route: str, view, name: str) -> list:
    """The route with and without its trailing slash: Django's APPEND_SLASH cannot
    redirect a POST, so ``POST /api/documents`` is served, not refused."""
    return [path(route, view, name=name), path(route.rstrip("/"), view)]


urlpatterns = [
    *both("documents/", api.DocumentList.as_view(), "documents"),
    *both("documents/<int:pk>/", api.DocumentDetail.as_view(), "document"),
    *both(
        "documents/<int:pk>/reprocess/", api.DocumentReprocess.as_view(), "reprocess"
    ),
    *both("documents/<int:pk>/file/", api.DocumentFile.as_view(), "file"),
    path("schema/", SchemaView.as_view(), name="schema"),
    # The split view serves its start-up script as a file: no inline script for CSP.
    path("docs/", DocsView.as_view(url_name="api:schema"), name="docs"),
    # Anything else under /api/ is a JSON 404, not Django's HTML page.
    re_path(r"^.*$", api_not_found),
]
