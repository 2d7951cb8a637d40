"""OCR: word recall on a self-made scan set, and OCR pages per second through the queue.

The scan set is made here, never committed: born-digital corpus pages rendered with
PDFium at 300 dpi and degraded as a desk scanner does (grey, a random skew within
±1°, noise, JPEG at quality 75), written as image-only PDFs, PNG and JPEG files, one
page turned 90°, and one mixed PDF (a born-digital page, then a scanned one); outside
the target, a table of thick rules and a noisy 25-megapixel photo of a page. The
truth of a page is its own text layer.

Recall is the share of the truth's words (counted with repeats) found in the output,
per file. "ours" is the product's extraction (``registry.extract``: per-page choice,
orientation, OCR); "raw" is tesserocr in a plain loop on the same page images
(PSM auto, no orientation step), as an integrator would start.

Speed: single-page image-only PDFs queued through ``process_queue`` with 1 and 2
workers, beside the raw loop (render with PDFium + tesserocr) in one process on the
same files; the raw loop runs before and after the queue runs, their mean is the
yardstick.

    python bench/ocr_bench.py                       # recall + speed, SQLite
    python bench/ocr_bench.py --jobs 4 --no-record  # CI-sized
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

import common
import pypdfium2 as pdfium
from common import CORPUS, PRODUCT_PY, ROOT
from fpdf import FPDF
from PIL import Image

sys.path.insert(0, str(ROOT))

from documents.extractors.ocr import find_tessdata  # noqa: E402
from documents.extractors.registry import extract  # noqa: E402

DPI = 300
# (corpus PDF, page index): English prose in one to three columns, a manual, a book.
PAGES = [
    ("pdf/tracemonkey.pdf", 0),
    ("pdf/tracemonkey.pdf", 5),
    ("pdf/multicolumn.pdf", 0),
    ("pdf/layout-parser-paper-with-empty-pages.pdf", 0),
    ("pdf/irs-manual-400p.pdf", 10),
    ("pdf/freeculture.pdf", 20),
    ("pdf/federal-register-2020-17221.pdf", 1),
    ("pdf/fr_olap.pdf", 0),
]
# Measured too, outside the target: a table drawn with thick rules, which Tesseract's
# page layout analysis reads poorly (clean or scanned, raw or ours); and a noisy photo.
RULED_TABLE = ("pdf/ca-warn-report.pdf", 0)
FINISHED = (
    "SELECT count(*) FROM extraction_queue WHERE status IN ('completed', 'failed')"
)
_WORD = re.compile(r"[^\W_]+")
# A word broken by a hyphen at a line end counts as the whole word, on every side:
# the product joins such breaks, the text layer and raw Tesseract keep them.
_LINE_END_HYPHEN = re.compile(r"-[ \t]*\n[ \t]*")


def words(text: str) -> Counter[str]:
    text = _LINE_END_HYPHEN.sub("", unicodedata.normalize("NFKC", text).lower())
    return Counter(_WORD.findall(text))


def recall(truth: str, found: str) -> float:
    want = words(truth)
    got = words(found)
    total = sum(want.values())
    return sum(min(n, got[w]) for w, n in want.items()) / total if total else 1.0


def render(path: Path, index: int) -> tuple[Image.Image, str, tuple[float, float]]:
    """A page's grey image at DPI, its text layer and its size in points."""
    doc = pdfium.PdfDocument(str(path))
    try:
        page = doc[index]
        size = page.get_size()
        textpage = page.get_textpage()
        # As the product reads it: PDFium marks a line-end hyphen as U+0002.
        truth = textpage.get_text_bounded().replace("\r\n", "\n").replace("\x02", "-\n")
        image = page.render(scale=DPI / 72, grayscale=True).to_pil().copy()
        textpage.close()
        page.close()
    finally:
        doc.close()
    return image, truth, size


def degrade(image: Image.Image, rng: random.Random) -> bytes:
    """Grey, skewed by up to 1°, noisy, saved as JPEG quality 75."""
    angle = rng.uniform(-1.0, 1.0)
    image = image.rotate(angle, Image.Resampling.BICUBIC, expand=True, fillcolor=235)
    noise = Image.effect_noise(image.size, 48).convert("L")
    image = Image.blend(image, noise, 0.12)
    out = io.BytesIO()
    image.save(out, "JPEG", quality=75)
    return out.getvalue()


