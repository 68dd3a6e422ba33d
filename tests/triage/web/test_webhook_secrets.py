"""A tenant's own webhook secret (finding 6): ``/webhooks/github/{tenant}`` verifies with it, and
its deliveries concern that tenant alone; the secret is stored encrypted, bound to its tenant."""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import sys
import uuid
from typing import Any

from fixtures_cli import Cli
from fixtures_web import REPO, WEBHOOK_SECRET, Web, add_approver, issue_payload
from resolveflow.accounts import admin
from resolveflow.accounts.auth import authenticate
from resolveflow.store.token_cipher import TokenCipher
from resolveflow.triage import runs as run_service
from resolveflow.triage import webhook_secrets
from resolveflow.triage.store import webhooks as webhook_store

pytest_plugins = ["fixtures_web"]


def post(
    web: Web, path: str, secret: str, payload: dict[str, Any], delivery: str | None = None
) -> Any:
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return web.client.post(
        path,
        content=body,
        headers={
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "X-Hub-Signature-256": signature,
        },
    )


def _targets(web: Web, token: str) -> list[str]:
    return sorted(r["target"] for r in run_service.list_runs(web.db, authenticate(web.db, token)))


def _deliveries(superuser: Any) -> int:
    return int(superuser.execute("SELECT count(*) FROM webhook_deliveries").fetchone()[0])


def _set(web: Web, tenant: str) -> str:
    made = webhook_secrets.set_secret(web.db, web.app.token_cipher(), tenant)
    assert made.secret is not None and made.path == f"/webhooks/github/{tenant}"
    return made.secret


def test_a_tenants_secret_signs_deliveries_for_that_tenant_only(web: Web) -> None:
    admin.add_repository(web.db, "evil", REPO)  # both tenants allow the repository
    eve = add_approver(web, "evil", "eve")
    acme_secret = _set(web, "acme")
    response = post(web, "/webhooks/github/acme", acme_secret, issue_payload(1))
    assert response.status_code == 202 and response.json()["queued"], response.text
    delivery = response.json()["delivery"]
    with web.db.tenant(web.world.tenant.id) as conn:
        row = webhook_store.delivery_by_id(conn, delivery)
    assert row is not None and row.tenant_id == web.world.tenant.id
    # It is acme's row: row-level security hides it from another tenant and from no tenant.
    with web.db.tenant(admin.find_tenant(web.db, "evil").id) as conn:
        assert webhook_store.delivery_by_id(conn, delivery) is None
    with web.db.unscoped() as conn:
        assert webhook_store.delivery_by_id(conn, delivery) is None
    web.work()
    assert _targets(web, web.world.approver_token) == [f"{REPO}#1"]
    assert _targets(web, eve) == []
    # The global secret's deliveries still reach every tenant that allows the repository.
    web.fake.add_issue(REPO, 2, "Another", "body")
    assert post(web, "/webhooks/github", WEBHOOK_SECRET, issue_payload(2)).status_code == 202
    web.work()
    assert _targets(web, web.world.approver_token) == [f"{REPO}#1", f"{REPO}#2"]
    assert _targets(web, eve) == [f"{REPO}#2"]


def test_the_tenant_url_accepts_no_other_secret_and_names_no_tenant(
    web: Web, superuser: Any
) -> None:
    acme_secret = _set(web, "acme")
    evil_secret = _set(web, "evil")
    refused = [
        ("/webhooks/github/acme", WEBHOOK_SECRET),  # the global secret
        ("/webhooks/github/acme", evil_secret),  # another tenant's
        ("/webhooks/github/evil", acme_secret),
        ("/webhooks/github/nobody", acme_secret),  # no such tenant: the same answer
        ("/webhooks/github/ACME", acme_secret),
        ("/webhooks/github/" + "a" * 300, acme_secret),
    ]
    for path, secret in refused:
        response = post(web, path, secret, issue_payload(1))
        assert response.status_code == 401, (path, response.text)
    assert webhook_secrets.remove_secret(web.db, "evil")
    assert post(web, "/webhooks/github/evil", evil_secret, issue_payload(1)).status_code == 401
    assert not webhook_secrets.remove_secret(web.db, "evil")
    assert _deliveries(superuser) == 0


