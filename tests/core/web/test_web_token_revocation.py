"""``resolveflow principals revoke-token`` in a real process, against the app's database: the next
API, MCP and CLI request with that token is refused (every request looks its token up; nothing
caches it), the revocation is in the audit trail once, other principals' tokens still work, and
bad input is one line with its exit code."""

from __future__ import annotations

from typing import Any

from fixtures_cli import Cli
from fixtures_web import Web

pytest_plugins = ["fixtures_web"]

MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
MCP_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def _api(web: Web, token: str) -> int:
    answer = web.client.get("/api/v1/proposals", headers=web.api(token))
    return int(answer.status_code)


def _mcp(web: Web, token: str) -> Any:
    headers = {**MCP_HEADERS, **web.api(token)}
    return web.client.post("/mcp", json=MCP_LIST, headers=headers)


def _revocations(web: Web) -> list[dict[str, Any]]:
    with web.db.tenant(web.world.tenant.id) as conn:
        return conn.execute(
            "SELECT actor, subject_id, details FROM audit_events"
            " WHERE event = 'principal.token_revoked' ORDER BY id"
        ).fetchall()


def test_a_revoked_token_is_refused_from_the_next_request_on(web: Web, cli: Cli) -> None:
    alex, rita = web.world.approver_token, web.world.requester_token
    assert _api(web, alex) == 200 and _mcp(web, alex).status_code == 200
    assert cli.run("proposals", "list", token=alex).returncode == 0

    revoked = cli.json("principals", "revoke-token", "--subject", "alex", "--tenant", "acme")
    assert revoked["subject"] == "alex" and revoked["changed"] is True

    refused = web.client.get("/api/v1/proposals", headers=web.api(alex))
    assert refused.status_code == 401, refused.text
    assert refused.json()["message"] == "the API token is not valid"
    assert _mcp(web, alex).status_code == 401
    after = cli.run("proposals", "list", token=alex, ok=False)
    assert after.returncode == 4 and after.stderr.strip() == "error: the API token is not valid"
    assert _api(web, rita) == 200  # another principal's token is untouched

    [row] = _revocations(web)
    assert row["subject_id"] == revoked["id"] and row["details"] == {"subject": "alex"}
    assert row["actor"].startswith("operator")
    audit = web.client.get("/api/v1/audit", headers=web.api(rita))
    assert audit.status_code == 200 and "principal.token_revoked" in audit.text

    listed = {p["subject"]: p for p in cli.json("principals", "list", "--tenant", "acme")}
    assert listed["alex"]["token_revoked_at"] == revoked["token_revoked_at"]
    assert listed["rita"]["token_revoked_at"] is None

    again = cli.run("principals", "revoke-token", "--subject", "alex", "--tenant", "acme")
    assert "no change: revoked already" in again.stdout
    assert len(_revocations(web)) == 1


def test_revoking_the_token_of_nobody_is_one_line(web: Web, cli: Cli) -> None:
    missing = cli.run("principals", "revoke-token", "--subject", "nobody", "--tenant", "acme",
                      ok=False)  # fmt: skip
    assert missing.returncode == 3, missing.stderr
    assert missing.stderr.strip() == "error: no principal 'nobody' in this tenant"
    assert _api(web, web.world.approver_token) == 200
