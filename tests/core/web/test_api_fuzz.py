"""Property-based fuzzing of every JSON API route (Hypothesis), enumerated from the FastAPI app so
a route is fuzzed the day it is added: random methods, path parameters (ids, prefixes, NUL,
%-encodings), query strings and bodies (deep, wide, wrongly typed, huge, NUL and lone
surrogates, random bytes, wrong content types), with a valid token, a foreign or broken one, or
none. No answer may be a server error, and the process's memory must stay bounded.

The default suite runs 300 cases; the ``fuzz`` tier (``-m fuzz``) runs 10,000 and prints the
count of cases, the statuses and the memory growth.
"""

from __future__ import annotations

import ctypes
import gc
import json
import re
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import make_world
from fixtures_web import REPO, web_settings
from resolveflow.accounts import admin
from resolveflow.bootstrap.app import App, open_app
from resolveflow.domain.records import Role
from resolveflow.mail import admin as mail_admin
from resolveflow.mail.domain.mailbox import tenant_mailboxes
from resolveflow.mail.importer import MailImporter
from resolveflow.mail.loader import MailSource
from resolveflow.retrieval.ingest import Indexer
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.web import create_app

pytest_plugins = ["fixtures_web"]

CAP = 64 * 1024  # RESOLVEFLOW_WEB_MAX_BODY_BYTES's floor, so that "huge" bodies cost little
SMALL, FULL = 300, 10_000
GROWTH_CEILING = 256 * 1024 * 1024  # resident memory, across the whole run
_PARAM = re.compile(r"\{(\w+)(?::\w+)?\}")
_METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE"}
MAIL = Path(__file__).parents[2] / "data" / "mail"
MAILBOX = "support@acme.example"
REQUEST = (
    "From: Kim Park <kim@customer.example>\nTo: support@acme.example\n"
    "Subject: My password reset link expired\nMessage-ID: <req-kim@customer.example>\n\n"
    "Hi, the reset link expired before I could use it. How do I reset my password?\nKim\n"
)


@dataclass(frozen=True)
class Operation:
    method: str
    path: str  # the template, "/api/v1/runs/{run_id}"
    # The JSON body's top-level fields and their JSON schemas, from the OpenAPI schema.
    fields: tuple[tuple[str, dict[str, Any]], ...]


@dataclass
class Target:
    client: TestClient
    operations: list[Operation]
    tokens: dict[str, str | None]
    ids: list[str]
    statuses: Counter[int] = field(default_factory=Counter)


def api_operations(app: Any) -> list[Operation]:
    """Every operation of every ``/api/v1`` route, from the app's own OpenAPI schema (FastAPI
    builds it from the routes; every API route is in it), with its body's fields."""
    schema = app.openapi()
    return [
        Operation(method.upper(), path, _body_fields(schema, spec))
        for path, item in schema["paths"].items()
        if path.startswith("/api/v1")
        for method, spec in item.items()
        if method.upper() in _METHODS
    ]


def _body_fields(
    schema: dict[str, Any], spec: dict[str, Any]
) -> tuple[tuple[str, dict[str, Any]], ...]:
    body = spec.get("requestBody", {}).get("content", {}).get("application/json", {})
    model = body.get("schema", {})
    if "$ref" in model:
        model = schema["components"]["schemas"][model["$ref"].rsplit("/", 1)[-1]]
    return tuple(model.get("properties", {}).items())


