"""Full-text search over extracted text: SQLite FTS5 or PostgreSQL, one interface.

People type what they would type into Google Drive: words, "exact phrases", prefixes
(``inv*``), ``-excluded`` words (or ``NOT excluded``) and ``OR``. The query is parsed
here into terms and the engine's syntax is generated from them, every word quoted by
us, so nothing a person types can reach FTS5's or PostgreSQL's query parser as syntax.
A query of exclusions only finds every document without those words, newest first.

Both databases fold words alike: case, Latin letters' accents ("cafe" finds "café")
and Unicode's two spellings of an accented letter (composed, NFC; decomposed, NFD).
In SQLite FTS5's unicode61 tokenizer folds case and accents, and a query word is also
looked for composed and decomposed; PostgreSQL's index is built from text folded by
``documents_search_fold`` (migration 0010), and its queries by ``_searchable``.

Every search is bounded, whatever it is given: prefixes need ``SEARCH_MIN_PREFIX_CHARS``
letters, the database gets ``SEARCH_TIMEOUT_SECONDS`` (PostgreSQL's statement timeout,
SQLite's progress handler) and a runaway query ends as ``SearchTooBroad``; results come
a page at a time; snippets are cut from the first ``SNIPPET_WINDOW_CHARS`` of a hit's
text here, in Python, never by the engine over the whole text (FTS5's ``snippet()``
reads every byte of a 49 MB document).

Chinese, Japanese, Korean and Thai runs are also stored as overlapping bigrams
(``documents.grams``), composed (NFC), and a query word in those scripts is looked
for as the phrase of its bigrams, in any column; a name's bigrams count as the name.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache

from django.conf import settings
from django.db import OperationalError, connection, transaction
from django.db.models.functions import Substr
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from documents.grams import (
    CJK_RANGES,
    combining_marks,
    has_grams,
    pieces,
    run_bigrams,
    unit_pattern,
    word_pattern,
)
from documents.grams import search_grams as search_grams  # migration 0011 imports it
from documents.models import Document

MAX_TERMS = 16
MAX_QUERY_CHARS = 500
MAX_WORD_CHARS = 100
# Words shown around the first match, and how far into the text the match is looked for.
SNIPPET_WORDS_BEFORE = 8
SNIPPET_WORDS = 30
SNIPPET_WINDOW_CHARS = 50_000
# Deeper pages cost an ever larger OFFSET (and beyond 2**63 the databases refuse it);
# nobody reads past the thousandth hit.
MAX_OFFSET = 1000
POSTGRES_MAX_RANKED = 1000
# SQLite calls the progress handler every this many virtual-machine instructions.
PROGRESS_STEPS = 10_000
# PostgreSQL's SQLSTATE for a statement cancelled by statement_timeout.
QUERY_CANCELED = "57014"
# Like Google Drive, a match in the file name comes before any match in the text only;
# the bonus keeps ``rank`` in that order (text scores are far below it).
NAME_MATCH_BONUS = 1000.0
# Private-use characters: they never reach the page, so they cannot be confused with
# markup; highlights are turned into <mark> only after the snippet is escaped.
MARK_START, MARK_END = "\ue000", "\ue001"
_MARKED = re.compile(f"{MARK_START}(.*?){MARK_END}", re.DOTALL)
_TOKEN = re.compile(r'(-?)"([^"]*)"?(\*?)|(\S+)')
# A Latin letter's combining accents, once decomposed (NFD): migration 0010 strips the
# same from PostgreSQL's index, as FTS5's remove_diacritics 2 does in SQLite.
_LATIN_ACCENTS = re.compile("([A-Za-z])[\u0300-\u036f]+")


@cache
def _snippet_token() -> re.Pattern[str]:
    # Snippets count a pair of those characters as a word (a run can be a whole line).
    # Built on first use, as documents.grams builds its classes.
    return re.compile(
        rf"(?P<cjk>(?:{unit_pattern().pattern}){{1,2}})"
        rf"|(?P<word>[^\W_{CJK_RANGES}](?:[^\W_{CJK_RANGES}]|[{combining_marks()}])*)"
    )


@dataclass(frozen=True, slots=True)
class Term:
    """One thing to look for: a word or a phrase, maybe a prefix, maybe excluded."""

    words: tuple[str, ...]
    prefix: bool = False
    excluded: bool = False


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """Terms to match: every group must match (one of its terms will do), none of
    the excluded terms may. ``notice`` tells the person what was not searched for."""

    groups: tuple[tuple[Term, ...], ...]
    excluded: tuple[Term, ...]
    notice: str = ""

    def __bool__(self) -> bool:
        return bool(self.groups or self.excluded)


class SearchTooBroad(Exception):
    """The search would take too long; the message tells the person what to do."""


TOO_BROAD = (
    "This search is too broad to answer quickly. Use longer words, more words, "
    "or a phrase in quotes."
)


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A matching document, its rank (higher is better) and a highlighted excerpt;
    ``in_name``: its file name or title matches."""

    document: Document
    rank: float
    snippet_html: SafeString
    in_name: bool = False


