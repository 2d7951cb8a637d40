"""HTML extraction with lxml: visible text in reading order, no script or style."""

from __future__ import annotations

import os
import re
from html.entities import html5
from typing import Any

from .base import (
    CorruptFileError,
    ExtractionResult,
    ExtractOptions,
    TextBuilder,
    join_notes,
    short_reason,
)
from .text import codec_for_label, decode

# Never shown, or shown beside the text it glosses (ruby's readings, <rt>: "漢kan字ji"
# would hide 漢字 from search). Inline SVG shows its <text> (a chart's labels), not
# its tooltip (<title>), description or the definitions it only draws by reference.
# A player's or a canvas's text is for browsers without them ("Your browser does
# not support the video tag."): none shows it. A MathML formula shows its first
# form, not its annotations (pandoc --mathml keeps the TeX source in one).
_INVISIBLE = (
    "script", "style", "noscript", "template", "head", "datalist", "iframe",
    "noembed", "noframes", "rp", "rt", "title", "desc", "metadata", "defs", "symbol",
    "video", "audio", "canvas", "annotation", "annotation-xml",
)  # fmt: skip
# Hidden as browsers hide it without a style sheet: the hidden attribute (but for
# "until-found", which find-in-page shows), a closed <dialog>, an inline style.
_HIDDEN = (
    "//*[@hidden and translate(@hidden, 'UNTILFOD-', 'untilfod-') != 'until-found']"
    " | //dialog[not(@open)]"
    " | //*[re:test(@style, '(^|;)\\s*(display\\s*:\\s*none|visibility\\s*:"
    "\\s*(hidden|collapse))\\b', 'i')]"
)
# Shown on lines of their own (old pages' <center> and <dir> too, and form parts).
_BLOCKS = {
    "address", "article", "aside", "blockquote", "br", "caption", "center", "dd",
    "details", "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption",
    "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
    "hgroup", "hr", "legend", "li", "main", "menu", "nav", "ol", "optgroup",
    "option", "p", "pre", "section", "summary", "table", "textarea", "tr", "ul",
    "listing", "xmp", "plaintext", "text",
}  # fmt: skip
# Shown as written, spaces and line breaks kept (<xmp> and <plaintext> even show
# their markup as text), and so is text styled white-space: pre (or pre-wrap,
# break-spaces); pre-line keeps only the line breaks.
_PREFORMATTED = ("pre", "textarea", "listing", "xmp", "plaintext")
_STYLED = (
    "//*[re:test(@style, '(^|;)\\s*white-space(-collapse)?\\s*:\\s*"
    "(pre|pre-wrap|pre-line|break-spaces|preserve|preserve-breaks)\\b', 'i')]"
)
# Kept whitespace travels through the collapsing below as noncharacters.
_KEPT_SPACE, _KEPT_TAB, _KEPT_BREAK = "\ufdd0", "\ufdd1", "\ufdd2"
_KEEP_SPACES = str.maketrans(
    {" ": _KEPT_SPACE, "\u00a0": _KEPT_SPACE, "\f": _KEPT_SPACE, "\v": _KEPT_SPACE,
     "\t": _KEPT_TAB, "\n": _KEPT_BREAK}
)  # fmt: skip
_KEEP_BREAKS = str.maketrans({"\n": _KEPT_BREAK})
_AROUND_BREAK = re.compile(f" ?{_KEPT_BREAK} ?")
_BREAKS_ONLY = re.compile(
    r"white-space(-collapse)?\s*:\s*(pre-line|preserve-breaks)", re.I
)
_CELLS = {"td", "th"}  # a space between cells of a row
# An <input>'s value is shown in its box (a saved page's filled-in form), or on
# its button; not these kinds' (dots, a tick, a colour, a slider, a file name).
_VALUE_NOT_SHOWN = {
    "hidden", "password", "checkbox", "radio", "file", "image", "color", "range",
}  # fmt: skip
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")
_DECLARED = re.compile(  # <meta charset=...>, http-equiv's charset=, <?xml encoding=
    rb"""<meta[^>]+charset\s*=\s*["']?([\w.:-]+)|<\?xml[^>]+encoding\s*=\s*["']([\w.:-]+)""",
    re.IGNORECASE,
)
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*>")
# A DOCTYPE's internal subset ("<!DOCTYPE html [<!ENTITY a "...">]>", an XML habit;
# entity bombs use it): HTML parsers end the DOCTYPE at its first ">" and show the
# rest ("]>") as text. Its quoted strings may hold "]" and ">".
_INTERNAL_SUBSET = re.compile(
    r"""<!DOCTYPE(\s[^\[>]*)\[((?:[^\]"']|"[^"]*"|'[^']*')*)\]\s*>""", re.IGNORECASE
)
_DECLARED_ENTITY = re.compile(r"<!ENTITY\s+([^\s%\"'>]+)")
_REFERENCE = re.compile(r"&([A-Za-z_:][\w.:-]*);")
_HTML_ENTITIES = frozenset(name.rstrip(";") for name in html5)  # shown as HTML says


