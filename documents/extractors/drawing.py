"""DrawingML graphics that Word and PowerPoint keep in parts of their own: the text
of SmartArt diagrams and the labels of charts, read the same way for DOCX and PPTX."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .base import parse_xml

_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_C = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"
_DGM = "{http://schemas.openxmlformats.org/drawingml/2006/diagram}"
_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
# What a slide or a paragraph holds in place of the graphic: a reference to its part.
DIAGRAM = f"{_DGM}relIds"
CHART = f"{_C}chart"
_AXES = (f"{_C}catAx", f"{_C}valAx", f"{_C}dateAx", f"{_C}serAx")
# Category labels are strings (c:strCache, c:strLit, a level of c:multiLvlStrCache);
# numbers and dates on an axis are data, saved unformatted, and are not read.
_LABEL_PARENTS = frozenset({f"{_C}strCache", f"{_C}strLit", f"{_C}lvl"})
# A chart's legend and axis name what it shows; past this many labels they are its
# data table, which lives in its workbook, and would crowd the document's own text
# out of the size limit. A cut list ends with "…" to say so.
MAX_LABELS = 100


def diagram_lines(graphic: Any, part: Any) -> Iterator[str]:
    """A SmartArt diagram's text, a line per paragraph of each point: `graphic` is
    (or holds) its dgm:relIds, `part` the part whose relationships it names."""
    ids = graphic if graphic.tag == DIAGRAM else graphic.find(f".//{DIAGRAM}")
    if ids is None:
        return
    root = _related_root(part, ids.get(f"{_REL}dm"))
    if root is None:
        return
    for point in _shown_points(root):
        body = point.find(f"{_DGM}t")
        if body is None or point.get("type", "node") not in ("node", "asst"):
            continue
        yield from paragraph_lines(body)


def chart_references(root: Any) -> Iterator[Any]:
    """The c:chart references under `root` in document order, not those of an
    mc:Fallback, which repeats its mc:Choice for older readers."""
    for reference in root.iter(CHART):
        if next(reference.iterancestors(FALLBACK), None) is None:
            yield reference


def chart_lines(reference: Any, part: Any) -> Iterator[str]:
    """A chart's title and axis titles, a line each, then its series names and its
    category labels, a tab-separated line each. `reference` is its c:chart."""
    root = _related_root(part, reference.get(f"{_REL}id"))
    if root is None or root.tag != f"{_C}chartSpace":
        return
    chart = root.find(CHART)
    if chart is None:
        return
    yield from _title_lines(chart.find(f"{_C}title"))
    plot = chart.find(f"{_C}plotArea")
    if plot is None:
        return
    for axis in plot.iterchildren(*_AXES):
        yield from _title_lines(axis.find(f"{_C}title"))
    series = [s for kind in plot for s in kind.iterchildren(f"{_C}ser")]
    names = capped(_strings(s.find(f"{_C}tx")) for s in series)
    categories = capped(
        label
        for s in series
        for axis in s.iterchildren(f"{_C}cat", f"{_C}xVal")
        for label in _labels(axis)
    )
    for line in (names, categories):
        if line:
            yield "\t".join(line)


def _related_root(part: Any, rid: str | None) -> Any:
    """The parsed root of the part `rid` names, or None: a dangling reference or a
    damaged part costs the graphic its text, not the document's."""
    from lxml import etree

    try:
        data = part.rels[rid].target_part.blob
    except (KeyError, ValueError, AttributeError):  # missing, or external
        return None
    try:
        return parse_xml(data)
    except (etree.XMLSyntaxError, ValueError):
        return None


def _shown_points(root: Any) -> list[Any]:
    """The data model's points in the order the diagram shows them: each parent
    before its children, and these in the srcOrd of their parOf connections, which
    PowerPoint's "Move Up" and "Move Down" change, not the order of the points.
    Points no such connection reaches follow in document order."""
    points: dict[str, Any] = {}
    for number, point in enumerate(root.iter(f"{_DGM}pt")):
        points.setdefault(point.get("modelId") or f"#{number}", point)
    children: dict[str, list[tuple[int, str]]] = {}
    for link in root.iter(f"{_DGM}cxn"):
        if link.get("type", "parOf") == "parOf":
            child = (_source_order(link), link.get("destId", ""))
            children.setdefault(link.get("srcId", ""), []).append(child)
    with_parent = {child for kids in children.values() for _, child in kids}
    roots = [model_id for model_id in points if model_id not in with_parent]
    shown: dict[str, Any] = {}
    # Roots first, then whatever a cycle keeps from them; a stack, not recursion,
    # as a hostile file may nest points deeper than Python recurses.
    for start in [*roots, *points]:
        stack = [start]
        while stack:
            model_id = stack.pop()
            if model_id in shown or model_id not in points:
                continue
            shown[model_id] = points[model_id]
            kids = sorted(children.get(model_id, []), key=lambda kid: kid[0])
            stack.extend(child for _, child in reversed(kids))
    return list(shown.values())


def _source_order(link: Any) -> int:
    try:
        return int(link.get("srcOrd", "0"))
    except ValueError:
        return 0


def paragraph_lines(body: Any) -> Iterator[str]:
    """The lines of the a:p paragraphs under `body`; a:br, a line break, as "\\n"."""
    for paragraph in body.iter(f"{_A}p"):
        pieces = paragraph.iter(f"{_A}t", f"{_A}br")
        line = "".join(
            "\n" if piece.tag == f"{_A}br" else piece.text or "" for piece in pieces
        )
        if line.strip():
            yield line


def _title_lines(title: Any) -> Iterator[str]:
    """A chart or axis title's lines: its rich text, or the cell text it shows. A
    title without either is made up by the application (a series' name)."""
    if title is None:
        return
    text = title.find(f"{_C}tx")
    if text is None:
        return
    rich = text.find(f"{_C}rich")
    if rich is not None:
        yield from paragraph_lines(rich)
    else:
        line = _strings(text)
        if line.strip():
            yield line


def _strings(text: Any) -> str:
    """The text of a c:tx that names a series or a title: a cell's cached string
    (c:strRef/c:strCache) or a literal c:v."""
    if text is None:
        return ""
    values = text.findall(f"{_C}strRef/{_C}strCache/{_C}pt/{_C}v") or text.findall(
        f"{_C}v"
    )
    return " ".join(value.text or "" for value in values).strip()


def _labels(axis: Any) -> Iterator[str]:
    for point in axis.iter(f"{_C}pt"):
        if point.getparent().tag in _LABEL_PARENTS:
            value = point.find(f"{_C}v")
            if value is not None and value.text and value.text.strip():
                yield value.text.strip()


def capped(labels: Iterable[str]) -> list[str]:
    """The distinct labels in order, at most MAX_LABELS, then "…" if more."""
    kept: dict[str, None] = {}
    for label in labels:
        if not label or label in kept:
            continue
        if len(kept) == MAX_LABELS:
            return [*kept, "…"]
        kept[label] = None
    return list(kept)
