from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView

from config.middleware import UnsentFormMiddleware
from config.passwords import PasswordChangeView
from documents.token_views import api_tokens

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="documents:list"), name="home"),
    # Django's account pages but the password reset's: the site sends no e-mail (an
    # administrator sets a forgotten password), and an open reset form only tells
    # strangers which addresses have accounts.
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(
            extra_context={"unsent_message": UnsentFormMiddleware.MESSAGE}
        ),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # The site's own pages (Django's default templates are the admin's).
    path(
        "accounts/password_change/",
        PasswordChangeView.as_view(template_name="registration/change_password.html"),
        name="password_change",
    ),
    path(
        "accounts/password_change/done/",
        auth_views.PasswordChangeDoneView.as_view(
            template_name="registration/password_changed.html"
        ),
        name="password_change_done",
    ),
    path("accounts/tokens/", api_tokens, name="api_tokens"),
    path("documents/", include("documents.urls")),
    path("api/", include("documents.api_urls")),
    path("queue/", include("jobqueue.urls")),
    path("admin/", admin.site.urls),
]

# Error pages: JSON in the API's shape for /api/ paths (a 400 and a 500 also for
# the cron endpoint), Django's pages elsewhere.
handler400 = "config.middleware.bad_request"
handler403 = "documents.api_errors.permission_denied"
handler404 = "documents.api_errors.page_not_found"
handler500 = "config.middleware.server_error"