def test_a_replay_is_refused_within_its_scope(web: Web) -> None:
    secret = _set(web, "acme")
    payload = issue_payload(1)
    first = post(web, "/webhooks/github/acme", secret, payload)
    replay = post(web, "/webhooks/github/acme", secret, payload)
    assert first.json()["queued"] is True
    assert replay.json()["queued"] is False and "already processed" in replay.json()["ignored"]
    # The global hook's copy of the same event is its own scope (configure one hook per repo).
    assert post(web, "/webhooks/github", WEBHOOK_SECRET, payload).json()["queued"] is True


def test_a_delivery_id_seen_in_another_scope_is_a_duplicate_there_too(
    web: Web, superuser: Any
) -> None:
    """Found by the fuzz run: the global hook cannot see a tenant's row, so the id's clash shows
    only when the row is inserted; it is a duplicate (200), and the event's claim is undone."""
    secret = _set(web, "acme")
    for first, second in (("acme", "global"), ("global", "acme")):
        delivery = f"same-id-{first}"
        paths = {
            "acme": ("/webhooks/github/acme", secret),
            "global": ("/webhooks/github", WEBHOOK_SECRET),
        }
        assert post(web, *paths[first], issue_payload(1), delivery=delivery).status_code == 202
        again = post(web, *paths[second], issue_payload(2), delivery=delivery)
        assert again.status_code == 200, again.text
        assert again.json()["duplicate"] is True
    assert _deliveries(superuser) == 2
    assert superuser.execute("SELECT count(*) FROM webhook_events").fetchone()[0] == 2


def test_the_secret_is_stored_encrypted_and_bound_to_its_tenant(web: Web, superuser: Any) -> None:
    secret = _set(web, "acme")
    _set(web, "evil")
    rows = dict(superuser.execute("SELECT tenant_id, ciphertext FROM webhook_secrets").fetchall())
    acme_row = rows[web.world.tenant.id]
    assert secret not in acme_row
    # acme's ciphertext copied onto evil's row does not decrypt there: refused, nothing recorded.
    evil_id = admin.find_tenant(web.db, "evil").id
    superuser.execute(
        "UPDATE webhook_secrets SET ciphertext = %s WHERE tenant_id = %s", [acme_row, evil_id]
    )
    response = post(web, "/webhooks/github/evil", secret, issue_payload(1))
    assert response.status_code == 503, response.text
    assert "set it again" in response.json()["message"]
    assert _deliveries(superuser) == 0
    events = superuser.execute(
        "SELECT event FROM audit_events WHERE event LIKE 'webhook.secret%%' ORDER BY id"
    ).fetchall()
    assert [e for (e,) in events] == ["webhook.secret_set", "webhook.secret_set"]


def test_the_cli_sets_and_removes_a_tenants_secret(cli: Cli, superuser: Any) -> None:
    cli.json("tenants", "add", "acme")
    # Without the encryption key nothing is stored, and the operator is told which setting.
    cli.fails("webhooks", "secret", "set", "--tenant", "acme", match="TOKEN_ENCRYPTION_KEY")
    cli.env["RESOLVEFLOW_TOKEN_ENCRYPTION_KEY"] = TokenCipher.generate_key()
    made = cli.json("webhooks", "secret", "set", "--tenant", "acme")
    assert made["path"] == "/webhooks/github/acme" and len(made["secret"]) >= 40
    given = subprocess.run(
        [sys.executable, "-m", "resolveflow", "webhooks", "secret", "set", "--stdin", "--json"],
        input="a-secret-typed-by-the-operator-0123\n",
        env=cli.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(given.stdout)["secret"] is None  # given, so not printed back
    stored = superuser.execute("SELECT ciphertext FROM webhook_secrets").fetchall()
    assert len(stored) == 1 and "a-secret-typed" not in stored[0][0]
    short = subprocess.run(
        [sys.executable, "-m", "resolveflow", "webhooks", "secret", "set", "--stdin"],
        input="short\n",
        env=cli.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert short.returncode == 2 and "20-200 printable characters" in short.stderr
    assert cli.json("webhooks", "secret", "remove") == {"tenant": "acme", "removed": True}
    assert superuser.execute("SELECT count(*) FROM webhook_secrets").fetchone()[0] == 0
