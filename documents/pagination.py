"""Pages of the documents list (the site's and the API's) that stay fast deep into a
person's 50,000 documents (bench/people_scale.py), and the list's counts by status
that stay cheap over a staff member's whole library (bench/staff_scale.py)."""

from __future__ import annotations

import contextlib
import json
from collections import Counter

from django.contrib.humanize.templatetags.humanize import intcomma
from django.core.paginator import Page, Paginator
from django.db import connections
from django.db.models import Count, F, QuerySet
from django.db.models.expressions import BaseExpression, OrderBy
from django.db.models.functions import Coalesce

from jobqueue.admin_lists import ESTIMATE_ABOVE, EstimatePages, estimated_rows
from jobqueue.models import ACTIVE_STATUSES, QueueItem, Status

# A search by name reads its matches once, this many at most: their counts are exact
# up to here, and "10,000+" beyond (``StatusCounts``).
MATCHES_READ = 10_000


class Tally(int):
    """A count of the list's documents, as exact as it is known: ``about`` for the
    database's estimate, ``at_least`` for a lower bound (a search's first matches)."""

    about = False
    at_least = False

    def __new__(cls, n: int, *, about: bool = False, at_least: bool = False) -> Tally:
        tally = super().__new__(cls, n)
        tally.about = about
        tally.at_least = at_least
        return tally

    @property
    def exact(self) -> bool:
        return not (self.about or self.at_least)

    @property
    def shown(self) -> str:
        """The figure grouped by thousands ("about" and "+" are the template's)."""
        return intcomma(int(self))


class StatusCounts:
    """The list's documents by status (those of the other filters), and the rows of
    one status or of all, counted without reading the whole library:

    - a search by name (``searched``) reads the ids and statuses of its matches once,
      ``MATCHES_READ`` at most, and the page comes from those ids (``found``), sorted
      whole: PostgreSQL, misjudging how many rows a substring matches, otherwise
      walked the upload times' index under the page's LIMIT, filtering the rows one
      by one (2.5 s at a million, more where the matches are old); the matches
      themselves come from the names' trigram indexes (migration 0015). Of more matches
      than that, the staff's page is sorted from a scan of the matches, not by
      walking an index in the hope of meeting 25 of them soon (``ordering``);
    - a staff member's list over a large library (``ESTIMATE_ABOVE`` rows, by the
      statistics: PostgreSQL) counts the waiting and running documents exactly,
      through the queue's index of its active items (a document's status is its
      latest job's), and the finished ones by the planner's estimate, "about N";
    - otherwise (a person's list, a small library, SQLite) every status is counted
      exactly, in one statement.
    """

    def __init__(self, documents: QuerySet, *, scope: QuerySet, searched: bool) -> None:
        self.documents = documents
        # The documents the person may list (``for_user``), of which ``documents``
        # are those the filters keep; all of them for staff.
        self.scope = scope
        whole_library = not scope.query.where
        self.whole_library = whole_library
        self.matched: list[tuple[int, str]] | None = None
        self.large = False
        if searched:
            self.counts = self._read_matches()
        elif whole_library and self._large():
            self.counts = self._estimated()
        else:
            self.counts = self._exact()

    @property
    def total(self) -> Tally:
        n = sum(self.counts.values())
        if self.matched is not None and len(self.matched) > MATCHES_READ:
            return Tally(MATCHES_READ, at_least=True)
        return Tally(n, about=any(c.about for c in self.counts.values()))

    @property
    def found(self) -> bool:
        """Whether the rows are the ids of a search's every match (a few thousand at
        most): the page sorts them all, without a LIMIT that an index could serve."""
        return self.matched is not None and len(self.matched) <= MATCHES_READ

    def ordering(self, keys: tuple) -> tuple:
        """The list's sort keys (``views.SORTS``), for the rows' statement. Past the
        matches it read, a search of the whole library on PostgreSQL sorts the same
        keys through ``Coalesce(key, key)``, which no index serves: the planner then
        scans the matches (a bounded read) instead of walking an index under the
        LIMIT, which reads the whole library where the matches are few or old."""
        if self.found or self.matched is None or not self.whole_library:
            return keys
        if connections[self.documents.db].vendor != "postgresql":
            return keys
        return tuple(_unindexed(key) for key in keys)

    def rows(self, status: str | None) -> QuerySet:
        """The documents of ``status`` (of any, for None), to order and page."""
        documents = self.documents
        if self.found:
            # Found already: the paginator narrows these to ``found_ids``, and
            # compares no name again.
            return self.scope
        if status is None:
            return documents
        documents = documents.filter(status=status)
        if status in ACTIVE_STATUSES and (self.large or self.matched is not None):
            # Off the queue's index of its active items (a few), rather than a walk of
            # the upload times in search of them.
            documents = documents.filter(pk__in=_active_document_ids())
        return documents

    def found_ids(self, status: str | None) -> list[int] | None:
        """The ids of the search's matches of ``status`` (of any, for None), where
        it read them all (``found``); None otherwise."""
        if not self.found:
            return None
        return [pk for pk, s in self.matched if status in (None, s)]

    def _exact(self) -> dict[str, Tally]:
        rows = self.documents.order_by().values_list("status").annotate(n=Count("id"))
        return {status: Tally(n) for status, n in rows}

    def _read_matches(self) -> dict[str, Tally]:
        self.matched = list(
            self.documents.order_by().values_list("pk", "status")[: MATCHES_READ + 1]
        )
        counts = Counter(status for _, status in self.matched)
        bounded = len(self.matched) > MATCHES_READ
        found = {status: Tally(n, at_least=bounded) for status, n in counts.items()}
        if bounded:
            # Every status may be among the matches not read.
            for status in Status.values:
                found.setdefault(status, Tally(0, at_least=True))
        return found

    def _large(self) -> bool:
        estimate = estimated_rows(self.scope)
        if estimate is None or estimate < ESTIMATE_ABOVE:
            return False
        if (
            self.documents.query.where
            and _planned_rows(self.documents) < ESTIMATE_ABOVE
        ):
            return False  # a few of many: counted exactly (a type, a day)
        self.large = True
        return True

    def _estimated(self) -> dict[str, Tally]:
        active = (
            self.documents.filter(
                status__in=ACTIVE_STATUSES, pk__in=_active_document_ids()
            )
            .order_by()
            .values_list("status")
            .annotate(n=Count("id"))
        )
        counts = {status: Tally(n) for status, n in active}
        for status in Status.values:
            if status not in ACTIVE_STATUSES:
                planned = _planned_rows(self.documents.filter(status=status))
                counts[status] = Tally(planned, about=True)
        return counts


