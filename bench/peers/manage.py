#!/usr/bin/env python
"""Django entry point of the peer project (runs in bench/.venv-peers)."""

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "peersite.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
