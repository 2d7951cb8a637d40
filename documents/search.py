"""Full-text search over extracted text: SQLite FTS5 or PostgreSQL, one interface.

People type what they would type into Google Drive: words, "exact phrases", prefixes
(``inv*``), ``-excluded`` words and ``OR``. The query is parsed here into terms and the
engine's syntax is generated from them, every word quoted by us, so nothing a person
types can reach FTS5's or PostgreSQL's query parser as syntax.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import connection
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from documents.models import Document

MAX_TERMS = 16
MAX_QUERY_CHARS = 500
MAX_WORD_CHARS = 100
SNIPPET_TOKENS = 24
# Like Google Drive, a match in the file name comes before any match in the text only;
# the bonus keeps ``rank`` in that order (text scores are far below it).
NAME_MATCH_BONUS = 1000.0
# Private-use characters: they never reach the page, so they cannot be confused with
# markup; highlights are turned into <mark> only after the snippet is escaped.
MARK_START, MARK_END = "\ue000", "\ue001"
# ts_headline drops anything that looks like an HTML tag, so "<" is hidden from it.
LESS_THAN = "\ue002"
_MARKED = re.compile(f"{MARK_START}(.*?){MARK_END}", re.DOTALL)
# Letters and digits; everything else separates words, as in FTS5's unicode61.
_WORD = re.compile(r"[^\W_]+")
_TOKEN = re.compile(r'(-?)"([^"]*)"?(\*?)|(\S+)')


@dataclass(frozen=True, slots=True)
class Term:
    """One thing to look for: a word or a phrase, maybe a prefix, maybe excluded."""

    words: tuple[str, ...]
    prefix: bool = False
    excluded: bool = False


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """Terms to match: every group must match (one of its terms will do), none of
    the excluded terms may."""

    groups: tuple[tuple[Term, ...], ...]
    excluded: tuple[Term, ...]

    def __bool__(self) -> bool:
        return bool(self.groups)


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A matching document, its rank (higher is better) and a highlighted excerpt."""

    document: Document
    rank: float
    snippet_html: SafeString


def _term(text: str, *, prefix: bool, excluded: bool) -> Term | None:
    words = tuple(w for w in _WORD.findall(text) if len(w) <= MAX_WORD_CHARS)
    if not words:
        return None
    return Term(words=words, prefix=prefix, excluded=excluded)


def parse_query(query: str) -> ParsedQuery:
    """Split a person's query into terms; anything that is not a word is ignored."""
    groups: list[list[Term]] = []
    excluded: list[Term] = []
    join_next = False
    for match in _TOKEN.finditer(query[:MAX_QUERY_CHARS]):
        minus, phrase, star, bare = match.groups()
        if bare == "OR":
            join_next = bool(groups)
            continue
        if bare == "AND":
            continue
        if bare is None:
            term = _term(phrase, prefix=bool(star), excluded=bool(minus))
        else:
            negate = bare.startswith("-") and len(bare) > 1
            term = _term(
                bare[1:] if negate else bare,
                prefix=bare.endswith("*"),
                excluded=negate,
            )
        if term is None or sum(map(len, groups)) + len(excluded) >= MAX_TERMS:
            continue
        if term.excluded:
            excluded.append(term)
        elif join_next:
            groups[-1].append(term)
        else:
            groups.append([term])
        join_next = False
    return ParsedQuery(tuple(tuple(g) for g in groups), tuple(excluded))


def fts5_match(parsed: ParsedQuery) -> str:
    """An FTS5 MATCH expression in which every word is inside quotes we wrote."""

    def term(t: Term) -> str:
        return '"' + " ".join(t.words) + '"' + ("*" if t.prefix else "")

    expression = " AND ".join(
        "(" + " OR ".join(term(t) for t in group) + ")" for group in parsed.groups
    )
    for t in parsed.excluded:
        expression = f"({expression}) NOT {term(t)}"
    return expression


def _quoted_lexeme(word: str) -> str:
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def postgres_tsquery(parsed: ParsedQuery) -> tuple[str, list[str]]:
    """SQL for a tsquery and its parameters. Words are split as the index splits them
    (the migration turns punctuation into spaces); phrases go through phraseto_tsquery,
    which has no syntax at all, and prefixes through to_tsquery with quoted lexemes."""
    params: list[str] = []

    def term(t: Term) -> str:
        if not t.prefix:
            params.append(" ".join(t.words))
            return "phraseto_tsquery('simple', %s)"
        lexemes = [_quoted_lexeme(w) for w in t.words]
        params.append(" <-> ".join(lexemes) + ":*")
        return "to_tsquery('simple', %s)"

    parts = ["(" + " || ".join(term(t) for t in group) + ")" for group in parsed.groups]
    parts += [f"!!{term(t)}" for t in parsed.excluded]
    return " && ".join(parts), params


