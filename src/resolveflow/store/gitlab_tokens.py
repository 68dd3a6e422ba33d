"""Each tenant's GitLab token, encrypted at rest with the same cipher as the GitHub tokens.

The associated data names the tenant (and that it is a GitLab token), so a ciphertext moved to
another tenant's row, or into ``github_tokens``, does not decrypt.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from resolveflow.errors import InvalidInput
from resolveflow.store.database import Connection
from resolveflow.store.queries import q
from resolveflow.store.token_cipher import TokenCipher, TokenOwner, TokenUnreadable


@dataclass(frozen=True)
class TenantGitLabToken(TokenOwner):
    """A tenant's GitLab token as the cipher's owner: the tenant id is the associated data."""

    def associated_data(self) -> bytes:
        return f"resolveflow gitlab token v1|{self.tenant_id}".encode()


def _owner(tenant_id: UUID, tenant_name: str) -> TenantGitLabToken:
    return TenantGitLabToken(tenant_id=tenant_id, principal_id=tenant_id, subject=tenant_name)


def save_gitlab_token(
    conn: Connection, cipher: TokenCipher, tenant_id: UUID, tenant_name: str, token: str
) -> None:
    token = token.strip()
    if not token or any(ch.isspace() for ch in token):
        raise InvalidInput("a GitLab token is one word; nothing was stored")
    conn.execute(
        q("gitlab", "save_gitlab_token"),
        {
            "tenant_id": tenant_id,
            "ciphertext": cipher.encrypt(token, _owner(tenant_id, tenant_name)),
        },
    )


def gitlab_token(
    conn: Connection, cipher: TokenCipher, tenant_id: UUID, tenant_name: str
) -> str | None:
    """The tenant's GitLab token in clear, or None when none is stored."""
    row = conn.execute(q("gitlab", "gitlab_token"), {"tenant_id": tenant_id}).fetchone()
    if row is None:
        return None
    try:
        return cipher.decrypt(row["ciphertext"], _owner(tenant_id, tenant_name))
    except TokenUnreadable:
        raise TokenUnreadable(
            f"the GitLab token stored for tenant {tenant_name} does not decrypt with "
            "any configured key; give it again with `resolveflow gitlab token set`"
        ) from None
