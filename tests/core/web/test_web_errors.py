"""Errors over HTTP, on the real app: each category answers its status with a one-line message (JSON
under /api/, the error page otherwise), and an unexpected exception is a generic 500 that shows
nothing internal and is logged under the incident id it names."""

from __future__ import annotations

import html
import logging
import re
import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient
from httpx import Response

from conftest import make_world
from fixtures_web import REPO, Web, web_settings
from resolveflow.bootstrap.app import open_app
from resolveflow.errors import ResolveFlowError
from resolveflow.triage import runs as run_service
from resolveflow.web import create_app, views

pytest_plugins = ["fixtures_web"]

HTML = {"Accept": "text/html"}
SECRET_DETAIL = "password=hunter2 at /srv/resolveflow/internal.py"
_PAGE_MESSAGE = re.compile(r'<p class="error" id="error-message">(.*?)</p>', re.S)


def _json_error(response: Response, status: int, error: str) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["error"] == error
    message: str = body["message"]
    assert message and "\n" not in message and "Traceback" not in response.text
    return message


def _page_error(response: Response, status: int) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("text/html")
    assert "Traceback" not in response.text
    found = _PAGE_MESSAGE.search(response.text)
    assert found is not None, response.text
    message = html.unescape(found.group(1))
    assert message and "\n" not in message
    return message


def _start(web: Web) -> dict[str, Any]:
    started = web.client.post(
        "/api/v1/runs", json={"issue": f"{REPO}#1"}, headers=web.api(web.world.requester_token)
    )
    assert started.status_code == 201, started.text
    view: dict[str, Any] = started.json()
    return view


def test_each_category_answers_its_status_over_the_api(web: Web) -> None:
    requester = web.api(web.world.requester_token)
    approver = web.api(web.world.approver_token)

    bad = web.client.post("/api/v1/runs", json={"issue": "not an issue"}, headers=requester)
    assert "OWNER/REPO#N" in _json_error(bad, 400, "InvalidInput")

    missing = web.client.get(f"/api/v1/runs/{uuid.uuid4()}", headers=requester)
    _json_error(missing, 404, "NotFound")

    anonymous = web.client.get("/api/v1/runs")
    _json_error(anonymous, 401, "AuthenticationFailed")
    assert anonymous.headers["WWW-Authenticate"] == "Bearer"

    view = _start(web)
    approve = f"/api/v1/runs/{view['run_id']}/approve"
    own = web.client.post(approve, json={"digest": view["digest"]}, headers=requester)
    _json_error(own, 403, "NotAuthorized")

    stale = web.client.post(approve, json={"digest": "0" * 64}, headers=approver)
    _json_error(stale, 409, "DigestMismatch")


def test_a_request_that_does_not_fit_the_schema_gets_the_same_envelope(web: Web) -> None:
    requester = web.api(web.world.requester_token)
    response = web.client.post("/api/v1/runs", json={}, headers=requester)
    message = _json_error(response, 422, "InvalidInput")
    assert message.startswith("body.issue:")
    assert response.json()["detail"][0]["loc"] == ["body", "issue"]  # FastAPI's detail, kept

    page = web.client.get("/runs/not-a-uuid", headers={**HTML, **requester})
    assert _page_error(page, 422) == "the run id 'not-a-uuid' in the address is not valid"


def test_pages_show_the_error_page(web: Web) -> None:
    requester = web.api(web.world.requester_token)
    missing = web.client.get(f"/runs/{uuid.uuid4()}", headers={**HTML, **requester})
    _page_error(missing, 404)
    unknown = web.client.get("/no/such/page", headers=HTML)
    assert _page_error(unknown, 404) == "There is nothing at /no/such/page."
    assert missing.headers["Content-Security-Policy"].startswith("default-src 'self'")
    signed_out = web.client.get("/inbox", headers=HTML, follow_redirects=False)
    assert (signed_out.status_code, signed_out.headers["location"]) == (303, "/login")


def test_unknown_paths_and_methods_over_the_api(web: Web) -> None:
    _json_error(web.client.get("/api/v1/nothing-here"), 404, "NotFound")
    _json_error(web.client.delete("/api/v1/runs"), 405, "MethodNotAllowed")


def test_configuration_and_limits_over_the_api(queue_ready: str, oauth_github: Any) -> None:
    settings = web_settings(
        queue_ready, oauth_github.url, github_webhook_secret=None, limit_runs_per_day=1
    )
    with open_app(settings, auto_migrate=False) as app:
        world = make_world(app.db)
        with TestClient(create_app(app), base_url="https://testserver") as client:
            hook = client.post("/webhooks/github", content=b"{}")
            assert "RESOLVEFLOW_GITHUB_WEBHOOK_SECRET" in _json_error(
                hook, 503, "ConfigurationError"
            )
            headers = {"Authorization": f"Bearer {world.requester_token}"}
            client.post("/api/v1/runs", json={"issue": f"{REPO}#1"}, headers=headers)
            refused = client.post("/api/v1/runs", json={"issue": f"{REPO}#1"}, headers=headers)
            assert "daily limit" in _json_error(refused, 429, "LimitExceeded")


