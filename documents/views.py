"""Pages for people: upload, their documents, one document, search, reprocess, download.
Editing, deleting, bulk actions and page images are in ``documents.manage_views``."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from functools import wraps
from pathlib import PurePosixPath

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db import connections
from django.db.models import Q, QuerySet
from django.db.models.functions import Length, Substr
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    JsonResponse,
    QueryDict,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.http import content_disposition_header
from django.utils.translation import ngettext
from django.views.decorators.http import (
    require_http_methods,
    require_POST,
    require_safe,
)

from documents.access import (
    LimitReached,
    UploadRateThrottle,
    can_delete,
    can_reprocess,
    check_active_jobs,
)
from documents.extraction import progress_note
from documents.extractors.formats import (
    PDF,
    accept_attribute,
    accepted_labels,
    type_choices,
)
from documents.forms import DocumentFilterForm, UploadForm, asked_type
from documents.models import Document, Tag, shown_name
from documents.pagination import CountedPaginator, StatusCounts, Tally
from documents.search import SearchTooBroad, parse_query, search_documents
from documents.services import (
    DuplicateUpload,
    UploadRefused,
    document_create,
    document_reprocess,
)
from documents.templatetags.documents_tags import (
    error_help,
    failure_label,
    format_label,
    is_active,
    status_help,
)
from documents.uploads import download_name
from jobqueue.models import (
    Operation,
    QueueControl,
    QueueItem,
    Status,
)

PAGE_SIZE = 25
SEARCH_PAGE_SIZE = 20
# Deep pages cost the database an ever larger OFFSET; nobody reads page 50.
SEARCH_MAX_PAGE = 50
MAX_STATUS_IDS = 100
# A page can hold this much text comfortably; the rest is in the download and the API.
# Only this much is read from the database: the text can be megabytes.
TEXT_PREVIEW_CHARS = 100_000
SORTS: dict[str, tuple] = {
    "-date": ("-created_at", "-id"),
    "date": ("created_at", "id"),
    # By the name the list shows (a title, else the file name), in any case.
    "name": (shown_name(), "id"),
    "-name": (shown_name().desc(), "-id"),
    "size": ("size", "id"),
    "-size": ("-size", "-id"),
}
LIST_FIELDS = (
    "original_filename",
    "thumbnail",
    "title",
    "status",
    "size",
    "mime_type",
    "created_at",
    "owner",
    "error_type",
    "error_message",
)


def login_required_back_to(page: str) -> Callable:
    """``login_required`` for an address only forms post to: the login sends the
    person back to the form's page (the URL name ``page``, given the view's
    arguments), not to this address, which would answer the GET with a 405."""

    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(reverse(page, args=args, kwargs=kwargs))
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


def _thumbnails_pending(ids: list[int]) -> set[int]:
    """Which of these documents have a thumbnail still to be drawn."""
    return set(
        QueueItem.objects.active()
        .filter(document_id__in=ids, operation=Operation.THUMBNAIL)
        .values_list("document_id", flat=True)
    )


def _status_json(document: Document, pending: set[int]) -> dict:
    return {
        "id": document.pk,
        "status": document.status,
        "status_label": document.get_status_display(),
        "status_help": status_help(document.status),
        "progress": progress_note(document),
        "active": is_active(document.status),
        "error_type": document.error_type or None,
        "error_message": document.error_message or None,
        "error_help": error_help(document) or None,
        "error_label": failure_label(document) or None,
        "page_count": document.page_count,
        "thumbnail_url": reverse("documents:thumbnail", args=[document.pk])
        if document.thumbnail
        else None,
        "thumbnail_pending": document.pk in pending,
    }


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def upload(request: HttpRequest) -> HttpResponse:
    """One or many files; each is kept or refused with its own reason, never half."""
    if request.method != "POST":
        return upload_page(request, UploadForm())
    throttle = UploadRateThrottle()
    if not throttle.allow_request(request, None):
        seconds = math.ceil(throttle.wait() or 1)
        return refused_page(
            request,
            f"You have uploaded a lot in a short time. Try again in {seconds} s.",
            headers={"Retry-After": str(seconds)},
        )
    # Bound even when empty: a POST without files must get "required", not a form.
    form = UploadForm(request.POST, request.FILES)
    if not form.is_valid():
        return upload_page(request, form, status=400)
    try:
        check_active_jobs(request.user, adding=len(form.cleaned_data["file"]))
    except LimitReached as error:
        return refused_page(request, str(error))
    created, refused = [], []
    for checked in form.cleaned_data["file"]:
        try:
            created.append(
                document_create(
                    owner=request.user,
                    upload=checked,
                    allow_duplicate=form.cleaned_data["allow_duplicates"],
                    limit_active_jobs=True,
                )
            )
        except UploadRefused as refusal:
            refused.append(refusal)
    if not created:
        for _name, reason in form.rejected:
            form.add_error("file", reason)
        for refusal in refused:
            form.add_error("file", _refusal_message(refusal))
        status = max(refusal.http_status for refusal in refused)
        return upload_page(request, form, status=status)
    # One line for the whole batch: twenty "was uploaded" lines bury the refusals.
    messages.success(
        request,
        f"“{created[0]}” was uploaded and is pending."
        if len(created) == 1
        else f"{len(created)} files were uploaded and are pending.",
    )
    reasons = [reason for _name, reason in form.rejected]
    reasons += [_refusal_message(refusal) for refusal in refused]
    if reasons:
        messages.error(request, _refusals_message(reasons))
    if len(created) == 1 and not reasons:
        return redirect(created[0])
    return redirect("documents:list")


def _refusal_message(refusal: UploadRefused) -> str:
    if isinstance(refusal, DuplicateUpload):
        return format_html(
            '{} <a href="{}">Open it</a>, or tick “{}” to keep it again.',
            refusal,
            refusal.existing.get_absolute_url(),
            UploadForm.base_fields["allow_duplicates"].label,
        )
    return str(refusal)


def _refusals_message(reasons: list[str]) -> str:
    """One message naming every refused file with its reason: one message a file
    would bury the others, and the page shows only the first few messages."""
    count = len(reasons)
    return format_html(
        "<div><p>{}</p><ul>{}</ul></div>",
        ngettext(
            "%(n)d file was not uploaded:", "%(n)d files were not uploaded:", count
        )
        % {"n": count},
        format_html_join("", "<li>{}</li>", ((reason,) for reason in reasons)),
    )


def upload_page(
    request: HttpRequest,
    form: UploadForm | None = None,
    *,
    errors: list[str] | None = None,
    status: int = 200,
) -> HttpResponse:
    """The upload form, with the reasons an upload was refused if it was."""
    form = form or UploadForm()
    if errors is None:
        errors = [*form.non_field_errors(), *form["file"].errors]
    context = {
        "form": form,
        "errors": errors,
        "accepted_types": accepted_labels(),
        "accept": accept_attribute(),
        "max_upload_mb": settings.MAX_UPLOAD_MB,
        "max_upload_files": settings.MAX_UPLOAD_FILES,
    }
    return render(request, "documents/upload.html", context, status=status)


def refused_page(
    request: HttpRequest, message: str, headers: dict[str, str] | None = None
) -> HttpResponse:
    """429: over a per-user limit, said in plain words."""
    response = render(
        request, "documents/refused.html", {"message": message}, status=429
    )
    for name, value in (headers or {}).items():
        response[name] = value
    return response


@login_required
@require_safe
def document_list(request: HttpRequest) -> HttpResponse:
    """The person's documents, newest first; filter, sort, paginate, select."""
    sort = request.GET.get("sort", "")
    sort = sort if sort in SORTS else "-date"
    mine = Document.objects.for_user(request.user)
    form = DocumentFilterForm(_name_cut(request.GET), statuses=Status.choices)
    filters = form.filters()
    documents = _filtered(mine, {k: v for k, v in filters.items() if k != "status"})
    # Counts per status follow the other filters, so each says what a click shows.
    tally = StatusCounts(documents, scope=mine, searched="q" in filters)
    counts = tally.counts
    matching = tally.total
    documents = tally.rows(filters.get("status"))
    if "status" in filters:
        matching = counts.get(filters["status"], Tally(0))
    documents = (
        documents.select_related("owner")
        .prefetch_related("tags")
        .only(*LIST_FIELDS, "owner__username")
    )
    paginator = CountedPaginator(
        documents.order_by(*tally.ordering(SORTS[sort])),
        PAGE_SIZE,
        matching,
        found=tally.found_ids(filters.get("status")),
    )
    page = paginator.get_page(request.GET.get("page"))
    any_active = any(is_active(d.status) for d in page)
    context = {
        "page": page,
        "filters": filters,
        "name_max_length": DocumentFilterForm.base_fields["q"].max_length,
        "status": filters.get("status", ""),
        "sort": sort,
        "statuses": [
            (s, label, counts.get(s, Tally(0))) for s, label in Status.choices
        ],
        "total": tally.total,
        "types": _type_choices(request.user, filters.get("type", "")),
        "tags": _tag_choices(request.user, filters.get("tag", "")),
        "any_active": any_active,
        "self_refresh": _self_refresh(any_active),
        "thumbnails_pending": _thumbnails_pending([d.pk for d in page]),
    }
    return render(request, "documents/list.html", context)


