"""Which credential a write (and the authorship check of a reconciliation) uses."""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

from resolveflow.store.context import ExecutionContext
from resolveflow.store.database import Connection

# (connection, tenant id, approver id) -> the approver's own GitHub token, e.g. decrypted from
# the sign-in store; consulted when the principal row carries none.
ApproverTokenLookup = Callable[[Connection, UUID, UUID], str | None]


def approver_token(
    conn: Connection, context: ExecutionContext, lookup: ApproverTokenLookup | None
) -> str | None:
    """The token to write (and to check authorship) with: the approver's own, if they have one."""
    if context.approver_github_token:
        return context.approver_github_token
    if lookup is None or context.approver is None:
        return None
    return lookup(conn, context.approver.tenant_id, context.approver.id)
