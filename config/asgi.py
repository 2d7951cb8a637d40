"""ASGI entry point. Bodies are bounded before Django reads them (see
documents.middleware.BoundedBodyASGI)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_application = get_asgi_application()

from documents.middleware import BoundedBodyASGI  # noqa: E402 - after Django's set-up

application = BoundedBodyASGI(django_application)