def _rss() -> int:
    """Resident memory in use: freed memory is first given back (glibc keeps freed arenas,
    which would count the largest bodies' transient peaks as growth)."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _with_mailbox(app: App, tenant_id: uuid.UUID) -> None:
    configured = tenant_mailboxes(app.policy(), "acme")
    for subject in ("rita", "alex"):
        mail_admin.set_mailbox_grant(app.db, "acme", subject, MAILBOX, configured, granted=True)
    source = MailSource(MAIL / "support-eml")
    MailImporter(app.db, Indexer(app.db, app.embedder())).run(
        tenant_id, MAILBOX, source, source.skipped
    )


@pytest.fixture
def target(queue_ready: str, oauth_github: FakeGitHubWithOAuth, tmp_path: Path) -> Iterator[Target]:
    policy = tmp_path / "policy.toml"  # a mailbox, so that drafts and their versions exist
    policy.write_text(f'[tenants.acme.mailboxes."{MAILBOX}"]\nsmtp_host = "127.0.0.1"\n')
    settings = web_settings(
        queue_ready, oauth_github.url, web_max_body_bytes=CAP, policy_file=policy
    )
    with open_app(settings, auto_migrate=False) as app:
        world = make_world(app.db)
        admin.add_tenant(app.db, "evil")
        evil = admin.add_principal(app.db, "evil", "eve", [Role.APPROVER]).token
        _with_mailbox(app, world.tenant.id)
        web = create_app(app)
        with TestClient(web, base_url="https://testserver") as client:
            signed = {"Authorization": f"Bearer {world.requester_token}"}
            started = client.post("/api/v1/runs", json={"issue": f"{REPO}#1"}, headers=signed)
            assert started.status_code == 201, started.text
            draft = client.post(
                "/api/v1/mail/drafts", json={"mailbox": MAILBOX, "request": REQUEST}, headers=signed
            )
            assert draft.status_code == 201, draft.text
            proposal = draft.json()["latest"]["proposal"] or {"id": str(uuid.uuid4())}
            tokens = {
                "requester": world.requester_token,
                "approver": world.approver_token,
                "other tenant": evil,
                "none": None,
                "unknown": "rf_" + uuid.uuid4().hex + "_" + "x" * 43,
                "garbage": "x\x7fy",
            }
            ids = [started.json()["run_id"], draft.json()["id"], proposal["id"]]
            yield Target(client, api_operations(web), tokens, ids)


@pytest.fixture(params=[SMALL, pytest.param(FULL, marks=pytest.mark.fuzz)], ids=str)
def cases(request: pytest.FixtureRequest) -> int:
    return int(request.param)


# --- inputs --------------------------------------------------------------------------------

nasty_text = st.text(max_size=40) | st.sampled_from(
    ["", "\x00", "a\x00b", "\ud800", "x\udfff", "\U0001f600", "\u202e", " ", "%00", "../.."]
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | nasty_text,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(nasty_text.map(str), inner, max_size=4)
    ),
    max_leaves=12,
)
deep = st.builds(
    lambda pair, depth, closed: pair[0] * depth + (b"1" + pair[1] * depth if closed else b""),
    st.sampled_from([(b"[", b"]"), (b'{"a":', b"}"), (b'{"question":[', b"]")]),
    st.integers(1, 60_000),
    st.booleans(),
)
wide = st.builds(
    lambda n, value: json.dumps({"x": [value] * n}).encode(),
    st.integers(0, 10_000),
    st.sampled_from([0, "x", None, {"a": 1}]),
)
huge = st.builds(
    lambda unit, n: unit * n,
    st.sampled_from([b" ", b"[", b'"a",', b"\xff"]),
    st.integers(CAP // 4, CAP * 3),
)
content_types = st.sampled_from(
    [
        "application/json",
        "application/json",
        "application/json; charset=utf-16",
        "application/merge-patch+json",
        "text/plain",
        "multipart/form-data; boundary=x",
        "application/x-www-form-urlencoded",
        "",
    ]
)
path_values = st.one_of(
    st.uuids().map(str),
    st.sampled_from(["00000000-0000-0000-0000-000000000000", "x", "", "%00", "%2e%2e", "%ff"]),
    st.text(max_size=30).map(lambda t: quote(t, safe="")),
    st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=12),
)
queries = st.lists(
    st.tuples(
        st.sampled_from(["limit", "status", "state", "q", "k", "path", "source", "x"]),
        st.sampled_from(["1", "0", "-1", "501", "open", "a", "%00", "%ff", "%C0%80"])
        | st.text(max_size=20).map(lambda t: quote(t, safe="")),
    ),
    max_size=3,
).map(lambda pairs: "&".join(f"{k}={v}" for k, v in pairs))


plausible = st.sampled_from(
    ["acme/widgets#1", "0" * 64, MAILBOX, REQUEST, "kim@customer.example", "a: b"]
)


def typed(spec: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A value of the type the schema names (text often nasty), or now and then any value."""
    options = spec.get("anyOf") or [spec]
    made: list[st.SearchStrategy[Any]] = []
    for option in options:
        kind = option.get("type")
        if kind == "string":
            made += [nasty_text, plausible]
        elif kind == "integer":
            made += [st.integers(0, 3), st.integers()]  # a draft's version is 1, 2...
        elif kind == "boolean":
            made.append(st.booleans())
        elif kind == "array":
            made.append(st.lists(typed(option.get("items", {})), max_size=3))
        elif kind == "null":
            made.append(st.none())
    return st.one_of(*made) if made else json_values


