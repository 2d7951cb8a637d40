"""JSON API for scripts: list, upload, status, reprocess, delete.

Session or token auth (``Authorization: Token <key>`` or ``Bearer <key>``); errors in
the shape of documents/api_errors.py; the schema at /api/schema/ comes from here.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from django.core.paginator import EmptyPage, InvalidPage
from django.db.models import prefetch_related_objects
from django.http import Http404, HttpResponseBase
from django.urls import reverse
from django.utils.cache import get_conditional_response, patch_cache_control
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import (
    APIException,
    NotAcceptable,
    NotFound,
    ParseError,
    PermissionDenied,
    UnsupportedMediaType,
)
from rest_framework.exceptions import ValidationError as APIValidationError
from rest_framework.metadata import SimpleMetadata
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.pagination import PageNumberPagination
from rest_framework.parsers import (
    FormParser,
    JSONParser,
    MultiPartParser,
    get_encoding,
)
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils import json as drf_json
from rest_framework.utils.urls import replace_query_param
from rest_framework.views import APIView

from documents import views
from documents.access import (
    LimitReached,
    UploadRateThrottle,
    UserThrottle,
    can_delete,
    can_reprocess,
    can_set_priority,
    check_active_jobs,
)
from documents.api_errors import not_multipart, or_list, shown
from documents.extractors.formats import READABLE, by_name
from documents.forms import DocumentDetailsForm
from documents.models import Document
from documents.pagination import IdsFirstPaginator
from documents.search import (
    MAX_OFFSET,
    MAX_QUERY_CHARS,
    SearchTooBroad,
    parse_query,
    search_documents,
)
from documents.serializers import (
    DetailsSerializer,
    DocumentDetailSerializer,
    DocumentSerializer,
    PrioritySerializer,
    UploadSerializer,
)
from documents.services import (
    DuplicateUpload,
    UploadRefused,
    document_create,
    document_delete,
    document_reprocess,
    document_update_details,
)
from documents.uploads import FILE_AS_TEXT
from jobqueue.models import Status

# When a caller over USER_MAX_ACTIVE_JOBS may try again: by then some will have run.
ACTIVE_JOBS_RETRY_SECONDS = 60
# When an upload the database refused (503: a lock, a deadlock, a restart) may be
# sent again; HTTP clients' retries (urllib3's Retry) wait for Retry-After on a 503.
NOT_STORED_RETRY_SECONDS = 5
# JSON or a urlencoded form cannot carry a file: say how to send one.
UPLOAD_AS_MULTIPART = (
    "Send the upload as multipart/form-data, the file in the field “file” "
    "(curl -F file=@report.pdf)."
)


class TooManyActiveJobs(APIException):
    """429: the user already has ``USER_MAX_ACTIVE_JOBS`` jobs waiting or running."""

    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_code = "too_many_active_jobs"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        # DRF sends Retry-After for a Throttled; a job takes about this long.
        self.wait = ACTIVE_JOBS_RETRY_SECONDS


class AlreadyQueued(APIException):
    """409: an extraction of the document (its first, or a reprocess) is running."""

    status_code = status.HTTP_409_CONFLICT
    default_code = "already_queued"


class PreconditionFailed(APIException):
    """412: an ``If-Match`` that names no version the document has now (or, on a
    change, an ``If-None-Match`` that names the one it has)."""

    status_code = status.HTTP_412_PRECONDITION_FAILED
    default_code = "precondition_failed"
    default_detail = (
        "The document's version does not meet the request's If-Match (or "
        "If-None-Match): nothing was changed."
    )


class KnownFormats(DefaultContentNegotiation):
    """A ``?format=`` the view has no renderer for is 406, not DRF's 404 (as if
    nothing were there): for the documents' views anything but json, for the
    schema anything but yaml and json."""

    def filter_renderers(self, renderers: list, format: str) -> list:
        try:
            return super().filter_renderers(renderers, format)
        except Http404:
            formats = list(dict.fromkeys(renderer.format for renderer in renderers))
            names = or_list([name.upper() for name in formats])
            sends = or_list([f"format={name}" for name in formats])
            raise NotAcceptable(
                f"There is no “{shown(format)}” form of this: it is {names} "
                f"(leave out ?format=, or send {sends})."
            ) from None


class RequestMetadata(SimpleMetadata):
    """``OPTIONS`` says what each method's body takes (the view's
    ``request_serializers``): DRF's describes the serializer a view answers with, so
    the upload's listed only read-only fields, and no ``file``; PATCH, not at all."""

    def determine_actions(self, request: Request, view) -> dict:
        actions = super().determine_actions(request, view)
        bodies = getattr(view, "request_serializers", {})
        for method, serializer_class in bodies.items():
            if method in view.allowed_methods:
                actions[method] = self.get_serializer_info(serializer_class())
        return actions


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser, but a body nested past Python's recursion limit is a 400:
    DRF catches only ValueError, and ``[[[[…`` (100,000 brackets in a few hundred
    KiB) raised RecursionError out of it, a server error. A name given twice in one
    object is a 400 naming it (_once_each)."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = get_encoding(parser_context or {})
        if codecs.lookup(encoding).name == "utf-8":
            # A UTF-8 byte order mark is skipped (RFC 8259 allows it): Windows
            # PowerShell's "UTF8" files begin with one, and json refused it.
            encoding = "utf-8-sig"
        try:
            return json.load(
                codecs.getreader(encoding)(stream),
                object_pairs_hook=_once_each,
                parse_constant=drf_json.strict_constant if self.strict else None,
                parse_float=_finite,
            )
        except RecursionError:
            raise ParseError(
                "The body nests too deep to be a request: send a JSON object of "
                "its fields, with Content-Type: application/json."
            ) from None
        except ValueError as error:
            # DRF's "JSON parse error - Expecting value: line 1 column 1 (char 0)".
            raise ParseError(_not_json(error)) from None


def _finite(literal: str) -> float:
    """A JSON number, refused (ValueError) when too large for a float: json read
    ``1e999`` as infinity, refused when sent as ``Infinity``, and a title sent as
    that number was kept as "inf"."""
    number = float(literal)
    if math.isinf(number):
        raise ValueError(f"the number {literal[:20]} is too large")
    return number


def _once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refused when it gives a name twice: json keeps the last of
    ``{"title": "a", "title": "b"}`` unsaid, as a form's repeated field was."""
    _refuse_repeats(Counter(name for name, _ in pairs), _sent_more_than_once)
    return dict(pairs)


class ReadableMultiPartParser(MultiPartParser):
    """DRF's multipart parser, its "Multipart form parse error - Invalid boundary in
    multipart: None" said for people (api_errors.not_multipart)."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except ParseError as error:
            raise ParseError(not_multipart(error.__context__)) from None


def _not_json(cause: BaseException | None) -> str:
    """What was wrong with a JSON body, and what to send instead."""
    if isinstance(cause, json.JSONDecodeError):
        reason = (
            f"{cause.msg[:1].lower()}{cause.msg[1:]} at line {cause.lineno}, "
            f"column {cause.colno}"
        )
    elif isinstance(cause, UnicodeDecodeError):
        reason = "it is not UTF-8 text"
    else:
        reason = str(cause or "it could not be read")
    return (
        f"The body is not valid JSON ({reason}): send a JSON object, with "
        "Content-Type: application/json."
    )


# What a body to the document's endpoints may be (DRF's defaults, JSON bounded).
BODY_PARSERS = [BoundedJSONParser, FormParser, ReadableMultiPartParser]


# The 202 of an upload and of a reprocess: where the document's status is polled.
POLL_LOCATION = OpenApiParameter(
    "Location",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    response=[202],
    description="The document's address (its status_url's path), to poll.",
)
IF_MATCH = OpenApiParameter(
    "If-Match",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    description="Only if the document is at this version: any tag but * answers 412 "
    "and does nothing (the ETag is weak, and If-Match compares strongly).",
)


def _document(request: Request, pk: int, *, text: bool = False) -> Document:
    """One of the user's documents (staff: anyone's), or a JSON 404."""
    documents = Document.objects.for_user(request.user)
    if not text:
        documents = documents.without_text()
    try:
        return documents.get(pk=pk)
    except Document.DoesNotExist:
        raise _no_document(pk) from None


def _no_document(pk: int) -> NotFound:
    return NotFound(f"There is no document {pk}, or it is not one you may see.")


@contextmanager
def _gone_is_404(document: Document) -> Iterator[None]:
    """A change to a document that another request deleted meanwhile (a script's
    DELETE beside its PATCH or reprocess) is a 404, as it would have been a moment
    later, not a server error."""
    try:
        yield
    except Document.DoesNotExist:
        raise _no_document(document.pk) from None


class UploadNotKept(APIException):
    """An upload refused after its checks: storage full, duplicate, database."""

    def __init__(self, refusal: UploadRefused) -> None:
        self.status_code = refusal.http_status
        message = str(refusal)
        if isinstance(refusal, DuplicateUpload):
            url = reverse("api:document", args=[refusal.existing.pk])
            message += f" It is {url}; send allow_duplicates=true to keep it again."
        super().__init__(detail=message, code=refusal.code)
        # DRF sends it as Retry-After.
        if self.status_code == status.HTTP_503_SERVICE_UNAVAILABLE:
            self.wait = NOT_STORED_RETRY_SECONDS
        elif self.status_code == status.HTTP_429_TOO_MANY_REQUESTS:
            self.wait = ACTIVE_JOBS_RETRY_SECONDS


PAST_ANY_PAGE = 10**18
LAST_PAGE_OF_A_SEARCH = (
    "?page=last is not taken with a search (?q=): a search does not count its "
    "results, so it has no known last page; follow each page's “next” from page 1."
)


def page_number(raw: str) -> int:
    """``?page=`` as a number from 1, or a 400 naming the field."""
    raw = raw.strip()
    # isascii: "²".isdigit() is true, and int() refuses it. int() refuses more than
    # 4,300 digits too (sys.get_int_max_str_digits), and SQLite more than 64 bits:
    # a number that long is a page past any last one (404), not a bad one.
    if raw.isascii() and raw.isdigit() and raw.strip("0"):
        return int(raw) if len(raw) < 19 else PAST_ANY_PAGE
    raise APIValidationError(
        {"page": [f"?page= takes a page number, 1 or more, not “{shown(raw)}”."]}
    )


def past_the_last(number: object, pages: int | None, per_page: int) -> str:
    """A 404 for a page after the last, saying how many there are (``None``: a
    search, which never counts its results)."""
    number = shown(number)
    if pages is None:
        return (
            f"There is no page {number} of these results: they end before it; "
            "follow each page's “next” from page 1."
        )
    if pages == 1:
        return f"There is no page {number}: there is only page 1 of these documents."
    return (
        f"There is no page {number}: there are {pages} pages of these documents "
        f"at {per_page} a page; ask for page 1 to {pages}."
    )


class Pages(IdsFirstPaginator):
    """The list's paginator (a page's ids first), its "That page contains no
    results" said in full."""

    def validate_number(self, number: object) -> int:
        try:
            return super().validate_number(number)
        except InvalidPage:  # past the last: DocumentPagination checked the rest
            raise EmptyPage(
                past_the_last(number, self.num_pages, self.per_page)
            ) from None


class DocumentPagination(PageNumberPagination):
    """``?page=`` and ``?page_size=`` (at most 100), with count/next/previous."""

    page_size = 20
    page_size_query_param = "page_size"
    max_page_size = 100
    page_size_query_description = (
        "How many per page: 20 unless given, at most 100 (a larger number gives "
        "100; one that is not a whole number from 1 gives 20)."
    )
    page_query_description = (
        "A page number from 1, or `last` (not with ?q=: a search does not count its "
        "results): a page past the last is 404, and one that is not a whole number "
        "from 1 is 400."
    )
    django_paginator_class = Pages
    invalid_page_message = "{message}"  # Pages says it

    def paginate_queryset(self, queryset, request: Request, view=None) -> list | None:
        raw = request.query_params.get(self.page_query_param, "1")
        if raw not in self.last_page_strings:
            page_number(raw)  # a 400 for "abc" or 0, before anything is counted
        return super().paginate_queryset(queryset, request, view)

    def get_schema_operation_parameters(self, view) -> list[dict]:
        """``page`` as what it takes, a number from 1 or ``last``: DRF types it as an
        integer only, which a client generated from the schema holds it to."""
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:
                parameter["schema"] = {
                    "oneOf": [
                        {"type": "integer", "minimum": 1},
                        {"type": "string", "enum": list(self.last_page_strings)},
                    ]
                }
        return parameters

    def get_paginated_response_schema(self, schema: dict) -> dict:
        paginated = super().get_paginated_response_schema(schema)
        paginated["properties"]["count"].update(
            nullable=True, description="How many match; null for a search (?q=)."
        )
        paginated["properties"]["notice"] = {
            "type": "string",
            "nullable": True,
            "description": "Only in a search (?q=): the part of the query that "
            "was not searched for (after its first 16 terms), or null.",
        }
        return paginated


class StatusFilter(serializers.ChoiceField):
    """A state in any case (``FAILED``), as ``?type=`` takes its keys."""

    def to_internal_value(self, data: object) -> str:
        value = str(data).strip().lower()
        if value not in self.choices:
            states = ", ".join(self.choices)
            raise serializers.ValidationError(
                f"Unknown status “{shown(data)}”: use one of {states}."
            )
        return value


# The list's query parameters that take one value: DRF would read the last of
# ``?status=pending&status=failed`` and silently ignore the rest.
SINGLE_VALUED = ("status", "type", "q", "page", "page_size")


def _refuse_repeats(counts: Mapping[str, int], says: Callable[[str, int], str]) -> None:
    """A 400 naming each name given more than once (``counts``: how often each
    was), in the words ``says`` gives it: DRF reads the last and drops the others
    unsaid."""
    if repeated := {name: [says(name, n)] for name, n in counts.items() if n > 1}:
        raise APIValidationError(repeated)


def refuse_repeated(params) -> None:
    """A 400 naming each of the list's parameters given more than once."""
    _refuse_repeats(
        {name: len(params.getlist(name)) for name in SINGLE_VALUED},
        lambda name, n: (
            f"Give ?{name}= once, not {n} times: the list takes one value of each "
            "filter (ask once for each value you need)."
        ),
    )


# What else the list's address takes in its query: DRF's ?format= (json only).
LIST_PARAMETERS = (*SINGLE_VALUED, "format")


def refuse_unknown(params) -> None:
    """A 400 naming each of the list's parameters that it does not take: DRF ignores
    them, so ``?stauts=failed``, ``?tag=`` or ``?ordering=`` answered every document
    as if it were the list asked for, and a script acting on it acted on them all."""
    takes = or_list([f"?{name}=" for name in SINGLE_VALUED], "and")
    if unknown := [name for name in params if name not in LIST_PARAMETERS]:
        raise APIValidationError(
            {
                name: [f"The list takes no ?{shown(name)}=: it takes {takes}."]
                for name in unknown
            }
        )


def _sent_more_than_once(name: str, times: int) -> str:
    return f"Send “{name}” once, not {times} times."


def refuse_repeated_fields(data: object, names: tuple[str, ...]) -> None:
    """A 400 naming each field of a form body given more than once
    (``priority=5&priority=-5``); a JSON body's are refused as it is parsed."""
    if hasattr(data, "getlist"):
        _refuse_repeats(
            {name: len(data.getlist(name)) for name in names}, _sent_more_than_once
        )


class ListQuery(serializers.Serializer):
    """The list's filters, validated like any other input."""

    status = StatusFilter(
        choices=Status.choices,
        required=False,
        help_text="Only documents in this state.",
    )
    type = serializers.CharField(
        required=False,
        help_text="Only documents of this type: a format key (pdf, docx, text, "
        "markdown, csv, ...), a file extension (txt, jpg) or a MIME type.",
    )
    q = serializers.CharField(
        required=False,
        allow_blank=True,  # "?q= " lists everything, as "?q=" does
        max_length=MAX_QUERY_CHARS,
        error_messages={
            "max_length": f"Search for at most {MAX_QUERY_CHARS} characters: "
            "shorten ?q= and ask again."
        },
        help_text='Search the text and file names (words, "phrases", prefix*, '
        "-excluded or NOT excluded, OR; only exclusions: every other document). "
        "Results come best first and `count` is null: counting every match would "
        "be unbounded. Terms after the first 16 are left out, and `notice` says so.",
    )

    def validate_type(self, value: str) -> str:
        found = by_name(value)
        if found is None:
            keys = ", ".join(fmt.key for fmt in READABLE)
            raise serializers.ValidationError(
                f"Unknown type “{shown(value)}”: use one of {keys}, an extension (txt) "
                "or a MIME type."
            )
        return found.mime_type


def _priority(request: Request, data: dict) -> int:
    priority = data["priority"]
    if not can_set_priority(request.user, priority):
        raise PermissionDenied("Only queue operators may set a priority.")
    return priority


def _check_active_jobs(request: Request) -> None:
    try:
        check_active_jobs(request.user)
    except LimitReached as error:
        raise TooManyActiveJobs(str(error)) from None


class DocumentList(generics.ListAPIView):
    """Your documents (staff: everyone's), newest first, without their text."""

    serializer_class = DocumentSerializer
    pagination_class = DocumentPagination
    content_negotiation_class = KnownFormats
    parser_classes = [ReadableMultiPartParser]  # no other body can carry a file
    throttle_classes = [UserThrottle, UploadRateThrottle]
    metadata_class = RequestMetadata
    request_serializers = {"POST": UploadSerializer}

    def query(self) -> dict:
        refuse_unknown(self.request.query_params)
        refuse_repeated(self.request.query_params)
        query = ListQuery(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        return query.validated_data

    def get_queryset(self):
        documents = Document.objects.for_user(self.request.user).without_text()
        documents = documents.prefetch_related("tags")
        query = self.query()
        if "status" in query:
            documents = documents.filter(status=query["status"])
        if "type" in query:
            documents = documents.filter(mime_type=query["type"])
        return documents

    @extend_schema(parameters=[ListQuery])
    def get(self, request: Request) -> Response:
        query = self.query()
        if query.get("q"):
            return self.search(query)
        return self.list(request)

    def search(self, query: dict) -> Response:
        """Search results, paged by the search itself (it never counts them all)."""
        paginator = self.paginator
        size = paginator.get_page_size(self.request)
        page = self.request.query_params.get(paginator.page_query_param, "1")
        if page in paginator.last_page_strings:
            # The last page is found from the count, and a search never counts its
            # results (only its first MAX_OFFSET are reachable, and they are ranked).
            raise APIValidationError({"page": [LAST_PAGE_OF_A_SEARCH]})
        number = page_number(page)
        try:
            hits = search_documents(
                self.request.user,
                query["q"],
                limit=size + 1,
                offset=(number - 1) * size,
                status=query.get("status", ""),
                mime_type=query.get("type", ""),
            )
        except SearchTooBroad as error:
            raise APIValidationError({"q": [str(error)]}) from None
        if not hits and number > 1:
            # Past the last page, as the list without ?q= answers (DRF's paginator).
            raise NotFound(past_the_last(page.strip(), None, size))
        url = self.request.build_absolute_uri()
        documents = [hit.document for hit in hits[:size]]
        prefetch_related_objects(documents, "tags")
        return Response(
            {
                "count": None,
                "next": replace_query_param(url, "page", number + 1)
                if len(hits) > size and number * size <= MAX_OFFSET
                else None,
                "previous": replace_query_param(url, "page", number - 1)
                if number > 1
                else None,
                "results": self.get_serializer(documents, many=True).data,
                "notice": parse_query(query["q"]).notice or None,
            }
        )

    @extend_schema(
        request={"multipart/form-data": UploadSerializer},
        responses={202: DocumentSerializer},
        parameters=[POLL_LOCATION],
    )
    def post(self, request: Request) -> Response:
        """Upload one file (multipart field ``file``); queued at once (202)."""
        try:
            files = request.FILES
        except UnsupportedMediaType:
            raise UnsupportedMediaType(
                request.content_type, detail=UPLOAD_AS_MULTIPART
            ) from None
        if "file" not in files and any(request.POST.getlist("file")):
            # A file sent with an empty name arrives as text (Django's parser).
            raise APIValidationError({"file": [FILE_AS_TEXT]})
        if others := sorted(set(files) - {"file"}):
            # Kept silently, they would be lost: the API takes one file at a time.
            named = ", ".join(f"“{name}”" for name in others)
            raise APIValidationError(
                {"file": [f"Send one file, in the field “file” (not {named})."]}
            )
        refuse_repeated_fields(request.data, ("priority", "allow_duplicates"))
        upload = UploadSerializer(data=request.data)
        upload.is_valid(raise_exception=True)
        data = upload.validated_data
        priority = _priority(request, data)
        _check_active_jobs(request)
        try:
            document = document_create(
                owner=request.user,
                upload=data["file"],
                priority=priority,
                allow_duplicate=data["allow_duplicates"],
                limit_active_jobs=True,
            )
        except UploadRefused as refusal:
            raise UploadNotKept(refusal) from refusal
        return Response(
            self.get_serializer(document).data,
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": reverse("api:document", args=[document.pk])},
        )


def _etag(representation: dict) -> str:
    """A weak validator of a document as the API shows it, its text left out.

    Whatever the answer shows but the text is hashed (status, errors, page count,
    title, tags, times...). The text changes only with a new result, which sets
    ``processed_at`` and, with the status, ``updated_at``: so the tag changes with
    the text too, and checking it never reads the text. Weak (``W/``): the same
    document may be sent as other bytes (``Accept: application/json; indent=2``).
    """
    shown = {key: value for key, value in representation.items() if key != "text"}
    canonical = json.dumps(shown, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:32]
    return f'W/"{digest}"'


def _conditional(
    request: Request, document: Document, context: dict
) -> tuple[str, HttpResponseBase | None]:
    """The document's tag, and what ``If-Match``/``If-None-Match`` answer for it: None
    to go on, a 304 (GET), or ``PreconditionFailed`` raised. Compared on the document
    without its text, so a poll of an unchanged document reads no text at all."""
    prefetch_related_objects([document], "tags")
    etag = _etag(DocumentSerializer(document, context=context).data)
    answer = get_conditional_response(request, etag=etag)
    if answer is not None and answer.status_code == 412:
        raise PreconditionFailed()
    return etag, answer


def _check_preconditions(request: Request, document: Document, context: dict) -> None:
    """Before a change: a script that names a version (RFC 9110 says the server MUST
    check it) never overwrites or deletes another."""
    if "If-Match" in request.headers or "If-None-Match" in request.headers:
        _conditional(request, document, context)


def _revalidate(response: HttpResponseBase, etag: str) -> HttpResponseBase:
    """Send the tag, and ask every cache to check it before reusing the answer
    (private: it is one person's document)."""
    response["ETag"] = etag
    patch_cache_control(response, private=True, no_cache=True)
    return response


class DocumentDetail(generics.GenericAPIView):
    """One of your documents (staff: anyone's)."""

    serializer_class = DocumentDetailSerializer
    content_negotiation_class = KnownFormats
    parser_classes = BODY_PARSERS
    metadata_class = RequestMetadata
    request_serializers = {"PATCH": DetailsSerializer}

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "If-None-Match",
                OpenApiTypes.STR,
                OpenApiParameter.HEADER,
                description="The ETag of an earlier answer: 304, without a body, "
                "while the document (status, error, text, ...) is unchanged.",
            ),
            IF_MATCH,
            OpenApiParameter(
                "ETag",
                OpenApiTypes.STR,
                OpenApiParameter.HEADER,
                response=[200, 304],
                description="The document's version; it changes whenever anything "
                "in the answer does.",
            ),
        ],
        responses={
            200: DocumentDetailSerializer,
            304: OpenApiResponse(
                description="Not modified since the ETag given in If-None-Match."
            ),
        },
    )
    def get(self, request: Request, pk: int) -> HttpResponseBase:
        """Status, error, page count and text; an ETag, for polling with
        If-None-Match (304 while nothing changed)."""
        if "If-None-Match" in request.headers or "If-Match" in request.headers:
            document = _document(request, pk)
            etag, answer = _conditional(
                request, document, self.get_serializer_context()
            )
            if answer is not None:
                return _revalidate(answer, etag)
        # Read again, with the text: the tag must describe the same read as the body.
        document = _document(request, pk, text=True)
        data = self.get_serializer(document).data
        return _revalidate(Response(data), _etag(data))

    @extend_schema(parameters=[IF_MATCH], responses={204: None})
    def delete(self, request: Request, pk: int) -> Response:
        """Delete the document with its file, text and jobs (204).

        A document being processed is deleted too: its jobs go with it, and the
        worker's result, when it comes, is refused and recorded nowhere.
        """
        document = _document(request, pk)
        if not can_delete(request.user, document):
            raise PermissionDenied(
                "Only the owner or staff allowed to delete documents may delete it."
            )
        _check_preconditions(request, document, self.get_serializer_context())
        document_delete(document=document)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        parameters=[IF_MATCH], request=DetailsSerializer, responses=DocumentSerializer
    )
    def patch(self, request: Request, pk: int) -> Response:
        """Set the owner's title and tags (either or both); answers the document."""
        document = _document(request, pk)
        if document.owner_id != request.user.pk:
            raise PermissionDenied("Only the owner may set its title and tags.")
        refuse_repeated_fields(request.data, ("title",))
        body = DetailsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        _check_preconditions(request, document, self.get_serializer_context())
        changes = body.validated_data
        tags = changes.get("tags", [tag.name for tag in document.tags.all()])
        # The page's form holds the rules (lengths, how many, duplicates): one home
        # (the tags, forms.tag_names, already applied by DetailsSerializer).
        form = DocumentDetailsForm(
            {"title": changes.get("title", document.title), "tags": ", ".join(tags)}
        )
        if not form.is_valid():
            raise APIValidationError(form.errors)
        with _gone_is_404(document):
            document_update_details(
                document=document,
                title=form.cleaned_data["title"],
                tag_names=form.cleaned_data["tags"],
            )
            document.refresh_from_db(fields=["title", "updated_at"])
        return Response(DocumentSerializer(document, context={"request": request}).data)