def image_pdf(scans: list[tuple[bytes, tuple[float, float]]]) -> bytes:
    """An image-only PDF: each JPEG fills a page of the original size."""
    pdf = FPDF(unit="pt")
    for jpeg, (width, height) in scans:
        image = Image.open(io.BytesIO(jpeg))
        if (image.width > image.height) != (width > height):
            width, height = height, width  # a page turned on its side
        pdf.add_page(format=(width, height))
        pdf.image(io.BytesIO(jpeg), x=0, y=0, w=width, h=height)
    return bytes(pdf.output())


def make_scan_set(target: Path, seed: int = 7) -> list[dict[str, Any]]:
    """Write the scan set; returns [{name, path, truth, pages}]."""
    rng = random.Random(seed)
    pages = []
    for rel, index in PAGES:
        image, truth, size = render(CORPUS / rel, index)
        pages.append({"source": f"{rel}#{index + 1}", "image": image, "truth": truth,
                      "size": size, "jpeg": degrade(image, rng)})  # fmt: skip
    files: list[dict[str, Any]] = []

    def add(name: str, content: bytes, parts: list[dict], count: int, target_set=True):
        path = target / name
        path.write_bytes(content)
        truth = "\n".join(p["truth"] for p in parts)
        sources = ", ".join(p["source"] for p in parts)
        files.append({"name": name, "path": path, "truth": truth, "pages": count,
                      "sources": sources, "target": target_set})  # fmt: skip

    for n, page in enumerate(pages[:4]):
        add(f"scan-{n + 1}.pdf", image_pdf([(page["jpeg"], page["size"])]), [page], 1)
    two = pages[4:6]
    add("scan-2-pages.pdf", image_pdf([(p["jpeg"], p["size"]) for p in two]), two, 2)
    page = pages[6]
    add("photo.jpg", page["jpeg"], [page], 1)
    png = io.BytesIO()
    Image.open(io.BytesIO(pages[7]["jpeg"])).save(png, "PNG")
    add("scan.png", png.getvalue(), [pages[7]], 1)
    turned = Image.open(io.BytesIO(pages[0]["jpeg"])).rotate(90, expand=True)
    out = io.BytesIO()
    turned.save(out, "JPEG", quality=75)
    add("turned.pdf", image_pdf([(out.getvalue(), pages[0]["size"])]), [pages[0]], 1)
    # Mixed: a born-digital page (copied as it is), then a scanned one.
    mixed = pdfium.PdfDocument.new()
    original = pdfium.PdfDocument(str(CORPUS / PAGES[2][0]))
    scanned = pdfium.PdfDocument(
        io.BytesIO(image_pdf([(pages[3]["jpeg"], pages[3]["size"])]))
    )
    mixed.import_pages(original, [PAGES[2][1]])
    mixed.import_pages(scanned)
    buffer = io.BytesIO()
    mixed.save(buffer)
    for doc in (mixed, original, scanned):
        doc.close()
    add("mixed.pdf", buffer.getvalue(), [pages[2], pages[3]], 2)
    image, truth, size = render(CORPUS / RULED_TABLE[0], RULED_TABLE[1])
    table = {"source": f"{RULED_TABLE[0]}#{RULED_TABLE[1] + 1}", "truth": truth}
    add("ruled-table.jpg", degrade(image, rng), [table], 1, target_set=False)
    add("noisy-photo.jpg", noisy_photo(pages[3]["image"]), [pages[3]], 1, False)
    return files


