"""Print an API token for a user (``Authorization: Token <key>``)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = "Create (or with --reset, replace) the API token of USER and print it."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument(
            "--reset", action="store_true", help="Replace an existing token."
        )

    def handle(self, *, username: str, reset: bool, **options) -> None:
        User = get_user_model()  # noqa: N806
        try:
            user = User.objects.get(**{User.USERNAME_FIELD: username})
        except User.DoesNotExist:
            raise CommandError(f"No user named “{username}”.") from None
        if reset:
            Token.objects.filter(user=user).delete()
        token, _created = Token.objects.get_or_create(user=user)
        self.stdout.write(token.key)
