"""Upload form: one or many files, each checked on its own."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from documents.extractors.formats import by_name
from documents.uploads import FILE_AS_TEXT, CheckedUpload, check_upload


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """A file field that takes several files (Django's documented recipe)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        # Empty files are refused per file by check_upload, with their name: Django's
        # own check would reject the whole upload, good files included.
        kwargs.setdefault("allow_empty_file", True)
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, list | tuple) and data:
            return [single(d, initial) for d in data]
        # No file at all (an empty list from the widget): the field's own "required"
        # error, not an empty list that would fail later without a message.
        return [single(data or None, initial)]


class UploadForm(forms.Form):
    """Accepts what passes; keeps a reason for each file that does not."""

    file = MultipleFileField(
        label="Files",
        error_messages={"required": "Choose one or more files to upload."},
    )
    allow_duplicates = forms.BooleanField(
        required=False,
        label="Keep files I have uploaded before as new documents",
        help_text="Otherwise a file whose content you already have is skipped.",
    )

    def clean_file(self) -> list[CheckedUpload]:
        # How many files a request may carry is checked as it streams
        # (documents.middleware), before any is read.
        files = self.cleaned_data["file"]
        self.accepted: list[CheckedUpload] = []
        self.rejected: list[tuple[str, str]] = []
        for upload in files:
            # A name's %22 is already a quote (documents.uploads.NamelessFileParser).
            try:
                self.accepted.append(check_upload(upload))
            except ValidationError as error:
                self.rejected.append((upload.name, " ".join(error.messages)))
        if not self.accepted:
            raise ValidationError([reason for _, reason in self.rejected])
        return self.accepted

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        # A file sent with an empty name arrives as text (Django's parser); a browser
        # sends an empty one when no file was chosen, and "required" is right then.
        if self.has_error("file", "required") and any(self.data.getlist("file")):
            del self.errors["file"]
            self.add_error("file", ValidationError(FILE_AS_TEXT, code="as_text"))
        return cleaned


MAX_TAGS = 20
MAX_TAG_CHARS = 50  # Tag.name's length

# Control characters, and those that reorder the text around them (bidi embeddings,
# overrides, isolates: "\u202efdp.exe" shows as "exe.pdf"): a title is shown where the
# file name was, which is kept without them (documents.uploads), and so is a tag.
UNSHOWN = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def shown_text(raw: str) -> str:
    """A title or tag as kept: spaces collapsed, controls and bidi overrides gone."""
    words = (UNSHOWN.sub("", word) for word in raw.split())
    return " ".join(word for word in words if word)


def tag_names(raw_names: list[str]) -> list[str]:
    """The tags as kept: spaces collapsed, empty ones dropped, one of each name in
    any case; a ValidationError past MAX_TAGS or MAX_TAG_CHARS. The page's form
    and the API's PATCH both say it so."""
    names: dict[str, str] = {}
    for raw in raw_names:
        # Composed (NFC): "é" typed on a Mac (e + U+0301) is the "é" of other
        # keyboards, one tag, not two that look the same.
        name = shown_text(unicodedata.normalize("NFC", raw))
        if len(name) > MAX_TAG_CHARS:
            raise ValidationError(
                f"“{name[:MAX_TAG_CHARS]}…” is longer than {MAX_TAG_CHARS} characters."
            )
        if name:
            names.setdefault(name.casefold(), name)
    if len(names) > MAX_TAGS:
        raise ValidationError(f"At most {MAX_TAGS} tags, please.")
    return list(names.values())


class DocumentDetailsForm(forms.Form):
    """The owner's own title and tags (comma-separated) for a document."""

    title = forms.CharField(
        max_length=255,
        required=False,
        help_text="Shown instead of the file name; leave empty to use the file name.",
    )
    tags = forms.CharField(
        # Room for every tag allowed at its longest, as the page writes them
        # ("a, b"): 1,000 refused twenty tags of 50 characters (1,038).
        max_length=MAX_TAGS * (MAX_TAG_CHARS + len(", ")),
        required=False,
        help_text=f"Separate tags with commas; up to {MAX_TAGS}, each up to "
        f"{MAX_TAG_CHARS} characters.",
    )

    def clean_title(self) -> str:
        return shown_text(self.cleaned_data["title"])

    def clean_tags(self) -> list[str]:
        return tag_names(self.cleaned_data["tags"].split(","))


class DocumentFilterForm(forms.Form):
    """The list's filters; a value that does not validate is ignored, not an error."""

    q = forms.CharField(max_length=200, required=False)
    status = forms.ChoiceField(required=False)
    type = forms.CharField(max_length=100, required=False)
    tag = forms.CharField(max_length=50, required=False)
    since = forms.DateField(required=False)
    until = forms.DateField(required=False)

    def __init__(self, data, *, statuses: list[tuple[str, str]]) -> None:
        super().__init__(data)
        self.fields["status"].choices = [("", "Any"), *statuses]

    def clean_type(self) -> str:
        return asked_type(self.cleaned_data["type"])

    def filters(self) -> dict[str, Any]:
        """The valid, non-empty values."""
        self.is_valid()
        return {k: v for k, v in self.cleaned_data.items() if v not in ("", None)}


def asked_type(value: str) -> str:
    """The MIME type that ``?type=`` names, as the API reads it ("pdf", "docx", a
    MIME type); any other value as it is (a stored type no longer read, such as a
    legacy Word file's)."""
    found = by_name(value) if value else None
    return found.mime_type if found else value
