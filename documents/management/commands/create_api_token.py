"""Create an API token for a user and print it, once (``Authorization: Token <key>``)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from documents.tokens import create_token
from jobqueue.management.arguments import MAX_DAYS, whole_number


class Command(BaseCommand):
    help = (
        "Create an API token for USER and print its key. Only a hash is stored: the "
        "key cannot be shown again. Revoke tokens in the admin (or with --reset)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("username", help="The user the token acts as.")
        parser.add_argument(
            "--reset", action="store_true", help="Revoke the user's other tokens first."
        )
        parser.add_argument(
            "--expires-days",
            type=whole_number(1, MAX_DAYS),
            metavar="DAYS",
            help="Let the token expire after DAYS days (default: never).",
        )

    def handle(
        self,
        *,
        username: str,
        reset: bool,
        expires_days: int | None,
        verbosity: int,
        **options,
    ) -> None:
        User = get_user_model()  # noqa: N806
        try:
            user = User.objects.get(**{User.USERNAME_FIELD: username})
        except User.DoesNotExist:
            raise CommandError(f"No user named “{username}”.") from None
        if not user.is_active:
            # Its key would be refused at every request ("User inactive or deleted").
            raise CommandError(
                f"“{username}” is inactive: no token of theirs would be accepted. "
                "Tick “Active” on their page in the admin first."
            )
        if reset:
            revoked = user.auth_token_set.all().delete()[0]
            if verbosity:
                self.stderr.write(f"Revoked {revoked} token(s) of {username}.")
        token, key = create_token(user, expires_in_days=expires_days)
        # The key alone on stdout, so scripts can capture it; notices on stderr
        # (none with -v 0).
        self.stdout.write(key)
        if verbosity:
            self.stderr.write(
                f"Token {token.token_key}… for {username}"
                + (
                    f", expires {token.expiry:%Y-%m-%d %H:%M} UTC"
                    if token.expiry
                    else ""
                )
                + ". Copy the key now: it is stored hashed and cannot be shown again."
            )
