"""Worker memory over many jobs: is there a growth trend?

Queues N jobs (default 1,000) cycling through every corpus document that must extract
fine (PDF, DOCX, text), starts ``process_queue`` (default settings: 2 workers), and
samples the resident memory (RSS, from /proc) of the worker process and of its
children (the forkserver and the extraction pool) several times a second, beside how
many jobs are finished. Growth is judged on the worker process, against jobs done:
the median of the first and of the last tenth of the run, and the least-squares slope
over the second half. (Extraction children are replaced every
QUEUE_CHILD_MAX_TASKS jobs, so their memory is bounded by design.)

    python bench/worker_memory.py                      # 1,000 jobs, SQLite
    python bench/worker_memory.py --jobs 200 --no-record   # CI-sized
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import common
from common import PRODUCT_PY, ROOT

FINISHED = (
    "SELECT count(*) FROM extraction_queue WHERE status IN ('completed', 'failed')"
)


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys over xs (0 when xs do not vary)."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return (
        sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var
        if var
        else 0.0
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=None, help="default: settings")
    parser.add_argument("--db", default="sqlite", choices=["sqlite", "postgres"])
    parser.add_argument("--interval", type=float, default=0.2, help="sampling, s")
    parser.add_argument(
        "--max-load", type=float, default=0, help="first wait for a quieter machine"
    )
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    if args.max_load:
        common.wait_quiet(args.max_load)
    load_before = os.getloadavg()[0]
    revision = (common.revision(), common.code_digest())
    tmp = Path(tempfile.mkdtemp(prefix="bench-memory-"))
    scratch = common.ScratchDB(
        args.db, "bench_mem_docqueue", common.migrate_product, tmp=tmp
    )
    samples: list[tuple[float, int, int, int, int]] = []
    try:
        env = common.product_env(scratch.fresh(), tmp / "media")
        seeded = json.loads(
            common.product_ops(
                env, "seed-files", "--kinds", "pdf,docx,txt", "--jobs", args.jobs
            )
        )
        cmd = [PRODUCT_PY, ROOT / "manage.py", "process_queue", "-v0"]
        if args.workers:
            cmd += ["--workers", args.workers]
        log = tmp / "worker.log"
        with scratch.connect() as scalar:
            t0 = time.time()
            proc = common.start(cmd, env, log)
            try:
                deadline = time.monotonic() + 1200
                while True:
                    done = scalar(FINISHED)
                    tree = common.process_tree(proc.pid)
                    parent = common.rss_kb(proc.pid)
                    children = [common.rss_kb(pid) for pid in tree[1:]]
                    samples.append(
                        (
                            time.time() - t0,
                            done,
                            parent,
                            sum(children),
                            max(children, default=0),
                        )
                    )
                    if done >= args.jobs:
                        break
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(
                            f"worker stopped or timed out at {done} jobs"
                        )
                    time.sleep(args.interval)
            except Exception:
                print(log.read_text()[-3000:])
                raise
            finally:
                common.stop([proc])
        verified = json.loads(common.product_ops(env, "verify"))
    finally:
        scratch.drop()
        shutil.rmtree(tmp, ignore_errors=True)

    n = args.jobs
    # From the first finished job on: start-up is not the trend.
    run = [s for s in samples if s[1] > 0]
    first = [s for s in run if s[1] <= n * 0.1] or run[:1]
    last = [s for s in run if s[1] >= n * 0.9] or run[-1:]
    second_half = [s for s in run if s[1] >= n * 0.5]

    def mib(kb: float) -> str:
        return f"{kb / 1024:.1f}"

    parent_first = statistics.median(s[2] for s in first)
    parent_last = statistics.median(s[2] for s in last)
    per_1000 = slope([s[1] for s in second_half], [s[2] for s in second_half]) * 1000
    child_first = statistics.median(s[3] for s in first)
    child_last = statistics.median(s[3] for s in last)
    child_slope = slope([s[1] for s in second_half], [s[3] for s in second_half]) * 1000
    last_third = [s for s in run if s[1] >= n * 2 / 3]
    per_1000_late = slope([s[1] for s in last_third], [s[2] for s in last_third]) * 1000
    # A leak keeps climbing; an allocator's high-water mark steps up, then stays.
    growing = per_1000 > 2048 and per_1000_late > 2048
    rows = [
        [
            "worker process (process_queue)",
            mib(run[0][2]),
            mib(parent_first),
            mib(parent_last),
            mib(max(s[2] for s in run)),
            f"{per_1000 / 1024:+.2f}",
        ],
        [
            "its children (forkserver + extraction pool), summed",
            mib(run[0][3]),
            mib(child_first),
            mib(child_last),
            mib(max(s[3] for s in run)),
            f"{child_slope / 1024:+.2f}",
        ],
        [
            "largest single child",
            mib(run[0][4]),
            mib(statistics.median(s[4] for s in first)),
            mib(statistics.median(s[4] for s in last)),
            mib(max(s[4] for s in run)),
            "—",
        ],
    ]
    table = common.md_table(
        [
            "RSS (MiB)",
            "at first job",
            "first 10 % of jobs (median)",
            "last 10 % of jobs (median)",
            "peak",
            "slope, second half (MiB per 1,000 jobs)",
        ],
        rows,
    )
    seconds = samples[-1][0]
    summary = (
        f"{n:,} jobs ({seeded['files']} distinct corpus files: PDF, DOCX, text) in "
        f"{seconds:.1f} s, {len(samples)} samples; outcome {verified['status']}. "
        + (
            "**Growth trend in the worker process**: "
            if growing
            else "No growth trend in the worker process: "
        )
        + f"{mib(parent_first)} → {mib(parent_last)} MiB from the first to the last "
        f"tenth, {per_1000 / 1024:+.2f} MiB per 1,000 jobs over the second half, "
        f"{per_1000_late / 1024:+.2f} over the last third (growth trend = both above "
        "+2 MiB per 1,000 jobs)."
    )
    print(table)
    print()
    print(summary)
    if args.no_record:
        return
    trace = " ".join(
        f"{s[1]}:{mib(s[2])}"
        for s in samples[:: max(1, len(samples) // 12)] + samples[-1:]
    )
    body = (
        common.header(load_before, revision) + "\n\n"
        f"Command: `{common.command_line()}`\n\n"
        + table
        + "\n\n"
        + summary
        + f"\n\nWorker RSS along the run (jobs done: MiB): {trace}"
    )
    common.record(f"Worker memory over {n:,} jobs (worker_memory.py)", body)


if __name__ == "__main__":
    main()
