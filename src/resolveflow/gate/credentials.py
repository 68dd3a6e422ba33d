"""Which credential a write (and the authorship check of a reconciliation) uses.

The one order, as docs/web.md states it:

1. the approver's own GitHub token. A principal has at most one, in the encrypted store
   (``github_tokens``); the latest given wins, so a sign-in replaces a token an operator gave with
   ``principals add --github-token-stdin``;
2. otherwise the service token (``RESOLVEFLOW_GITHUB_TOKEN``): ``approver_token`` returns ``None``
   and the client uses its own.

An approver who has a token that cannot be used (no key configured, a key removed, a row altered)
is an error naming them, never a quiet fall back to the service token: GitHub would then show
another author than the one the approver expects, and reconciliation would look for that one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from uuid import UUID

from resolveflow.domain.counted import counted, plural
from resolveflow.domain.records import Principal
from resolveflow.errors import ConfigError
from resolveflow.gate.store.context import ExecutionContext
from resolveflow.store.database import Connection, Database
from resolveflow.store.queries import q
from resolveflow.store.token_cipher import KEY_SETTING

# (connection, tenant id, principal id) -> that principal's own GitHub token, decrypted from the
# store, or None when none is stored; raises TokenUnreadable when one is stored but unreadable.
# ``None`` in place of a lookup means no key is configured.
ApproverTokenLookup = Callable[[Connection, UUID, UUID], str | None]


def approver_token(
    conn: Connection, context: ExecutionContext, lookup: ApproverTokenLookup | None
) -> str | None:
    """The approver's own token to write (and check authorship) with; ``None``: the service token."""
    return principal_token(conn, context.approver, lookup)


def principal_token(
    conn: Connection, approver: Principal | None, lookup: ApproverTokenLookup | None
) -> str | None:
    """The token a write approved by ``approver`` uses (the pages say who will post with it)."""
    if approver is None:
        return None
    if lookup is None:
        if approver.has_github_token:
            raise ConfigError(
                f"{approver.subject} approved this and has their own GitHub token, but "
                f"{KEY_SETTING} is not set to decrypt it"
            )
        return None
    return lookup(conn, approver.tenant_id, approver.id)


SERVICE_TOKEN_SETTING = "RESOLVEFLOW_GITHUB_TOKEN"  # noqa: S105 (a setting's name)
GITLAB_URL_SETTING = "RESOLVEFLOW_GITLAB_URL"
GITLAB_KIND = "gitlab.issue_create"  # written with the tenant's GitLab token, whoever approved
EMAIL_KIND = "email.send"  # sent with the mailbox's own secret; its executor checks it


@dataclass(frozen=True)
class Configured:
    """Which credential settings this process has (the token values themselves stay elsewhere)."""

    service_token: bool  # RESOLVEFLOW_GITHUB_TOKEN
    key_configured: bool  # RESOLVEFLOW_TOKEN_ENCRYPTION_KEY: stored tokens can be decrypted
    gitlab_url: bool  # RESOLVEFLOW_GITLAB_URL


def missing_credential(
    approver: str | None, has_own_token: bool, *, service_token: bool, key_configured: bool
) -> str | None:
    """Why a write approved by ``approver`` would have no credential (the setting that fixes it),
    or ``None`` when it has one. The same order as ``principal_token``: an own token needs the
    key to decrypt it; without one, the service token."""
    if approver is None:
        return None  # no approver: the gate refuses it, a credential would not help
    if has_own_token:
        if key_configured:
            return None
        return f"{approver}'s own GitHub token cannot be decrypted: set {KEY_SETTING}"
    if service_token:
        return None
    return (
        f"approved by {approver}, who has no GitHub token of their own, and no service token is "
        f"set: set {SERVICE_TOKEN_SETTING}"
    )


def missing_gitlab_credential(tenant: str, has_token: bool, configured: Configured) -> str | None:
    """Why a GitLab write of ``tenant`` would have no credential (what fixes it), or ``None``.
    GitLab is written with the tenant's own token (stored encrypted), never a GitHub one."""
    if not configured.gitlab_url:
        return f"a GitLab issue, and GitLab is not configured: set {GITLAB_URL_SETTING}"
    if not has_token:
        return (
            f"a GitLab issue, and tenant {tenant} has no GitLab token: "
            f"resolveflow gitlab token set --tenant {tenant} --stdin"
        )
    if not configured.key_configured:
        return f"tenant {tenant}'s GitLab token cannot be decrypted: set {KEY_SETTING}"
    return None


def due_credentials(
    conn: Connection, tenant_id: UUID, configured: Configured
) -> dict[UUID, str | None]:
    """The tenant's due executions, each with why it has no credential to write with (the
    setting that fixes it), or ``None`` when it has one; each asks for its own forge's
    credential. The executor (CLI) and the worker both ask this before claiming."""
    rows = conn.execute(q("gate/store/executions", "due_approvers"), {"tenant_id": tenant_id})
    return {
        row["id"]: None
        if row["kind"] == EMAIL_KIND
        else missing_gitlab_credential(row["tenant"], row["has_gitlab_token"], configured)
        if row["kind"] == GITLAB_KIND
        else missing_credential(
            row["subject"],
            row["has_github_token"],
            service_token=configured.service_token,
            key_configured=configured.key_configured,
        )
        for row in rows.fetchall()
    }


def due_without_credential(
    conn: Connection, tenant_id: UUID, configured: Configured
) -> dict[UUID, str]:
    """Of ``due_credentials``, those that have none."""
    due = due_credentials(conn, tenant_id, configured)
    return {execution_id: why for execution_id, why in due.items() if why is not None}


def no_credential_message(problems: dict[UUID, str]) -> str:
    """One line naming each waiting execution and the setting that would let it run."""
    named = "; ".join(f"execution {eid} ({why})" for eid, why in problems.items())
    return (
        f"no token to write with, so nothing was sent; {counted(len(problems), 'approved execution')}"
        f" {plural(len(problems), 'stays queued and runs', 'stay queued and run')} once it is set:"
        f" {named}"
    )


def check_due_credentials(db: Database, tenant_ids: Iterable[UUID], configured: Configured) -> None:
    """Refuse, before anything is claimed, when a due execution has no credential to write with:
    claimed, it would fail (or be sent unauthenticated); left alone, it stays approved and runs
    once the setting is there."""
    problems: dict[UUID, str] = {}
    for tenant_id in tenant_ids:
        with db.tenant(tenant_id) as conn:
            problems.update(due_without_credential(conn, tenant_id, configured))
    if problems:
        raise ConfigError(no_credential_message(problems))
