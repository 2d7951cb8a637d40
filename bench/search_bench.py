"""Search latency over a large library: p50 / p95 / max per kind of query, both databases.

Builds a scratch database per vendor with ``--docs`` documents of ``--kb`` KiB of text
each (default 10,000 × 105 KiB ≈ 1 GiB), all owned by one person, then times
``documents.search.search_documents`` (what the search page and the API call) for words,
phrases, prefixes, a one-letter prefix, long queries and a miss, each ``--repeat`` times.

    .venv/bin/python bench/search_bench.py [--docs 10000] [--kb 105] [--repeat 10]
        [--vendors sqlite,postgres] [--no-record]

Each vendor runs in its own child process (Django's database is chosen at start-up).
The text is made of a Zipf-distributed vocabulary of made-up words, so a few words are
in every document and most are rare, as in real text.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402

VOCABULARY = 50_000
BLOCKS = 400
BLOCK_CHARS = 10_500
SEED = 11


def words_and_blocks() -> tuple[list[str], list[str]]:
    """The vocabulary (most frequent first) and text blocks drawn from it."""
    rng = random.Random(SEED)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocabulary = list(
        dict.fromkeys(
            "".join(rng.choices(letters, k=rng.randint(3, 10)))
            for _ in range(VOCABULARY * 2)
        )
    )[:VOCABULARY]
    weights = [1 / (rank + 1) for rank in range(VOCABULARY)]
    blocks = []
    for _ in range(BLOCKS):
        words: list[str] = []
        size = 0
        while size < BLOCK_CHARS:
            chunk = rng.choices(vocabulary, weights, k=200)
            words += chunk
            size += sum(len(w) + 1 for w in chunk)
        blocks.append(" ".join(words) + ".\n")
    return vocabulary, blocks


def queries(vocabulary: list[str], blocks: list[str]) -> dict[str, list[str]]:
    """Kinds of query, a few of each; what people type, from easy to broad."""
    block_words = blocks[7].split()
    mid = vocabulary[500:520]
    rare = vocabulary[30_000:30_010]
    return {
        "word, common (in every document)": [vocabulary[0], vocabulary[1]],
        "word, mid-frequency": mid[:5],
        "word, rare": rare[:5],
        "word, one document (doc id)": ["docid123", "docid9876"],
        "phrase, 2 words": [
            f'"{block_words[i]} {block_words[i + 1]}"' for i in (3, 40)
        ],
        "phrase, 4 words": [f'"{" ".join(block_words[60:64])}"'],
        "prefix, 4 letters": [w[:4] + "*" for w in mid[:3]],
        "prefix, 2 letters": ["ab*", "qu*"],
        "prefix, 1 letter (refused: minimum 2)": ["a*"],
        "long query, 16 words": [" ".join(vocabulary[100:116])],
        "long query, 16 rare words OR-ed": [
            " OR ".join(rare[:8] + vocabulary[200:208])
        ],
        "no match": ["zzqxjv"],
        "word, common, page 10": [vocabulary[0]],
    }


def child(vendor: str, url: str, docs: int, kb: int, repeat: int) -> None:
    """Build the library in the database at ``url`` and print the timings as JSON."""
    os.environ.update(common.product_env(url, "/tmp"))  # noqa: S108 - no files written
    sys.path.insert(0, str(common.ROOT))
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from documents.models import Document
    from documents.search import SearchTooBroad, search_documents

    call_command("migrate", verbosity=0)
    vocabulary, blocks = words_and_blocks()
    rng = random.Random(SEED)
    owner = get_user_model().objects.create_user("reader")
    per_doc = max(1, round(kb * 1024 / BLOCK_CHARS))
    started = time.monotonic()
    total_chars = 0
    batch: list[Document] = []
    for n in range(docs):
        text = f"docid{n} " + "".join(rng.choices(blocks, k=per_doc))
        total_chars += len(text)
        batch.append(
            Document(
                owner=owner,
                original_filename=f"report-{n}.txt",
                file=f"documents/{n}.txt",
                mime_type="text/plain",
                size=len(text),
                sha256=f"{n:064x}",
                status="completed",
                text=text,
            )
        )
        if len(batch) == 50:
            Document.objects.bulk_create(batch)
            batch = []
    Document.objects.bulk_create(batch)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE documents_document")
    build_seconds = time.monotonic() - started

    results = []
    for kind, texts in queries(vocabulary, blocks).items():
        offset = 180 if "page 10" in kind else 0
        times, outcomes = [], {"results": 0, "too broad": 0, "no results": 0}
        for _ in range(repeat):
            for text in texts:
                start = time.perf_counter()
                try:
                    hits = search_documents(owner, text, limit=21, offset=offset)
                except SearchTooBroad:
                    outcomes["too broad"] += 1
                else:
                    outcomes["results" if hits else "no results"] += 1
                times.append((time.perf_counter() - start) * 1000)
        times.sort()
        results.append(
            {
                "kind": kind,
                "example": texts[0][:60],
                "n": len(times),
                "p50": statistics.median(times),
                "p95": times[min(len(times) - 1, round(0.95 * (len(times) - 1)))],
                "max": times[-1],
                "outcomes": outcomes,
            }
        )
    print(
        json.dumps(
            {
                "vendor": vendor,
                "docs": docs,
                "chars": total_chars,
                "build_seconds": build_seconds,
                "timeout": settings.SEARCH_TIMEOUT_SECONDS,
                "min_prefix": settings.SEARCH_MIN_PREFIX_CHARS,
                "results": results,
            }
        )
    )


def report(run: dict, load_before: float, revision: tuple[str, str]) -> str:
    rows = [
        (
            r["kind"],
            f"`{r['example']}`",
            r["n"],
            common.fmt(r["p50"], 1),
            common.fmt(r["p95"], 1),
            common.fmt(r["max"], 1),
            ", ".join(f"{k} {v}" for k, v in r["outcomes"].items() if v),
        )
        for r in run["results"]
    ]
    return "\n\n".join(
        [
            common.header(load_before, revision),
            f"Command: `{common.command_line()}`",
            f"{run['docs']:,} documents, {run['chars'] / 2**30:.2f} GiB of text (built "
            f"in {run['build_seconds']:.0f} s); time limit {run['timeout']} s, minimum "
            f"prefix {run['min_prefix']} letters. Milliseconds per search (a page of 20):",
            common.md_table(
                ("query", "example", "n", "p50", "p95", "max", "outcome"), rows
            ),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--kb", type=int, default=105)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--vendors", default="sqlite,postgres")
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument(
        "--child", nargs=2, metavar=("VENDOR", "URL"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.child:
        child(*args.child, args.docs, args.kb, args.repeat)
        return
    load_before = os.getloadavg()[0]
    revision = (common.revision(), common.code_digest())
    runs = []
    for vendor in args.vendors.split(","):
        db = common.ScratchDB(vendor, "bench_search", lambda url: None)
        url = db.fresh()
        try:
            runs.append(
                common.run_child(
                    __file__,
                    vendor,
                    url,
                    "--docs",
                    args.docs,
                    "--kb",
                    args.kb,
                    "--repeat",
                    args.repeat,
                )  # fmt: skip
            )
        finally:
            db.drop()
        print(json.dumps(runs[-1], indent=1))
        text = report(runs[-1], load_before, revision)
        print(text)
        if not args.no_record:
            title = f"Search latency, {vendor} (search_bench.py)"
            common.record(title, text, part="Search")


if __name__ == "__main__":
    main()