def _tag_choices(user, asked: str) -> list[str]:
    """The tag menu: the person's own tags, and the tag the list is filtered by if it
    is not one of them (staff following another person's tag link): without it, the
    menu showed "Any" and the next "Filter" dropped the tag."""
    names = list(Tag.objects.filter(owner=user).values_list("name", flat=True))
    if asked and asked.casefold() not in {name.casefold() for name in names}:
        names.append(asked)
    return names


def _type_choices(user, asked: str) -> list[tuple[str, str]]:
    """The type menu of the list and of the search, (MIME type, label) by label: the
    types of the documents the person may list (staff: the library's), and the format
    asked for if none has it, so that the menu shows it chosen and the next "Filter"
    or "Search" keeps it. The search's listed all 28 formats, most of which the
    person had none of; it takes these types, a format no longer read included."""
    types = set(_types(Document.objects.for_user(user), whole_library=user.is_staff))
    if asked in dict(type_choices()):
        types.add(asked)
    return sorted(((t, format_label(t)) for t in types), key=lambda t: t[1].lower())


# The library's types, one lookup of the index on the type (doc_type) each: a loose
# scan, where a DISTINCT reads every entry of the index (70-100 ms at a million).
LIBRARY_TYPES_SQL = """
WITH RECURSIVE types(t) AS (
    SELECT MIN(mime_type) FROM documents_document
    UNION ALL
    SELECT (SELECT MIN(mime_type) FROM documents_document WHERE mime_type > types.t)
    FROM types WHERE types.t IS NOT NULL
)
SELECT t FROM types WHERE t IS NOT NULL
"""


