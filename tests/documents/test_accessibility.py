"""Accessibility audit of the people's pages (WCAG 2.2 AA), checked in the markup and
the stylesheet: no browser needed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from lxml import html

from jobqueue.models import QueueControl

CSS = Path(settings.BASE_DIR) / "static" / "css" / "app.css"


def _tree(response):
    return html.fromstring(response.content.decode())


@pytest.mark.django_db
def test_messages_stay_a_list_of_items_with_their_roles_inside(user_client):
    """1.3.1: a role on the <li> replaces listitem, so the list had no items."""
    files = [SimpleUploadedFile("empty.txt", b""), SimpleUploadedFile("a.txt", b"a\n")]
    response = user_client.post(
        reverse("documents:upload"), {"file": files}, follow=True
    )
    items = _tree(response).xpath('//ul[@class="messages"]/*')
    assert len(items) == 2
    for item in items:
        assert item.tag == "li" and item.get("role") is None
    roles = [item.xpath("./*[@role]")[0].get("role") for item in items]
    assert sorted(roles) == ["alert", "status"]


@pytest.mark.django_db
def test_the_search_results_heading_stays_a_heading(user_client, make_document):
    """1.3.1: role="status" on the <h2> took its heading role away."""
    make_document(name="note.txt")
    response = user_client.get(reverse("documents:search"), {"q": "nothing-here"})
    heading = _tree(response).get_element_by_id("results-heading")
    assert heading.tag == "h2" and heading.get("role") is None
    assert heading.xpath("./span[@role='status']")
    assert "No results" in heading.text_content()


@pytest.mark.django_db
@pytest.mark.parametrize("paused", [False, True])
def test_the_paused_banner_s_live_region_is_there_before_it_speaks(user_client, paused):
    """4.1.3: a status inserted with its text is not reliably read; the region that
    receives it must be on the page already."""
    QueueControl.set_paused(paused)
    response = user_client.get(reverse("documents:list"))
    region = _tree(response).get_element_by_id("paused-banner")
    assert region.get("role") == "status"
    assert bool(region.xpath(".//*[@data-paused-banner]")) is paused
    assert not region.xpath(".//*[@role]")


@pytest.mark.django_db
def test_a_failed_log_in_ties_its_error_to_both_fields(client, user):
    """3.3.1: the password field was marked invalid without saying why."""
    response = client.post(reverse("login"), {"username": "alice", "password": "x"})
    tree = _tree(response)
    assert tree.get_element_by_id("login-error") is not None
    for name in ("username", "password"):
        (field,) = tree.xpath(f'//input[@name="{name}"]')
        assert field.get("aria-invalid") == "true"
        assert field.get("aria-describedby") == "login-error"


@pytest.mark.django_db
def test_the_user_name_link_says_where_it_goes(user_client):
    """2.4.4: the link read "alice"; its purpose was only in a title attribute."""
    response = user_client.get(reverse("documents:list"))
    (link,) = _tree(response).xpath('//a[@class="nav__user"]')
    name = " ".join(link.text_content().split())
    assert name.startswith("alice") and "change your password" in name


# Colours: WCAG relative luminance and contrast ratio.


def _luminance(colour: str) -> float:
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (
        c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels
    )
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: str, b: str) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _palettes() -> tuple[dict[str, str], dict[str, str]]:
    css = CSS.read_text()
    light_block = css.split(":root {", 1)[1].split("}", 1)[0]
    dark_block = css.split("prefers-color-scheme: dark", 1)[1].split("}", 1)[0]
    pattern = re.compile(r"--([\w-]+):\s*(#[0-9a-fA-F]{6})")
    light = dict(pattern.findall(light_block))
    return light, {**light, **dict(pattern.findall(dark_block))}


def test_status_badges_have_enough_contrast_in_both_themes():
    """1.4.3: "Completed" (dark green on light green) was 4.43:1 in the light theme."""
    for palette in _palettes():
        for status in ("ok", "wait", "busy", "bad", "off"):
            assert _contrast(palette[status], palette[f"{status}-bg"]) >= 4.5, status


def test_the_focus_ring_stands_out_from_every_background():
    """1.4.11: the light theme's yellow ring was 1.5:1 against the page."""
    for palette in _palettes():
        backgrounds = ["bg", "surface"] + [
            f"{s}-bg" for s in ("ok", "wait", "busy", "bad", "off")
        ]
        for background in backgrounds:
            assert _contrast(palette["focus"], palette[background]) >= 3, background


def test_the_danger_button_s_text_is_readable_in_both_themes():
    """1.4.3: white on the dark theme's light red was 1.8:1."""
    css = CSS.read_text()
    rule = re.search(r"\.button--danger \{[^}]*\}", css).group(0)
    assert "color: var(--danger-text, #fff)" in rule
    light, dark = _palettes()
    assert _contrast(light.get("danger-text", "#ffffff"), light["bad"]) >= 4.5
    assert _contrast(dark["danger-text"], dark["bad"]) >= 4.5
