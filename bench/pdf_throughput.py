"""PDF pages per second through the queue, beside the raw engine on the same files.

The corpus PDFs that must extract fine (manifest.csv, expect=ok) are copied R times
into a temporary MEDIA_ROOT as documents and queued (EXTRACT). The clock runs from
starting ``process_queue --workers K`` until every job is finished (start-up
included). The raw engine is ``documents.extractors.registry.extract(path,
mime_type="application/pdf", pdf_engine="auto")`` in a plain loop in one process over
the same files, measured before and after the queue runs (their mean is the yardstick).

    python bench/pdf_throughput.py                     # 5 x corpus, SQLite
    python bench/pdf_throughput.py --repeat 1 --no-record   # CI-sized
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
from typing import Any

import common
from common import PRODUCT_PY, ROOT

FINISHED = (
    "SELECT count(*) FROM extraction_queue WHERE status IN ('completed', 'failed')"
)


def raw(repeat: int) -> dict[str, Any]:
    env = common.product_env("sqlite:////dev/null", tempfile.gettempdir())
    return json.loads(common.product_ops(env, "raw-extract", "--repeat", repeat))


def through_queue(
    scratch: common.ScratchDB, workers: int, repeat: int, tmp: Path
) -> dict[str, Any]:
    url = scratch.fresh()
    media = tmp / "media"
    shutil.rmtree(media, ignore_errors=True)
    env = common.product_env(url, media)
    seeded = json.loads(
        common.product_ops(env, "seed-files", "--kinds", "pdf", "--repeat", repeat)
    )
    n = seeded["jobs"]
    log = tmp / f"pdf-{workers}.log"
    cmd = [PRODUCT_PY, ROOT / "manage.py", "process_queue", "-v0"]
    with scratch.connect() as scalar:
        t0 = time.time()
        proc = common.start([*cmd, "--workers", workers], env, log)
        try:
            t1, _ = common.wait_until(
                lambda: scalar(FINISHED), lambda v: v >= n, 600, 0.02, [proc]
            )
            tree = common.process_tree(proc.pid)
            parent_cpu = common.cpu_seconds(tree[:1])
            children_cpu = common.cpu_seconds(tree[1:])
            waited = common.run_delay(tree)
        except Exception:
            print(log.read_text()[-3000:])
            raise
        finally:
            common.stop([proc])
    v = json.loads(common.product_ops(env, "verify"))
    seconds = t1 - t0
    steady = v["last_finished"] - v["first_started"]
    return {
        "jobs": n,
        "pages": v["pages"],
        "seconds": seconds,
        "rate": v["pages"] / seconds,
        "steady": v["pages"] / steady,
        "startup": v["first_started"] - t0,
        "parent_cpu": parent_cpu,
        "children_cpu": children_cpu,
        "waited": waited,
        "ok": v["status"] == {"completed": n} and v["metrics"] == {"completed": n},
        "status": v["status"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="copies of the corpus")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--db", default="sqlite", choices=["sqlite", "postgres"])
    parser.add_argument("--rounds", type=int, default=1, help="report the median")
    parser.add_argument(
        "--max-load", type=float, default=0, help="first wait for a quieter machine"
    )
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    if args.max_load:
        common.wait_quiet(args.max_load)
    tmp = Path(tempfile.mkdtemp(prefix="bench-pdf-"))
    scratch = common.ScratchDB(
        args.db, "bench_pdf_docqueue", common.migrate_product, tmp=tmp
    )
    load_before = os.getloadavg()[0]
    revision = (common.revision(), common.code_digest())
    passes: list[dict[str, Any]] = []
    runs: dict[int, list[dict[str, Any]]] = {}
    workers = [int(w) for w in args.workers.split(",")]
    try:
        # Interleaved, raw engine first and last, so drift in the machine's other load
        # touches every configuration alike.
        for _ in range(args.rounds):
            passes.append(raw(args.repeat))
            print(f"  raw engine: {passes[-1]['seconds']:.2f} s", flush=True)
            for k in workers:
                r = through_queue(scratch, k, args.repeat, tmp)
                runs.setdefault(k, []).append(r)
                print(
                    f"  {k} worker(s): {r['pages']} pages in {r['seconds']:.2f} s "
                    f"= {r['rate']:.0f} pages/s ({r['status']})",
                    flush=True,
                )
        passes.append(raw(args.repeat))
        print(f"  raw engine: {passes[-1]['seconds']:.2f} s", flush=True)
    finally:
        scratch.drop()
        shutil.rmtree(tmp, ignore_errors=True)
    raw_rate = sum(p["pages"] for p in passes) / sum(p["seconds"] for p in passes)
    before = passes[0]
    median = {
        k: sorted(rs, key=lambda r: r["rate"])[len(rs) // 2] for k, rs in runs.items()
    }
    rows = [
        [
            "raw engine, plain loop, 1 process",
            before["files"],
            before["pages"],
            f"{statistics.median(p['seconds'] for p in passes):.2f} "
            f"(median of {len(passes)} passes)",
            f"**{raw_rate:.0f}**",
            "—",
            "100 %",
            "—",
            "—",
            f"{statistics.median(p['cpu'] for p in passes):.2f} (the one process)",
            "—",
        ]
    ]
    one = median.get(1)
    for k, r in median.items():
        rows.append(
            [
                f"process_queue --workers {k}",
                r["jobs"],
                r["pages"],
                common.fmt(r["seconds"], 2),
                f"**{r['rate']:.0f}**",
                f"{r['steady']:.0f}",
                f"{100 * r['rate'] / raw_rate:.0f} %",
                f"{r['rate'] / one['rate']:.2f}×" if one else "—",
                f"{r['startup']:.2f}",
                f"{r['parent_cpu']:.2f} / {r['children_cpu']:.2f}",
                f"{r['waited']:.2f}",
            ]
        )
    table = common.md_table(
        [
            "how",
            "jobs",
            "pages",
            "seconds",
            "pages/s",
            "pages/s first start → last finish",
            "of raw engine",
            "vs 1 worker",
            "first job at s",
            "CPU s: worker process / extraction children",
            "s runnable but waiting for a CPU",
        ],
        rows,
    )
    checks = []
    if one:
        share = one["rate"] / raw_rate
        checks.append(
            f"1 worker reaches {100 * share:.0f} % of the raw engine (target ≥ 80 %: "
            f"{'met' if share >= 0.8 else 'missed'})."
        )
    if one and 2 in median:
        scale = median[2]["rate"] / one["rate"]
        checks.append(
            f"2 workers do {scale:.2f}× one worker (target ≥ 1.7×: "
            f"{'met' if scale >= 1.7 else 'missed'})."
        )
    checks.append(
        "Every job completed with one metrics row."
        if all(r["ok"] for rs in runs.values() for r in rs)
        else "NOT every job completed: "
        + "; ".join(str(r["status"]) for rs in runs.values() for r in rs)
    )
    print()
    print(table)
    print()
    print("\n".join(checks))
    if args.no_record:
        return
    body = (
        common.header(load_before, revision) + "\n\n"
        f"Command: `{common.command_line()}`\n\n"
        f"The {before['files'] // args.repeat} corpus PDFs with expect=ok, "
        f"{args.repeat}× ({args.db}), {args.rounds} round(s), median run shown. "
        "Queue runs: clock from starting process_queue to the last job finished "
        "(start-up included). Raw engine: "
        '`registry.extract(path, mime_type="application/pdf", pdf_engine="auto")` '
        "in a loop in one process, imports done before the clock starts, one pass "
        "before each round and one after the last; its rate is over all passes. "
        "The last column is the time the worker's processes were ready to run but "
        "had no CPU (from /proc/PID/schedstat): the other load on the 2 cores.\n\n"
        + table
        + "\n\n"
        + "\n".join(f"- {c}" for c in checks)
    )
    common.record("PDF pages per second through the queue (pdf_throughput.py)", body)


if __name__ == "__main__":
    main()