def _types(documents: QuerySet, *, whole_library: bool) -> list[str]:
    """The types of the list's documents, for its menu: of a person's, those of the
    owner's entries of doc_owner_type; of the whole library (staff), a loose scan."""
    if not whole_library:
        return list(documents.order_by().values_list("mime_type", flat=True).distinct())
    with connections[documents.db].cursor() as cursor:
        cursor.execute(LIBRARY_TYPES_SQL)
        return [t for (t,) in cursor.fetchall()]


def _name_cut(query: QueryDict) -> QueryDict:
    """The list's filters as asked, a name or title longer than its field cut to
    it: the form drops a value that does not validate, and the list then showed
    every document, as if no name had been asked for."""
    limit = DocumentFilterForm.base_fields["q"].max_length
    if len(query.get("q", "")) <= limit:
        return query
    query = query.copy()
    query["q"] = query["q"][:limit]
    return query


def _filtered(documents: QuerySet, filters: dict) -> QuerySet:
    """Documents matching the list's filters (all but status)."""
    if "q" in filters:
        documents = documents.filter(
            Q(title__icontains=filters["q"])
            | Q(original_filename__icontains=filters["q"])
        )
    if "type" in filters:
        documents = documents.filter(mime_type=filters["type"])
    if "tag" in filters:
        documents = documents.filter(tags__name__iexact=filters["tag"])
    # Whole days in the site's time zone, both ends included, as a range of times:
    # the index on the upload time serves it (a date cast of each row would not).
    if "since" in filters and (start := _day_start(filters["since"])):
        documents = documents.filter(created_at__gte=start)
    until = filters.get("until", date.max)
    if until < date.max and (end := _day_start(until + timedelta(days=1))):
        documents = documents.filter(created_at__lt=end)
    return documents


