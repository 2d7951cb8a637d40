"""An extraction function for worker tests; its file's first bytes say how to misbehave.

``sleep:N`` sleeps N seconds then extracts, ``exit`` kills the child process,
``segfault`` ends it by SIGSEGV, ``memory`` allocates until the memory cap stops it,
``pages:N:S`` reports a page done every S seconds for N pages (a long scan),
``hang-after:N`` reports N pages done then hangs; anything else is extracted for real.
With ``EXTRACTION_LOG`` set, each extraction appends the file's path to that file,
so tests can count how often a document was extracted.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from documents.extractors.registry import extract as real_extract


def extract(path: str, *, mime_type: str | None = None, progress=None, **options):
    head = Path(path).read_bytes()[:64]
    if head.startswith(b"pages:"):
        pages, seconds = head.split()[0].split(b":")[1:3]
        for done in range(1, int(pages) + 1):
            time.sleep(float(seconds))
            progress(done, int(pages))
    elif head.startswith(b"hang-after:"):
        progress(int(head.split()[0].split(b":")[1]), 3)
        time.sleep(3600)
    elif head.startswith(b"sleep:"):
        time.sleep(float(head.split(b":")[1].split()[0]))
    elif head.startswith(b"exit"):
        os._exit(3)
    elif head.startswith(b"segfault"):
        os.kill(os.getpid(), signal.SIGSEGV)  # as a C library's crash ends it
    elif head.startswith(b"memory"):
        hog = []
        while True:
            hog.append(bytearray(50 * 1024 * 1024))
    result = real_extract(path, mime_type=mime_type, progress=progress, **options)
    if log := os.environ.get("EXTRACTION_LOG"):
        # One short O_APPEND write per line: lines from many children never mix.
        with open(log, "a") as fh:
            fh.write(path + "\n")
    return result