def _term(text: str, *, prefix: bool, excluded: bool) -> Term | None:
    words = tuple(w for w in word_pattern().findall(text) if len(w) <= MAX_WORD_CHARS)
    if not words:
        return None
    return Term(words=words, prefix=prefix, excluded=excluded)


def _left_out(reason: str, rest: str) -> str:
    rest = " ".join(rest.split())
    shown = rest if len(rest) <= 40 else rest[:40].rstrip() + "…"
    return f"{reason}; “{shown}” was left out." if shown else ""


def _gram_terms(t: Term) -> tuple[Term, ...]:
    """The terms, all needed, that find ``t`` in the grams; none for a term without
    those scripts. Consecutive words in them become one phrase of their bigrams (a
    phrase, so the words are found inside longer runs: "東京" in "東京都に"); words in
    other scripts stay words, looked for as before."""
    if not any(has_grams(w) for w in t.words):
        return ()
    terms: list[Term] = []
    chunks: list[tuple[list[str], bool]] = []
    for word in t.words:
        cjk = has_grams(word)
        if chunks and chunks[-1][1] == cjk:
            chunks[-1][0].append(word)
        else:
            chunks.append(([word], cjk))
    for i, (words, cjk) in enumerate(chunks):
        last = i == len(chunks) - 1
        if not cjk:
            terms.append(Term(words=tuple(words), prefix=t.prefix and last))
            continue
        # The grams are composed (NFC) whichever way the text or the word came.
        composed = (unicodedata.normalize("NFC", word) for word in words)
        parts = [part for word in composed for part in pieces(word)]
        grams: list[str] = []
        for j, (part, in_script) in enumerate(parts):
            # Only the last piece may run on in the text: "東京" is in "東京都".
            closed = j < len(parts) - 1
            grams += run_bigrams(part, closed=closed) if in_script else [part]
        one_character = parts[-1][1] and len(unit_pattern().findall(parts[-1][0])) == 1
        prefix = one_character or (t.prefix and last)
        terms.append(Term(words=tuple(grams), prefix=prefix))
    if [(g.words, g.prefix) for g in terms] == [(t.words, t.prefix)]:
        return ()  # a word of two characters is its own bigram
    return tuple(terms)


