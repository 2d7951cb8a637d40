"""Upload form: one or many files, each checked on its own."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

from documents.uploads import CheckedUpload, check_upload


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

    file = MultipleFileField(label="Files")
    allow_duplicates = forms.BooleanField(
        required=False,
        label="Keep files I have uploaded before as new documents",
        help_text="Otherwise a file whose content you already have is skipped.",
    )

    def clean_file(self) -> list[CheckedUpload]:
        files = self.cleaned_data["file"]
        if len(files) > settings.MAX_UPLOAD_FILES:
            raise ValidationError(
                f"At most {settings.MAX_UPLOAD_FILES} files at once, please."
            )
        self.accepted: list[CheckedUpload] = []
        self.rejected: list[tuple[str, str]] = []
        for upload in files:
            try:
                self.accepted.append(check_upload(upload))
            except ValidationError as error:
                self.rejected.append((upload.name, " ".join(error.messages)))
        if not self.accepted:
            raise ValidationError([reason for _, reason in self.rejected])
        return self.accepted
