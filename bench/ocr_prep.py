"""What OCR's page preparation costs beside Tesseract's own reading: the four
single-page scans of ``ocr_bench.py``'s scan set, prepared as ``Reader.read``
prepares a page (grey, full range, levelled, dark bands, the speckle and shadow
checks) with the product's ``documents/extractors/ocr.py`` or another copy of it
(``--module``, e.g. one from an older commit), or read by raw tesserocr (``raw``).
Prints the CPU seconds; run it under ``valgrind --tool=callgrind`` for instruction
counts, which a shared machine's load does not change.

    CORPUS_DIR=../shared/corpus python bench/ocr_prep.py ours|raw [--module PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path

import ocr_bench
from common import ROOT

sys.path.insert(0, str(ROOT))


def module(path: Path | None):
    if path is None:
        from documents.extractors import ocr

        return ocr
    spec = importlib.util.spec_from_file_location("documents.extractors.ocr_b", path)
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = loaded
    spec.loader.exec_module(loaded)
    return loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("which", choices=["ours", "raw"])
    parser.add_argument("--module", type=Path, help="another copy of ocr.py")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = ocr_bench.make_scan_set(Path(tmp))
        raw = ocr_bench.RawTesseract()
        images = [
            raw.images(f["path"])[0]
            for f in files
            if f["name"].startswith("scan-") and f["pages"] == 1
        ]
    ocr = module(args.module)
    began = time.process_time()
    for image in images:
        if args.which == "raw":
            raw.api.SetImage(image)
            raw.api.GetUTF8Text()
            continue
        page = ocr._straightened(ocr._full_range(ocr.grey(image)))
        ocr._bands_lightened(page)
        ocr._despeckled(page)
        ocr._shadowed(page)
    print(f"{args.which}: {len(images)} pages, {time.process_time() - began:.3f} s CPU")


if __name__ == "__main__":
    main()
