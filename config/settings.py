"""Settings, all read from the environment (see .env.example)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import environ
from csp.constants import NONE, SELF, UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured

from config.env import Env
from config.logs import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"


env = Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("Set SECRET_KEY (or DEBUG=1 for local development).")
    SECRET_KEY = "django-insecure-development-only"  # noqa: S105 - DEBUG only
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "config.apps.AdminConfig",  # Django's admin, on a site that checks input
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "knox",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served here: no CDN
    "csp",
    "axes",
    "django_tasks",
    "documents",
    "jobqueue",
    "ops",  # last: its ready() ends the start-up (manage.py)
]

MIDDLEWARE = [
    # First: everything below sees the client's address, not a proxy's.
    "config.middleware.ForwardedForMiddleware",
    # Outermost: an empty 405 from anywhere below, /metrics included, says why.
    "config.middleware.MethodNotAllowedMiddleware",
    # Then /healthz, /readyz and /metrics answer before host checks and redirects.
    "ops.middleware.OpsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.RejectNulMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "config.middleware.PrivateCacheMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # Says on the log-in page that a form sent after a log-out was not kept.
    "config.middleware.UnsentFormMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # It answers with the user's upload page, so it needs all of the above.
    "documents.middleware.UploadLimitMiddleware",
    # Last, as its documentation asks: it turns a lock-out into its response.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
CSRF_FAILURE_VIEW = "documents.api_errors.csrf_failure"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------
SQLITE_BUSY_TIMEOUT = env.float("SQLITE_BUSY_TIMEOUT", default=60.0, zero=True)
DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}")
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Concurrent workers: WAL lets readers run beside the writer, IMMEDIATE takes the
    # write lock at BEGIN so claims queue on the busy timeout instead of failing with
    # "database is locked" when a read transaction tries to upgrade.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": SQLITE_BUSY_TIMEOUT,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
    # Worker processes must see the test database, so it is a file, never :memory:.
    DATABASES["default"]["TEST"] = {
        "NAME": env.str("SQLITE_TEST_NAME", default=str(VAR_DIR / "test_db.sqlite3"))
    }
    for _name in (DATABASES["default"]["NAME"], DATABASES["default"]["TEST"]["NAME"]):
        Path(_name).parent.mkdir(parents=True, exist_ok=True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {
        "NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"
    },
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# django-axes first: it refuses a locked-out login before the password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "documents:list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True

# --- Files ----------------------------------------------------------------
STATIC_URL = "static/"
STATIC_ROOT = env.path("STATIC_ROOT", default=BASE_DIR / "staticfiles")
STATICFILES_DIRS = [BASE_DIR / "static"]
# Uploads are private: MEDIA_ROOT is never served by URL; downloads go through a view.
MEDIA_ROOT = env.path("MEDIA_ROOT", default=VAR_DIR / "media")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
MAX_UPLOAD_MB = env.int("MAX_UPLOAD_MB", default=50, low=1)
MAX_UPLOAD_FILES = env.int("MAX_UPLOAD_FILES", default=20, low=1)
# Django spools anything larger than this to a temporary file instead of memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
# One more than the form takes, so documents.middleware refuses the excess file with
# a clear message before Django's own check (a bare 400) is reached.
DATA_UPLOAD_MAX_NUMBER_FILES = MAX_UPLOAD_FILES + 1

# --- Queue and workers ----------------------------------------------------
QUEUE_WORKERS = env.int("QUEUE_WORKERS", default=2, low=1, high=256)
# At most jobqueue.retry.MAX_RETRIES (the settings load before the apps).
QUEUE_MAX_RETRIES = env.int("QUEUE_MAX_RETRIES", default=3, high=1000)
# Django's tasks (@task) run on this queue, in any named queue (QUEUES empty).
TASKS = {"default": {"BACKEND": "jobqueue.tasks.QueueBackend", "QUEUES": []}}
QUEUE_EXTRACTION_TIMEOUT = env.float("QUEUE_EXTRACTION_TIMEOUT", default=300.0)
QUEUE_HEARTBEAT_INTERVAL = env.float("QUEUE_HEARTBEAT_INTERVAL", default=10.0)
# Idle workers look for work this often only while the database's wake-up signal
# (NOTIFY, or the SQLite file's writes) is not watched; the pause switch likewise.
QUEUE_POLL_INTERVAL = env.float("QUEUE_POLL_INTERVAL", default=1.0)
# A worker whose heartbeat is older than this is presumed dead and its jobs rescued.
QUEUE_STALE_WORKER_SECONDS = env.float("QUEUE_STALE_WORKER_SECONDS", default=60.0)
# Jobs processing longer than this are rescued by any worker, whatever the heartbeats.
QUEUE_STALE_JOB_MINUTES = env.float(
    "QUEUE_STALE_JOB_MINUTES", default=30.0, unit="minutes"
)
# Finished queue items (and so tasks' results) are deleted by the workers' housekeeping
# this many days after they finished; 0 keeps them until cleared by hand.
QUEUE_KEEP_FINISHED_DAYS = env.float(
    "QUEUE_KEEP_FINISHED_DAYS", default=30.0, unit="days", zero=True
)
QUEUE_CHILD_MEMORY_MB = env.int("QUEUE_CHILD_MEMORY_MB", default=2048)  # 0: no cap
QUEUE_CHILD_MAX_TASKS = env.int("QUEUE_CHILD_MAX_TASKS", default=200, low=1)
PDF_ENGINE = env.str("PDF_ENGINE", default="auto")
# OCR (Tesseract): auto reads pages without usable text, always every page, never none.
OCR_MODE = env.str("OCR_MODE", default="auto")
OCR_LANGUAGES = env.str("OCR_LANGUAGES", default="eng")  # "eng+deu": several
# PDF pages are rendered at this for OCR.
OCR_DPI = env.int("OCR_DPI", default=300, low=70, high=1200)
EXTRACTED_TEXT_MAX_CHARS = env.int(
    "EXTRACTED_TEXT_MAX_CHARS", default=10_000_000, low=1
)
EXTRACTION_MAX_PAGES = env.int("EXTRACTION_MAX_PAGES", default=5_000, low=1)
# Draw each document's first-page thumbnail (a queue job once its text is read).
THUMBNAILS = env.bool("THUMBNAILS", default=True)
# Keyword arguments the workers give the extract function, from the settings above.
QUEUE_EXTRACT_OPTIONS = "documents.extraction.extract_options"
# Functions adding figures to the queue dashboard: f(now) -> [{label, value, warning}]
QUEUE_DASHBOARD_FIGURES = ["documents.extraction.dashboard_figures"]
# Dotted path of the function children call to extract a file (tests swap in slow ones).
QUEUE_EXTRACT_FUNCTION = env.str(
    "QUEUE_EXTRACT_FUNCTION", default="documents.extractors.registry.extract"
)
# Per-user bounds: jobs waiting or running, ZIP downloads streaming at once (in each
# web process), and request rates (DRF's "N/period").
USER_MAX_ACTIVE_JOBS = env.int("USER_MAX_ACTIVE_JOBS", default=1000, low=1)
USER_MAX_ZIP_DOWNLOADS = env.int("USER_MAX_ZIP_DOWNLOADS", default=2, low=1)
UPLOAD_RATE = env.rate("UPLOAD_RATE", default="120/minute")
API_RATE = env.rate("API_RATE", default="1200/minute")
# Search: the database's time per request, and letters needed before a prefix's "*".
SEARCH_TIMEOUT_SECONDS = env.float("SEARCH_TIMEOUT_SECONDS", default=2.0)
SEARCH_MIN_PREFIX_CHARS = env.int("SEARCH_MIN_PREFIX_CHARS", default=2, low=1)
CRON_TOKEN = env.str("CRON_TOKEN", default="")
# Seconds a cron run (POST /queue/cron/, process_queue --once) may take: under
# common proxy timeouts (30 s).
CRON_BUDGET_SECONDS = env.float("CRON_BUDGET_SECONDS", default=25.0)

# --- API ------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first, so an anonymous request gets 401 with WWW-Authenticate.
        "documents.tokens.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_THROTTLE_CLASSES": ["documents.access.UserThrottle"],
    "DEFAULT_THROTTLE_RATES": {"user": API_RATE, "uploads": UPLOAD_RATE},
    # Anonymous callers (the public schema) are counted by the address that
    # connected, as django-axes counts log-ins: DRF would otherwise read an
    # X-Forwarded-For header, which a caller writes anew for every request.
    "NUM_PROXIES": 0,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "documents.api_errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "docqueue API",
    "DESCRIPTION": "Upload documents, follow their processing, read their text.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Public and read-only: no session read, so nothing there to protect with CSRF.
    "SERVE_AUTHENTICATION": [],
    "COMPONENT_SPLIT_REQUEST": True,  # the upload's file is binary in requests only
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "PREPROCESSING_HOOKS": ["documents.api_schema.only_canonical_paths"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "documents.api_schema.add_error_responses",
    ],
}

# Tokens are stored hashed (SHA-512); they live until revoked unless created with an
# expiry (create_api_token --expires-days, or the admin's form).
REST_KNOX = {"TOKEN_TTL": None, "AUTO_REFRESH": False}

# --- Security -------------------------------------------------------------
SESSION_COOKIE_SECURE = env.bool("SECURE_COOKIES", default=not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
# A cron job posting to the endpoint over http got a 301, which `curl -f` takes for
# success: nothing ran, and nobody heard. Its token was sent before the redirect
# anyway; a cron on the host itself may well reach the app over plain http.
SECURE_REDIRECT_EXEMPT = [r"^queue/cron/?$"]
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool(
    "SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False
)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
# Behind a proxy that terminates TLS, Django sees plain HTTP: without this, the SSL
# redirect loops and CSRF rejects HTTPS origins. Only set it if the proxy sets
# X-Forwarded-Proto itself (and strips the client's).
if env.bool("TRUST_X_FORWARDED_PROTO", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Behind a proxy, every client has the proxy's address: one client's failed logins
# would lock a user name out for everyone. Only set it if the proxy sets
# X-Forwarded-For itself (config.middleware.ForwardedForMiddleware reads its last entry).
TRUST_X_FORWARDED_FOR = env.bool("TRUST_X_FORWARDED_FOR", default=False)
SECURE_CONTENT_TYPE_NOSNIFF = True
# Scripts only from our own static files: no inline script, no eval, no other origin.
# Inline style attributes stay allowed (the admin and the charts use them).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, UNSAFE_INLINE],
        "img-src": [SELF, "data:"],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}
# Login throttling (django-axes): after LOGIN_FAILURE_LIMIT failures for one user name
# from one address, that pair is locked out for LOGIN_LOCKOUT_MINUTES (answer 429).
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5, low=1)
AXES_COOLOFF_TIME = timedelta(
    minutes=env.float("LOGIN_LOCKOUT_MINUTES", default=15, unit="minutes")
)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_LOCKOUT_CALLABLE = "config.passwords.locked_out"  # the page, with Retry-After
AXES_VERBOSE = False  # no banner on every manage.py command
X_FRAME_OPTIONS = "DENY"
# Messages live in the session, not in a cookie: a new API key is shown in one.
MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"

# --- Logs and monitoring --------------------------------------------------
# plain: one readable line per record; json: one JSON object per line (with the job's
# fields on job events), for log collectors. A wrong value fails the system check.
LOG_FORMAT = env.str("LOG_FORMAT", default="plain")
LOGGING = logging_config(LOG_FORMAT, env.level("LOG_LEVEL", default="INFO"))
# /metrics: with a token, Prometheus must send it as a Bearer token; without one it is
# served only if METRICS_PUBLIC says the network already keeps it private.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
METRICS_PUBLIC = env.bool("METRICS_PUBLIC", default=False)
