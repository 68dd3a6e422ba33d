"""Signing in with a one-time link through the app, with no GitHub OAuth app configured: the
login page says how to get a link; opening one uses nothing; its button signs in once and sets the
session cookie; a used, expired, unknown or cross-site link gets a page in words, never a 500, and
signs nobody in."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from conftest import make_world
from fixtures_web import web_settings
from resolveflow.accounts import sign_in_links as links
from resolveflow.bootstrap.app import App, open_app
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.web import create_app

pytest_plugins = ["fixtures_web"]

_NONCE = re.compile(r'name="nonce" value="([^"]+)"')


@pytest.fixture
def app(queue_ready: str, oauth_github: FakeGitHubWithOAuth) -> Iterator[App]:
    settings = web_settings(
        queue_ready,
        oauth_github.url,
        github_oauth_client_id=None,
        github_oauth_client_secret=None,
    )
    with open_app(settings, auto_migrate=False) as opened:
        make_world(opened.db)
        yield opened


@pytest.fixture
def client(app: App) -> Iterator[TestClient]:
    with TestClient(create_app(app), base_url="https://testserver") as browser:
        yield browser


def _open(client: TestClient, token: str) -> Any:
    page = client.get("/auth/link", params={"token": token})
    assert page.status_code == 200, page.text
    return page


def _use(client: TestClient, token: str) -> Any:
    nonce = _NONCE.search(_open(client, token).text)
    assert nonce is not None
    return client.post(
        "/auth/link", data={"token": token, "nonce": nonce.group(1)}, follow_redirects=False
    )


def test_the_login_page_says_how_to_get_a_link(client: TestClient) -> None:
    page = client.get("/inbox")  # not signed in: the sign-in page
    assert page.url.path == "/login"
    assert "Sign-in with GitHub is not configured" in page.text
    assert "resolveflow sign-in-link --subject LOGIN" in page.text
    assert 'id="signin"' not in page.text
    # The GitHub sign-in address leads there too rather than to an error.
    assert client.get("/auth/login").url.path == "/login"


def test_a_link_signs_in_once_with_the_session_cookie(client: TestClient, app: App) -> None:
    issued = links.issue(app.db, "acme", "alex", 15)
    page = _open(client, issued.token)
    assert 'signs you in as <strong id="link-subject">alex</strong>' in page.text
    assert "Posting as yourself needs sign-in with GitHub" in page.text
    assert page.headers["cache-control"] == "no-store"
    assert "rf_session" not in client.cookies  # opening it signed nobody in
    answer = _use(client, issued.token)
    assert answer.status_code == 303 and answer.headers["location"] == "/inbox"
    cookie = answer.headers["set-cookie"]
    assert "rf_session=rf_" in cookie and "HttpOnly" in cookie and "Secure" in cookie
    inbox = client.get("/inbox")
    assert inbox.status_code == 200 and '<span id="who">alex</span>' in inbox.text

    client.cookies.clear()  # another browser, the same link
    again = client.get("/auth/link", params={"token": issued.token})
    assert again.status_code == 410 and "used already" in again.text
    assert client.get("/inbox").url.path == "/login"


def test_a_second_post_of_a_used_link_is_a_page_not_a_session(client: TestClient, app: App) -> None:
    issued = links.issue(app.db, "acme", "alex", 15)
    nonce = _NONCE.search(_open(client, issued.token).text)
    assert nonce is not None
    form = {"token": issued.token, "nonce": nonce.group(1)}
    assert client.post("/auth/link", data=form, follow_redirects=False).status_code == 303
    client.cookies.delete("rf_session")
    client.cookies.set("rf_link", nonce.group(1), path="/auth/link")
    second = client.post("/auth/link", data=form, follow_redirects=False)
    assert second.status_code == 410, second.text
    assert "used already" in second.text and "set-cookie" not in second.headers


def test_expired_and_unknown_links_get_a_page_in_words(
    client: TestClient, app: App, database_url: str
) -> None:
    issued = links.issue(app.db, "acme", "alex", 1)
    with psycopg.connect(database_url, autocommit=True) as superuser:
        superuser.execute(
            "UPDATE sign_in_links SET created_at = clock_timestamp() - interval '5 minutes', "
            "expires_at = clock_timestamp() - interval '1 second'"
        )
    expired = client.get("/auth/link", params={"token": issued.token})
    assert expired.status_code == 410 and "has expired" in expired.text
    for token in ("", "nonsense", issued.token[:-3] + "AAA", "x" * 5000):
        page = client.get("/auth/link", params={"token": token})
        assert page.status_code == 404 and "not known here" in page.text, token
        assert "Nobody was signed in" in page.text
    assert client.post("/auth/link", data={"token": issued.token}).status_code == 400


def test_a_form_from_another_site_cannot_use_a_link(client: TestClient, app: App) -> None:
    """Without the nonce cookie that only opening the link here sets, the link is not used."""
    issued = links.issue(app.db, "acme", "alex", 15)
    forged = client.post(
        "/auth/link", data={"token": issued.token, "nonce": "guessed"}, follow_redirects=False
    )
    assert forged.status_code == 400 and "did not start on this page" in forged.text
    assert "rf_session" not in client.cookies
    assert _use(client, issued.token).status_code == 303  # still unused: it works here


# --- refusals past a limit: 429, and not one audit row each ---------------------------------


def _link_rows(app: App) -> dict[str, int]:
    with psycopg.connect(app.db.url, autocommit=True) as superuser:
        rows = superuser.execute(
            "SELECT event, count(*) FROM audit_events WHERE subject_type = 'sign_in_link'"
            " GROUP BY event"
        ).fetchall()
    return {str(event): int(n) for event, n in rows}


def _refused_post(client: TestClient, token: str) -> Any:
    """What a script sends: its own nonce in its own cookie (the nonce stops a page on another
    site, not a client that sets its cookies itself)."""
    client.cookies.set("rf_link", "nonce-of-my-own", path="/auth/link")
    return client.post(
        "/auth/link", data={"token": token, "nonce": "nonce-of-my-own"}, follow_redirects=False
    )


def _unknown_token(app: App) -> str:
    tenant = links.find_tenant(app.db, "acme")
    return f"rfl_{tenant.id.hex}_{'A' * 43}"  # well formed, naming acme: looked up and refused


def test_a_flood_of_refused_posts_gets_429s_and_a_bounded_audit_trail(
    client: TestClient, app: App
) -> None:
    statuses = [_refused_post(client, _unknown_token(app)) for _ in range(60)]
    statuses += [_refused_post(client, "rfl_garbage") for _ in range(5)]  # names no tenant
    codes = [answer.status_code for answer in statuses]
    assert codes == [404] * 10 + [429] * 55, codes
    limited = statuses[-1]
    assert 1 <= int(limited.headers["retry-after"]) <= 300
    assert "Too many refused sign-in attempts" in limited.text and "set-cookie" not in {
        k.lower() for k in limited.headers
    }
    rows = _link_rows(app)
    assert rows == {"sign_in_link.refused": 10, "sign_in_link.refusals_limited": 1}, rows

    # A genuine link still signs in, from the same address, in the same window.
    issued = links.issue(app.db, "acme", "alex", 15)
    client.cookies.clear()
    answer = _use(client, issued.token)
    assert answer.status_code == 303 and answer.headers["location"] == "/inbox"


def test_refusals_spread_over_addresses_are_limited_per_tenant(app: App) -> None:
    site = create_app(app)  # one app: its limits are shared by every client below
    token = _unknown_token(app)
    codes = []
    for n in range(15):  # 5 refusals each: every address within its own limit of 10
        with TestClient(site, base_url="https://testserver", client=(f"10.0.0.{n}", 5000)) as c:
            codes += [_refused_post(c, token).status_code for _ in range(5)]
    assert codes == [404] * 50 + [429] * 25, codes
    rows = _link_rows(app)
    assert rows == {"sign_in_link.refused": 50, "sign_in_link.refusals_limited": 1}, rows
    with psycopg.connect(app.db.url, autocommit=True) as superuser:
        [(details,)] = superuser.execute(
            "SELECT details FROM audit_events WHERE event = 'sign_in_link.refusals_limited'"
        ).fetchall()
    assert details == {"scope": "tenant", "limit": 50, "window_seconds": 300}
