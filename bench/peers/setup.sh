#!/usr/bin/env bash
# Create bench/.venv-peers with the peer queues (django-tasks-db, Procrastinate,
# Celery) and py-spy. Separate from the product's .venv; git ignores it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/../.venv-peers"
python="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip
fi
if ! cmp -s "$here/requirements.txt" "$venv/.requirements.txt" 2>/dev/null; then
    "$venv/bin/pip" install --quiet -r "$here/requirements.txt"
    cp "$here/requirements.txt" "$venv/.requirements.txt"
fi
echo "$venv"