def extract_html(
    path: str | os.PathLike[str], options: ExtractOptions
) -> ExtractionResult:
    """Extract the visible text of an HTML page, up to the limit."""
    with open(path, "rb") as fh:
        data = fh.read()
    lines, note = html_lines(data)
    text = TextBuilder(options.max_chars)
    text.extend(lines)
    body = text.text
    return ExtractionResult(
        text=body,
        page_count=None,
        confidence=1.0 if body.strip() else 0.0,
        extractor="html",
        note=join_notes(text.note, note),
    )


def html_lines(
    markup: bytes | str, *, with_title: bool = True
) -> tuple[list[str], str]:
    """The non-empty lines of text a browser would show (the title first, unless
    ``with_title`` is False: a mail program shows none), and a note when part of
    the page could not be read."""
    import lxml.html
    from lxml import etree

    if isinstance(markup, bytes):
        markup = decode_html(markup)
    # lxml refuses a str that still declares an encoding.
    markup = _XML_DECLARATION.sub("", markup.lstrip("\ufeff"))
    markup = _without_internal_subset(markup)
    if not markup.strip():
        return [], ""
    # Old pages leave <font> and <div> unclosed, hundreds deep: libxml2 stops
    # reading at 256 levels unless told the tree may be huge (then at 2,048).
    parser = lxml.html.HTMLParser(huge_tree=True)
    try:
        root = lxml.html.document_fromstring(markup, parser=parser)
    except (etree.ParserError, ValueError) as exc:
        raise CorruptFileError(
            f"its HTML cannot be parsed ({short_reason(exc)})"
        ) from exc
    note = ""
    if any(e.type_name == "ERR_RESOURCE_LIMIT" for e in parser.error_log):
        note = (
            "The page's elements are nested too deeply (over 2,048 levels): its "
            "text from there on was not read."
        )
    lines = []
    # The page's title: the first <title> that is not an SVG picture's tooltip.
    titles = root.xpath("//title[not(ancestor::svg)]") if with_title else []
    title = next((t.text_content() for t in titles), "")
    if title.strip():
        lines.append(_SPACES.sub(" ", title).strip())
    hidden = root.xpath(
        _HIDDEN, namespaces={"re": "http://exslt.org/regular-expressions"}
    )
    for element in [*root.iter(*_INVISIBLE), *hidden]:  # not while iterating the tree
        if element.getparent() is not None:  # not inside one dropped already
            element.drop_tree()
    for select in root.iter("select"):
        _show_selected(select)
    for field in root.iter("input"):
        kind = (field.get("type") or "text").strip().lower()
        if field.get("value", "").strip() and kind not in _VALUE_NOT_SHOWN:
            field.text = field.get("value")
            if not (field.tail or "")[:1].isspace():  # two boxes side by side
                field.tail = " " + (field.tail or "")
    _keep_whitespace(root)
    # A line break in the markup is a space to a browser (LibreOffice's and mail
    # programs' HTML wrap paragraphs at 80 columns): only blocks end lines.
    for node in root.iter():
        if isinstance(node.tag, str) and node.text:
            node.text = node.text.replace("\n", " ")
        if node.tail:
            node.tail = node.tail.replace("\n", " ")
    for element in root.iter(etree.Element):
        tag = element.tag if isinstance(element.tag, str) else ""
        if tag in _BLOCKS:
            element.tail = "\n" + (element.tail or "")
            if tag != "br":
                element.text = "\n" + (element.text or "")
        elif tag in _CELLS:
            element.tail = " " + (element.tail or "")
    for row in root.iter("tr"):
        _join_row(row)
    # Text is never longer than the markup, so this list is bounded by the file.
    for line in root.text_content().split("\n"):
        line = _SPACES.sub(" ", line).strip()
        if _KEPT_BREAK in line or _KEPT_SPACE in line or _KEPT_TAB in line:
            lines += _kept_lines(line)
        elif line:
            lines.append(line)
    return lines, note


