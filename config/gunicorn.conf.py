"""gunicorn settings for ``make run`` and production (README: Production).

Threads, not sync workers: a client that trickles its request holds one thread, not
a whole worker, so other people are still served. Behind a reverse proxy that buffers
requests (nginx, Caddy), slow clients never reach gunicorn at all.
Override anything with GUNICORN_CMD_ARGS, e.g. GUNICORN_CMD_ARGS="--threads 32".
"""

from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from config.env import Env
from config.logs import logging_config

# .env as config/settings.py reads it (the environment wins): its WEB_CONCURRENCY is
# needed here, before any worker has loaded the settings.
environ.Env.read_env(Path(__file__).resolve().parent.parent / ".env", overwrite=False)
env = Env()

wsgi_app = "config.wsgi"
worker_class = "config.gunicorn_worker.SafeQuitThreadWorker"  # gthread
try:
    # 0 workers would listen and never answer.
    workers = env.int("WEB_CONCURRENCY", default=2, low=1, high=256)
except ImproperlyConfigured as error:
    raise SystemExit(f"Error: {error}") from None
threads = 16
# A worker whose main loop stops answering this long is replaced; requests may take
# longer (uploads of large files on slow links), since its threads keep it alive.
timeout = 60
# Ctrl+C or SIGTERM: requests in flight get this long to finish.
graceful_timeout = 20
keepalive = 5
accesslog = "-"
# Its lines as the app's, to stderr: one format for a log collector (config/logs.py).
logconfig_dict = logging_config(
    env.str("LOG_FORMAT", default="plain"), env.level("LOG_LEVEL", default="INFO")
)
# A search of 500 characters (the most ``q`` takes) in Chinese or Japanese is some
# 4,500 bytes of request line: gunicorn's default 4,094 answered it 414 itself.
limit_request_line = 8190
# Whether a request came over HTTPS is Django's to say (TRUST_X_FORWARDED_PROTO):
# gunicorn's default believed X-Forwarded-Proto from any local connection, so behind
# a local proxy passing the client's header through, plain HTTP passed for HTTPS.
secure_scheme_headers: dict[str, str] = {}
control_socket_disable = True  # one per host by default; several servers may run


def pre_fork(server: object, worker: object) -> None:
    """A stop signal arriving while a worker starts waits for its handlers."""
    from config.gunicorn_worker import hold_stop_signals  # loaded: the worker class

    hold_stop_signals()