def _day_start(day: date) -> datetime | None:
    """The first moment of ``day`` in the site's time zone; None for a day so early
    that it starts before the year 1 in UTC (no document is older)."""
    start = timezone.make_aware(datetime.combine(day, time.min))
    try:
        start.astimezone(UTC)
    except OverflowError:
        return None
    return start


@login_required
@require_safe
def document_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """Metadata, live status, what went wrong in plain words, and the text."""
    documents = Document.objects.for_user(request.user).without_text()
    documents = documents.annotate(
        text_start=Substr("text", 1, TEXT_PREVIEW_CHARS), text_length=Length("text")
    )
    document = get_object_or_404(documents, pk=pk)
    context = {
        "document": document,
        "tags": document.tags.all(),
        "can_edit": document.owner_id == request.user.pk,
        "can_delete": can_delete(request.user, document),
        **_viewer(request, document),
        "active": is_active(document.status),
        "self_refresh": _self_refresh(is_active(document.status)),
        "can_reprocess": can_reprocess(request.user, document),
        "text": document.text_start,
        "text_truncated": document.text_length > TEXT_PREVIEW_CHARS,
        "progress": progress_note(document),
    }
    return render(request, "documents/detail.html", context)


def _self_refresh(active: bool) -> bool:
    """Whether a page without JavaScript reloads itself to follow its documents: not
    while processing is paused, when nothing moves and a reload only throws away
    what was typed or ticked on the page, for as long as the pause lasts."""
    return active and not QueueControl.is_paused()