def parse_query(query: str) -> ParsedQuery:
    """Split a person's query into terms; anything that is not a word is ignored.
    ``NOT`` before a term excludes it, as ``-`` does; terms beyond the first
    ``MAX_TERMS`` are not searched for, and the ``notice`` says so.

    Raises ``SearchTooBroad`` for a prefix shorter than ``SEARCH_MIN_PREFIX_CHARS``:
    ``a*`` matches nearly every document and every word in it.
    """
    groups: list[list[Term]] = []
    excluded: list[Term] = []
    join_next = negate_next = False
    notice = _left_out(
        f"Only the first {MAX_QUERY_CHARS} characters were searched for",
        query[MAX_QUERY_CHARS:],
    )
    for match in _TOKEN.finditer(query[:MAX_QUERY_CHARS]):
        minus, phrase, star, bare = match.groups()
        if bare == "OR":
            join_next = bool(groups)
            continue
        if bare == "AND":
            continue
        if bare == "NOT":
            negate_next = True
            continue
        if bare is None:
            term = _term(phrase, prefix=bool(star), excluded=bool(minus) or negate_next)
        else:
            negate = bare.startswith("-") and len(bare) > 1
            term = _term(
                bare[1:] if negate else bare,
                prefix=bare.endswith("*"),
                excluded=negate or negate_next,
            )
        if term is None:
            continue
        if sum(map(len, groups)) + len(excluded) >= MAX_TERMS:
            notice = _left_out(
                f"Only the first {MAX_TERMS} words and phrases were searched for",
                query[match.start() :],
            )
            break
        # In a phrase the words before the prefix narrow it down; a character of
        # Chinese or Japanese is a word, found inside runs as its grams are.
        minimum = settings.SEARCH_MIN_PREFIX_CHARS
        if (
            term.prefix
            and len(term.words) == 1
            and len(term.words[0]) < minimum
            and not has_grams(term.words[0])
        ):
            raise SearchTooBroad(
                f"“{term.words[-1]}*” matches too much: give at least {minimum} "
                "letters before the *."
            )
        if term.excluded:
            excluded.append(term)
        elif join_next:
            groups[-1].append(term)
        else:
            groups.append([term])
        join_next = negate_next = False
    if not groups and not excluded and not notice:
        # Emoji, symbols, punctuation: not words, so nothing was looked for (the
        # page said "No results" and to check the spelling, as if none had them).
        notice = _left_out("Search looks for words of letters or digits", query)
    return ParsedQuery(tuple(tuple(g) for g in groups), tuple(excluded), notice)


def _searchable(word: str) -> str:
    """The word as PostgreSQL's index holds it: composed (NFC), a Latin letter without
    its accents ("café" → "cafe"), whichever way it was typed (a decomposed "é" too)."""
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFD", word)
    return unicodedata.normalize("NFC", _LATIN_ACCENTS.sub(r"\1", decomposed))


def _fts5_term(t: Term) -> str:
    # A word in those scripts: as the engine splits it (the whole run), or its grams.
    grams = _gram_terms(t)
    if not grams:
        return _fts5_phrase(t)
    return f"({_fts5_phrase(t)} OR (" + " AND ".join(map(_fts5_phrase, grams)) + "))"


def _fts5_phrase(t: Term) -> str:
    # FTS5 folds accents itself, not Unicode's forms: a word is looked for as typed,
    # composed (NFC, as text mostly is) and decomposed (NFD: Korean or Devanagari
    # stored that way, which PostgreSQL's index composes).
    words = " ".join(t.words)
    spellings = dict.fromkeys(
        [
            words,
            unicodedata.normalize("NFC", words),
            unicodedata.normalize("NFD", words),
        ]
    )
    star = "*" if t.prefix else ""
    phrases = [f'"{spelling}"{star}' for spelling in spellings]
    return phrases[0] if len(phrases) == 1 else "(" + " OR ".join(phrases) + ")"


def fts5_match(parsed: ParsedQuery) -> str:
    """An FTS5 MATCH expression in which every word is inside quotes we wrote; empty
    for a query of exclusions only (see ``fts5_any``)."""
    if not parsed.groups:
        return ""
    expression = " AND ".join(
        "(" + " OR ".join(map(_fts5_term, group)) + ")" for group in parsed.groups
    )
    for t in parsed.excluded:
        expression = f"({expression}) NOT {_fts5_term(t)}"
    return expression


def fts5_any(terms: tuple[Term, ...]) -> str:
    """An FTS5 MATCH expression for documents with any of ``terms``."""
    return " OR ".join(map(_fts5_term, terms))


def _quoted_lexeme(word: str) -> str:
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def _postgres_term(t: Term, params: list[str]) -> str:
    # As in _fts5_term: the word as the parser splits it, or its grams.
    grams = _gram_terms(t)
    if not grams:
        return _postgres_phrase(t, params)
    plain = _postgres_phrase(t, params)
    found = " && ".join(_postgres_phrase(g, params) for g in grams)
    return f"({plain} || ({found}))"


