"""pytest plugin for the web tests: a wired app on the test database and the fake GitHub (with its
OAuth provider), the job queue's schema, a test client, and a way to run the worker's due jobs.

Test modules load it with ``pytest_plugins = ["fixtures_web"]``.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient
from psycopg.rows import dict_row

from conftest import World, make_world
from fixtures_github import REPO_LABELS, SERVICE_LOGIN, SERVICE_TOKEN
from resolveflow.accounts import admin
from resolveflow.bootstrap.app import App, open_app
from resolveflow.config import PREFIX, Settings, env_names
from resolveflow.domain.records import Role
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.store.database import Database
from resolveflow.store.queue import setup_queue
from resolveflow.store.token_cipher import TokenCipher
from resolveflow.web import create_app
from resolveflow.worker import run_once

WEBHOOK_SECRET = "It's a Secret to Everybody"
REPO = "acme/widgets"
TOKEN_KEY = TokenCipher.generate_key()


@pytest.fixture
def oauth_github() -> Iterator[FakeGitHubWithOAuth]:
    """The fake GitHub with sign-in: ``acme/widgets`` (four labels), issue #1, users alex/rita."""
    server = FakeGitHubWithOAuth(default_login=SERVICE_LOGIN)
    server.add_repo(REPO, REPO_LABELS)
    server.add_issue(REPO, 1, "Widget crashes on start", "It crashes.", user="octocat")
    server.register_token(SERVICE_TOKEN, SERVICE_LOGIN)
    for login in ("alex", "rita", "mallory"):
        server.add_oauth_user(login)
    with server:
        yield server


def web_settings(database_url: str, github_url: str, **overrides: Any) -> Settings:
    """Settings for the web tests. Values are named like the environment variables, without the
    prefix and in lower case (``limit_runs_per_day=2`` is ``RESOLVEFLOW_LIMIT_RUNS_PER_DAY``)."""
    values: dict[str, Any] = {
        "database_url": database_url,
        "github_api_url": github_url,
        "github_web_url": github_url,
        "github_token": SERVICE_TOKEN,
        "github_timeout_seconds": 2.0,
        "lease_seconds": 30.0,
        "github_webhook_secret": WEBHOOK_SECRET,
        "github_oauth_client_id": "sandbox-client",
        "github_oauth_client_secret": "sandbox-secret",
        "token_encryption_key": TOKEN_KEY,
        "web_users": {
            "alex": "acme:approver",
            "rita": "acme:requester",
            "mallory": "evil:approver",
        },
        "embedder": "fake",
        "reconcile_interval_seconds": 0,
    }
    values.update(overrides)
    return settings_from_variables(values)


def settings_from_variables(values: dict[str, Any]) -> Settings:
    """``Settings`` from values keyed like the environment variables (see above)."""
    places = {name.removeprefix(PREFIX).lower(): place for name, place in env_names().items()}
    groups: dict[str, dict[str, Any]] = {}
    for name, value in values.items():
        group, field = places[name].split(".")
        groups.setdefault(group, {})[field] = value
    return Settings(
        **{
            group: Settings.model_fields[group].annotation(**fields)
            for group, fields in groups.items()
        }
    )


@pytest.fixture
def queue_ready(database_url: str) -> str:
    """The per-test database with procrastinate's schema (until the migration hook installs it)."""
    with psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as conn:
        setup_queue(conn)
    return database_url


@dataclass
class Web:
    app: App
    world: World
    fake: FakeGitHubWithOAuth
    client: TestClient

    @property
    def db(self) -> Database:
        return self.app.db

    def api(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    def work(self) -> None:
        """Run every job that is due now (the worker, in this process)."""
        run_once(self.app)

    def webhook(
        self, event: str, payload: dict[str, Any], delivery: str | None = None, **headers: str
    ) -> Any:
        body = json.dumps(payload).encode()
        signature = "sha256=" + hmac.new(WEBHOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()
        sent = {
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "X-Hub-Signature-256": signature,
            "Content-Type": "application/json",
            **headers,
        }
        return self.client.post("/webhooks/github", content=body, headers=sent)


_EVENTS = itertools.count(1)


def issue_payload(number: int, action: str = "opened", repo: str = REPO) -> dict[str, Any]:
    """An ``issues`` (or, with a comment action, ``issue_comment``) payload. Each call is a new
    event: its ``updated_at`` and comment id are new, so it is never taken for a replay."""
    n = next(_EVENTS)
    at = (datetime.now(UTC) + timedelta(seconds=n)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "action": action,
        "issue": {"number": number, "title": "t", "body": "b", "updated_at": at},
        "comment": {"id": n, "body": "c", "updated_at": at},
        "repository": {"full_name": repo},
        "sender": {"login": "octocat"},
    }


@pytest.fixture
def web(queue_ready: str, oauth_github: FakeGitHubWithOAuth) -> Iterator[Web]:
    settings = web_settings(queue_ready, oauth_github.url)
    with open_app(settings, auto_migrate=False) as app:
        world = make_world(app.db)
        admin.add_tenant(app.db, "evil")
        admin.add_repository(app.db, "evil", "evil/repo")
        with TestClient(create_app(app), base_url="https://testserver") as client:
            yield Web(app, world, oauth_github, client)


def add_approver(web: Web, tenant: str, subject: str) -> str:
    return admin.add_principal(web.db, tenant, subject, [Role.APPROVER]).token
