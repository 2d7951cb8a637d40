"""Create a first superuser when there is no user at all, and say how to log in."""

from __future__ import annotations

import os
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction


class Command(BaseCommand):
    help = (
        "Create the first superuser (admin) with a random password if no user exists."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--username", default="admin", help="Its name (default: admin)."
        )

    def handle(self, *, username: str, **options) -> None:
        User = get_user_model()  # noqa: N806
        if User.objects.exists():
            if options["verbosity"]:
                note = settings.VAR_DIR / "first-user.txt"
                where = (
                    f" The first one's password, as made, is in {note}."
                    if note.exists()
                    else ""
                )
                self.stdout.write(
                    "Users exist; log in with yours (or: manage.py createsuperuser)."
                    + where
                )
            return
        try:
            # The field's own checks: its characters, and its length, which SQLite
            # does not enforce (PostgreSQL's error was a traceback).
            User._meta.get_field(User.USERNAME_FIELD).clean(username, None)
        except ValidationError as error:
            raise CommandError(f"“{username}”: {' '.join(error.messages)}") from None
        password = secrets.token_urlsafe(12)
        note = settings.VAR_DIR / "first-user.txt"
        # A note that cannot be written undoes the user: else its password is
        # known to no one, and the next run says "Users exist".
        with transaction.atomic():
            User.objects.create_superuser(username=username, password=password)
            try:
                note.parent.mkdir(parents=True, exist_ok=True)
                # Made private, not made and then narrowed: no moment where others
                # on the host may read it.
                note.unlink(missing_ok=True)
                fd = os.open(note, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with open(fd, "w") as file:
                    file.write(f"username: {username}\npassword: {password}\n")
            except OSError as error:
                raise CommandError(
                    f"Could not write {note} ({error.strerror or error}); no user "
                    "was created. Make that folder writable and run it again."
                ) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"Created superuser “{username}” with password {password} "
                f"(also in {note}). Log in at /accounts/login/ and change it at "
                "/accounts/password_change/."
            )
        )
