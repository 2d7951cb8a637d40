"""An attacker's view: hostile values shown escaped, downloads that cannot run in the
site's origin, no open redirect at login, and no admin action a view-only staff
member can run by crafting a POST. Who may reach which URL is tests/test_access.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, RequestFactory
from django.utils import timezone
from knox.models import AuthToken

from documents.models import Tag
from jobqueue.models import ExtractionMetric, QueueItem, Status, WorkerHeartbeat

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert(1)</script>"
HOSTILE = f'{SCRIPT}"onmouseover=alert(2) javascript:alert(3)'


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def view_only_staff(django_user_model, *apps: str, name: str = "viewer"):
    viewer = django_user_model.objects.create_user(name, is_staff=True)
    viewer.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label__in=apps, codename__startswith="view_"
        )
    )
    return viewer


# --- XSS -------------------------------------------------------------------------------


def test_hostile_values_are_escaped_on_every_page(
    user, make_document, django_user_model
):
    document = make_document(b"hello\n", name="x.html", mime_type="text/html")
    document.original_filename = HOSTILE
    document.title = HOSTILE
    document.text = f"hello world {HOSTILE}"
    document.error_type = "corrupt"
    document.error_message = HOSTILE
    document.status = Status.FAILED
    document.save()
    document.tags.add(Tag.objects.create(owner=user, name=SCRIPT))
    job = QueueItem.objects.create(
        document=document,
        status=Status.FAILED,
        error_message=HOSTILE,
        payload={"args": [HOSTILE], "kwargs": {"x": HOSTILE}},
        result={"r": HOSTILE},
    )
    metric = ExtractionMetric.objects.create(
        job=job, document=document, outcome="failed", error_message=HOSTILE
    )
    WorkerHeartbeat.objects.create(worker_id="w:1", hostname=HOSTILE)
    root = django_user_model.objects.create_superuser("root")
    pk = document.pk
    pages = {
        user: [
            "/documents/",
            f"/documents/{pk}/",
            f"/documents/{pk}/edit/",
            f"/documents/{pk}/delete/",
            "/documents/search/?q=hello",
            f"/documents/search/?q={SCRIPT}",
            f"/documents/?q={SCRIPT}",
        ],
        root: [
            "/admin/documents/document/",
            f"/admin/documents/document/{pk}/change/",
            f"/admin/documents/document/{pk}/delete/",
            "/admin/jobqueue/queueitem/",
            f"/admin/jobqueue/queueitem/{job.pk}/change/",
            "/admin/jobqueue/queueitem/dashboard/",
            "/admin/jobqueue/workerheartbeat/",
            f"/admin/jobqueue/extractionmetric/{metric.pk}/change/",
        ],
    }
    for person, urls in pages.items():
        client = logged_in(person)
        for url in urls:
            response = client.get(url)
            body = response.content.decode()
            assert response.status_code == 200, url
            assert SCRIPT not in body, url
            assert '"onmouseover' not in body, url
    # The search found the text, and its snippet is escaped, not dropped.
    body = logged_in(user).get("/documents/search/?q=hello").content.decode()
    assert "&lt;script&gt;" in body


# --- Downloads -------------------------------------------------------------------------


def test_an_uploaded_html_file_downloads_and_cannot_run_in_the_sites_origin(
    user, make_document
):
    document = make_document(b"<script>alert(1)</script>", "page.html", "text/html")
    response = logged_in(user).get(f"/documents/{document.pk}/download/")
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment;")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Security-Policy"].startswith("sandbox")


@pytest.mark.parametrize(
    ("name", "header"),
    [
        ('a"b\\c.txt', 'attachment; filename="a\\"b\\\\c.txt"'),
        ("a\r\nX-Evil: 1.txt", "attachment; filename*=utf-8''a%0D%0AX-Evil%3A%201.txt"),
        ("résumé.txt", "attachment; filename*=utf-8''r%C3%A9sum%C3%A9.txt"),
    ],
)
def test_a_hostile_filename_stays_inside_content_disposition(
    user, make_document, name, header
):
    document = make_document(b"hello\n", "plain.txt")
    document.original_filename = name
    document.save()
    response = logged_in(user).get(f"/documents/{document.pk}/download/")
    assert response["Content-Disposition"] == header
    assert "X-Evil" not in response.headers


# --- Login -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    ["//evil.com", "/\\evil.com", "https:evil.com", "https://evil.com", "\\\\evil.com"],
)
@pytest.mark.parametrize("login", ["/accounts/login/", "/admin/login/"])
def test_login_never_redirects_to_another_site(django_user_model, login, target):
    django_user_model.objects.create_superuser("root", password="root-password-1")
    response = Client().post(
        f"{login}?next={target}",
        {"username": "root", "password": "root-password-1", "next": target},
    )
    assert response.status_code == 302
    assert response["Location"].startswith("/")
    assert not response["Location"].startswith(("//", "/\\"))


# --- Admin actions ---------------------------------------------------------------------


def test_no_admin_action_is_offered_to_staff_who_may_only_view(django_user_model):
    """Every registered model: staff with only its view permission get no action
    (Django lists an action without ``permissions`` to anyone who sees the list)."""
    problems = []
    for model, model_admin in admin.site._registry.items():
        content_type = ContentType.objects.get_for_model(model)
        viewer = django_user_model.objects.create_user(
            f"viewer-{content_type.pk}", is_staff=True
        )
        viewer.user_permissions.set(
            Permission.objects.filter(
                content_type=content_type, codename__startswith="view_"
            )
        )
        request = RequestFactory().get("/admin/")
        request.user = viewer
        if model_admin.has_view_permission(request):
            actions = sorted(model_admin.get_actions(request))
            if actions:
                problems.append(f"{model._meta.label}: {actions}")
    assert not problems, problems


def test_view_only_staff_cannot_clean_up_login_attempts_by_post(
    django_user_model, settings
):
    # Logged in first: a login itself cleans up expired attempts.
    viewer = logged_in(view_only_staff(django_user_model, "axes"))
    root = logged_in(django_user_model.objects.create_superuser("root"))
    attempt = AccessAttempt.objects.create(
        username="mallory", ip_address="192.0.2.1", failures_since_start=1
    )
    old = timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(hours=1)
    AccessAttempt.objects.filter(pk=attempt.pk).update(attempt_time=old)
    data = {"action": "cleanup_expired_attempts", "_selected_action": [attempt.pk]}
    viewer.post("/admin/axes/accessattempt/", data)
    assert AccessAttempt.objects.filter(pk=attempt.pk).exists()
    root.post("/admin/axes/accessattempt/", data)
    assert not AccessAttempt.objects.filter(pk=attempt.pk).exists()


@pytest.mark.parametrize(
    ("changelist", "action"),
    [
        ("jobqueue/queueitem", "retry_anyway"),
        ("jobqueue/queueitem", "cancel_jobs"),
        ("jobqueue/queueitem", "raise_priority"),
        ("jobqueue/queueitem", "release_jobs"),
        ("jobqueue/queueitem", "delete_selected"),
        ("documents/document", "reprocess"),
        ("documents/document", "delete_selected"),
        ("jobqueue/workerheartbeat", "rescue_stale_jobs"),
        ("jobqueue/workerheartbeat", "delete_selected"),
    ],
)
def test_view_only_staff_cannot_run_an_action_by_crafting_a_post(
    user, make_document, django_user_model, changelist, action
):
    document = make_document()
    failed = QueueItem.objects.create(
        document=document, status=Status.FAILED, error_type="timeout"
    )
    waiting = QueueItem.objects.create(
        document=make_document(b"other\n"), status=Status.PENDING
    )
    worker = WorkerHeartbeat.objects.create(
        worker_id="host:1:abcd:w1", status=WorkerHeartbeat.State.STOPPED
    )
    ids = {
        "jobqueue/queueitem": [failed.pk, waiting.pk],
        "documents/document": [document.pk],
        "jobqueue/workerheartbeat": [worker.pk],
    }[changelist]

    def state() -> list:
        return [
            list(QueueItem.objects.order_by("pk").values_list("status", "priority")),
            list(document.__class__.objects.order_by("pk").values_list("pk")),
            list(WorkerHeartbeat.objects.values_list("pk")),
        ]

    before = state()
    viewer = view_only_staff(django_user_model, "documents", "jobqueue")
    logged_in(viewer).post(
        f"/admin/{changelist}/",
        {"action": action, "_selected_action": ids, "index": 0, "post": "yes"},
    )
    assert state() == before


# --- Anonymous bodies, proxies, API keys -----------------------------------------------


def test_an_anonymous_form_over_the_upload_limits_is_refused_not_a_server_error(
    settings,
):
    """An anonymous body was parsed first by the CSRF check, where the limits'
    refusal was a 500 (anyone could flood the error log)."""
    settings.MAX_UPLOAD_MB, settings.MAX_UPLOAD_FILES = 1, 2
    client = Client(enforce_csrf_checks=True)
    files = {f"f{n}": SimpleUploadedFile(f"{n}.txt", b"x") for n in range(3)}
    response = client.post("/accounts/login/", {"username": "x", **files})
    assert response.status_code == 400
    assert "At most 2 files at once" in response.content.decode()
    big = SimpleUploadedFile("big.txt", b"x" * (1024 * 1024 + 1))
    assert client.post("/admin/login/", {"f": big}).status_code == 413


def login_from(address: str, username: str, password: str, forwarded: str = ""):
    """A login through a proxy at 127.0.0.1 for a client at ``address``."""
    chain = f"{forwarded}, {address}" if forwarded else address
    return Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=chain).post(
        "/accounts/login/", {"username": username, "password": password}
    )


def test_behind_a_proxy_a_lock_out_is_the_failing_clients_alone(settings, user):
    """With TRUST_X_FORWARDED_FOR, failed logins count per client: one client's
    failures (whatever it claims to forward) do not lock the user out for all."""
    settings.TRUST_X_FORWARDED_FOR = True
    for _ in range(settings.AXES_FAILURE_LIMIT):
        login_from("203.0.113.7", "alice", "wrong", forwarded=f"10.0.0.{_}")
    assert login_from("203.0.113.7", "alice", "alice-password-1").status_code == 429
    assert login_from("198.51.100.2", "alice", "alice-password-1").status_code == 302


@pytest.mark.parametrize(
    ("client", "other"),
    [
        ("203.0.113.7:51000", "198.51.100.2:51000"),
        ("[2001:db8::7]:443", "[2001:db8::2]"),
    ],
)
def test_a_forwarded_address_with_its_port_is_still_the_client(
    settings, user, client, other
):
    """Some proxies write the client's port: taken for no address, every client
    counted as the proxy, and one's failures locked the user out for all."""
    settings.TRUST_X_FORWARDED_FOR = True
    for _ in range(settings.AXES_FAILURE_LIMIT):
        login_from(client, "alice", "wrong")
    assert login_from(client, "alice", "alice-password-1").status_code == 429
    assert login_from(other, "alice", "alice-password-1").status_code == 302