def noisy_photo(page: Image.Image, side: int = 5000) -> bytes:
    """A phone's 25-megapixel photo of the page on a desk: sensor noise all over
    (a threshold for the whole page, Otsu's, takes minutes on it)."""

    def noise(size: tuple[int, int]) -> Image.Image:
        return Image.effect_noise(size, 17).point(lambda v: min(255, v + 120))

    photo = noise((side, side))
    photo.paste(
        Image.blend(page, noise(page.size), 0.5),
        ((side - page.width) // 2, (side - page.height) // 2),
    )
    out = io.BytesIO()
    photo.save(out, "JPEG", quality=85)
    return out.getvalue()


class RawTesseract:
    """tesserocr in a plain loop: the page image straight in, text out."""

    def __init__(self) -> None:
        import tesserocr

        self.api = tesserocr.PyTessBaseAPI(
            path=os.path.join(find_tessdata("eng"), ""), lang="eng"
        )

    def images(self, path: Path) -> list[Image.Image]:
        if path.suffix != ".pdf":
            return [Image.open(path)]
        doc = pdfium.PdfDocument(str(path))
        out = []
        for i in range(len(doc)):
            page = doc[i]
            out.append(page.render(scale=DPI / 72, grayscale=True).to_pil().copy())
            page.close()
        doc.close()
        return out

    def read(self, path: Path) -> str:
        texts = []
        for image in self.images(path):
            self.api.SetImage(image)
            texts.append(self.api.GetUTF8Text())
        return "\n".join(texts)


def recall_table(files: list[dict[str, Any]]) -> tuple[str, dict[str, float]]:
    raw = RawTesseract()
    rows, ours_all, raw_all = [], [], []
    for f in files:
        t0 = time.perf_counter()
        result = extract(f["path"])
        ours_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        raw_text = raw.read(f["path"])
        raw_s = time.perf_counter() - t0
        ours, theirs = recall(f["truth"], result.text), recall(f["truth"], raw_text)
        if f["target"]:
            ours_all.append(ours)
            raw_all.append(theirs)
        rows.append([f["name"] if f["target"] else f"{f['name']} (outside the target)", f["sources"], f["pages"], sum(words(f["truth"]).values()),
                     f"**{ours:.3f}**", f"{theirs:.3f}", result.details.get("ocr_pages", "—"),
                     f"{ours_s:.1f}", f"{raw_s:.1f}"])  # fmt: skip
        print(f"  {f['name']}: ours {ours:.3f}, raw {theirs:.3f}", flush=True)
    summary = {
        "ours_mean": sum(ours_all) / len(ours_all),
        "ours_min": min(ours_all),
        "raw_mean": sum(raw_all) / len(raw_all),
        "raw_min": min(raw_all),
    }
    rows.append(["**mean / min** (target set)", "", "", "",
                 f"**{summary['ours_mean']:.3f} / {summary['ours_min']:.3f}**",
                 f"{summary['raw_mean']:.3f} / {summary['raw_min']:.3f}", "", "", ""])  # fmt: skip
    table = common.md_table(
        ["file", "corpus page(s)", "pages", "truth words", "recall, ours",
         "recall, raw tesserocr", "pages OCRed (ours)", "ours s", "raw s"], rows)  # fmt: skip
    return table, summary


def raw_speed(paths: list[Path]) -> dict[str, float]:
    raw = RawTesseract()
    pages = 0
    t0 = time.perf_counter()
    for path in paths:
        for image in raw.images(path):
            raw.api.SetImage(image)
            raw.api.GetUTF8Text()
            pages += 1
    return {"pages": pages, "seconds": time.perf_counter() - t0}


def through_queue(
    scratch: common.ScratchDB, workers: int, source: Path, tmp: Path
) -> dict[str, Any]:
    url = scratch.fresh()
    media = tmp / "media"
    shutil.rmtree(media, ignore_errors=True)
    env = common.product_env(url, media)
    seeded = json.loads(common.product_ops(env, "seed-dir", source))
    n = seeded["jobs"]
    log = tmp / f"ocr-{workers}.log"
    cmd = [PRODUCT_PY, ROOT / "manage.py", "process_queue", "-v0"]
    with scratch.connect() as scalar:
        t0 = time.time()
        proc = common.start([*cmd, "--workers", workers], env, log)
        try:
            t1, _ = common.wait_until(
                lambda: scalar(FINISHED), lambda v: v >= n, 1800, 0.05, [proc]
            )
            waited = common.run_delay(common.process_tree(proc.pid))
        except Exception:
            print(log.read_text()[-3000:])
            raise
        finally:
            common.stop([proc])
    v = json.loads(common.product_ops(env, "verify"))
    return {
        "jobs": n,
        "pages": v["pages"],
        "seconds": t1 - t0,
        "rate": v["pages"] / (t1 - t0),
        "waited": waited,
        "status": v["status"],
        "ok": v["status"] == {"completed": n},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=12, help="scans through the queue")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--db", default="sqlite", choices=["sqlite", "postgres"])
    parser.add_argument("--skip-recall", action="store_true")
    parser.add_argument("--max-load", type=float, default=0)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    if args.max_load:
        common.wait_quiet(args.max_load)
    load_before = os.getloadavg()[0]
    revision = (common.revision(), common.code_digest())
    tmp = Path(tempfile.mkdtemp(prefix="bench-ocr-"))
    scans = tmp / "scans"
    scans.mkdir()
    try:
        files = make_scan_set(scans)
        body = []
        if not args.skip_recall:
            print("Word recall per file:", flush=True)
            table, summary = recall_table(files)
            met = summary["ours_mean"] >= 0.95 and summary["ours_min"] >= 0.85
            body += [
                "Word recall on the scan set (share of the page's own text-layer words "
                f"found, with repeats): ours mean **{summary['ours_mean']:.3f}**, min "
                f"**{summary['ours_min']:.3f}** (target ≥ 0.95 and ≥ 0.85: "
                f"{'met' if met else 'MISSED'}); raw tesserocr mean "
                f"{summary['raw_mean']:.3f}, min {summary['raw_min']:.3f}.",
                "",
                table,
                "",
            ]
        # Speed: single-page scans, repeated to --jobs files.
        singles = [f["path"] for f in files if f["name"].startswith("scan-")
                   and f["pages"] == 1]  # fmt: skip
        queue_dir = tmp / "queue"
        queue_dir.mkdir()
        speed_files = []
        for i in range(args.jobs):
            target = queue_dir / f"q{i:03d}.pdf"
            shutil.copyfile(singles[i % len(singles)], target)
            speed_files.append(target)
        scratch = common.ScratchDB(args.db, "bench_ocr_docqueue", common.migrate_product,
                                   tmp=tmp)  # fmt: skip
        passes = [raw_speed(speed_files)]
        print(f"  raw loop: {passes[-1]['pages'] / passes[-1]['seconds']:.2f} pages/s",
              flush=True)  # fmt: skip
        runs = {}
        try:
            for k in [int(w) for w in args.workers.split(",")]:
                runs[k] = through_queue(scratch, k, queue_dir, tmp)
                print(f"  {k} worker(s): {runs[k]['rate']:.2f} pages/s "
                      f"({runs[k]['status']})", flush=True)  # fmt: skip
        finally:
            scratch.drop()
        passes.append(raw_speed(speed_files))
        print(f"  raw loop: {passes[-1]['pages'] / passes[-1]['seconds']:.2f} pages/s",
              flush=True)  # fmt: skip
        raw_rate = sum(p["pages"] for p in passes) / sum(p["seconds"] for p in passes)
        rows = [["raw tesserocr loop (render + OCR), 1 process", passes[0]["pages"],
                 " / ".join(f"{p['seconds']:.1f}" for p in passes),
                 f"**{raw_rate:.2f}**", "—", "—", "ok"]]  # fmt: skip
        for k, r in runs.items():
            rows.append([f"process_queue --workers {k}", r["pages"], f"{r['seconds']:.1f}",
                         f"**{r['rate']:.2f}**", f"{r['rate'] / raw_rate:.0%}",
                         f"{r['waited']:.1f}", "ok" if r["ok"] else str(r["status"])])  # fmt: skip
        verdicts = []
        if 1 in runs:
            share = runs[1]["rate"] / raw_rate
            verdicts.append(f"1 worker = {share:.0%} of the raw loop (target ≥ 90 %: "
                            f"{'met' if share >= 0.9 else 'missed'})")  # fmt: skip
        if 1 in runs and 2 in runs:
            scale = runs[2]["rate"] / runs[1]["rate"]
            verdicts.append(f"2 workers = {scale:.2f}× one (target ≥ 1.8×: "
                            f"{'met' if scale >= 1.8 else 'missed'})")  # fmt: skip
        body += [
            f"OCR pages per second: {args.jobs} single-page image-only PDFs of the scan "
            f"set through the queue ({args.db}), clock from starting the workers to the "
            "last job finished (start-up included); " + "; ".join(verdicts) + ".",
            "",
            common.md_table(
                [
                    "run",
                    "pages",
                    "seconds",
                    "pages/s",
                    "of raw",
                    "s waiting for a CPU",
                    "recorded",
                ],
                rows,
            ),  # fmt: skip
        ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    text = "\n".join(body)
    print(text)
    if not args.no_record:
        header = common.header(load_before, revision)
        common.record(
            "OCR: word recall and pages per second (ocr_bench.py)",
            f"{header}\n\nCommand: `{common.command_line()}`\n\n{text}",
        )


if __name__ == "__main__":
    main()
