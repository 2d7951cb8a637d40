"""What the API reads and answers: one definition, used by the views and the schema."""

from __future__ import annotations

from collections.abc import Mapping

from django.core.exceptions import ValidationError
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.settings import api_settings

from documents.api_errors import or_list, shown
from documents.extractors.formats import accepted_labels, by_mime_type, label_for
from documents.forms import MAX_TAG_CHARS, MAX_TAGS, DocumentDetailsForm, tag_names
from documents.models import Document
from documents.uploads import CheckedUpload, check_upload
from jobqueue.models import MAX_PRIORITY, MIN_PRIORITY, PRIORITY_RANGE, ErrorType

# DRF's stock words ("This field may not be null.", "Expected a list of items but
# got type "str".") said for people: what the field takes.
FILE_MISSING = (
    "Send the document as a file in the multipart field “file” "
    "(curl -F file=@report.pdf)."
)
TITLE_AS_TEXT = 'The title must be text; send "" to show the file name instead.'
TAGS_AS_LIST = (
    'Send tags as a list of names, such as ["invoices", "2026"]; an empty list '
    "removes them all."
)
TAG_AS_TEXT = 'Each tag must be a name (text), such as "invoices".'
ALLOW_DUPLICATES_AS_BOOLEAN = (
    "allow_duplicates takes true or false (also 1 or 0, yes or no, on or off)."
)
# A JSON body that is no object, as its sender wrote it.
JSON_KINDS = {
    list: "a list",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "true or false",
    type(None): "null",
}
PRIORITY_ERRORS = {
    "invalid": "Priority must be a whole number.",
    "min_value": f"Priority must be between {MIN_PRIORITY} and {MAX_PRIORITY}.",
    "max_value": f"Priority must be between {MIN_PRIORITY} and {MAX_PRIORITY}.",
    "max_string_length": "Priority must be a whole number.",
}