def test_without_trusting_a_proxy_its_forwarded_address_is_ignored(settings, user):
    assert not settings.TRUST_X_FORWARDED_FOR
    for n in range(settings.AXES_FAILURE_LIMIT):
        login_from(f"203.0.113.{n}", "alice", "wrong")
    assert login_from("198.51.100.2", "alice", "alice-password-1").status_code == 429


@pytest.fixture
def token_maker(django_user_model):
    """Staff who may make API tokens, and nothing else."""
    staff = django_user_model.objects.create_user("tokens", is_staff=True)
    staff.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="knox", codename__in=["add_authtoken"]
        )
    )
    return staff


def test_staff_who_make_tokens_make_only_their_own(token_maker, django_user_model):
    """A key acts as its user on the API: one made for a superuser was that
    superuser's every right; only a superuser makes keys for others."""
    root = django_user_model.objects.create_superuser("root", password="x" * 12)
    client = logged_in(token_maker)
    add = "/admin/knox/authtoken/add/"
    response = client.post(add, {"user": root.pk, "expiry": ""})
    assert response.status_code == 200  # the form again, with its error
    assert not AuthToken.objects.exists()
    assert client.post(add, {"user": token_maker.pk, "expiry": ""}).status_code == 302
    assert logged_in(root).post(add, {"user": token_maker.pk}).status_code == 302
    assert (
        list(AuthToken.objects.values_list("user", flat=True)) == [token_maker.pk] * 2
    )


def test_a_new_api_key_is_never_written_into_a_cookie(admin_client, admin_user):
    response = admin_client.post(
        "/admin/knox/authtoken/add/", {"user": admin_user.pk, "expiry": ""}
    )
    assert response.status_code == 302
    assert "messages" not in response.cookies
    page = admin_client.get(response.url).content.decode()
    assert "The new key for" in page


@pytest.mark.parametrize(
    "url", ["/accounts/password_reset/", "/accounts/reset/MQ/set-password/"]
)
def test_there_is_no_password_reset_form_to_probe_for_accounts(client, url):
    """The site sends no e-mail: an open reset form only answered strangers, by
    its timing, which addresses have accounts."""
    assert client.get(url).status_code == 404
    assert client.post(url, {"email": "someone@example.com"}).status_code in (403, 404)
