"""Running an admin action over a whole list, as its page posts it, and posting a
confirmation page's form back, as its button does."""

from __future__ import annotations

import re

from django.contrib.messages import get_messages
from django.db.models import Model


def select_all(client, url: str, model: type[Model], action="delete_selected", **extra):
    """``action`` on "select all" of the list at ``url`` (one box ticked, as the page
    posts it); returns (response, messages)."""
    data = {
        "action": action,
        "select_across": "1",
        "index": "0",
        "_selected_action": [model.objects.order_by("-pk").first().pk],
        **extra,
    }
    response = client.post(url, data, follow=True)
    return response, [str(m) for m in get_messages(response.wsgi_request)]


def confirm(client, response, url: str):
    """Post the confirmation page's form back, as its button does."""
    page = response.content.decode()
    form = page[page.index('<form method="post">') :]
    fields: dict[str, list[str]] = {}
    for name, value in re.findall(
        r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form
    ):
        fields.setdefault(name, []).append(value)
    fields.pop("csrfmiddlewaretoken", None)
    response = client.post(url, fields, follow=True)
    return response, [str(m) for m in get_messages(response.wsgi_request)]