class FileAnswer(DefaultContentNegotiation):
    """The file goes as what it is, whatever ``Accept`` names (a script may ask for
    ``application/pdf``); JSON is for its errors."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class DocumentFile(APIView):
    """The document's file as it was uploaded, for a token as for a session: the
    site's download (documents.views.download) wants a login, and sent a script
    to the HTML login page."""

    content_negotiation_class = FileAnswer

    @extend_schema(
        responses={(200, "application/octet-stream"): OpenApiTypes.BINARY},
    )
    def get(self, request: Request, pk: int) -> HttpResponseBase:
        """The original file (``Content-Disposition: attachment``, with its name)."""
        _document(request, pk)  # another's or an unknown id: the API's own 404
        try:
            # DRF's authentication set the user on Django's request as well.
            return views.download(request._request, pk=pk)
        except Http404:
            raise NotFound(
                f"The file of document {pk} is missing from the server's storage: "
                "tell an operator (manage.py check_storage lists such documents)."
            ) from None


class DocumentReprocess(generics.GenericAPIView):
    """Queue a document again."""

    serializer_class = DocumentSerializer
    content_negotiation_class = KnownFormats
    parser_classes = [ReadableMultiPartParser, FormParser, BoundedJSONParser]
    metadata_class = RequestMetadata
    request_serializers = {"POST": PrioritySerializer}

    @extend_schema(
        request=PrioritySerializer,
        responses={202: DocumentSerializer},
        parameters=[POLL_LOCATION],
    )
    def post(self, request: Request, pk: int) -> Response:
        """Queue the document again and answer at once (202). While an extraction
        of it (its first, or a reprocess) is waiting, that one reads it anew: 202
        too, nothing more queued. 409 while one is running."""
        document = _document(request, pk)
        if not can_reprocess(request.user, document):
            raise PermissionDenied(
                "Only the owner or a queue operator may reprocess it."
            )
        refuse_repeated_fields(request.data, ("priority",))
        body = PrioritySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        priority = _priority(request, body.validated_data)
        with _gone_is_404(document):
            try:
                # A waiting or running document adds no job (202, or 409 below):
                # the active-job limit is no reason to refuse it.
                queued = document_reprocess(
                    document=document,
                    priority=priority,
                    asked_by=request.user,
                )
            except LimitReached as error:
                raise TooManyActiveJobs(str(error)) from None
            if queued is None:
                document.refresh_from_db(fields=["status"])
        if queued is None and document.status == Status.PROCESSING:
            raise AlreadyQueued(
                f"“{document}” is being processed; its status URL shows when "
                "it is done, and it may be reprocessed then."
            )
        # Where to poll, as the upload's 202 says it (RFC 9110: a 202 points to
        # the request's status monitor).
        return Response(
            self.get_serializer(document).data,
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": reverse("api:document", args=[document.pk])},
        )