def _fail_listing(monkeypatch: pytest.MonkeyPatch, exc: Exception) -> None:
    def boom(*args: object, **kwargs: object) -> Any:
        raise exc

    monkeypatch.setattr(run_service, "list_runs", boom)  # GET /api/v1/runs
    monkeypatch.setattr(views, "inbox", boom)  # GET /inbox


@pytest.mark.parametrize(
    "exc",
    [RuntimeError(SECRET_DETAIL), ResolveFlowError(f"database error: {SECRET_DETAIL}")],
    ids=["unexpected exception", "error without a category"],
)
def test_an_unexpected_error_is_a_generic_500_that_is_logged(
    web: Web, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, exc: Exception
) -> None:
    _fail_listing(monkeypatch, exc)
    requester = web.api(web.world.requester_token)
    with caplog.at_level(logging.ERROR, logger="resolveflow.web.errors"):
        api = web.client.get("/api/v1/runs", headers=requester)
        page = web.client.get("/inbox", headers={**HTML, **requester})
    message = _json_error(api, 500, "InternalError")
    assert _page_error(page, 500).startswith("Something went wrong on our side")
    for response in (api, page):
        assert "hunter2" not in response.text and type(exc).__name__ not in response.text
        assert response.headers["Content-Security-Policy"].startswith("default-src 'self'")
    incident = re.search(r"incident ([0-9a-f]{12})", message)
    assert incident is not None, message
    logged = [r for r in caplog.records if getattr(r, "incident", None) == incident.group(1)]
    assert len(logged) == 1 and logged[0].exc_info is not None
    assert logged[0].exc_info[1] is exc


@pytest.mark.parametrize("accept", ["*/*", "application/json", None], ids=["any", "json", "none"])
def test_a_browser_route_never_answers_json_whatever_it_accepts(
    web: Web, accept: str | None
) -> None:
    """Issue 12, item 2: every 4xx/5xx outside /api/ and /webhooks/ is the HTML error page."""
    requester = web.api(web.world.requester_token)
    headers = {"Accept": accept} if accept else {}
    assert "nothing at /nope" in _page_error(web.client.get("/nope", headers=headers), 404)
    bad = web.client.get("/runs/not-a-uuid", headers={**headers, **requester})
    assert "not-a-uuid" in _page_error(bad, 422)
    gone = web.client.get(f"/proposals/{uuid.uuid4()}", headers={**headers, **requester})
    _page_error(gone, 404)
    wrong = web.client.delete("/inbox", headers={**headers, **requester})
    _page_error(wrong, 405)
    for response in (bad, gone):
        assert "<h1>" in response.text and "Back to the inbox" in response.text
    _json_error(web.client.get("/api/v1/nope", headers=headers), 404, "NotFound")


def test_the_api_docs_and_favicon_come_from_this_server(web: Web) -> None:
    """/api/docs is a page of its own (no CDN: it works under the app's CSP and offline)."""
    docs = web.client.get("/api/docs")
    assert docs.status_code == 200 and docs.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in docs.headers["Content-Security-Policy"]
    assert "/api/v1/runs/{run_or_proposal}/approve" in docs.text and "digest" in docs.text
    assets = re.findall(r'(?:src|href)="([^"]+)"', docs.text)
    assert assets and all(a.startswith(("/", "#")) for a in assets), assets
    for asset in {a for a in assets if a.startswith("/static/")}:
        assert web.client.get(asset).status_code == 200, asset
    assert web.client.get("/api/openapi.json").json()["info"]["title"] == "ResolveFlow"
    icon = web.client.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    assert '<link rel="icon" href="/static/favicon.svg"' in docs.text


@pytest.mark.parametrize(
    "kind", ["text/plain", "application/octet-stream", "text/plain; charset=x"]
)
def test_undecodable_bytes_of_another_type_are_422_not_500(web: Web, kind: str) -> None:
    """Found by the API fuzz: FastAPI's 422 echoes the body, and bytes that are not UTF-8 made
    the error handler itself fail."""
    answer = web.client.post(
        "/api/v1/runs",
        content=b"\x80",
        headers={**web.api(web.world.requester_token), "Content-Type": kind},
    )
    assert answer.status_code == 422, answer.text[:300]
    assert answer.json()["error"] == "InvalidInput"
