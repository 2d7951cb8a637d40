"""A scan in a PDF whose file claims a coarse resolution, read through the product's
extraction: wall time, peak memory and the size of the bitmap rendered for OCR.

Phone scanning apps, img2pdf and Pillow (``image.save("x.pdf")``, 72 dpi unless told)
write a page as many points wide as the scan has pixels: at the OCR's 300 dpi of the
page, it was rendered at 17 times its pixels. The same A4 scan (1240 x 1754 pixels,
150 dpi of paper) is saved claiming 72, 150 and 300 dpi; each file is extracted in a
fresh child process (``--repeat`` times, the median kept), which reports its own
peak RSS. Run it in two trees to compare them (``--root``).

    python bench/scan_render.py --no-record
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import common
from common import ROOT

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
TEXT = (
    "The harbour board met on Tuesday to discuss the new tide tables and the "
    "dredging of the northern channel before the winter storms arrive."
)
# Run in the child: the product's extraction of one file, and what it cost.
CHILD = """
import json, resource, sys, time
from documents.extractors import pdf
sizes = []
render = pdf._render
def counted(doc, index, dpi):
    bitmap = render(doc, index, dpi)
    if bitmap is not None:
        sizes.append(bitmap.width * bitmap.height)
    return bitmap
pdf._render = counted
from documents.extractors import extract
began = time.perf_counter()
result = extract(sys.argv[1])
print(json.dumps({
    "seconds": time.perf_counter() - began,
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "pixels": max(sizes, default=0),
    "text": result.text,
}))
"""


def scan_pdf(dpi: int) -> bytes:
    """An A4 page of text scanned at 150 dpi, saved claiming ``dpi``."""
    from PIL import Image, ImageDraw, ImageFont

    page = Image.new("L", (1240, 1754), 255)
    draw = ImageDraw.Draw(page)
    font = ImageFont.truetype(FONT, 28)
    words, line, y = TEXT.split(), "", 120
    for word in words * 6:
        if draw.textlength(f"{line} {word}", font=font) > 1040:
            draw.text((100, y), line, fill=0, font=font)
            line, y = word, y + 44
        else:
            line = f"{line} {word}".strip()
    draw.text((100, y), line, fill=0, font=font)
    out = io.BytesIO()
    page.save(out, "PDF", resolution=dpi)
    return out.getvalue()


def recall(text: str) -> float:
    truth = TEXT.lower().split()
    found = text.lower().split()
    return sum(1 for word in truth if word in found) / len(truth)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--root", type=Path, default=ROOT, help="the tree to measure")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    revision = (common.revision(), common.code_digest())
    env = {
        **os.environ,
        "PYTHONPATH": str(args.root),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "SECRET_KEY": "bench",
        "DEBUG": "1",
    }
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for dpi in (72, 150, 300):
            path = Path(tmp) / f"scan-{dpi}.pdf"
            path.write_bytes(scan_pdf(dpi))
            runs = [
                json.loads(
                    subprocess.run(
                        [sys.executable, "-c", CHILD, str(path)],
                        cwd=args.root,
                        env=env,
                        capture_output=True,
                        text=True,
                        check=True,
                    ).stdout
                )
                for _ in range(args.repeat)
            ]
            rows.append(
                [
                    f"claims {dpi} dpi",
                    f"{statistics.median(r['pixels'] for r in runs) / 1e6:.1f}",
                    f"{statistics.median(r['seconds'] for r in runs):.2f}",
                    f"{statistics.median(r['rss_mb'] for r in runs):.0f}",
                    f"{recall(runs[0]['text']):.3f}",
                ]
            )
            print("  ", *rows[-1], flush=True)
    table = common.md_table(
        ["scan", "megapixels rendered", "seconds", "peak MB", "word recall"], rows
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
    common.record(
        "A scan claiming a coarse resolution (scan_render.py)",
        body,
        "Extraction engines",
    )


if __name__ == "__main__":
    main()
