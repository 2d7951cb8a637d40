"""Line-end hyphenation on the real corpus: how many "x-\\ny" breaks are joined, kept
as real hyphens, or left alone, and whether real hyphens survive.

    .venv/bin/python bench/hyphenation.py   # CORPUS_DIR, OCR_LANGUAGES (eng) as the product

Every corpus file that must yield text is extracted once (PDF engine "auto"), then the
breaks of its raw text are classified as documents.extractors.hyphens decides them.
"""

from __future__ import annotations

import csv
import os
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from documents.extractors import (  # noqa: E402
    ExtractOptions,
    detect_format,
    get_extractor,
    hyphens,
)

CORPUS = Path(os.environ.get("CORPUS_DIR") or REPO.parent / "shared" / "corpus")
ANY_BREAK = re.compile(r"\w-\n\w")  # the count: any "x-\ny"
LANGUAGES = os.environ.get("OCR_LANGUAGES", "eng")  # the word lists, as the product
REAL_HYPHEN = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")  # in-line compounds


def main() -> None:
    with (CORPUS / "manifest.csv").open(newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if r["expect"] == "ok"]
    totals: Counter[str] = Counter()
    samples: dict[str, list[str]] = {}
    seconds: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    t0 = time.perf_counter()
    words = hyphens.dictionary(LANGUAGES)
    print(f"Word lists ({LANGUAGES}) loaded in {time.perf_counter() - t0:.2f} s")
    for row in rows:
        path = CORPUS / row["path"]
        # The extractor's own text, before the registry joins anything.
        t0 = time.perf_counter()
        raw = get_extractor(detect_format(path))(path, ExtractOptions()).text
        seconds[row["kind"]][0] += time.perf_counter() - t0
        totals["files"] += 1
        totals["characters"] += len(raw)
        totals["any x-\\ny before"] += len(ANY_BREAK.findall(raw))
        found = list(hyphens.breaks(raw))
        uses = hyphens.usage(
            raw, {f for *_, h, t in found for f in hyphens.forms(h, t)}
        )
        for start, end, head, tail in found:
            _, outcome = hyphens.mend(head, tail, uses, words)
            totals[outcome] += 1
            examples = samples.setdefault(outcome, [])
            if len(examples) < 60:
                examples.append(raw[start:end].replace("\n", "⏎"))
        t0 = time.perf_counter()
        fixed = hyphens.join_hyphenated(raw, LANGUAGES)
        seconds[row["kind"]][1] += time.perf_counter() - t0
        totals["any x-\\ny after"] += len(ANY_BREAK.findall(fixed))
        # Compounds written on one line must come out unchanged.
        before = Counter(REAL_HYPHEN.findall(raw))
        after = Counter(REAL_HYPHEN.findall(fixed))
        totals["in-line compounds lost"] += sum((before - after).values())
    print(f"corpus: {CORPUS.name} ({totals.pop('files')} files that must yield text)")
    for key, value in totals.items():
        print(f"  {key}: {value}")
    for kind, (extracting, joining) in sorted(seconds.items()):
        print(
            f"  {kind}: join_hyphenated {joining:.2f} s = {joining / extracting:.1%} "
            f"of the extraction ({extracting:.2f} s)"
        )
    for outcome, examples in samples.items():
        print(f"\n{outcome}: " + ", ".join(examples))


if __name__ == "__main__":
    main()