@login_required
@require_safe
def download_text(request: HttpRequest, pk: int) -> HttpResponse:
    """All of the extracted text, as a UTF-8 .txt download."""
    document = get_object_or_404(Document.objects.for_user(request.user), pk=pk)
    name = PurePosixPath(document.original_filename).stem or "document"
    response = HttpResponse(document.text, content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(
        as_attachment=True, filename=f"{name}.txt"
    )
    return response


def _viewer(request: HttpRequest, document: Document) -> dict:
    """The page shown in the detail page's viewer (``?page=N``), for the owner's PDFs."""
    if (
        document.owner_id != request.user.pk
        or document.mime_type != PDF.mime_type
        or not document.page_count
    ):
        return {}
    return {"viewer_page": _asked_page(request, document.page_count)}


def _asked_page(request: HttpRequest, last: int) -> int:
    """``?page=N`` from 1 to ``last``, as the list's pages: a number past the end
    (however long) is the last page, anything but a number the first."""
    raw = request.GET.get("page", "1")
    if not (raw.isascii() and raw.isdigit()):
        return 1
    return max(1, min(int(raw) if len(raw) < 7 else last, last))


@login_required
@require_safe
def document_status(request: HttpRequest, pk: int) -> JsonResponse:
    """The document's queue state, for pages that poll."""
    document = get_object_or_404(
        Document.objects.for_user(request.user).without_text(), pk=pk
    )
    return JsonResponse(_status_json(document, _thumbnails_pending([document.pk])))


@login_required
@require_safe
def document_statuses(request: HttpRequest) -> JsonResponse:
    """The state of several documents at once (``?id=1&id=2``), for the list page."""
    ids = [
        int(i)
        for i in request.GET.getlist("id")[:MAX_STATUS_IDS]
        if i.isascii() and i.isdigit() and len(i) < 19
    ]
    documents = Document.objects.for_user(request.user).filter(pk__in=ids)
    pending = _thumbnails_pending(ids)
    return JsonResponse(
        {"documents": [_status_json(d, pending) for d in documents.without_text()]}
    )


@login_required
@require_safe
def search(request: HttpRequest) -> HttpResponse:
    """Ranked full-text search over the person's documents (staff: everyone's)."""
    query = request.GET.get("q", "").strip()
    status = request.GET.get("status", "")
    status = status if status in Status.values else ""
    mime_type = asked_type(request.GET.get("type", ""))
    types = _type_choices(request.user, mime_type)
    mime_type = mime_type if mime_type in dict(types) else ""
    page = _asked_page(request, SEARCH_MAX_PAGE)
    context = {
        "query": query,
        "status": status,
        "type": mime_type,
        "statuses": Status.choices,
        "types": types,
        "page": page,
        "first": (page - 1) * SEARCH_PAGE_SIZE + 1,
    }
    try:
        hits = search_documents(
            request.user,
            query,
            limit=SEARCH_PAGE_SIZE + 1,
            offset=(page - 1) * SEARCH_PAGE_SIZE,
            status=status,
            mime_type=mime_type,
        )
    except SearchTooBroad as error:
        context["too_broad"] = str(error)
        return render(request, "documents/search.html", context, status=400)
    context.update(
        hits=hits[:SEARCH_PAGE_SIZE],
        has_next=len(hits) > SEARCH_PAGE_SIZE and page < SEARCH_MAX_PAGE,
        last=(page - 1) * SEARCH_PAGE_SIZE + len(hits[:SEARCH_PAGE_SIZE]),
        notice=parse_query(query).notice,
    )
    return render(request, "documents/search.html", context)


@login_required_back_to("documents:detail")
@require_POST
def reprocess(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue the document again and come back to its page."""
    document = get_object_or_404(
        Document.objects.for_user(request.user).without_text(), pk=pk
    )
    if not can_reprocess(request.user, document):
        raise PermissionDenied("Only the owner or a queue operator may reprocess it.")
    try:
        queued = document_reprocess(document=document, asked_by=request.user)
    except LimitReached as error:
        return refused_page(request, str(error))
    except Document.DoesNotExist:  # deleted meanwhile (another tab, a script)
        raise Http404 from None
    if queued is None:
        messages.info(
            request,
            f"“{document}” is already queued: it is waiting to be processed or "
            "being processed. It was not queued again.",
        )
    else:
        messages.success(request, f"“{document}” was queued for reprocessing.")
    return redirect(document)


@login_required
@require_safe
def download(request: HttpRequest, pk: int) -> FileResponse:
    """The original file, for its owner and staff only (media is never public)."""
    document = get_object_or_404(
        Document.objects.for_user(request.user).without_text(), pk=pk
    )
    try:
        stream = document.file.open("rb")
    except FileNotFoundError:
        raise Http404("The stored file is missing.") from None
    response = FileResponse(
        stream,
        as_attachment=True,
        filename=download_name(document.original_filename, document.mime_type),
        content_type=document.mime_type,
    )
    # An uploaded HTML or SVG file opened anyway runs nothing in the site's origin.
    response["Content-Security-Policy"] = "sandbox; default-src 'none'"
    return response
