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
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(d, initial) for d in data]
        return [single(data, initial)]


class UploadForm(forms.Form):
    """Accepts what passes; keeps a reason for each file that does not."""

    file = MultipleFileField(label="Files")

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