def _postgres_phrase(t: Term, params: list[str]) -> str:
    words = [_searchable(w) for w in t.words]
    if not t.prefix:
        params.append(" ".join(words))
        return "phraseto_tsquery('simple', %s)"
    params.append(" <-> ".join(map(_quoted_lexeme, words)) + ":*")
    return "to_tsquery('simple', %s)"


def postgres_tsquery(parsed: ParsedQuery) -> tuple[str, list[str]]:
    """SQL for a tsquery and its parameters. Words are split as the index splits them
    (the migration turns punctuation into spaces); phrases go through phraseto_tsquery,
    which has no syntax at all, and prefixes through to_tsquery with quoted lexemes."""
    params: list[str] = []
    parts = [
        "(" + " || ".join(_postgres_term(t, params) for t in group) + ")"
        for group in parsed.groups
    ]
    parts += [f"!!{_postgres_term(t, params)}" for t in parsed.excluded]
    return " && ".join(parts), params


def postgres_tsquery_any(terms: tuple[Term, ...]) -> tuple[str, list[str]]:
    """SQL for a tsquery matching any of ``terms``, and its parameters."""
    params: list[str] = []
    return " || ".join(_postgres_term(t, params) for t in terms), params


def highlight(snippet: str) -> SafeString:
    """Escape the snippet, then turn the markers into <mark> elements."""
    html = _MARKED.sub(r"<mark>\1</mark>", escape(snippet))
    html = html.replace(MARK_START, "").replace(MARK_END, "")
    return mark_safe(html)  # noqa: S308


def _fold(word: str) -> str:
    """Case and accents folded, as FTS5's unicode61 (remove_diacritics 2) does."""
    if word.isascii():
        return word.lower()  # most words, and ten times faster than normalising
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _needles(parsed: ParsedQuery) -> re.Pattern[str] | None:
    """The query's words in Chinese, Japanese, Korean or Thai, as found inside the
    text's longer runs ("東京" in "私は東京に"); None when it has none."""
    words = {
        unicodedata.normalize("NFC", w)
        for g in parsed.groups
        for t in g
        for w in t.words
        if has_grams(w)
    }
    if not words:
        return None
    longest_first = sorted(words, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, longest_first)), re.IGNORECASE)


def make_snippet(text: str, parsed: ParsedQuery) -> SafeString:
    """Words around the first match in ``text`` with every matching word marked; the
    beginning of the text when nothing matches in it (a file-name match, or a match
    beyond the window the caller read). Words in Chinese, Japanese, Korean or Thai
    are marked where they are inside a run, and two of their characters count as a
    word."""
    words = {_fold(w) for g in parsed.groups for t in g for w in t.words}
    prefixes = tuple(_fold(t.words[-1]) for g in parsed.groups for t in g if t.prefix)
    needles = _needles(parsed)
    first_needle = needles.search(text) if needles else None
    needle_at = first_needle.start() if first_needle else len(text)

    def matches(word: str | None) -> bool:
        if word is None:
            return False
        folded = _fold(word)
        return folded in words or (bool(prefixes) and folded.startswith(prefixes))

    recent: deque[int] = deque(maxlen=SNIPPET_WORDS_BEFORE + 1)
    start = 0
    for token in _snippet_token().finditer(text):
        recent.append(token.start())
        if token.end() > needle_at or matches(token["word"]):
            start = recent[0]
            break
    marked: list[tuple[int, int]] = []
    end = start
    for count, token in enumerate(_snippet_token().finditer(text, start)):
        if count >= SNIPPET_WORDS:
            break
        if matches(token["word"]):
            marked.append(token.span())
        end = token.end()
    if end == start:
        return mark_safe("")  # noqa: S308 - empty
    if needles:
        marked += [m.span() for m in needles.finditer(text, start, end)]
    pieces, done = [], start
    for first, last in sorted(marked):
        if first < done:  # inside the mark before ("100" of "100円")
            if last > done:
                pieces[-2] += text[done:last]
                done = last
            continue
        pieces += [text[done:first], MARK_START, text[first:last], MARK_END]
        done = last
    pieces.append(text[done:end])
    snippet = "".join(pieces).strip()
    prefix = "… " if start > 0 else ""
    suffix = " …" if end < len(text.rstrip()) else ""
    return highlight(prefix + snippet + suffix)


