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

from collections.abc import Callable
from uuid import UUID

from resolveflow.errors import ConfigError
from resolveflow.store.context import ExecutionContext
from resolveflow.store.database import Connection
from resolveflow.store.token_cipher import KEY_SETTING

# (connection, tenant id, principal id) -> that principal's own GitHub token, decrypted from the
# store, or None when none is stored; raises TokenUnreadable when one is stored but unreadable.
# ``None`` in place of a lookup means no key is configured.
ApproverTokenLookup = Callable[[Connection, UUID, UUID], str | None]


def approver_token(
    conn: Connection, context: ExecutionContext, lookup: ApproverTokenLookup | None
) -> str | None:
    """The approver's own token to write (and check authorship) with; ``None``: the service token."""
    approver = context.approver
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