def _unindexed(key: str | BaseExpression) -> OrderBy:
    """A sort key as ``Coalesce(key, key)``: the same order, of an expression that no
    index holds."""
    if isinstance(key, str):
        name = key.removeprefix("-")
        return OrderBy(Coalesce(F(name), F(name)), descending=key.startswith("-"))
    if isinstance(key, OrderBy):
        return OrderBy(
            Coalesce(key.expression, key.expression), descending=key.descending
        )
    return OrderBy(Coalesce(key, key))


def _active_document_ids() -> QuerySet:
    """The documents of the queue's active items, read off its partial index."""
    return QueueItem.objects.active().values("document_id")


def _planned_rows(queryset: QuerySet) -> int:
    """How many rows PostgreSQL's planner expects the queryset to hold (its EXPLAIN,
    not a count)."""
    found = json.loads(queryset.order_by().values("pk").explain(format="json"))
    return int(found[0]["Plan"]["Plan Rows"])


class IdsFirstPaginator(EstimatePages, Paginator):
    """A paginator that finds a page's ids first, then reads those rows. The ids come
    from the index that orders the list, so a deep page's OFFSET skips index entries
    instead of whole rows (and their owners, joined for the page). The first page
    skips nothing: it is read at once. A count that may be short of the rows
    (``estimated``: an estimate, a lower bound) does not cut the last page at it."""

    def page(self, number: object) -> Page:
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        top = bottom + self.per_page
        if top + self.orphans >= self.count and not self.estimated:
            top = self.count
        if number == 1:
            return self._get_page(self.object_list[bottom:top], number, self)
        ids = self.object_list.prefetch_related(None).values_list("pk", flat=True)
        rows = self.object_list.filter(pk__in=list(ids[bottom:top]))
        return self._get_page(rows, number, self)


class CountedPaginator(IdsFirstPaginator):
    """Pages of a list whose size is already known (the status counts add up to
    it): counting the rows again would read them all a second time. A count that is
    an estimate or a lower bound (a ``Tally`` not exact) may be short: a page past
    its last is empty, not an error (``EstimatePages``)."""

    def __init__(
        self,
        object_list: QuerySet,
        per_page: int,
        count: int,
        *,
        found: list[int] | None = None,
    ) -> None:
        super().__init__(object_list, per_page)
        self.count = count
        self.estimated = not getattr(count, "exact", True)
        self.found = found

    def get_page(self, number: object) -> Page:
        """Django's, but a number under 1 (``?page=0``, a link counting from 0) is
        the first page: Django answered the last, far from what was asked."""
        with contextlib.suppress(TypeError, ValueError):
            if int(str(number)) < 1:
                number = 1
        return super().get_page(number)

    def page(self, number: object) -> Page:
        if self.found is None:
            return super().page(number)
        # The list is these ids (a search's matches, ``StatusCounts.found_ids``):
        # sorted whole, then the page's rows read. Under a LIMIT, PostgreSQL would
        # walk the sort's index looking for them.
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        ids = self.object_list.filter(pk__in=self.found).prefetch_related(None)
        chosen = list(ids.values_list("pk", flat=True))[bottom : bottom + self.per_page]
        return self._get_page(self.object_list.filter(pk__in=chosen), number, self)
