"""Sign-in, sessions, CSRF, tenant isolation, untrusted text and the daily caps, through the app."""

from __future__ import annotations

import re
import uuid
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from fixtures_web import REPO, Web, add_approver, web_settings
from resolveflow.bootstrap.app import open_app
from resolveflow.store import tenants as tenant_store
from resolveflow.store.token_cipher import TokenCipher
from resolveflow.triage import runs as run_service
from resolveflow.web import create_app

pytest_plugins = ["fixtures_web"]

XSS_TITLE = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'
XSS_BODY = (
    "Steps:\n\n<script>window.__xss=3</script>\n\n"
    '<img src="x" onerror="window.__xss=4"> [click](javascript:window.__xss=5) '
    '<a href="https://example.com" onclick="window.__xss=6">link</a>\n\n'
    '<iframe src="javascript:window.__xss=7"></iframe><svg onload="window.__xss=8"></svg>'
)
XSS_COMMENT = '<details open ontoggle="window.__xss=9"><summary>x</summary></details>"><script>window.__xss=10</script>'


class _Active(HTMLParser):
    """Collects whatever in a page could run: script-capable tags, event handlers, js: URLs."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "script" and values.get("src") in ("/static/htmx.min.js", "/static/time.js"):
            return  # our own: vendored htmx, and the local-time hover
        if tag in (
            "script",
            "iframe",
            "object",
            "embed",
            "svg",
            "math",
            "style",
            "base",
            "form",
        ) and not (
            tag == "form"
            and (values.get("action") or "").startswith(("/runs/", "/logout", "/executions/"))
        ):
            self.found.append(tag)
        for name, value in attrs:
            if name.startswith("on") or (value or "").strip().lower().startswith(
                ("javascript:", "data:text")
            ):
                self.found.append(f"{tag}[{name}]")


def active_parts(html: str) -> list[str]:
    parser = _Active()
    parser.feed(html)
    return parser.found


def sign_in(web: Web, login: str) -> str:
    """The OAuth dance against the fake provider over real HTTP; returns the CSRF token."""
    start = web.client.get("/auth/login", follow_redirects=False)
    assert start.status_code == 303, start.text
    authorize = start.headers["location"]
    assert authorize.startswith(web.fake.url + "/login/oauth/authorize?")
    query = {k: v[-1] for k, v in parse_qs(urlsplit(authorize).query).items()}
    assert query["code_challenge_method"] == "S256"
    page = httpx.get(authorize, timeout=5)
    assert "SANDBOX" in page.text and f"signin-{login}" in page.text
    confirm = httpx.get(
        f"{web.fake.url}/login/oauth/authorize/confirm",
        params={
            **{k: query[k] for k in ("client_id", "redirect_uri", "state", "code_challenge")},
            "login": login,
        },
        timeout=5,
    )
    assert confirm.status_code == 302
    back = urlsplit(confirm.headers["location"])
    done = web.client.get(f"/auth/callback?{back.query}", follow_redirects=False)
    assert done.status_code == 303, done.text
    inbox = web.client.get("/inbox", headers={"Accept": "text/html"})
    assert inbox.status_code == 200
    match = re.search(r'name="csrf_token" value="([^"]+)"', inbox.text)
    assert match, inbox.text
    return match.group(1)


@pytest.fixture
def signed_web(queue_ready: str, oauth_github: Any) -> Any:
    """Like ``web``, but the OAuth redirect URL is a loopback address the fake accepts."""
    from fastapi.testclient import TestClient

    from conftest import make_world
    from resolveflow.accounts import admin

    settings = web_settings(queue_ready, oauth_github.url, web_public_url="http://127.0.0.1:9")
    with open_app(settings, auto_migrate=False) as app:
        world = make_world(app.db)
        admin.add_tenant(app.db, "evil")
        with TestClient(create_app(app), base_url="https://testserver") as client:
            yield Web(app, world, oauth_github, client)


def start_run(web: Web, number: int = 1) -> dict[str, Any]:
    response = web.client.post(
        "/api/v1/runs",
        json={"issue": f"{REPO}#{number}"},
        headers=web.api(web.world.requester_token),
    )
    assert response.status_code == 201, response.text
    return response.json()


def test_sign_in_maps_the_login_stores_the_token_encrypted_and_sets_a_safe_cookie(
    signed_web: Web,
) -> None:
    web = signed_web
    sign_in(web, "alex")
    cookie = next(c for c in web.client.cookies.jar if c.name == "rf_session")
    assert cookie.secure and cookie.has_nonstandard_attr("HttpOnly")
    me = web.client.get("/api/v1/me").json()
    assert (me["subject"], me["roles"], me["via"]) == ("alex", ["approver"], "session")
    # The same principal as the API token made by `principals add`: both keep working.
    assert (
        web.client.get("/api/v1/me", headers=web.api(web.world.approver_token)).json()["id"]
        == me["id"]
    )
    issued = [t for t, login in web.fake.issued_tokens.items() if login == "alex"]
    cipher = TokenCipher(web.app.settings.web.token_encryption_key.get_secret_value())  # type: ignore[union-attr]
    with web.db.tenant(web.world.tenant.id) as conn:
        row = tenant_store.github_token_row(conn, web.world.tenant.id, uuid.UUID(me["id"]))
        token = tenant_store.github_token(conn, cipher, web.world.tenant.id, uuid.UUID(me["id"]))
    assert row is not None and row.ciphertext and issued and issued[0] not in row.ciphertext
    assert token == issued[0]


def test_unlisted_logins_cannot_sign_in_and_a_forged_state_is_refused(signed_web: Web) -> None:
    web = signed_web
    web.fake.add_oauth_user("stranger")
    with pytest.raises(AssertionError):
        sign_in(web, "stranger")
    assert web.client.get("/api/v1/me").status_code == 401
    # The callback is a browser's page: refused, it sends the browser back to the sign-in page
    # (whatever it accepts; a browser route never answers JSON).
    for accept in ({}, {"Accept": "text/html"}):
        page = web.client.get(
            "/auth/callback?code=abc&state=forged", headers=accept, follow_redirects=False
        )
        assert (page.status_code, page.headers["location"]) == (303, "/login")
    assert web.client.get("/api/v1/me").status_code == 401


def test_a_form_without_or_with_a_wrong_csrf_token_is_refused(signed_web: Web) -> None:
    web = signed_web
    view = start_run(web)
    csrf = sign_in(web, "alex")
    url = f"/runs/{view['run_id']}/approve"
    html = {"Accept": "text/html"}
    assert web.client.post(url, data={"digest": view["digest"]}, headers=html).status_code == 403
    wrong = {"digest": view["digest"], "csrf_token": "x" * 43}
    assert web.client.post(url, data=wrong, headers=html).status_code == 403
    api = web.client.post(f"/api/v1/runs/{view['run_id']}/approve", json={"digest": view["digest"]})
    assert api.status_code == 403  # a session needs X-CSRF-Token on the API too
    assert (
        run_service.describe_run(web.db, web.world.approver(web.db), uuid.UUID(view["run_id"]))[
            "proposal"
        ]["decision"]
        is None
    )
    ok = web.client.post(
        url,
        data={"digest": view["digest"], "csrf_token": csrf},
        headers=html,
        follow_redirects=False,
    )
    assert ok.status_code == 303 and ok.headers["location"].endswith("notice=approved")


def test_logout_ends_the_session(signed_web: Web) -> None:
    web = signed_web
    csrf = sign_in(web, "alex")
    assert (
        web.client.post("/logout", data={"csrf_token": csrf}, follow_redirects=False).status_code
        == 303
    )
    assert web.client.get("/api/v1/me").status_code == 401
    assert (
        web.client.get("/inbox", headers={"Accept": "text/html"}, follow_redirects=False).headers[
            "location"
        ]
        == "/login"
    )


def test_another_tenants_approver_can_neither_see_nor_approve_the_run(signed_web: Web) -> None:
    web = signed_web
    view = start_run(web)
    sign_in(web, "mallory")  # an approver, in tenant "evil"
    run = view["run_id"]
    assert web.client.get(f"/runs/{run}", headers={"Accept": "text/html"}).status_code == 404
    assert web.client.get(f"/api/v1/runs/{run}").status_code == 404
    inbox = web.client.get("/inbox", headers={"Accept": "text/html"}).text
    assert run not in inbox
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', inbox).group(1)  # type: ignore[union-attr]
    refused = web.client.post(
        f"/runs/{run}/approve",
        data={"digest": view["digest"], "csrf_token": csrf},
        headers={"Accept": "text/html"},
    )
    assert refused.status_code == 404
    api = web.client.post(
        f"/api/v1/runs/{run}/approve",
        json={"digest": view["digest"]},
        headers={"X-CSRF-Token": csrf},
    )
    assert api.status_code == 404
    # With an API token of that tenant too.
    evil = add_approver(web, "evil", "eve")
    assert web.client.get(f"/api/v1/runs/{run}", headers=web.api(evil)).status_code == 404
    decision = run_service.describe_run(web.db, web.world.approver(web.db), uuid.UUID(run))
    assert decision["proposal"]["decision"] is None


def test_xss_in_issue_title_body_and_comment_renders_inert(web: Web) -> None:
    web.fake.add_issue(REPO, 7, XSS_TITLE, XSS_BODY)
    web.fake.add_comment_directly(REPO, 7, XSS_COMMENT)
    view = start_run(web, 7)
    page = web.client.get(
        f"/runs/{view['run_id']}",
        headers={**web.api(web.world.approver_token), "Accept": "text/html"},
    )
    assert page.status_code == 200
    html = page.text
    assert active_parts('<p><img src="x" onerror="y"><script>z</script></p>') == [
        "img[onerror]",
        "script",
    ]
    assert active_parts(html) == []
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in html  # the title shows as text
    assert "Steps:" in html  # and the body is rendered, not dropped
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp


def test_the_daily_cap_of_runs_answers_429_with_a_clear_message(
    queue_ready: str, oauth_github: Any
) -> None:
    from fastapi.testclient import TestClient

    from conftest import make_world

    settings = web_settings(queue_ready, oauth_github.url, limit_runs_per_day=2)
    with open_app(settings, auto_migrate=False) as app:
        world = make_world(app.db)
        with TestClient(create_app(app), base_url="https://testserver") as client:
            headers = {"Authorization": f"Bearer {world.requester_token}"}
            for _ in range(2):
                response = client.post("/api/v1/runs", json={"issue": f"{REPO}#1"}, headers=headers)
                assert response.status_code == 201
            refused = client.post("/api/v1/runs", json={"issue": f"{REPO}#1"}, headers=headers)
            assert refused.status_code == 429
            assert "daily limit reached" in refused.json()["message"]
            assert "RESOLVEFLOW_LIMIT_RUNS_PER_DAY" in refused.json()["message"]
            assert client.get("/api/v1/me", headers=headers).json()["usage_today"]["runs"] == 2
            # Another person has their own cap.
            other = {"Authorization": f"Bearer {world.approver_token}"}
            assert (
                client.post("/api/v1/runs", json={"issue": f"{REPO}#1"}, headers=other).status_code
                == 201
            )


def test_unauthenticated_requests_are_401_and_pages_redirect_to_sign_in(web: Web) -> None:
    assert web.client.get("/api/v1/runs").status_code == 401
    assert (
        web.client.get("/api/v1/runs", headers={"Authorization": "Bearer rf_nonsense"}).status_code
        == 401
    )
    page = web.client.get("/inbox", headers={"Accept": "text/html"}, follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"] == "/login"
