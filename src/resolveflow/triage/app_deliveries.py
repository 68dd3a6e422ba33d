"""Deliveries from the GitHub App: signed with the App's one webhook secret, each naming its
installation (``installation.id``).

An ``installation`` event records the installation (created, unsuspended) or marks it gone
(deleted, suspended), and remembers which repositories it covers; it starts nothing. Any other
event belongs to the tenant the installation is mapped to (``resolveflow github-app
install-map``) and is then handled as a delivery of that tenant's own secret is today: the
tenant's allowlist still decides which repositories start runs. An installation mapped to no
tenant starts nothing; the delivery is recorded as ignored with the command that fixes it (and
an installation not recorded before is recorded, mapped to none, so that command takes it as seen).
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from typing import Any

from resolveflow.accounts import github_app
from resolveflow.errors import InvalidInput
from resolveflow.store import github_app as app_store
from resolveflow.store.database import Database
from resolveflow.triage.webhook_events import Delivery, parse_delivery

logger = logging.getLogger(__name__)
_MAX_ID = 2**63
_GONE = ("deleted", "suspend")


def _installation(payload: dict[str, Any]) -> tuple[int | None, str]:
    found = payload.get("installation")
    if not isinstance(found, dict):
        return None, ""
    number = found.get("id")
    account = found.get("account")
    login = account.get("login") if isinstance(account, dict) else None
    valid = isinstance(number, int) and not isinstance(number, bool) and 0 < number < _MAX_ID
    return (number if valid else None), (login if isinstance(login, str) else "")[:100]


def app_delivery(db: Database, delivery_id: str | None, event: str | None, body: bytes) -> Delivery:
    """The delivery as the App's installation makes it: its tenant, or why it is ignored."""
    parsed = parse_delivery(delivery_id, event, body)
    payload = json.loads(body)  # parse_delivery has checked it is a JSON object
    installation_id, account = _installation(payload)
    if installation_id is None:
        return replace(parsed, ignored="an App delivery without an installation id")
    if parsed.event == "installation":
        _record_installation(db, installation_id, account, parsed.action, payload)
        return replace(parsed, ignored=f"installation {installation_id} recorded")
    tenant_id = github_app.delivery_tenant(db, installation_id, account)
    if tenant_id is None:
        return replace(
            parsed,
            ignored=f"installation {installation_id} is mapped to no tenant: resolveflow "
            f"github-app install-map --installation {installation_id} --tenant NAME",
        )
    return parse_delivery(delivery_id, event, body, tenant_id=tenant_id)


def _record_installation(
    db: Database, installation_id: int, account: str, action: str | None, payload: dict[str, Any]
) -> None:
    repositories = payload.get("repositories")
    names = [
        r["full_name"].lower()
        for r in (repositories if isinstance(repositories, list) else [])[:1000]
        if isinstance(r, dict) and isinstance(r.get("full_name"), str)
    ]
    with db.unscoped() as conn:
        if action in _GONE:
            app_store.installation_removed(conn, installation_id)
        else:
            app_store.record_installation(conn, installation_id, account)
            for name in names:
                try:
                    app_store.remember_repository(conn, name, installation_id)
                except InvalidInput:
                    continue
    logger.info(
        "GitHub App installation event",
        extra={"installation": installation_id, "action": action, "repositories": len(names)},
    )
