from django.urls import path

from documents import api

app_name = "api"

urlpatterns = [
    path("documents/", api.documents, name="documents"),
    path("documents/<int:pk>/", api.document_detail, name="document"),
    path(
        "documents/<int:pk>/reprocess/", api.document_reprocess_view, name="reprocess"
    ),
]