def postgres_highlight_query(parsed: ParsedQuery) -> str:
    """to_tsquery text matching any wanted word: ts_headline parses the original text,
    in which "11.5" is one token, so a phrase would not always be found to highlight."""
    lexemes = []
    for term in (t for group in parsed.groups for t in group):
        lexemes += [_quoted_lexeme(w) for w in term.words]
        if term.prefix:
            lexemes[-1] += ":*"
    return " | ".join(lexemes)


def highlight(snippet: str) -> SafeString:
    """Escape the snippet, then turn the engine's markers into <mark> elements."""
    html = _MARKED.sub(r"<mark>\1</mark>", escape(snippet))
    html = html.replace(MARK_START, "").replace(MARK_END, "")
    return mark_safe(html.replace(LESS_THAN, "&lt;"))  # noqa: S308


def _sqlite_rows(parsed: ParsedQuery, owner_id: int | None, limit: int) -> list:
    # bm25 over the text alone: it scores by the length of all columns together, so a
    # file-name weight would let documents without text (not yet processed) win.
    sql = f"""
        SELECT d.id,
               documents_fts.rowid IN (
                   SELECT rowid FROM documents_fts WHERE documents_fts MATCH %s
               ) AS in_name,
               -bm25(documents_fts, 0.0, 1.0),
               snippet(documents_fts, 1, %s, %s, '…', {SNIPPET_TOKENS})
        FROM documents_fts JOIN documents_document d ON d.id = documents_fts.rowid
        WHERE documents_fts MATCH %s {"" if owner_id is None else "AND d.owner_id = %s"}
        ORDER BY in_name DESC, bm25(documents_fts, 0.0, 1.0), d.id DESC
        LIMIT %s"""  # noqa: S608 - only our own constants are interpolated
    expression = fts5_match(parsed)
    params = [f"{{original_filename}} : ({expression})", MARK_START, MARK_END]
    params += [expression] + ([] if owner_id is None else [owner_id])
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, limit])
        return cursor.fetchall()


def _postgres_rows(parsed: ParsedQuery, owner_id: int | None, limit: int) -> list:
    tsquery, params = postgres_tsquery(parsed)
    options = (
        f"StartSel={MARK_START}, StopSel={MARK_END}, MaxWords=35, MinWords=15, "
        'ShortWord=2, MaxFragments=2, FragmentDelimiter=" … "'
    )
    # Rank first and headline only the page of hits: ts_headline reads the whole text.
    # The weights {D,C,B,A} score the text (B) alone; normalisation 1 divides by
    # log(length), so long documents do not win by size.
    sql = f"""
        WITH q AS (SELECT {tsquery} AS query),
        hits AS (
            SELECT d.id,
                   ts_filter(d.search_vector, '{{a}}') @@ q.query AS in_name,
                   ts_rank('{{0, 0, 1, 0}}', d.search_vector, q.query, 1) AS score
            FROM documents_document d, q
            WHERE d.search_vector @@ q.query {"" if owner_id is None else "AND d.owner_id = %s"}
            ORDER BY in_name DESC, score DESC, d.id DESC
            LIMIT %s
        )
        SELECT hits.id, hits.in_name, hits.score,
               ts_headline('simple', replace(left(d.text, 200000), '<', %s),
                           to_tsquery('simple', %s), %s)
        FROM hits JOIN documents_document d ON d.id = hits.id
        ORDER BY hits.in_name DESC, hits.score DESC, hits.id DESC"""  # noqa: S608 - SQL built from our own fragments
    params += [] if owner_id is None else [owner_id]
    params += [limit, LESS_THAN, postgres_highlight_query(parsed), options]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def search_documents(user, query: str, limit: int = 50) -> list[SearchHit]:
    """The user's documents (staff: everyone's) matching ``query``, best first."""
    parsed = parse_query(query)
    if not parsed or limit < 1:
        return []
    owner_id = None if user.is_staff else user.pk
    if connection.vendor == "postgresql":
        rows = _postgres_rows(parsed, owner_id, limit)
    else:
        rows = _sqlite_rows(parsed, owner_id, limit)
    documents = Document.objects.select_related("owner").defer("text")
    by_id = documents.in_bulk([row[0] for row in rows])
    return [
        SearchHit(
            document=by_id[pk],
            rank=float(score) + (NAME_MATCH_BONUS if in_name else 0.0),
            snippet_html=highlight(snippet),
        )
        for pk, in_name, score, snippet in rows
        if pk in by_id
    ]
