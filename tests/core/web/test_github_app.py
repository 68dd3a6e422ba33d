"""GitHub App (issue 32 part 1), end to end over real HTTP and real Postgres: the App created from
its manifest on the sandbox forge (callback stores it encrypted), installed, an installation
event recorded, a webhook from the App starting a run in the mapped tenant, an approval posted as
the App's bot, the installation token expiring between two writes and refreshed once, pacing
keyed on the installation; the token cache shared by two processes; bad JWTs and expired tokens
refused with a clear error."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import logging
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from conftest import make_world, propose_and_approve
from fixtures_cli import one_line_error
from fixtures_github import REPO_LABELS
from fixtures_web import REPO, TOKEN_KEY, WEBHOOK_SECRET, issue_payload, web_settings
from resolveflow.accounts import admin, github_app
from resolveflow.accounts.admin import find_tenant
from resolveflow.adapters.github.app_auth import GitHubAppApi
from resolveflow.adapters.github.app_client import acting_for
from resolveflow.adapters.github.app_manifest import app_manifest
from resolveflow.adapters.github.protocol import RepoName
from resolveflow.bootstrap.app import App, open_app
from resolveflow.bootstrap.github_app import app_github, configured_app
from resolveflow.errors import AppInstallationRefused, InvalidInput, ProviderRejected
from resolveflow.gate import executions as execution_service
from resolveflow.sandbox.forge.app import FakeGitHubWithApp
from resolveflow.store.token_cipher import TokenCipher
from resolveflow.triage import runs as run_service
from resolveflow.web import create_app

pytest_plugins = ["fixtures_web"]
SLUG = "resolveflow"
BOT = f"{SLUG}[bot]"


class Clock:
    """The App's clock, moved together with the forge's."""

    def __init__(self) -> None:
        self.offset = timedelta()

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset


@pytest.fixture
def forge() -> Iterator[FakeGitHubWithApp]:
    server = FakeGitHubWithApp(default_login="nobody-should-write-as-me")
    server.add_repo(REPO, REPO_LABELS)
    server.add_issue(REPO, 1, "Widget crashes on start", "It crashes.", user="octocat")
    with server:
        yield server


def _settings(database_url: str, forge: FakeGitHubWithApp) -> Any:
    # No service token and no global webhook secret: the App is the only credential.
    return web_settings(database_url, forge.url, github_token=None, github_webhook_secret=None)


def _signed(forge: FakeGitHubWithApp, event: str, payload: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps(payload).encode()
    mac = hmac.new(forge.app_webhook_secret.encode(), body, hashlib.sha256).hexdigest()
    return {
        "content": body,
        "headers": {
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": "sha256=" + mac,
            "Content-Type": "application/json",
        },
    }


def _create_app(client: TestClient, forge: FakeGitHubWithApp, app: App) -> None:
    code = forge.create_app_from_manifest(app_manifest("https://rf.example"))
    # Without the state `github-app manifest` issued, or with one used or made up: refused.
    for state in ("", "made-up"):
        refused = client.get("/github-app/callback", params={"code": code, "state": state})
        assert refused.status_code == 403, refused.text
    assert github_app.stored_app(app.db, app.token_cipher()) is None
    state = github_app.issue_manifest_state(app.db)
    answer = client.get("/github-app/callback", params={"code": code, "state": state})
    assert answer.status_code == 200, answer.text
    assert f"GitHub App {SLUG} stored" in answer.text
    again = client.get("/github-app/callback", params={"code": code, "state": state})
    assert again.status_code in (403, 409), again.text  # one use (and one App)


def _raw_tables(app: App) -> str:
    with app.db.unscoped() as conn:
        rows = [
            *conn.execute("SELECT * FROM github_app").fetchall(),
            *conn.execute("SELECT * FROM github_app_tokens").fetchall(),
        ]
    return json.dumps(rows, default=str)


def test_app_from_manifest_webhook_run_and_bot_writes_across_a_token_refresh(
    queue_ready: str, forge: FakeGitHubWithApp, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    clock = Clock()
    with open_app(_settings(queue_ready, forge), auto_migrate=False) as app:
        app.github_app_clock = clock
        world = make_world(app.db)
        with TestClient(create_app(app), base_url="https://testserver") as client:
            _create_app(client, forge, app)
            # a second callback (someone else's code) replaces nothing
            again = forge.create_app_from_manifest(app_manifest("https://evil.example"))
            state = github_app.issue_manifest_state(app.db)
            params = {"code": again, "state": state}
            assert client.get("/github-app/callback", params=params).status_code == 409

            installation = forge.install_app("acme", [REPO])
            created = {
                "action": "created",
                "installation": forge.installation_payload(installation),
                "repositories": [{"full_name": REPO}],
                "sender": {"login": "octocat"},
            }
            answer = client.post("/webhooks/github", **_signed(forge, "installation", created))
            assert answer.status_code == 202, answer.text
            assert answer.json()["ignored"] == f"installation {installation} recorded"

            opened = issue_payload(1) | {"installation": {"id": installation}}
            unmapped = client.post("/webhooks/github", **_signed(forge, "issues", opened))
            assert "mapped to no tenant" in unmapped.json()["ignored"]

            github_app.map_installation(app.db, installation, "acme")
            opened = issue_payload(1) | {"installation": {"id": installation}}
            answer = client.post("/webhooks/github", **_signed(forge, "issues", opened))
            assert answer.status_code == 202 and answer.json()["queued"] is True, answer.text
            # a body signed with anything but the App's secret is refused
            forged = _signed(forge, "issues", issue_payload(1))
            forged["headers"]["X-Hub-Signature-256"] = "sha256=" + "0" * 64
            assert client.post("/webhooks/github", **forged).status_code == 401

        from resolveflow.worker import run_once

        run_once(app)
        runs = run_service.list_runs(app.db, world.approver(app.db))
        assert [(r["target"], r["status"]) for r in runs] == [(f"{REPO}#1", "awaiting_approval")]
        minted_for_the_run = forge.tokens_minted
        assert minted_for_the_run == 1  # the run's reads: one token, cached

        propose_and_approve(app.db, world, comment="First, as the App.")
        assert app.executor().run_due() == 1
        first = forge.comments(REPO, 1)[-1]
        assert first["user"]["login"] == BOT and "First, as the App." in first["body"]
        assert forge.tokens_minted == 1

        # An hour later the token has expired on the forge; the next write mints exactly one.
        forge.advance(3600)
        clock.offset += timedelta(seconds=3600)
        propose_and_approve(app.db, world, comment="Second, after the refresh.")
        assert app.executor().run_due() == 1
        second = forge.comments(REPO, 1)[-1]
        assert second["user"]["login"] == BOT and "after the refresh" in second["body"]
        assert forge.tokens_minted == 2
        with app.db.unscoped() as conn:
            row = conn.execute("SELECT minted FROM github_app_tokens").fetchone()
            keys = [r["pace_key"] for r in conn.execute("SELECT pace_key FROM write_pace")]
        assert row is not None and row["minted"] == 2
        assert keys == [f"github:installation:{installation}"]

        # nothing secret in the database in clear, nor in the logs
        pem_line = app.github_app().identity.private_key.splitlines()[1]  # type: ignore[union-attr]
        secrets_seen = [pem_line, forge.app_webhook_secret]
        assert not any(s in _raw_tables(app) for s in secrets_seen)
        assert not any(s in caplog.text for s in secrets_seen)
        assert "ghs_" not in caplog.text and "ghs_" not in _raw_tables(app)


def _tokens(app: App, clock: Clock) -> Any:
    configured = configured_app(app.settings, app.db, app.token_cipher(), clock)
    assert configured is not None
    # another process: its own client and token source over the same database
    return app_github(
        _plain_client(app),
        app.settings,
        app.db,
        app.token_cipher(),
        configured,
        clock,
    ).tokens


def _plain_client(app: App) -> Any:
    from resolveflow.bootstrap.app import github_client

    return github_client(app.settings)


@pytest.fixture
def installed(queue_ready: str, forge: FakeGitHubWithApp) -> Iterator[tuple[App, int]]:
    with open_app(_settings(queue_ready, forge), auto_migrate=False) as app:
        make_world(app.db)
        with TestClient(create_app(app), base_url="https://testserver") as client:
            _create_app(client, forge, app)
        installation = forge.install_app("acme", [REPO])
        github_app.map_installation(app.db, installation, "acme", force=True)  # never seen here
        yield app, installation


def _acme(app: App) -> uuid.UUID:
    return find_tenant(app.db, "acme").id


def test_two_processes_share_one_cached_token_and_mint_once(
    installed: tuple[App, int], forge: FakeGitHubWithApp
) -> None:
    app, _ = installed
    clock = Clock()
    first, second = _tokens(app, clock), _tokens(app, clock)
    repo = RepoName.parse(REPO)
    barrier = threading.Barrier(2)
    got: list[str] = []

    def take(tokens: Any) -> None:
        barrier.wait()
        got.append(tokens.token_for(repo, _acme(app)))

    workers = [threading.Thread(target=take, args=(t,)) for t in (first, second)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert len(got) == 2 and got[0] == got[1]
    assert forge.tokens_minted == 1
    # within five minutes of expiry either one refreshes, once, and the other reuses it
    clock.offset += timedelta(minutes=56)
    forge.advance(56 * 60)
    renewed = second.token_for(repo, _acme(app))
    assert renewed != got[0] and first.token_for(repo, _acme(app)) == renewed
    assert forge.tokens_minted == 2


def test_a_token_the_forge_refuses_is_minted_again_once_then_a_clear_error(
    installed: tuple[App, int], forge: FakeGitHubWithApp
) -> None:
    app, _ = installed
    clock = Clock()
    client = app_github(
        _plain_client(app),
        app.settings,
        app.db,
        app.token_cipher(),
        configured_app(app.settings, app.db, app.token_cipher(), clock),  # type: ignore[arg-type]
        clock,
    ).for_tenant(_acme(app))
    repo = RepoName.parse(REPO)
    assert client.get_issue(repo, 1).number == 1
    forge.expire_installation_tokens()  # still fresh by our clock: GitHub answers 401
    assert client.get_issue(repo, 1).number == 1  # dropped, minted again, sent once more
    assert forge.tokens_minted == 2
    forge.app_state.token_lifetime = 0  # every new token is born expired
    forge.expire_installation_tokens()
    with pytest.raises(ProviderRejected, match=r"refused the App's installation token .* twice"):
        client.get_issue(repo, 1)


def test_a_bad_or_expired_jwt_is_refused_with_a_clear_error(
    installed: tuple[App, int], forge: FakeGitHubWithApp
) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from resolveflow.adapters.github.app_auth import app_jwt

    app, _ = installed
    configured = configured_app(app.settings, app.db, app.token_cipher())
    assert configured is not None
    api = GitHubAppApi(forge.url, 2.0)
    repo = RepoName.parse(REPO)
    assert (
        api.installation_for(
            app_jwt(configured.identity.app_id, configured.identity.private_key, datetime.now(UTC)),
            repo,
        ).account
        == "acme"
    )
    other = (
        rsa.generate_private_key(public_exponent=65537, key_size=2048)
        .private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        .decode()
    )
    wrong_key = app_jwt(configured.identity.app_id, other, datetime.now(UTC))
    expired = app_jwt(
        configured.identity.app_id,
        configured.identity.private_key,
        datetime.now(UTC) - timedelta(hours=1),
    )
    for jwt in (wrong_key, expired, "not.a.jwt"):
        with pytest.raises(ProviderRejected, match="refused the App's credentials") as caught:
            api.installation_for(jwt, repo)
        assert caught.value.status == 401
    assert (
        httpx.get(f"{forge.url}/app", headers={"Authorization": f"Bearer {expired}"}).status_code
        == 401
    )


def test_manifest_is_printed_and_valid(cli: Any) -> None:
    issued = cli.json("github-app", "manifest", "--url", "https://rf.example/", "--name", "RF Prod")
    found, state = issued["manifest"], issued["state"]
    assert len(state) >= 32 and issued["create_url"].endswith(f"/settings/apps/new?state={state}")
    assert found == {
        "name": "RF Prod",
        "url": "https://rf.example",
        "hook_attributes": {"url": "https://rf.example/webhooks/github", "active": True},
        "redirect_url": "https://rf.example/github-app/callback",
        "public": False,
        "default_permissions": {
            "issues": "write",
            "pull_requests": "write",
            "checks": "read",
            "contents": "read",
            "metadata": "read",
        },
        "default_events": ["issues", "issue_comment", "pull_request", "check_run"],
    }
    text = cli.run("github-app", "manifest", "--url", "https://rf.example").stdout
    assert "settings/apps/new" in text and "install-map" in text
    cli.fails("github-app", "manifest", "--url", "http://rf.example", match="must be https")


def test_manifest_refuses_what_is_not_a_base_url() -> None:
    for bad in ("ftp://x", "https://", "https://rf.example/?a=1"):
        with pytest.raises(InvalidInput):
            app_manifest(bad)


def test_a_cipher_of_another_key_cannot_read_the_stored_app(installed: tuple[App, int]) -> None:
    app, _ = installed
    from resolveflow.errors import ConfigError

    with pytest.raises(ConfigError, match="do not decrypt"):
        github_app.stored_app(app.db, TokenCipher(TokenCipher.generate_key()))
    assert github_app.stored_app(app.db, TokenCipher(TOKEN_KEY)) is not None


# --- an installation serves its own tenant only ------------------------------------------------

SECRET = "globex/secret"  # installed for the account globex, mapped to the tenant globex-corp
STRAY = "hooli/stray"  # installed, its installation mapped to no tenant


def _record_installation(
    client: TestClient, forge: FakeGitHubWithApp, installation: int, repos: list[str]
) -> None:
    created = {
        "action": "created",
        "installation": forge.installation_payload(installation),
        "repositories": [{"full_name": r} for r in repos],
        "sender": {"login": "octocat"},
    }
    answer = client.post("/webhooks/github", **_signed(forge, "installation", created))
    assert answer.json()["ignored"] == f"installation {installation} recorded", answer.text


def _bodies(forge: FakeGitHubWithApp, repo: str) -> list[str]:
    return [c["body"].split("\n\n")[0] for c in forge.comments(repo, 1)]


def test_an_app_write_goes_out_only_through_an_installation_of_the_tenant(
    queue_ready: str, forge: FakeGitHubWithApp
) -> None:
    for repo in (SECRET, STRAY):
        forge.add_repo(repo, REPO_LABELS)
        forge.add_issue(repo, 1, "Private", "Not acme's to read.", user="octocat")
    with open_app(_settings(queue_ready, forge), auto_migrate=False) as app:
        acme = make_world(app.db)
        globex = make_world(app.db, "globex-corp", SECRET)
        with TestClient(create_app(app), base_url="https://testserver") as client:
            _create_app(client, forge, app)
            ours = forge.install_app("acme", [REPO])
            theirs = forge.install_app("globex", [SECRET])
            stray = forge.install_app("hooli", [STRAY])
            for installation, repos in ((ours, [REPO]), (theirs, [SECRET]), (stray, [STRAY])):
                _record_installation(client, forge, installation, repos)
        github_app.map_installation(app.db, ours, "acme")
        github_app.map_installation(app.db, theirs, "globex-corp")
        # The operator also allows globex's repository, and the unmapped one, for acme.
        admin.add_repository(app.db, "acme", SECRET)
        admin.add_repository(app.db, "acme", STRAY)
        _, crossing = propose_and_approve(
            app.db, dataclasses.replace(acme, repository=SECRET), comment="acme on globex's"
        )
        _, unmapped = propose_and_approve(
            app.db, dataclasses.replace(acme, repository=STRAY), comment="acme on hooli's"
        )
        propose_and_approve(app.db, acme, comment="acme on its own")
        propose_and_approve(app.db, globex, comment="globex on its own")

        assert app.executor().run_due() == 4
        # Each tenant's own write went out as the App's bot; acme's wrote nothing elsewhere.
        assert _bodies(forge, REPO) == ["acme on its own"]
        assert _bodies(forge, SECRET) == ["globex on its own"]
        assert _bodies(forge, STRAY) == []
        assert {c["user"]["login"] for r in (REPO, SECRET) for c in forge.comments(r, 1)} == {BOT}
        viewer = acme.approver(app.db)
        refused = execution_service.show_execution(app.db, viewer, crossing.execution.id)
        assert (refused["state"], refused["detail"]) == (
            "failed",
            f"refused before sending: the GitHub App's installation covering {SECRET} is mapped "
            "to another tenant: the App does not read or write there for this one",
        )
        assert "globex-corp" not in json.dumps(refused, default=str)
        stray_refused = execution_service.show_execution(app.db, viewer, unmapped.execution.id)
        assert stray_refused["state"] == "failed"
        assert f"install-map --installation {stray} --tenant NAME" in stray_refused["detail"]

        # Reads too: acme's run on globex's repository reads nothing and says why; the
        # process-wide client, acting for no tenant, reads nothing either.
        run_id = app.run_controller().start(acme.requester(app.db), SECRET, 1)
        run = run_service.describe_run(app.db, acme.requester(app.db), run_id)
        assert run["status"] == "failed" and "mapped to another tenant" in run["detail"]["error"]
        with pytest.raises(AppInstallationRefused, match="another tenant"):
            acting_for(app.github, acme.tenant.id).get_issue(RepoName.parse(SECRET), 1)
        with pytest.raises(AppInstallationRefused, match="named none"):
            app.github.get_issue(RepoName.parse(REPO), 1)
        assert acting_for(app.github, acme.tenant.id).get_issue(RepoName.parse(REPO), 1).number == 1


# --- one event through two webhooks --------------------------------------------------------------


def _hook_signed(event: str, payload: dict[str, Any]) -> dict[str, Any]:
    """As the repository's own webhook sends it: the global secret, no installation."""
    body = json.dumps(payload).encode()
    mac = hmac.new(WEBHOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()
    headers = {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": "sha256=" + mac,
        "Content-Type": "application/json",
    }
    return {"content": body, "headers": headers}


def test_one_event_through_the_app_and_the_repository_hook_starts_one_run(
    queue_ready: str, forge: FakeGitHubWithApp
) -> None:
    from resolveflow.worker import run_once

    forge.add_issue(REPO, 2, "Second", "Also crashes.", user="octocat")
    settings = web_settings(queue_ready, forge.url, github_token=None)  # the global secret too
    with open_app(settings, auto_migrate=False) as app:
        world = make_world(app.db)
        with TestClient(create_app(app), base_url="https://testserver") as client:
            _create_app(client, forge, app)
            installation = forge.install_app("acme", [REPO])
            via_app = {"installation": {"id": installation}}
            # A delivery is GitHub's word that the installation exists: mapped without --force.
            unmapped = _signed(forge, "issues", issue_payload(1) | via_app)
            first = client.post("/webhooks/github", **unmapped)
            assert "mapped to no tenant" in first.json()["ignored"]
            github_app.map_installation(app.db, installation, "acme")

            # Through the App, then the repository's hook, before the worker runs.
            opened = issue_payload(1)
            for sent in (
                _signed(forge, "issues", opened | via_app),
                _hook_signed("issues", opened),
            ):
                answer = client.post("/webhooks/github", **sent)
                assert answer.status_code == 202 and answer.json()["queued"], answer.text
            run_once(app)
            # Through the repository's hook, the worker, then the App.
            opened = issue_payload(2)
            answer = client.post("/webhooks/github", **_hook_signed("issues", opened))
            assert answer.json()["queued"], answer.text
            run_once(app)
            answer = client.post("/webhooks/github", **_signed(forge, "issues", opened | via_app))
            assert "the same event through another webhook" in answer.json()["ignored"]
            run_once(app)
        runs = run_service.list_runs(app.db, world.approver(app.db))
        assert sorted(r["target"] for r in runs) == [f"{REPO}#1", f"{REPO}#2"]


# --- install-map: a move or an id never seen takes --force -------------------------------------


def test_install_map_asks_force_to_move_or_to_map_an_id_never_seen(
    cli: Any, database_url: str
) -> None:
    import psycopg

    cli.json("tenants", "add", "acme")
    cli.json("tenants", "add", "globex")
    mapping = ("github-app", "install-map", "--installation", "41001")
    unseen = cli.run(*mapping, "--tenant", "acme", ok=False)
    assert unseen.returncode == 3  # not found
    line = one_line_error(unseen, "installation 41001 was never seen")
    assert "--force" in line
    assert cli.json("github-app", "installations") == []

    first = cli.json(*mapping, "--tenant", "acme", "--force")
    assert (first["tenant"], first["never_seen"], first["moved_from"]) == ("acme", True, None)
    again = cli.json(*mapping, "--tenant", "acme")  # seen now, and already acme's
    assert (again["never_seen"], again["moved_from"]) == (False, None)

    moving = cli.run(*mapping, "--tenant", "globex", ok=False)
    assert moving.returncode == 5  # conflict
    line = one_line_error(moving, "installation 41001 belongs to tenant acme")
    assert "moves its deliveries and writes there" in line and "--force" in line
    assert [i["tenant"] for i in cli.json("github-app", "installations")] == ["acme"]
    text = cli.run(*mapping, "--tenant", "globex", "--force").stdout
    assert "installation 41001 now belongs to globex (moved from acme)" in text
    assert [i["tenant"] for i in cli.json("github-app", "installations")] == ["globex"]

    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT t.name, a.event, a.details FROM audit_events a JOIN tenants t"
            " ON t.id = a.tenant_id WHERE a.subject_type = 'github_app_installation' ORDER BY a.id"
        ).fetchall()
    assert [(name, event, d["moved"], d["forced"]) for name, event, d in rows] == [
        ("acme", "github_app.installation_mapped", False, True),
        ("globex", "github_app.installation_mapped", True, True),
        ("acme", "github_app.installation_moved_away", True, True),
    ]
    assert all("globex" not in json.dumps(d) and "acme" not in json.dumps(d) for *_, d in rows)
