# make run   — install, migrate, create a first user, start the web app and the workers
# make test  — install and run the whole suite on SQLite, then on PostgreSQL if reachable
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PG_TEST_URL ?= postgres://postgres@127.0.0.1:5432/docqueue
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test test-sqlite test-postgres lint format install install-dev install-system clean

# Debian packages the product needs: Tesseract's English and orientation data (OCR).
SYSTEM_PACKAGES := tesseract-ocr-eng tesseract-ocr-osd
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

$(VENV)/.installed: requirements.txt
	@# Before the venv: one made by an older Python would stay behind, and pip would
	@# only say that no version of some package fits.
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "Python 3.11 or newer is needed; $(PYTHON) is " + sys.version.split()[0] + ": install one and run make with it, e.g. make run PYTHON=python3.12")'
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt
	$(VENV)/bin/pip install --quiet -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

install-system:
	@if command -v dpkg >/dev/null && ! dpkg -s $(SYSTEM_PACKAGES) >/dev/null 2>&1; then \
		echo "Installing $(SYSTEM_PACKAGES) (OCR language data)"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends $(SYSTEM_PACKAGES) >/dev/null; \
	fi

.env:
	sed "s|^# SECRET_KEY=.*|SECRET_KEY=$$($(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(50))')|" .env.example > .env

run: install-system $(VENV)/.installed .env
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput --verbosity 0
	$(PY) manage.py ensure_first_user
	@echo "Web app: http://$(HOST):$(PORT)/  (Ctrl+C stops the web app and the workers)"
	@# The web app and the workers run in the background, each in a process group of
	@# its own (set -m), so each signal reaches them once, passed on by this shell:
	@# Ctrl+C (the terminal's SIGINT now reaches only make and this shell) as SIGINT,
	@# the workers finishing their current jobs (a second Ctrl+C stops them at once);
	@# SIGTERM, to make (which passes it here) or to this shell, and SIGHUP as SIGTERM.
	@# The shell waits with the wait builtin: a trap runs only once a program in the
	@# foreground has ended. The web app ending by itself (its port taken) stops the
	@# workers too, and make's status is the web app's. A closed terminal hangs up
	@# only its session's leader: where that is make (ssh -t host make run), which
	@# passes no SIGHUP on, a watch (a look every 3 s) sends it here. A wait a trap
	@# cut short says 128 + the signal: the web app is waited for again, so that a
	@# clean stop ends make with its status, 0, not as an error (143).
	@set -m; \
	trap 'stopping=1; kill -INT $$workers $$web 2>/dev/null; kill $$watch 2>/dev/null' INT; \
	trap 'stopping=1; kill -TERM $$workers $$web $$watch 2>/dev/null' TERM HUP; \
	$(PY) manage.py process_queue & workers=$$!; \
	$(VENV)/bin/gunicorn --config config/gunicorn.conf.py --bind $(HOST):$(PORT) & web=$$!; \
	set +m; status=0; \
	if [ -t 0 ]; then (while [ -t 0 ]; do sleep 3; done; kill -HUP $$$$) <&0 & watch=$$!; fi; \
	while kill -0 $$web 2>/dev/null; do wait $$web; status=$$?; done; \
	[ -n "$$stopping" ] || kill -TERM $$workers $$watch 2>/dev/null; \
	while kill -0 $$workers 2>/dev/null || kill -0 $$web 2>/dev/null; do wait; done; \
	exit $$status

test: install-system $(VENV)/.installed-dev
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory test-sqlite
	@if [ -n "$$DATABASE_URL" ] || $(PY) -c "import socket; socket.create_connection(('127.0.0.1', 5432), 2)" 2>/dev/null; then \
		$(MAKE) --no-print-directory test-postgres; \
	elif [ "$$CI" = "true" ]; then \
		echo "PostgreSQL is not reachable at 127.0.0.1:5432 and CI=true: failing."; exit 1; \
	else \
		echo "PostgreSQL not reachable: skipped the PostgreSQL run."; \
	fi

test-sqlite: $(VENV)/.installed-dev
	env -u DATABASE_URL $(VENV)/bin/pytest $(PYTEST_ARGS)

test-postgres: $(VENV)/.installed-dev
	DATABASE_URL=$${DATABASE_URL:-$(PG_TEST_URL)} $(VENV)/bin/pytest $(PYTEST_ARGS)

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

format: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

clean:
	rm -rf $(VENV) var/test_db.sqlite3*
