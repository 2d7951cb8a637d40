"""Pages of the documents list (the site's and the API's) that stay fast deep into a
person's 50,000 documents (bench/people_scale.py)."""

from __future__ import annotations

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet


class IdsFirstPaginator(Paginator):
    """A paginator that finds a page's ids first, then reads those rows. The ids come
    from the index that orders the list, so a deep page's OFFSET skips index entries
    instead of whole rows (and their owners, joined for the page). The first page
    skips nothing: it is read at once."""

    def page(self, number: object) -> Page:
        number = self.validate_number(number)
        if number == 1:
            return super().page(number)
        bottom = (number - 1) * self.per_page
        top = bottom + self.per_page
        if top + self.orphans >= self.count:
            top = self.count
        ids = self.object_list.prefetch_related(None).values_list("pk", flat=True)
        rows = self.object_list.filter(pk__in=list(ids[bottom:top]))
        return self._get_page(rows, number, self)


class CountedPaginator(IdsFirstPaginator):
    """Pages of a list whose size is already known (the status counts add up to
    it): counting the rows again would read them all a second time."""

    def __init__(self, object_list: QuerySet, per_page: int, count: int) -> None:
        super().__init__(object_list, per_page)
        self.count = count
