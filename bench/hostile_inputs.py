"""Hostile files through the product's extraction: how long each takes, its peak
memory, and what it answers. Each file is read in a fresh child process with a time
limit (a worker's job would be killed at its timeout and retried, at that cost each
time). Give ``--root`` more than once to measure trees side by side in one run (a
``git worktree`` of an older commit, say): the rows alternate.

    python bench/hostile_inputs.py --no-record
    python bench/hostile_inputs.py --root . --root /tmp/before --no-record
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import common
from common import ROOT

# Its peak memory from VmHWM: ru_maxrss would keep the forking parent's, which wrote
# the files, across the exec.
CHILD = """
import json, re, sys, time
from documents.extractors import extract
began = time.perf_counter()
try:
    result = extract(sys.argv[1])
    said = "read: " + (result.note or f"{len(result.text):,} characters")
except Exception as exc:
    said = f"{type(exc).__name__}: {exc}"
print(json.dumps({
    "seconds": time.perf_counter() - began,
    "rss_mb": int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read())[1])
    / 1024,
    "said": said,
}))
"""
MAIL_HEAD = b"From: a@example.com\r\nTo: b@example.com\r\nSubject: Parts\r\n"


def winmail_of_many_attributes() -> bytes:
    """A 50 MB winmail.dat: its signature, then 1,999 attributes of 25 KB (under
    the 2,000 checked)."""
    data = b"x" * (50 * 2**20 // 2_000)
    head = struct.pack("<BHHI", 1, 0x0001, 0x0006, len(data))
    one = head + data + struct.pack("<H", sum(data) & 0xFFFF)
    return struct.pack("<IH", 0x223E9F78, 0x0001) + one * 1_999


def mail(body: bytes) -> bytes:
    return MAIL_HEAD + b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n' + body


def mail_of_many_parts() -> bytes:
    """200,000 tiny attachments (14 MB)."""
    return mail(
        b"".join(
            b"--b\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; "
            b'filename="f%d.txt"\r\n\r\nNote %d\r\n' % (n, n)
            for n in range(200_000)
        )
        + b"--b--\r\n"
    )


def mail_of_a_long_header() -> bytes:
    """A Subject of 2 million words (10 MB)."""
    return (
        b"From: a@example.com\r\nSubject: " + b"word " * 2_000_000 + b"\r\n\r\nBody\r\n"
    )


def mail_nested_deep() -> bytes:
    """Multiparts 5,000 deep."""
    depth = 5_000
    out = MAIL_HEAD + b'Content-Type: multipart/mixed; boundary="b0"\r\n\r\n'
    for n in range(1, depth):
        out += b'--b%d\r\nContent-Type: multipart/mixed; boundary="b%d"\r\n\r\n' % (
            n - 1,
            n,
        )
    out += b"--b%d\r\nContent-Type: text/plain\r\n\r\nDeep text\r\n" % (depth - 1)
    return out + b"".join(b"--b%d--\r\n" % n for n in reversed(range(depth)))


def png_of_one_column() -> bytes:
    """1 × 89,000,000 pixels (173 KB), within Pillow's pixel limit."""
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("1", (1, 89_000_000), 1).save(out, "PNG")
    return out.getvalue()


FILES: dict[str, tuple[str, Callable[[], bytes]]] = {
    "winmail.dat, 1,999 attributes": ("many.dat", winmail_of_many_attributes),
    "e-mail, 200,000 parts": ("parts.eml", mail_of_many_parts),
    "e-mail, a 10 MB header": ("header.eml", mail_of_a_long_header),
    "e-mail, nested 5,000 deep": ("deep.eml", mail_nested_deep),
    "PNG, 1 × 89,000,000 pixels": ("column.png", png_of_one_column),
}


def measure(root: Path, path: Path, limit: float) -> dict:
    env = {
        **os.environ,
        "PYTHONPATH": str(root),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "SECRET_KEY": "bench",
        "DEBUG": "1",
    }
    began = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(path)],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=limit,
        )
    except subprocess.TimeoutExpired:
        took = time.perf_counter() - began
        return {
            "seconds": took,
            "rss_mb": None,
            "said": f"still running at {limit:g} s",
        }
    if done.returncode:
        lines = done.stderr.strip().splitlines() or ["no output"]
        return {"seconds": None, "rss_mb": None, "said": f"crashed: {lines[-1]}"}
    return json.loads(done.stdout)


def commit(root: Path) -> str:
    named = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
    )
    return named.stdout.strip() or str(root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--root", type=Path, action="append", help="a tree to measure (repeatable)"
    )
    parser.add_argument("--limit", type=float, default=120, help="seconds a file")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    roots = [root.resolve() for root in args.root or [ROOT]]
    load_before = os.getloadavg()[0]
    revision = (common.revision(), common.code_digest())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, (name, make) in FILES.items():
            path = Path(tmp) / name
            path.write_bytes(make())
            for root in roots:
                got = measure(root, path, args.limit)
                rows.append(
                    [
                        label,
                        f"{path.stat().st_size:,}",
                        commit(root),
                        common.fmt(got["seconds"], 2),
                        common.fmt(got["rss_mb"]),
                        got["said"][:160].replace("|", "/"),
                    ]
                )
                print("  ", *rows[-1], flush=True)
    table = common.md_table(
        ["file", "bytes", "tree", "seconds", "peak MB", "what it answered"], rows
    )
    print()
    print(table)
    if args.no_record:
        return
    body = "\n\n".join(
        [
            common.header(load_before, revision)
            + f"\n\nCommand: `{common.command_line()}`",
            table,
        ]
    )
    common.record("Hostile files (hostile_inputs.py)", body, "Reliability")


if __name__ == "__main__":
    main()
