"""A minimal Django project hosting the peer queues, configured by DATABASE_URL.

django-tasks-db on any database; Procrastinate's Django contrib only on PostgreSQL
(its migrations are PostgreSQL SQL). SQLite gets the same options as our product
(WAL, IMMEDIATE transactions, busy timeout), so both run on the same database setup.
"""

import os

import dj_database_url

SECRET_KEY = "bench-only"  # noqa: S105 - a throwaway benchmark project
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

DATABASES = {"default": dj_database_url.parse(os.environ["DATABASE_URL"])}
SQLITE = DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3"
# BENCH_SQLITE_DEFAULTS=1 keeps Django's stock SQLite settings (rollback journal).
if SQLITE and not os.environ.get("BENCH_SQLITE_DEFAULTS"):
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 60.0,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django_tasks",
    "django_tasks_db",
    "benchapp",
]
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    INSTALLED_APPS.append("procrastinate.contrib.django")

# The reference database backend of Django's tasks framework, as its README sets it up.
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
