from django.urls import path

from documents import manage_views, views

app_name = "documents"

urlpatterns = [
    path("", views.document_list, name="list"),
    path("upload/", views.upload, name="upload"),
    path("search/", views.search, name="search"),
    path("status/", views.document_statuses, name="statuses"),
    path("bulk/", manage_views.bulk, name="bulk"),
    path("<int:pk>/", views.document_detail, name="detail"),
    path("<int:pk>/status/", views.document_status, name="status"),
    path("<int:pk>/reprocess/", views.reprocess, name="reprocess"),
    path("<int:pk>/download/", views.download, name="download"),
    path("<int:pk>/text/", views.download_text, name="text"),
    path("<int:pk>/edit/", manage_views.edit, name="edit"),
    path("<int:pk>/delete/", manage_views.delete, name="delete"),
    path("<int:pk>/pages/<int:number>/", manage_views.page_image, name="page"),
    path("<int:pk>/thumbnail/", manage_views.thumbnail, name="thumbnail"),
]