class BlankAsNull(serializers.CharField):
    """An optional text column: ``null`` in JSON when it is empty."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(allow_null=True, read_only=True, **kwargs)

    def to_representation(self, value: str) -> str | None:
        return value or None


@extend_schema_field({"type": "string", "enum": [*ErrorType.values, None]})
class ErrorTypeField(BlankAsNull):
    """``error_type``: one of the queue's error types, which the schema lists (a
    client generated from it gets an enum, not any string), or null."""


class DocumentSerializer(serializers.ModelSerializer):
    """A document as lists show it: everything but the text."""

    filename = serializers.CharField(
        source="original_filename",
        read_only=True,
        help_text="The uploaded file's name, cleaned.",
    )
    title = serializers.CharField(
        read_only=True, help_text="The owner's title; empty when none was given."
    )
    tags = serializers.SlugRelatedField(
        many=True,
        read_only=True,
        slug_field="name",
        help_text="The owner's tags, by name.",
    )
    status_url = serializers.SerializerMethodField(
        help_text="Where to poll this document's status."
    )
    error_type = ErrorTypeField(
        help_text="Why it failed: timeout, corruption, extractor_missing, "
        "unsupported or unknown; null unless it failed."
    )
    error_message = BlankAsNull(
        help_text="The failure in words; null unless it failed."
    )
    type = serializers.SerializerMethodField(
        help_text="The format's key (pdf, docx, text, ...), as ?type= takes it."
    )
    type_label = serializers.SerializerMethodField(
        help_text="The format's name for people, e.g. “Word (DOCX)”."
    )
    note = BlankAsNull(
        source="extraction_note",
        help_text="A note on the text, e.g. that it was cut at the size limit.",
    )

    class Meta:
        model = Document
        fields = [
            "id",
            "filename",
            "title",
            "tags",
            "status",
            "status_url",
            "mime_type",
            "type",
            "type_label",
            "size",
            "sha256",
            "error_type",
            "error_message",
            "page_count",
            "confidence",
            "note",
            "created_at",
            "updated_at",
            "processed_at",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "size": {"help_text": "Bytes."},
            "page_count": {
                "help_text": "Pages read (a presentation's slides, an image's "
                "frames); null until processed, and where the format has no pages "
                "(plain text, Markdown, CSV, HTML, e-mail, EPUB, RTF, spreadsheets) "
                "or a word processor's file does not record them."
            },
            "confidence": {
                "help_text": "How sure the reading is, 0 to 1, averaged over pages "
                "(OCR's word confidence; 1.0 for text read as written); null until "
                "processed."
            },
        }

    @extend_schema_field(OpenApiTypes.URI)
    def get_status_url(self, document: Document) -> str:
        url = reverse("api:document", args=[document.pk])
        return self.context["request"].build_absolute_uri(url)

    def get_type(self, document: Document) -> str | None:
        found = by_mime_type(document.mime_type)
        return found.key if found else None

    def get_type_label(self, document: Document) -> str:
        return label_for(document.mime_type)


class DocumentDetailSerializer(DocumentSerializer):
    """One document with its extracted text."""

    text = serializers.CharField(
        read_only=True, help_text="The extracted text; empty until processed."
    )

    class Meta(DocumentSerializer.Meta):
        fields = [*DocumentSerializer.Meta.fields, "text"]
        read_only_fields = fields


class RequestSerializer(serializers.Serializer):
    """A request body, which must be an object. With ``refuses_unknown``, its fields
    and no others: a name it does not know is refused by name, not dropped, where a
    script's typo, or a field that cannot be set, would otherwise answer success and
    change nothing. (An upload is kept whatever else comes along: a web form's or
    a script's extra fields do not stop it.)"""

    refuses_unknown = False
    # A session's form carries its CSRF token in the body: it is no field.
    NOT_FIELDS = frozenset({"csrfmiddlewaretoken"})

    def unknown_field(self, name: str) -> str:
        """The message for a field this request does not take."""
        return (
            f"There is no field “{shown(name)}” here: send only "
            f"{or_list(list(self.fields), 'and')}."
        )

    def run_validation(self, data: object = empty) -> dict:
        # DRF says "No data provided" for null, and "Invalid data. Expected a
        # dictionary, but got list." for the rest.
        if data is not empty and not isinstance(data, Mapping):
            kind = JSON_KINDS.get(type(data), "that")
            raise serializers.ValidationError(
                {
                    api_settings.NON_FIELD_ERRORS_KEY: [
                        f"Send the fields as a JSON object or a form, not {kind}."
                    ]
                }
            )
        return super().run_validation(data)

    def to_internal_value(self, data: Mapping) -> dict:
        if not self.refuses_unknown:
            return super().to_internal_value(data)
        unknown = {
            name: [self.unknown_field(name)]
            for name in data
            if name not in self.fields and name not in self.NOT_FIELDS
        }
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as error:
            if unknown and isinstance(error.detail, dict):
                raise serializers.ValidationError({**error.detail, **unknown}) from None
            raise
        if unknown:
            raise serializers.ValidationError(unknown)
        return value


class PrioritySerializer(RequestSerializer):
    """A reprocess request."""

    refuses_unknown = True

    priority = serializers.IntegerField(
        required=False,
        default=0,
        min_value=MIN_PRIORITY,
        max_value=MAX_PRIORITY,
        error_messages=PRIORITY_ERRORS,
        help_text=f"Higher runs first ({PRIORITY_RANGE}); only queue operators may "
        "set anything but 0.",
    )


class UploadSerializer(PrioritySerializer):
    """An upload: one file, multipart."""

    refuses_unknown = False

    file = serializers.FileField(
        allow_empty_file=True,  # check_upload says so, naming the file
        error_messages={
            "required": FILE_MISSING,
            "null": FILE_MISSING,
            "invalid": FILE_MISSING,
        },
        help_text=f"The document: {accepted_labels()}.",
    )
    allow_duplicates = serializers.BooleanField(
        required=False,
        default=False,
        # DRF's "Must be a valid boolean." named no value it takes.
        error_messages={"invalid": ALLOW_DUPLICATES_AS_BOOLEAN},
        help_text="Keep the file even when you already uploaded the same content "
        "(otherwise 409).",
    )

    def validate_file(self, upload: object) -> CheckedUpload:
        files = (
            self.initial_data.getlist("file")
            if hasattr(self.initial_data, "getlist")
            else [upload]
        )
        if len(files) != 1:
            raise serializers.ValidationError(
                "Send exactly one file in the field “file”."
            )
        try:
            return check_upload(upload)
        except ValidationError as error:
            raise serializers.ValidationError(error.messages) from None


# The rules of the page's form, which the PATCH applies (documents.forms): stated in
# the schema, not checked here a second time (the form's checks and words stand).
TITLE_CHARS = DocumentDetailsForm.base_fields["title"].max_length


@extend_schema_field({"type": "string", "maxLength": TITLE_CHARS})
class TitleField(serializers.CharField):
    """The title, whose length the page's form checks (the schema says it)."""


@extend_schema_field(
    {
        "type": "array",
        "maxItems": MAX_TAGS,
        "items": {"type": "string", "minLength": 1, "maxLength": MAX_TAG_CHARS},
    }
)
class TagsField(serializers.ListField):
    """The tags, which ``tag_names`` counts and measures as kept (spaces collapsed,
    one of each name): the schema says the limits, the field does not check them
    again on the names as sent."""


class DetailsSerializer(RequestSerializer):
    """The owner's title and tags; send either or both."""

    refuses_unknown = True

    title = TitleField(
        required=False,
        allow_blank=True,
        error_messages={"null": TITLE_AS_TEXT, "invalid": TITLE_AS_TEXT},
        help_text="Shown instead of the file name; empty to use the file name. At "
        f"most {TITLE_CHARS} characters.",
    )
    tags = TagsField(
        child=serializers.CharField(
            error_messages={
                "null": TAG_AS_TEXT,
                "invalid": TAG_AS_TEXT,
                "blank": "A tag cannot be empty: leave it out of the list.",
            }
        ),
        required=False,
        error_messages={"not_a_list": TAGS_AS_LIST, "null": TAGS_AS_LIST},
        help_text="Every tag the document should have (replaces them), by name: at "
        f"most {MAX_TAGS} tags of {MAX_TAG_CHARS} characters each (spaces inside a "
        "tag collapsed to one; a name given twice, in any case, kept once).",
    )

    def unknown_field(self, name: str) -> str:
        settable = or_list(list(self.fields), "and")
        if name in DocumentDetailSerializer.Meta.fields:
            return f"“{name}” cannot be changed: a PATCH sets only {settable}."
        return f"There is no field “{shown(name)}”: a PATCH sets only {settable}."

    def validate_tags(self, names: list[str]) -> list[str]:
        if any("," in name for name in names):
            raise serializers.ValidationError("A tag cannot contain a comma.")
        # Checked here, one by one: joined for the page's form, too many or too long
        # tags were refused for the length of that one line, not for what they were.
        try:
            return tag_names(names)
        except ValidationError as error:
            raise serializers.ValidationError(error.messages) from None