def _show_selected(select: Any) -> None:
    """Leave in a <select> only the options a person sees: a drop-down shows its
    selected option (the last one marked, else its first that is not disabled)
    in its box, inline as an input's value; a list (``multiple``) its selected
    ones, a line each. All of them would read a country list as 200 names."""
    options = list(select.iter("option"))
    chosen = [o for o in options if o.get("selected") is not None]
    listed = select.get("multiple") is not None
    if not listed:
        chosen = chosen[-1:] or [o for o in options if o.get("disabled") is None][:1]
    shown = [(o.get("label") or "").strip() or o.text_content() for o in chosen]
    for child in list(select):  # its options and groups' labels
        select.remove(child)
    if listed:
        select.text = " "  # nothing chosen: no words glued around the box
        for text in shown:
            select.append(select.makeelement("option"))
            select[-1].text = text
    else:  # spaces around the box: collapsed later where there are some already
        select.text = f" {shown[0]} " if shown else " "


def _join_row(row: Any) -> None:
    """A table row on one line when each of its cells shows at most one (as
    table_row_lines reads a word processor's): Word's, LibreOffice's and Outlook's
    HTML put every cell's text in a <p>, which would make a line of each cell.
    A row holding a table, or a cell of several lines, keeps its line breaks."""
    cells = [c for c in row if c.tag in _CELLS]
    if not cells or any(c.find(".//tr") is not None for c in cells):
        return
    for cell in cells:
        text = cell.text_content().replace(_KEPT_BREAK, "\n")
        if sum(1 for line in text.split("\n") if _SPACES.sub("", line)) > 1:
            return
    for cell in cells:
        for node in cell.iter():
            if isinstance(node.tag, str) and node.text:
                node.text = node.text.replace("\n", " ")
            if node is not cell and node.tail:
                node.tail = node.tail.replace("\n", " ")


def _without_internal_subset(markup: str) -> str:
    """The markup with its DOCTYPE's internal subset taken out, and the references
    to the entities it declares with it: they are left unexpanded (an entity bomb
    expands to gigabytes), so they would show as "&a9;" in the text."""
    found = _INTERNAL_SUBSET.search(markup)
    if found is None:
        return markup
    declared = set(_DECLARED_ENTITY.findall(found.group(2))) - _HTML_ENTITIES
    markup = (
        f"{markup[: found.start()]}<!DOCTYPE{found.group(1)}>{markup[found.end() :]}"
    )
    if not declared:
        return markup
    return _REFERENCE.sub(
        lambda ref: "" if ref.group(1) in declared else ref.group(0), markup
    )


def _keep_whitespace(root: Any) -> None:
    """Mark the whitespace a browser shows as written (in <pre> and its kin, and
    where a style says so), so that collapsing the rest leaves it alone."""
    styled = root.xpath(
        _STYLED, namespaces={"re": "http://exslt.org/regular-expressions"}
    )
    # <pre> first: its leading line break is still a line break to drop.
    for element in [*root.iter(*_PREFORMATTED), *styled]:
        keep = _KEEP_SPACES
        if element.tag not in _PREFORMATTED and _BREAKS_ONLY.search(
            element.get("style", "")
        ):
            keep = _KEEP_BREAKS
        text = element.text or ""  # the parser has made every line end "\n"
        if element.tag in _PREFORMATTED and text.startswith("\n"):
            text = text[1:]  # a line break right after the start tag is not shown
        element.text = text.translate(keep)
        for inner in element.iterdescendants():
            if isinstance(inner.tag, str) and inner.text:
                inner.text = inner.text.translate(keep)
            if inner.tail:
                inner.tail = inner.tail.translate(keep)


def _kept_lines(line: str) -> list[str]:
    """The lines of a text with kept whitespace in it: their indentation kept, and
    blank lines but at the start and end."""
    line = _AROUND_BREAK.sub(_KEPT_BREAK, line)
    line = line.replace(_KEPT_SPACE, " ").replace(_KEPT_TAB, "\t")
    kept = [part.rstrip() for part in line.split(_KEPT_BREAK)]
    while kept and not kept[-1]:
        kept.pop()
    while kept and not kept[0]:
        kept.pop(0)
    return kept


def decode_html(data: bytes) -> str:
    """Decode as browsers do: byte-order mark, then the declared charset, then a guess."""
    declared = _DECLARED.search(data[:4096])
    label = (declared.group(1) or declared.group(2)).decode() if declared else None
    if (codec_for_label(label) or "").startswith(("utf-16", "utf-32")):
        # A label read in ASCII bytes cannot be right about UTF-16 (WHATWG: UTF-8).
        label = "utf-8"
    return decode(data, label)
