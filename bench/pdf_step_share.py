"""The share of a PDF's extraction time spent in some steps of the PDF extractor.

A step added to every page (a reading-order check, say) costs what it costs beside
the whole extraction, in one process, with no profiler's overhead on the rest. Run
from the repository root:

    .venv/bin/python bench/pdf_step_share.py [--steps _joined_breaks,_turns]
        [--rounds 2] [FILE.pdf ...]   # default: the corpus's longest text PDFs

Prints, per round, the wall seconds of ``extract_pdf`` over the files and the
seconds and share of each step (wall clock: a step's calls into PDFium included).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("CORPUS_DIR", REPO.parent / "shared" / "corpus"))
DEFAULT_FILES = (
    "irs-manual-400p.pdf",
    "freeculture.pdf",
    "federal-register-2020-17221.pdf",
    "multicolumn.pdf",
    "linn.pdf",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", default="_joined_breaks")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args()
    files = args.files or [CORPUS / "pdf" / name for name in DEFAULT_FILES]

    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("SECRET_KEY", "bench")
    import django

    django.setup()
    from documents.extractors import pdf

    spent: dict[str, float] = {}
    for name in args.steps.split(","):
        step, spent[name] = getattr(pdf, name), 0.0

        def timed(*a, _step=step, _name=name, **k):
            start = time.perf_counter()
            try:
                return _step(*a, **k)
            finally:
                spent[_name] += time.perf_counter() - start

        setattr(pdf, name, timed)

    for round_number in range(1, args.rounds + 1):
        spent.update(dict.fromkeys(spent, 0.0))
        start = time.perf_counter()
        for path in files:
            pdf.extract_pdf(path)
        total = time.perf_counter() - start
        shares = ", ".join(
            f"{name} {seconds:.3f} s = {100 * seconds / total:.1f} %"
            for name, seconds in spent.items()
        )
        print(f"round {round_number}: {len(files)} PDFs in {total:.2f} s; {shares}")


if __name__ == "__main__":
    main()
