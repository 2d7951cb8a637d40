"""The project's own app configurations."""

from __future__ import annotations

from django.contrib.admin.apps import AdminConfig as DjangoAdminConfig


class AdminConfig(DjangoAdminConfig):
    """Django's admin, served by ``config.admin.AdminSite``."""

    default_site = "config.admin.AdminSite"