@st.composite
def shaped(draw: st.DrawFn, fields: tuple[tuple[str, dict[str, Any]], ...]) -> bytes:
    """Some of the route's own fields, each of its type (or, now and then, of any type)."""
    chosen = draw(st.lists(st.sampled_from(fields), unique_by=lambda f: f[0])) if fields else []
    body = {name: draw(typed(spec) | typed(spec) | json_values) for name, spec in chosen}
    if draw(st.integers(0, 4)) == 0:
        body[draw(nasty_text)] = draw(json_values)
    return json.dumps(body).encode()


def bodies(operation: Operation) -> st.SearchStrategy[bytes | None]:
    return st.one_of(
        st.none(),
        shaped(operation.fields),
        shaped(operation.fields),
        json_values.map(lambda value: json.dumps(value).encode()),
        deep,
        wide,
        huge,
        st.binary(max_size=300),
    )


@st.composite
def requests(draw: st.DrawFn, target: Target) -> tuple[str, str, dict[str, str], bytes | None]:
    operation = draw(st.sampled_from(target.operations))
    method = draw(st.sampled_from([operation.method] * 12 + ["GET", "POST", "DELETE", "PUT"]))

    def fill(match: re.Match[str]) -> str:  # mostly a real run, draft or proposal
        return draw(st.sampled_from(target.ids) | st.sampled_from(target.ids) | path_values)

    path = _PARAM.sub(fill, operation.path)
    query = draw(queries)
    url = f"{path}?{query}" if query else path
    headers = {}
    # Mostly signed in (the routes' own checks), often not (refused before the body is read).
    who = draw(st.sampled_from(["requester"] * 3 + ["approver"] * 2 + sorted(target.tokens)))
    token = target.tokens[who]
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = draw(bodies(operation)) if method != "GET" or draw(st.booleans()) else None
    kind = draw(content_types)
    if body is not None and kind:
        headers["Content-Type"] = kind
    return method, url, headers, body


def _run(target: Target, cases: int) -> None:
    ran = Counter[str]()
    before = _rss()

    @settings(
        max_examples=cases,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(data=st.data())
    def one_case(data: st.DataObject) -> None:
        method, url, headers, body = data.draw(requests(target))
        response = target.client.request(method, url, content=body, headers=headers)
        ran["cases"] += 1
        target.statuses[response.status_code] += 1
        assert response.status_code < 500, (method, url, response.status_code, response.text[:300])

    one_case()
    growth = _rss() - before
    errors = sum(n for status, n in target.statuses.items() if status >= 500)
    print(
        f"\nAPI fuzz: {ran['cases']} cases over {len(target.operations)} operations,"
        f" {errors} server errors; statuses {dict(sorted(target.statuses.items()))};"
        f" resident memory +{growth / 2**20:.0f} MiB"
    )
    assert ran["cases"] >= cases and errors == 0
    assert growth < GROWTH_CEILING, f"resident memory grew by {growth / 2**20:.0f} MiB"


def test_every_api_route_is_enumerated(target: Target) -> None:
    """The fuzz reaches the routes the issue names, and any added since."""
    paths = {(op.method, op.path) for op in target.operations}
    for expected in [
        ("POST", "/api/v1/ask"),
        ("POST", "/api/v1/mail/drafts"),
        ("POST", "/api/v1/mail/drafts/{draft_id}/versions"),
        ("POST", "/api/v1/runs"),
        ("POST", "/api/v1/proposals/{run_or_proposal}/edit"),
        ("POST", "/api/v1/documents"),
        ("DELETE", "/api/v1/documents"),
    ]:
        assert expected in paths
    edit = next(op for op in target.operations if op.path.endswith("/versions"))
    assert {"version", "subject", "body", "to", "cc", "bcc"} <= {name for name, _ in edit.fields}


@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")  # huge bodies' repr
def test_fuzzed_api_requests_never_get_a_server_error(target: Target, cases: int) -> None:
    _run(target, cases)
