"""Property-based fuzz of the API's inputs (Hypothesis): whatever the method, path, id,
query string, multipart fields or headers, the answer is never a server error."""

from __future__ import annotations

import os

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from documents.tokens import create_token
from tests.conftest import grant_operator

pytestmark = pytest.mark.django_db

# Header values arrive as latin-1 text; NUL and control characters included.
latin1 = st.text(st.characters(max_codepoint=255), max_size=40)
numbers = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(
        ["", "0", "-1", "1.5", "1e9", "0x1f", "²", "١", " 1", "NaN", "9" * 20]
    ),
    latin1,
)
ids = st.one_of(st.integers(0, 2**70).map(str), st.sampled_from(["1", "2", "abc"]))
paths = st.one_of(
    st.just("/api/documents/"),
    ids.map(lambda i: f"/api/documents/{i}/"),
    ids.map(lambda i: f"/api/documents/{i}/reprocess/"),
    st.sampled_from(["/api/documents", "/api/schema/", "/api/nope/", "/api/"]),
)
query_params = st.fixed_dictionaries(
    {},
    optional={
        "q": st.one_of(st.sampled_from(["hello", "inv*", "a*", '"a b"', "-x"]), latin1),
        "page": numbers,
        "page_size": numbers,
        "status": st.one_of(st.sampled_from(["completed", "failed"]), latin1),
        "type": st.one_of(st.sampled_from(["application/pdf", "text/plain"]), latin1),
        "format": st.sampled_from(["json", "api", "xml", ""]),
    },
)
form_fields = st.dictionaries(
    st.sampled_from(["priority", "allow_duplicates", "file", "other"]),
    st.one_of(numbers, st.sampled_from(["true", "false", "on", "100", "-100"])),
    max_size=3,
)
files = st.lists(
    st.tuples(
        # Leave out names the test client cannot send (Django's UploadedFile refuses a
        # name whose last part is empty, "." or ".."; a browser sends none of those).
        st.text(max_size=30).filter(
            lambda n: "\x00" not in n and os.path.basename(n) not in {"", ".", ".."}
        ),
        st.binary(max_size=300),
    ),
    max_size=2,
)
headers = st.fixed_dictionaries(
    {},
    optional={
        "HTTP_AUTHORIZATION": st.one_of(
            latin1,
            latin1.map(lambda t: f"Token {t}"),
            latin1.map(lambda t: f"Bearer {t}"),
        ),
        "HTTP_ACCEPT": st.sampled_from(
            ["application/json", "text/html", "*/*", "application/xml", "x;;"]
        ),
        "HTTP_X_FORWARDED_FOR": latin1,
        "HTTP_ACCEPT_LANGUAGE": latin1,
    },
)


@pytest.fixture
def clients(settings, user, make_document):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"user": "100000/minute", "uploads": "100000/minute"},
    }
    make_document()
    session = Client(raise_request_exception=False)
    session.force_login(user)
    operator = Client(raise_request_exception=False)
    operator.force_login(grant_operator(type(user).objects.create_user("op")))
    key = create_token(user)[1]
    token = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Token {key}")
    return [session, operator, token, Client(raise_request_exception=False)]


FUZZ = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def check(response) -> None:
    """Never a server error; an error answer has the JSON shape with a message."""
    assert response.status_code < 500, response.content[:300]
    if response.status_code >= 400 and response.get("Content-Type", "").startswith(
        "application/json"
    ):
        assert response.json()["error"]["message"]


@FUZZ
@given(who=st.integers(0, 2), query=query_params)
# Found by this fuzz: a page number int() refuses, and one beyond 64 bits.
@example(who=0, query={"q": "hello", "page": "²"})
@example(who=0, query={"q": "hello", "page": "9" * 20})
def test_list_and_search_parameters(clients, who, query):
    check(clients[who].get("/api/documents/", query))


@FUZZ
@given(who=st.integers(0, 2), fields=form_fields, uploads=files, as_json=st.booleans())
def test_upload_fields(clients, who, fields, uploads, as_json):
    client = clients[who]
    if as_json:
        check(client.post("/api/documents/", fields, content_type="application/json"))
        return
    data = dict(fields)
    if uploads:
        data["file"] = [SimpleUploadedFile(n or "x", c) for n, c in uploads]
    check(client.post("/api/documents/", data))


@FUZZ
@given(
    who=st.integers(0, 3),
    method=st.sampled_from(["get", "post", "delete", "put", "patch", "options"]),
    path=paths,
    fields=form_fields,
)
def test_ids_methods_and_paths(clients, who, method, path, fields):
    client = clients[who]
    if method == "get":
        check(client.get(path))
    else:
        check(getattr(client, method)(path, fields, content_type="application/json"))


@FUZZ
@given(extra=headers, path=paths)
def test_headers(clients, extra, path):
    check(Client(raise_request_exception=False).get(path, **extra))
    check(clients[0].post("/api/documents/", {}, **extra))
