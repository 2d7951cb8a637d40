"""Benchmark the PDF engines on the corpus: speed (pages/s) and snippet recall.

Runs every engine over the corpus PDFs marked ``expect=ok`` in one process,
prints a markdown table and appends it, with the command and date, to
bench/EXTRACTORS.md.

    .venv/bin/python bench/extractors.py [--engines pdfplumber,pdfium,auto] [--repeat 3] [--no-record]

pages/s is wall-clock; CPU seconds are shown too because the machine may be shared.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import re
import sys
import time
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from documents.extractors.base import ExtractOptions  # noqa: E402
from documents.extractors.pdf import extract_pdf  # noqa: E402

CORPUS = Path(os.environ.get("CORPUS_DIR") or REPO.parent / "shared" / "corpus")
RESULTS = REPO / "bench" / "EXTRACTORS.md"


def normalise(text: str) -> str:
    """Collapse whitespace runs, as the corpus README compares snippets."""
    return re.sub(r"\s+", " ", text).strip()


def corpus_pdfs() -> list[dict[str, str]]:
    """Manifest rows of PDFs that must yield text."""
    with (CORPUS / "manifest.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [r for r in rows if r["kind"] == "pdf" and r["expect"] == "ok"]


def run_engine(engine: str, rows: list[dict[str, str]]) -> dict[str, object]:
    """Extract every row once; return pages, seconds and the snippets missed."""
    pages, missed = 0, []
    started, cpu_started = time.perf_counter(), time.process_time()
    for row in rows:
        result = extract_pdf(CORPUS / row["path"], ExtractOptions(pdf_engine=engine))
        pages += result.page_count or 0
        if normalise(row["snippet"]) not in normalise(result.text):
            missed.append(row["path"])
    return {
        "pages": pages,
        "seconds": time.perf_counter() - started,
        "cpu": time.process_time() - cpu_started,
        "missed": missed,
    }


def main() -> None:
    """Run the engines, print the table, record it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="pdfplumber,pdfium,auto")
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs per fast engine, the fastest counts (pdfplumber runs once)",
    )
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    rows = corpus_pdfs()
    import pdfplumber  # noqa: F401 - import time is not extraction time
    import pypdfium2  # noqa: F401

    results = {}
    for engine in args.engines.split(","):
        repeat = 1 if engine == "pdfplumber" else max(1, args.repeat)
        runs = [run_engine(engine, rows) for _ in range(repeat)]
        results[engine] = min(runs, key=lambda r: r["seconds"])
        print(f"{engine}: {results[engine]['seconds']:.2f} s", file=sys.stderr)
    base = results.get("pdfplumber")
    lines = [
        "| engine | files | pages | seconds | CPU s | pages/s | snippets found | vs pdfplumber (wall / CPU) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for engine, r in results.items():
        rate = r["pages"] / r["seconds"]
        ratio = (
            f"{base['seconds'] / r['seconds']:.0f}x / {base['cpu'] / r['cpu']:.0f}x"
            if base
            else "-"
        )
        found = len(rows) - len(r["missed"])
        lines.append(
            f"| {engine} | {len(rows)} | {r['pages']} | {r['seconds']:.2f} | "
            f"{r['cpu']:.2f} | {rate:,.0f} | {found}/{len(rows)} | {ratio} |"
        )
    for engine, r in results.items():
        if r["missed"]:
            lines.append(
                f"\n{engine} misses: " + ", ".join(f"`{p}`" for p in r["missed"])
            )
    table = "\n".join(lines)
    print(table)
    if not args.no_record:
        record(table, args)


def record(table: str, args: argparse.Namespace) -> None:
    """Append the table with the command, date and environment to EXTRACTORS.md."""
    command = ".venv/bin/python bench/extractors.py " + " ".join(sys.argv[1:])
    env = (
        f"Python {platform.python_version()}, pypdfium2 {version('pypdfium2')}, "
        f"pdfplumber {version('pdfplumber')}, {platform.machine()} "
        f"{os.cpu_count()} CPUs, {platform.system()}, load average "
        f"{os.getloadavg()[0]:.1f} at the end (other jobs share the machine)"
    )
    if not RESULTS.exists():
        RESULTS.write_text(
            "# PDF extractor benchmark\n\nEach run appends a section; newest last.\n"
        )
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    with RESULTS.open("a", encoding="utf-8") as fh:
        fh.write(f"\n## {stamp}\n\n`{command.strip()}`  \n{env}\n\n{table}\n")


if __name__ == "__main__":
    main()
