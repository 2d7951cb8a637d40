"""What a job writes: the write-ahead log one worker adds per no-op job it drains
(issue 13), of documents that are empty or (``--words``) already hold a text. Every
page a job's commit changes is written to the log, checksummed and, later, copied
into the database: the part of a commit's cost that fewer statements alone do not
cut.

PostgreSQL: ``pg_stat_wal`` before and after the drain (records, full-page images,
bytes; cluster-wide, so other databases' writes in the same seconds count too),
after a CHECKPOINT so that each run starts alike. SQLite: the WAL file's frames per
commit, and whose pages they are (by ``dbstat`` after the drain; a page freed and
reused in between counts for its last owner), kept whole by a reader that holds its
snapshot through the drain so that no checkpoint starts the file over.

    python bench/write_volume.py
    python bench/write_volume.py --db sqlite --jobs 2000 --no-record
    python bench/write_volume.py --db postgres --jobs 2000 --words 5000
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import sqlite3
import struct
import tempfile
from pathlib import Path
from typing import Any

import common
import psycopg
from common import PRODUCT_PY, ROOT

COMPLETED = "SELECT count(*) FROM extraction_queue WHERE status = 'completed'"
WAL_STATS = "SELECT wal_records, wal_fpi, wal_bytes FROM pg_stat_wal"


def drain(scratch: common.ScratchDB, env: dict[str, str], jobs: int, log: Path) -> None:
    """One ``process_queue --workers 1`` until every job has completed."""
    cmd = [PRODUCT_PY, ROOT / "manage.py", "process_queue", "-v0", "--workers", 1]
    worker = common.start(cmd, env, log)
    try:
        with scratch.connect() as scalar:
            common.wait_until(
                lambda: scalar(COMPLETED), lambda n: n == jobs, 120, 0.05, [worker]
            )
    finally:
        common.stop([worker])


def postgres(scratch: common.ScratchDB, env: dict[str, str], jobs: int, log: Path):
    with psycopg.connect(scratch.url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        before = conn.execute(WAL_STATS).fetchone()
        drain(scratch, env, jobs, log)
        after = conn.execute(WAL_STATS).fetchone()
    records, fpi, size = (
        float(b - a) / jobs for a, b in zip(before, after, strict=True)
    )
    return [
        "postgres",
        common.fmt(records, 1),
        common.fmt(fpi, 2),
        common.fmt(size / 1024, 1),
        "—",
        "—",
    ]


def sqlite(scratch: common.ScratchDB, env: dict[str, str], jobs: int, log: Path):
    path = scratch.path
    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM extraction_queue").fetchone()
    try:
        drain(scratch, env, jobs, log)
        wal = Path(f"{path}-wal").read_bytes()
    finally:
        reader.close()
    with contextlib.closing(sqlite3.connect(path)) as db:
        owners = {
            page: name for name, page in db.execute("SELECT name, pageno FROM dbstat")
        }
    page_size = struct.unpack(">I", wal[8:12])[0]
    commits, frames, pages = 0, 0, collections.Counter()
    changed: set[int] = set()
    offset = 32  # the file's header; then each frame: 24 bytes of header, a page
    while offset + 24 + page_size <= len(wal):
        page, size_after_commit = struct.unpack(">II", wal[offset : offset + 8])
        changed.add(page)
        offset += 24 + page_size
        if size_after_commit:  # a commit's last frame
            commits += 1
            frames += len(changed)
            pages.update(owners.get(page, "(freed)") for page in changed)
            changed = set()
    top = ", ".join(
        f"{name} {count / commits:.1f}" for name, count in pages.most_common(6)
    )
    per_job = frames / jobs
    return [
        "sqlite",
        "—",
        "—",
        common.fmt(per_job * (24 + page_size) / 1024, 1),
        common.fmt(frames / commits, 1),
        top,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", default="sqlite,postgres")
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument(
        "--words", type=int, default=0, help="of text in each job's document"
    )
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-writes-"))
    load_before = os.getloadavg()[0]
    revision = (common.revision(), common.code_digest())
    rows: list[list[Any]] = []
    for vendor in args.db.split(","):
        scratch = common.ScratchDB(
            vendor, "bench_writes", common.migrate_product, tmp=tmp
        )
        try:
            env = common.product_env(scratch.fresh(), tmp / "media")
            common.product_ops(env, "seed-noop", args.jobs, "--words", args.words)
            measure = postgres if vendor == "postgres" else sqlite
            rows.append(measure(scratch, env, args.jobs, tmp / f"{vendor}.log"))
        finally:
            scratch.drop()
    table = common.md_table(
        [
            "database",
            "WAL records per job",
            "full-page images per job",
            "WAL KiB per job",
            "pages per commit",
            "pages per commit by table or index (most)",
        ],
        rows,
    )
    print(table)
    documents = f", documents of {args.words:,} words" if args.words else ""
    if not args.no_record:
        common.record(
            f"Write-ahead log per job{documents} (write_volume.py)",
            f"{common.header(load_before, revision)}\n\n"
            f"`{common.command_line()}`: {args.jobs:,} no-op jobs{documents}, "
            f"one worker.\n\n{table}",
        )


if __name__ == "__main__":
    main()