@contextmanager
def _time_bound() -> Iterator[None]:
    """Stop the database after ``SEARCH_TIMEOUT_SECONDS``; raise ``SearchTooBroad``."""
    seconds = settings.SEARCH_TIMEOUT_SECONDS
    if connection.vendor == "postgresql":
        with transaction.atomic():
            with connection.cursor() as cursor:
                # SET LOCAL: the timeout ends with this transaction.
                cursor.execute(
                    "SELECT set_config('statement_timeout', %s, true)",
                    [f"{max(1, round(seconds * 1000))}ms"],
                )
            try:
                yield
            except OperationalError as error:
                if getattr(error.__cause__, "sqlstate", None) == QUERY_CANCELED:
                    raise SearchTooBroad(TOO_BROAD) from None
                raise
        return
    connection.ensure_connection()
    raw = connection.connection
    deadline = time.monotonic() + seconds
    # A true answer makes SQLite abort the running statement ("interrupted").
    raw.set_progress_handler(lambda: time.monotonic() > deadline, PROGRESS_STEPS)
    try:
        yield
    except OperationalError as error:
        if "interrupted" in str(error):
            raise SearchTooBroad(TOO_BROAD) from None
        raise
    finally:
        raw.set_progress_handler(None, 0)


def _filters(
    owner_id: int | None, status: str, mime_type: str, column: str
) -> tuple[str, list]:
    sql, params = "", []
    for name, value in (
        ("owner_id", owner_id),
        ("status", status),
        ("mime_type", mime_type),
    ):
        if value:
            sql += f" AND {column}.{name} = %s"
            params.append(value)
    return sql, params


def _sqlite_rows(
    parsed: ParsedQuery, filters: tuple[str, list], limit: int, offset: int
) -> list:
    # bm25 over the text alone: it scores by the length of all columns together, so a
    # name weight would let documents without text (not yet processed) win. The name
    # is the file name and the owner's title, which FTS5 reads with the name's grams
    # (0012); the text's grams (0011) count as text.
    where, filter_params = filters
    sql = f"""
        SELECT d.id,
               documents_fts.rowid IN (
                   SELECT rowid FROM documents_fts WHERE documents_fts MATCH %s
               ) AS in_name,
               -bm25(documents_fts, 0.0, 0.0, 1.0, 1.0)
        FROM documents_fts JOIN documents_document d ON d.id = documents_fts.rowid
        WHERE documents_fts MATCH %s {where}
        ORDER BY in_name DESC, bm25(documents_fts, 0.0, 0.0, 1.0, 1.0), d.id DESC
        LIMIT %s OFFSET %s"""  # noqa: S608 - only our own constants are interpolated
    expression = fts5_match(parsed)
    params = [
        f"{{original_filename title}} : ({expression})",
        expression,
        *filter_params,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, limit, offset])
        return cursor.fetchall()


def _sqlite_rows_without(
    parsed: ParsedQuery, filters: tuple[str, list], limit: int, offset: int
) -> list:
    # FTS5 has no "NOT x" on its own: the documents whose rows do not match "x".
    where, filter_params = filters
    sql = f"""
        SELECT d.id, 0, 0.0
        FROM documents_document d
        WHERE d.id NOT IN (
            SELECT rowid FROM documents_fts WHERE documents_fts MATCH %s
        ) {where}
        ORDER BY d.id DESC
        LIMIT %s OFFSET %s"""  # noqa: S608 - only our own constants are interpolated
    with connection.cursor() as cursor:
        cursor.execute(sql, [fts5_any(parsed.excluded), *filter_params, limit, offset])
        return cursor.fetchall()


