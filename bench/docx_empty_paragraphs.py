"""CPU seconds to extract a DOCX of many empty paragraphs, by shape.

Generated files (reports, mail merges, converters) may hold hundreds of thousands of
empty paragraphs; each costs the extractor its searches of the paragraph. Run from
the repository root:

    .venv/bin/python bench/docx_empty_paragraphs.py [--paragraphs 400000] [--repeat 3]
        [--tree DIR]   # another checkout's source (e.g. `git archive HEAD | tar -x`)

Prints, per shape, the median CPU seconds of ``extract`` (in a fresh process each
time, imports excluded) and the characters of text it returned.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
SHAPES = {
    "bare <w:p/>": "<w:p/>",
    "with properties": '<w:p><w:pPr><w:spacing w:after="0"/></w:pPr></w:p>',
    "empty run": "<w:p><w:r><w:t></w:t></w:r></w:p>",
}
CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats'
    '.org/package/2006/content-types"><Default Extension="rels" ContentType="applicat'
    'ion/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" Cont'
    'entType="application/xml"/><Override PartName="/word/document.xml" ContentType="'
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
    '"/></Types>'
)
RELS = (
    '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxm'
    'lformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://sc'
    "hemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"
    '" Target="word/document.xml"/></Relationships>'
)
TIME_ONE = (
    "import sys, time; from documents.extractors import extract; "
    "import documents.extractors.docx; "
    "t = time.process_time(); r = extract(sys.argv[1]); "
    "print(time.process_time() - t, len(r.text))"
)


def docx_with(paragraph: str, count: int, path: Path) -> None:
    """A DOCX of `count` copies of `paragraph` between two lines of text."""
    body = (
        "<w:p><w:r><w:t>Start.</w:t></w:r></w:p>"
        + paragraph * count
        + "<w:p><w:r><w:t>End.</w:t></w:r></w:p>"
    )
    document = f'<w:document xmlns:w="{W}"><w:body>{body}</w:body></w:document>'
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("[Content_Types].xml", CONTENT_TYPES)
        package.writestr("_rels/.rels", RELS)
        package.writestr("word/document.xml", document)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paragraphs", type=int, default=400_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tree", default=".", help="source tree to measure")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.path.abspath(args.tree)}
    with tempfile.TemporaryDirectory() as folder:
        for name, paragraph in SHAPES.items():
            path = Path(folder) / "empty.docx"
            docx_with(paragraph, args.paragraphs, path)
            runs = []
            for _ in range(args.repeat):
                out = subprocess.run(
                    [sys.executable, "-c", TIME_ONE, str(path)],
                    env=env,
                    cwd=args.tree,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.split()
                runs.append(float(out[0]))
            print(
                f"{name:18} {args.paragraphs:,} paragraphs: "
                f"{statistics.median(runs):6.2f} CPU s (median of {len(runs)}), "
                f"{int(out[1]):,} characters"
            )


if __name__ == "__main__":
    main()
