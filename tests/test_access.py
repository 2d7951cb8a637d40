"""Who may reach what: every URL × six kinds of visitor, CSRF on every form, the cron
token, private uploads, and ``check --deploy`` with production settings.

The matrix is checked against ``get_resolver()`` at test time: a URL that appears
without a row here fails ``test_every_url_is_in_the_matrix``.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib import admin
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from documents.tokens import create_token
from jobqueue.models import ExtractionMetric, QueueItem, Status, WorkerHeartbeat
from tests.conftest import REPO_ROOT

ROLES = ("anonymous", "user", "other", "viewer", "staff", "superuser")
CRON_TOKEN = "cron-" + "s" * 40


def expect(anon: int, user: int, other: int, viewer: int, staff: int, su: int):
    """Expected status per role, in ROLES order."""
    return dict(zip(ROLES, (anon, user, other, viewer, staff, su), strict=True))


def people(owner_only: int = 200, everyone: int | None = None) -> dict[str, int]:
    """A login-required page: the owner (and staff) get ``owner_only``; another
    person gets ``everyone`` (404 for someone else's document)."""
    other = owner_only if everyone is None else everyone
    return expect(302, owner_only, other, owner_only, owner_only, owner_only)


def api(owner_only: int = 200, everyone: int | None = None) -> dict[str, int]:
    """The JSON API: 401 (with WWW-Authenticate) for anonymous callers."""
    other = owner_only if everyone is None else everyone
    return expect(401, owner_only, other, owner_only, owner_only, owner_only)


def admin_page(viewer: int, staff: int, su: int) -> dict[str, int]:
    """Admin pages send everyone who is not staff to the admin login."""
    return expect(302, 302, 302, viewer, staff, su)


PUBLIC = expect(200, 200, 200, 200, 200, 200)
REDIRECT = expect(302, 302, 302, 302, 302, 302)
NOT_ALLOWED = expect(405, 405, 405, 405, 405, 405)


@dataclass(frozen=True)
class Case:
    """One request and the status each role must get."""

    path: Callable[[Any], str]  # built from the ``world`` fixture
    expected: dict[str, int]
    method: str = "get"
    data: Callable[[], dict] | None = None
    # A 302 for anonymous visitors must lead to a login page (not for plain redirects).
    anonymous_to_login: bool = True


# --- The matrix: URL name (or route, for unnamed ones) -> cases ------------------------


def _doc(w):
    return w.document.pk


PROJECT: dict[str, list[Case]] = {
    "home": [Case(lambda w: "/", REDIRECT, anonymous_to_login=False)],
    # Django's auth pages.
    "login": [Case(lambda w: "/accounts/login/", PUBLIC)],
    "logout": [
        Case(lambda w: "/accounts/logout/", NOT_ALLOWED),
        Case(lambda w: "/accounts/logout/", REDIRECT, "post", anonymous_to_login=False),
    ],
    "password_change": [Case(lambda w: "/accounts/password_change/", people())],
    "password_change_done": [
        Case(lambda w: "/accounts/password_change/done/", people())
    ],
    # Each person's own tokens: revoking by another's key finds nothing (302 back).
    "api_tokens": [
        Case(lambda w: "/accounts/tokens/", people()),
        Case(
            lambda w: "/accounts/tokens/",
            people(302),
            "post",
            data=lambda: {"action": "revoke", "token": "unknown"},
        ),
    ],
    # People's pages: the document belongs to "user"; staff see every document.
    "documents:list": [Case(lambda w: "/documents/", people())],
    "documents:upload": [Case(lambda w: "/documents/upload/", people())],
    "documents:search": [Case(lambda w: "/documents/search/?q=hello", people())],
    "documents:statuses": [
        Case(lambda w: f"/documents/status/?id={_doc(w)}", people())
    ],
    "documents:detail": [Case(lambda w: f"/documents/{_doc(w)}/", people(200, 404))],
    "documents:status": [
        Case(lambda w: f"/documents/{_doc(w)}/status/", people(200, 404))
    ],
    "documents:reprocess": [
        Case(lambda w: f"/documents/{_doc(w)}/reprocess/", people(405)),
        # View-only staff may look at the document, not act on it.
        Case(
            lambda w: f"/documents/{_doc(w)}/reprocess/",
            expect(302, 302, 404, 403, 302, 302),
            "post",
        ),
    ],
    "documents:download": [
        Case(lambda w: f"/documents/{_doc(w)}/download/", people(200, 404))
    ],
    "documents:text": [
        Case(lambda w: f"/documents/{_doc(w)}/text/", people(200, 404)),
        Case(lambda w: f"/documents/{_doc(w)}/text/", people(405), "post"),
    ],
    # Title and tags: the owner's alone. Delete: the owner or an operator (its POST
    # is tested in tests/documents/test_manage.py: it cannot run for every role).
    "documents:edit": [
        Case(
            lambda w: f"/documents/{_doc(w)}/edit/",
            expect(302, 200, 404, 404, 404, 404),
        ),
        Case(
            lambda w: f"/documents/{_doc(w)}/edit/",
            expect(302, 302, 404, 404, 404, 404),
            "post",
            data=lambda: {"title": "Mine", "tags": ""},
        ),
    ],
    "documents:delete": [
        Case(
            lambda w: f"/documents/{_doc(w)}/delete/",
            expect(302, 200, 404, 403, 200, 200),
        )
    ],
    # Pages of the owner's PDFs only (this document is text: no pages for anyone;
    # tests/documents/test_pages_viewer.py covers the owner's PDF).
    "documents:page": [
        Case(
            lambda w: f"/documents/{_doc(w)}/pages/1/",
            expect(302, 404, 404, 404, 404, 404),
        ),
        Case(lambda w: f"/documents/{_doc(w)}/pages/1/", people(405), "post"),
    ],
    # A thumbnail not drawn yet is a 404 for everyone (tests/documents/
    # test_thumbnails.py covers a drawn one: its owner and staff see it).
    "documents:thumbnail": [
        Case(
            lambda w: f"/documents/{_doc(w)}/thumbnail/",
            expect(302, 404, 404, 404, 404, 404),
        ),
        Case(lambda w: f"/documents/{_doc(w)}/thumbnail/", people(405), "post"),
    ],
    "documents:bulk": [
        Case(lambda w: "/documents/bulk/", people(405)),
        # Nothing selected: back to the list, with a message.
        Case(lambda w: "/documents/bulk/", people(302), "post"),
    ],
    # The JSON API (session here; tokens below).
    "api:documents": [
        Case(lambda w: "/api/documents/", api()),
        Case(
            lambda w: "/api/documents/",
            api(202),
            "post",
            data=lambda: {"file": SimpleUploadedFile("a.txt", b"hello api\n")},
        ),
    ],
    "api:document": [Case(lambda w: f"/api/documents/{_doc(w)}/", api(200, 404))],
    "api:reprocess": [
        Case(lambda w: f"/api/documents/{_doc(w)}/reprocess/", api(405)),
        # The user's reprocess is still waiting when staff ask: it will do (202).
        Case(
            lambda w: f"/api/documents/{_doc(w)}/reprocess/",
            expect(401, 202, 404, 403, 202, 202),
            "post",
        ),
    ],
    # The original file, for a token as for a session (another's: 404).
    "api:file": [
        Case(lambda w: f"/api/documents/{_doc(w)}/file/", api(200, 404)),
        Case(lambda w: f"/api/documents/{_doc(w)}/file/", api(405), "post"),
    ],
    # The same endpoints without the trailing slash (a POST cannot be redirected).
    "api/documents": [Case(lambda w: "/api/documents", api())],
    "api/documents/<int:pk>/file": [
        Case(lambda w: f"/api/documents/{_doc(w)}/file", api(200, 404))
    ],
    "api/documents/<int:pk>": [
        Case(lambda w: f"/api/documents/{_doc(w)}", api(200, 404))
    ],
    "api/documents/<int:pk>/reprocess": [
        Case(
            lambda w: f"/api/documents/{_doc(w)}/reprocess",
            expect(401, 202, 404, 403, 202, 202),
            "post",
        ),
    ],
    # The API's description is public: nothing in it is private.
    "api:schema": [Case(lambda w: "/api/schema/", PUBLIC)],
    "api:docs": [Case(lambda w: "/api/docs/", PUBLIC)],
    # Anything else under /api/: a JSON 404 for everyone.
    "api/^.*$": [Case(lambda w: "/api/no-such-thing/", expect(*[404] * 6))],
    # Cron: only the bearer token counts, never a session (token cases below).
    "jobqueue:cron": [
        Case(lambda w: "/queue/cron/", NOT_ALLOWED),
        Case(
            lambda w: "/queue/cron/",
            expect(401, 401, 401, 401, 401, 401),
            "post",
            anonymous_to_login=False,
        ),
    ],
    "queue/cron": [
        Case(
            lambda w: "/queue/cron",
            expect(401, 401, 401, 401, 401, 401),
            "post",
            anonymous_to_login=False,
        ),
    ],
    # The admin site's own pages.
    "admin:index": [Case(lambda w: "/admin/", admin_page(200, 200, 200))],
    "admin:login": [
        Case(
            lambda w: "/admin/login/",
            expect(200, 200, 200, 302, 302, 302),
            anonymous_to_login=False,
        )
    ],
    # Not logged in as staff: sent to the admin index (and from there to its login).
    "admin:logout": [
        Case(
            lambda w: "/admin/logout/",
            admin_page(405, 405, 405),
            anonymous_to_login=False,
        )
    ],
    "admin:password_change": [
        Case(lambda w: "/admin/password_change/", admin_page(200, 200, 200))
    ],
    "admin:password_change_done": [
        Case(lambda w: "/admin/password_change/done/", admin_page(200, 200, 200))
    ],
    # Without its query parameters the autocomplete view refuses everyone.
    "admin:autocomplete": [
        Case(lambda w: "/admin/autocomplete/", admin_page(403, 403, 403))
    ],
    "admin:jsi18n": [Case(lambda w: "/admin/jsi18n/", admin_page(200, 200, 200))],
    # Django's "view on site" shortcut redirects to the object's own (protected) page.
    "admin:view_on_site": [
        Case(
            lambda w: f"/admin/r/{w.document_type}/{_doc(w)}/",
            REDIRECT,
            anonymous_to_login=False,
        )
    ],
    "admin:app_list": [
        Case(lambda w: "/admin/documents/", admin_page(200, 200, 200)),
        Case(lambda w: "/admin/jobqueue/", admin_page(200, 200, 200)),
        Case(lambda w: "/admin/auth/", admin_page(404, 404, 200)),
        Case(lambda w: "/admin/knox/", admin_page(404, 404, 200)),
        Case(lambda w: "/admin/axes/", admin_page(404, 404, 200)),
    ],
    r"admin/(?P<url>.*)$": [
        Case(lambda w: "/admin/no-such-page/", admin_page(404, 404, 404))
    ],
    # Operators' pages of the queue admin.
    "admin:jobqueue_dashboard": [
        Case(
            lambda w: "/admin/jobqueue/queueitem/dashboard/", admin_page(200, 200, 200)
        )
    ],
    "admin:jobqueue_pause": [
        Case(
            lambda w: "/admin/jobqueue/queueitem/dashboard/pause/",
            admin_page(405, 405, 405),
        ),
        Case(
            lambda w: "/admin/jobqueue/queueitem/dashboard/pause/",
            admin_page(403, 302, 302),
            "post",
            data=lambda: {"paused": "0"},
        ),
    ],
    # The item page's buttons (the job is completed: each answers with a message).
    "admin:jobqueue_queueitem_retry": [
        Case(
            lambda w: f"/admin/jobqueue/queueitem/{w.job.pk}/retry/",
            admin_page(405, 405, 405),
        ),
        Case(
            lambda w: f"/admin/jobqueue/queueitem/{w.job.pk}/retry/",
            admin_page(403, 302, 302),
            "post",
        ),
    ],
    "admin:jobqueue_queueitem_cancel": [
        Case(
            lambda w: f"/admin/jobqueue/queueitem/{w.job.pk}/cancel/",
            admin_page(405, 405, 405),
        ),
        Case(
            lambda w: f"/admin/jobqueue/queueitem/{w.job.pk}/cancel/",
            admin_page(403, 302, 302),
            "post",
        ),
    ],
    "admin:jobqueue_clear_old": [
        Case(
            lambda w: "/admin/jobqueue/queueitem/clear-old/", admin_page(403, 200, 200)
        )
    ],
}


@dataclass(frozen=True)
class ModelRules:
    """Expected (viewer, staff, superuser) statuses for a registered model's pages."""

    obj: Callable[[Any], Any]
    changelist: tuple[int, int, int]
    add: tuple[int, int, int]
    change: tuple[int, int, int]
    delete: tuple[int, int, int]
    history: tuple[int, int, int]
    extra: dict[str, tuple[str, tuple[int, int, int]]] = field(default_factory=dict)


OK = (200, 200, 200)
READ_ONLY = (403, 403, 403)  # nobody may add (or delete) these, not even a superuser
OPERATOR = (403, 200, 200)  # needs a permission the view-only staff lacks
SUPERUSER = (403, 403, 200)  # auth and tokens: not the operators' business

ADMIN_MODELS: dict[str, ModelRules] = {
    # Read-only records, reprocessed through an action; uploads go through the form.
    "documents_document": ModelRules(
        lambda w: w.document, OK, READ_ONLY, OK, OPERATOR, OK
    ),
    # A finished job may be deleted; an active one may not (see the next test).
    "jobqueue_queueitem": ModelRules(lambda w: w.job, OK, READ_ONLY, OK, OPERATOR, OK),
    "jobqueue_workerheartbeat": ModelRules(
        lambda w: w.heartbeat, OK, READ_ONLY, OK, OPERATOR, OK
    ),
    "jobqueue_extractionmetric": ModelRules(
        lambda w: w.metric, OK, READ_ONLY, OK, READ_ONLY, OK
    ),
    "auth_user": ModelRules(
        lambda w: w.users["user"],
        SUPERUSER,
        SUPERUSER,
        SUPERUSER,
        SUPERUSER,
        SUPERUSER,
        extra={"password_change": ("password/", SUPERUSER)},
    ),
    "auth_group": ModelRules(
        lambda w: w.group, SUPERUSER, SUPERUSER, SUPERUSER, SUPERUSER, SUPERUSER
    ),
    # Login throttling's records (django-axes): the superuser's, like users; made by
    # failed logins, never by hand.
    **{
        f"axes_{name}": ModelRules(
            lambda w, name=name: w.axes[name],
            SUPERUSER,
            READ_ONLY,
            SUPERUSER,
            SUPERUSER,
            SUPERUSER,
        )
        for name in ("accessattempt", "accesslog", "accessfailurelog")
    },
    "knox_authtoken": ModelRules(
        lambda w: w.token,
        SUPERUSER,
        SUPERUSER,
        SUPERUSER,
        SUPERUSER,
        SUPERUSER,
    ),
}


def model_cases() -> dict[str, list[Case]]:
    """Cases for the pages Django's admin makes for each model in ADMIN_MODELS."""
    cases: dict[str, list[Case]] = {}
    for key, rules in ADMIN_MODELS.items():
        app, model = key.split("_", 1)
        base = f"/admin/{app}/{model}/"

        def obj_url(suffix: str, rules: ModelRules = rules, base: str = base):
            return lambda w: f"{base}{rules.obj(w).pk}/{suffix}"

        pages = {
            "changelist": (lambda w, base=base: base, rules.changelist),
            "add": (lambda w, base=base: f"{base}add/", rules.add),
            "change": (obj_url("change/"), rules.change),
            "delete": (obj_url("delete/"), rules.delete),
            "history": (obj_url("history/"), rules.history),
        }
        for name, (suffix, statuses) in rules.extra.items():
            pages[name] = (obj_url(suffix), statuses)
        for name, (path, statuses) in pages.items():
            cases[f"admin:{key}_{name}"] = [Case(path, admin_page(*statuses))]
        # The bare object URL redirects to its change page.
        cases[f"admin/{app}/{model}/<path:object_id>/"] = [Case(obj_url(""), REDIRECT)]
    return cases


MATRIX: dict[str, list[Case]] = {**PROJECT, **model_cases()}


# --- Introspection ---------------------------------------------------------------------


def url_keys(
    patterns: list | None = None, prefix: str = "", namespace: str = ""
) -> Iterator[tuple[str, str]]:
    """(key, route) for every URL: ``namespace:name``, or the route when unnamed."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            ns = namespace
            if pattern.namespace:
                ns = (
                    f"{namespace}:{pattern.namespace}"
                    if namespace
                    else pattern.namespace
                )
            yield from url_keys(pattern.url_patterns, route, ns)
        elif isinstance(pattern, URLPattern):
            if pattern.name:
                yield (
                    (f"{namespace}:{pattern.name}" if namespace else pattern.name),
                    route,
                )
            else:
                yield route, route


def test_every_url_is_in_the_matrix():
    routes = dict(url_keys())
    missing = sorted(
        f"{key}  ({route})" for key, route in routes.items() if key not in MATRIX
    )
    assert not missing, (
        "URLs without access rules in tests/test_access.py:\n" + "\n".join(missing)
    )
    stale = sorted(set(MATRIX) - set(routes))
    assert not stale, f"matrix rows for URLs that no longer exist: {stale}"


def test_every_admin_model_has_rules():
    registered = {
        f"{m._meta.app_label}_{m._meta.model_name}" for m in admin.site._registry
    }
    assert registered == set(ADMIN_MODELS)


# --- The world the matrix runs in ------------------------------------------------------


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def world(db, settings, user, other_user, django_user_model, make_document):
    """A document of "user", a finished job with its metric, a worker, and one
    user per role (view-only staff, operator staff with every queue and document
    permission, superuser)."""
    settings.CRON_TOKEN = CRON_TOKEN

    def perms(*apps: str, only: str = "") -> list[Permission]:
        found = Permission.objects.filter(content_type__app_label__in=apps)
        return list(found.filter(codename__startswith=only) if only else found)

    viewer = django_user_model.objects.create_user("viewer", is_staff=True)
    viewer.user_permissions.set(perms("documents", "jobqueue", only="view_"))
    staff = django_user_model.objects.create_user("operator", is_staff=True)
    staff.user_permissions.set(perms("documents", "jobqueue"))
    superuser = django_user_model.objects.create_superuser("root")
    access = {"username": "mallory", "ip_address": "192.0.2.1", "path_info": "/"}
    document = make_document(b"hello world\n", "private.txt")
    job = QueueItem.objects.create(document=document, status=Status.COMPLETED)
    return SimpleNamespace(
        document=document,
        document_type=ContentType.objects.get_for_model(document).pk,
        job=job,
        metric=ExtractionMetric.objects.create(
            job=job, document=document, outcome="completed"
        ),
        # Stopped: a live worker's row may not be deleted by anyone (test_admin).
        heartbeat=WorkerHeartbeat.objects.create(
            worker_id="host:1:abcd:w1", status=WorkerHeartbeat.State.STOPPED
        ),
        group=Group.objects.create(name="operators"),
        axes={
            model._meta.model_name: model.objects.create(**access, **extra)
            for model, extra in (
                (AccessAttempt, {"failures_since_start": 1}),
                (AccessLog, {}),
                (AccessFailureLog, {}),
            )
        },
        token=create_token(user)[0],
        key=create_token(user)[1],
        users={
            "anonymous": None,
            "user": user,
            "other": other_user,
            "viewer": viewer,
            "staff": staff,
            "superuser": superuser,
        },
    )


def client_for(world, role: str, **kwargs: Any) -> Client:
    client = Client(**kwargs)
    if world.users[role] is not None:
        client.force_login(world.users[role])
    return client


def request(client: Client, case: Case, world) -> Any:
    data = case.data() if case.data else None
    return getattr(client, case.method)(case.path(world), data)


@pytest.mark.django_db
@pytest.mark.parametrize("key", list(MATRIX))
def test_access_matrix(world, key):
    problems = []
    for case in MATRIX[key]:
        for role in ROLES:
            response = request(client_for(world, role), case, world)
            want = case.expected[role]
            where = f"{case.method.upper()} {case.path(world)} as {role}"
            if response.status_code != want:
                problems.append(f"{where}: {response.status_code}, expected {want}")
            elif want == 302 and role == "anonymous" and case.anonymous_to_login:
                if "login" not in response["Location"]:
                    problems.append(f"{where}: redirects to {response['Location']}")
            elif want == 401 and "WWW-Authenticate" not in response:
                problems.append(f"{where}: 401 without WWW-Authenticate")
    assert not problems, "\n".join(problems)


@pytest.mark.django_db
def test_an_active_job_cannot_be_deleted_even_by_a_superuser(world):
    QueueItem.objects.filter(pk=world.job.pk).update(status=Status.PROCESSING)
    client = client_for(world, "superuser")
    url = f"/admin/jobqueue/queueitem/{world.job.pk}/delete/"
    assert client.get(url).status_code == 403
    assert client.post(url, {"post": "yes"}).status_code == 403
    assert QueueItem.objects.filter(pk=world.job.pk).exists()


# --- CSRF ------------------------------------------------------------------------------

# Views that take no browser session (their credential is a header, not a cookie),
# and the API's answer to an address that is no endpoint, which changes nothing.
CSRF_EXEMPT = {"jobqueue:cron", "queue/cron", "api/^.*$"}


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["anonymous", "superuser"])
def test_every_post_without_the_csrf_token_is_refused(world, role):
    """Every URL, not only the known forms: a new form cannot forget CSRF."""
    problems = []
    for key, cases in MATRIX.items():
        if key in CSRF_EXEMPT:
            continue
        url = cases[0].path(world)
        client = client_for(world, role, enforce_csrf_checks=True)
        response = client.post(url, {"file": SimpleUploadedFile("a.txt", b"x\n")})
        body = response.content.decode(errors="replace")
        if role == "anonymous" and key.startswith(("api:", "api/documents")):
            # No session, no CSRF to check: the API wants credentials first (the
            # public schema and docs refuse the method).
            refused = response.status_code in (401, 405)
        else:
            # 405: a view that takes no POST at all (the public schema and docs).
            refused = response.status_code == 405 or (
                response.status_code == 403 and "CSRF" in body
            )
        if not refused:
            problems.append(f"POST {url}: {response.status_code}")
    assert not problems, "\n".join(problems)


@pytest.mark.django_db
def test_forms_work_with_the_csrf_token(world):
    client = client_for(world, "user", enforce_csrf_checks=True)
    client.get("/documents/upload/")
    token = client.cookies["csrftoken"].value
    response = client.post(
        "/documents/upload/",
        {"file": SimpleUploadedFile("ok.txt", b"fine\n"), "csrfmiddlewaretoken": token},
    )
    assert response.status_code == 302
    response = client.post(
        f"/documents/{world.document.pk}/reprocess/", {"csrfmiddlewaretoken": token}
    )
    assert response.status_code == 302


@pytest.mark.django_db
def test_the_api_takes_a_token_without_csrf_but_a_session_needs_it(world):
    upload = {"file": SimpleUploadedFile("t.txt", b"by token\n")}
    client = Client(enforce_csrf_checks=True)
    response = client.post(
        "/api/documents/", upload, HTTP_AUTHORIZATION=f"Token {world.key}"
    )
    assert response.status_code == 202
    session = client_for(world, "user", enforce_csrf_checks=True)
    response = session.post(
        "/api/documents/", {"file": SimpleUploadedFile("s.txt", b"x")}
    )
    assert response.status_code == 403
    assert "CSRF" in response.json()["error"]["message"]


# --- Cron token ------------------------------------------------------------------------


# Committed, as in production: a run's worker threads read the jobs on their own
# connections, and its end closes the request's.
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("header", "status"),
    [
        (None, 401),
        ("", 401),
        ("Bearer", 401),
        ("Bearer ", 401),
        (f"Token {CRON_TOKEN}", 401),
        (f"Basic {CRON_TOKEN}", 401),
        ("Bearer wrong-token", 403),
        (f"Bearer {CRON_TOKEN}x", 403),
        (f"Bearer {CRON_TOKEN[:-1]}", 403),
        (f"Bearer {CRON_TOKEN.upper()}", 403),
        (f"Bearer {CRON_TOKEN}", 200),
        (f"bearer {CRON_TOKEN}", 200),
    ],
)
def test_cron_token(world, header, status):
    headers = {} if header is None else {"HTTP_AUTHORIZATION": header}
    response = Client().post("/queue/cron/", **headers)
    assert response.status_code == status
    if status == 200:
        assert response.json() == {
            "processed": 0,
            "completed": 0,
            "failed": 0,
            "paused": False,
        }
    else:  # in the error shape of the API and the site's 405s
        error = response.json()["error"]
        assert set(error) == {"code", "message", "fields"}
        assert (
            error["code"]
            == {401: "not_authenticated", 403: "permission_denied"}[status]
        )


@pytest.mark.django_db
@pytest.mark.parametrize("token", ["", None])
def test_cron_is_disabled_without_a_token_even_for_an_empty_bearer(settings, token):
    settings.CRON_TOKEN = ""
    headers = {} if token is None else {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    assert Client().post("/queue/cron/", **headers).status_code == 404
    assert Client().get("/queue/cron/", **headers).status_code == 404


# --- Private uploads -------------------------------------------------------------------


@pytest.mark.django_db
def test_uploaded_files_are_reachable_only_through_the_owner(world, media_root):
    name = world.document.file.name  # documents/<random>.txt
    assert (media_root / name).exists()
    for role in ROLES:
        client = client_for(world, role)
        for url in (
            f"/media/{name}",
            f"/{name}",
            f"/var/media/{name}",
            f"/static/../media/{name}",
            f"/static/%2e%2e/media/{name}",
            f"/documents/../media/{name}",
        ):
            assert client.get(url).status_code == 404, (role, url)
    download = f"/documents/{world.document.pk}/download/"
    owner = client_for(world, "user").get(download)
    assert owner.status_code == 200
    assert b"".join(owner.streaming_content) == b"hello world\n"
    assert client_for(world, "other").get(download).status_code == 404
    assert Client().get(download).status_code == 302
    # A token is for the API, which never serves the file; the page needs a session.
    token = {"HTTP_AUTHORIZATION": f"Token {world.key}"}
    assert Client().get(download, **token).status_code == 302
    other_key = create_token(world.users["other"])[1]
    api_url = f"/api/documents/{world.document.pk}/"
    assert Client().get(api_url, **token).status_code == 200
    assert (
        Client().get(api_url, HTTP_AUTHORIZATION=f"Token {other_key}").status_code
        == 404
    )
    assert (
        Client().get(api_url, HTTP_AUTHORIZATION="Token not-a-token").status_code == 401
    )


# --- Production settings ---------------------------------------------------------------

PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": secrets.token_urlsafe(60),
    "ALLOWED_HOSTS": "docs.example.com",
    "SECURE_SSL_REDIRECT": "1",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
    "SECURE_HSTS_PRELOAD": "1",
    "SECURE_COOKIES": "1",
    "TRUST_X_FORWARDED_PROTO": "1",
}


def production_env() -> dict[str, str]:
    keep = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SECURE_", "DJANGO_"))
        and k not in {"DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "TRUST_X_FORWARDED_PROTO"}
    }
    return {**keep, **PRODUCTION}


def manage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO_ROOT,
        env=production_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_check_deploy_is_clean_with_production_settings():
    result = manage("check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout + result.stderr


PROBE = """
from django.test import Client
c = Client(HTTP_HOST="docs.example.com")
plain = c.get("/accounts/login/")
tls = c.get("/accounts/login/", HTTP_X_FORWARDED_PROTO="https")
print(plain.status_code, plain["Location"])
print(tls.status_code, tls["Strict-Transport-Security"])
print(tls.cookies["csrftoken"]["secure"])
"""


def test_production_settings_redirect_to_https_and_send_hsts_behind_a_proxy():
    result = manage("shell", "--verbosity", "0", "-c", PROBE)
    assert result.returncode == 0, result.stderr
    plain, tls, secure = result.stdout.splitlines()
    assert plain == "301 https://docs.example.com/accounts/login/"
    assert tls == "200 max-age=31536000; includeSubDomains; preload"
    assert secure == "True"