def _postgres_rows(
    parsed: ParsedQuery, filters: tuple[str, list], limit: int, offset: int
) -> list:
    tsquery, params = postgres_tsquery(parsed)
    where, filter_params = filters
    # Ranking reads each candidate's whole tsvector from TOAST; over 1 GB a word in
    # every document cannot be ranked in time. So a broad query ranks its newest
    # POSTGRES_MAX_RANKED matches (the index finds them without reading the vectors).
    # The weights {D,C,B,A} score the text (B) alone; normalisation 1 divides by
    # log(length), so long documents do not win by size.
    sql = f"""
        WITH q AS (SELECT {tsquery} AS query),
        candidates AS (
            SELECT d.id, s.search_vector
            FROM documents_search s
            JOIN documents_document d ON d.id = s.document_id, q
            WHERE s.search_vector @@ q.query {where}
            ORDER BY d.id DESC
            LIMIT %s
        )
        SELECT c.id,
               ts_filter(c.search_vector, '{{a}}') @@ q.query AS in_name,
               ts_rank('{{0, 0, 1, 0}}', c.search_vector, q.query, 1) AS score
        FROM candidates c, q
        ORDER BY in_name DESC, score DESC, c.id DESC
        LIMIT %s OFFSET %s"""  # noqa: S608 - SQL built from our own fragments
    with connection.cursor() as cursor:
        # The search table is narrow, its vectors kept aside (TOAST), so the planner
        # sees a scan of every row as cheap: it does not count reading each vector
        # (110 ms over 1,500 documents for one rare word, against 0.3 ms through the
        # GIN index). No such scan, then, until the search's transaction ends.
        cursor.execute("SELECT set_config('enable_seqscan', 'off', true)")
        cursor.execute(
            sql, [*params, *filter_params, POSTGRES_MAX_RANKED, limit, offset]
        )
        return cursor.fetchall()


def _postgres_rows_without(
    parsed: ParsedQuery, filters: tuple[str, list], limit: int, offset: int
) -> list:
    tsquery, params = postgres_tsquery_any(parsed.excluded)
    where, filter_params = filters
    # Newest first through the primary key, each checked against its own search row:
    # a page reads about a page of vectors, unless most documents have the words.
    sql = f"""
        SELECT d.id, false, 0.0
        FROM documents_document d
        WHERE NOT EXISTS (
            SELECT 1 FROM documents_search s
            WHERE s.document_id = d.id AND s.search_vector @@ ({tsquery})
        ) {where}
        ORDER BY d.id DESC
        LIMIT %s OFFSET %s"""  # noqa: S608 - SQL built from our own fragments
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, *filter_params, limit, offset])
        return cursor.fetchall()


def search_documents(
    user,
    query: str,
    limit: int = 20,
    offset: int = 0,
    *,
    status: str = "",
    mime_type: str = "",
) -> list[SearchHit]:
    """The user's documents (staff: everyone's) matching ``query``, best first;
    ``limit`` hits from ``offset``, optionally only of one status or type. A query
    of exclusions only (``-draft``) gives the documents without them, newest first.

    Raises ``SearchTooBroad`` when the query cannot be answered within the bounds.
    """
    parsed = parse_query(query)
    if not parsed or limit < 1 or not 0 <= offset <= MAX_OFFSET:
        return []
    owner_id = None if user.is_staff else user.pk
    filters = _filters(owner_id, status, mime_type, "d")
    postgres = connection.vendor == "postgresql"
    if parsed.groups:
        rows_of = _postgres_rows if postgres else _sqlite_rows
    else:
        rows_of = _postgres_rows_without if postgres else _sqlite_rows_without
    with _time_bound():
        rows = rows_of(parsed, filters, limit, offset)
        documents = (
            Document.objects.select_related("owner")
            .without_text()
            .annotate(text_start=Substr("text", 1, SNIPPET_WINDOW_CHARS))
        )
        by_id = documents.in_bulk([row[0] for row in rows])
    return [
        SearchHit(
            document=by_id[pk],
            rank=float(score) + (NAME_MATCH_BONUS if in_name else 0.0),
            snippet_html=make_snippet(by_id[pk].text_start or "", parsed),
            in_name=bool(in_name),
        )
        for pk, in_name, score in rows
        if pk in by_id
    ]
