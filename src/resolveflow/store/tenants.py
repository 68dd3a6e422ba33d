"""Tenants, principals (with their own GitHub tokens, encrypted) and the repository allowlist."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from resolveflow.domain.records import Principal, Role, Tenant
from resolveflow.errors import NotFound
from resolveflow.store import rows as typed
from resolveflow.store.database import Connection
from resolveflow.store.queries import q
from resolveflow.store.token_cipher import KEY_SETTING, TokenCipher, TokenOwner, TokenUnreadable

logger = logging.getLogger(__name__)


def _tenant(row: dict[str, Any]) -> Tenant:
    return Tenant(id=row["id"], name=row["name"], scratch=row["scratch"])


def _principal(row: dict[str, Any]) -> Principal:
    return Principal(
        id=row["id"],
        tenant_id=row["tenant_id"],
        subject=row["subject"],
        roles=frozenset(Role(role) for role in row["roles"]),
        has_github_token=row["has_github_token"],
        token_revoked_at=row.get("token_revoked_at"),
    )


def insert_tenant(conn: Connection, name: str, *, scratch: bool = False) -> Tenant:
    row = conn.execute(q("tenants", "insert_tenant"), {"name": name, "scratch": scratch}).fetchone()
    assert row is not None
    return _tenant(row)


def tenant_by_name(conn: Connection, name: str) -> Tenant:
    row = conn.execute(q("tenants", "tenant_by_name"), {"name": name}).fetchone()
    if row is None:
        raise NotFound(f"no tenant named {name!r}")
    return _tenant(row)


def list_tenants(conn: Connection) -> list[Tenant]:
    """Every tenant, an evaluation's scratch tenants too."""
    return [_tenant(row) for row in conn.execute(q("tenants", "list_tenants")).fetchall()]


def insert_principal(
    conn: Connection,
    *,
    tenant_id: UUID,
    subject: str,
    roles: list[Role],
    token_hash: str,
) -> Principal:
    row = conn.execute(
        q("tenants", "insert_principal"),
        {
            "tenant_id": tenant_id,
            "subject": subject,
            "roles": [role.value for role in roles],
            "token_hash": token_hash,
        },
    ).fetchone()
    assert row is not None
    return _principal(row)


def principal_by_token_hash(conn: Connection, tenant_id: UUID, token_hash: str) -> Principal | None:
    row = conn.execute(
        q("tenants", "principal_by_token_hash"), {"tenant_id": tenant_id, "token_hash": token_hash}
    ).fetchone()
    return _principal(row) if row else None


def principal_by_id(conn: Connection, tenant_id: UUID, principal_id: UUID) -> Principal | None:
    row = conn.execute(
        q("tenants", "principal_by_id"), {"tenant_id": tenant_id, "id": principal_id}
    ).fetchone()
    return _principal(row) if row else None


def principal_by_subject(conn: Connection, tenant_id: UUID, subject: str) -> Principal:
    row = conn.execute(
        q("tenants", "principal_by_subject"), {"tenant_id": tenant_id, "subject": subject}
    ).fetchone()
    if row is None:
        raise NotFound(f"no principal {subject!r} in this tenant")
    return _principal(row)


def set_principal_roles(
    conn: Connection, tenant_id: UUID, principal_id: UUID, roles: list[Role]
) -> None:
    row = conn.execute(
        q("tenants", "set_principal_roles"),
        {"tenant_id": tenant_id, "id": principal_id, "roles": [role.value for role in roles]},
    ).fetchone()
    if row is None:
        raise NotFound("no such principal")


def revoke_token(conn: Connection, tenant_id: UUID, principal_id: UUID) -> datetime | None:
    """Revoke the principal's API token now; None when it was revoked already."""
    row = conn.execute(
        q("tenants", "revoke_token"), {"tenant_id": tenant_id, "id": principal_id}
    ).fetchone()
    return row["token_revoked_at"] if row else None


def list_principals(conn: Connection, tenant_id: UUID) -> list[Principal]:
    rows = conn.execute(q("tenants", "list_principals"), {"tenant_id": tenant_id}).fetchall()
    return [_principal(row) for row in rows]


def insert_repository(conn: Connection, tenant_id: UUID, full_name: str) -> None:
    conn.execute(
        q("tenants", "insert_repository"), {"tenant_id": tenant_id, "full_name": full_name}
    )


def delete_repository(conn: Connection, tenant_id: UUID, full_name: str) -> None:
    row = conn.execute(
        q("tenants", "delete_repository"), {"tenant_id": tenant_id, "full_name": full_name}
    ).fetchone()
    if row is None:
        raise NotFound(f"{full_name} is not on this tenant's allowlist")


def list_repositories(conn: Connection, tenant_id: UUID) -> list[str]:
    rows = conn.execute(q("tenants", "list_repositories"), {"tenant_id": tenant_id}).fetchall()
    return [row["full_name"] for row in rows]


def repository_allowed(conn: Connection, tenant_id: UUID, full_name: str) -> bool:
    row = conn.execute(
        q("tenants", "repository_allowed"), {"tenant_id": tenant_id, "full_name": full_name}
    ).fetchone()
    return bool(row and row["allowed"])


# --- principals' own GitHub tokens: one encrypted row per principal ----------------------------


def _owner(tenant_id: UUID, principal_id: UUID, subject: str) -> TokenOwner:
    return TokenOwner(tenant_id=tenant_id, principal_id=principal_id, subject=subject)


def save_github_token(
    conn: Connection,
    cipher: TokenCipher,
    principal: Principal,
    token: str,
    *,
    github_login: str | None = None,
) -> None:
    """Store ``principal``'s own token, encrypted and bound to them, replacing any earlier one."""
    owner = _owner(principal.tenant_id, principal.id, principal.subject)
    conn.execute(
        q("tenants", "save_github_token"),
        {
            "tenant_id": principal.tenant_id,
            "principal_id": principal.id,
            "github_login": github_login,
            "ciphertext": cipher.encrypt(token, owner),
        },
    )


@dataclass(frozen=True)
class StoredGitHubToken:
    """A principal's token row as stored: ``ciphertext`` is None while it waits to be sealed."""

    ciphertext: str | None
    github_login: str | None
    updated_at: datetime
    subject: str


def github_token_row(
    conn: Connection, tenant_id: UUID, principal_id: UUID
) -> StoredGitHubToken | None:
    """The stored row as it is (the token encrypted), with the principal's subject."""
    params = {"tenant_id": tenant_id, "principal_id": principal_id}
    return typed.one(conn, StoredGitHubToken, q("tenants", "github_token"), params)


def github_token(
    conn: Connection, cipher: TokenCipher, tenant_id: UUID, principal_id: UUID
) -> str | None:
    """The principal's own GitHub token in clear, for the executor; ``None`` when none is stored.

    Raises ``TokenUnreadable`` (naming the principal) when it is stored but cannot be used.
    """
    row = github_token_row(conn, tenant_id, principal_id)
    if row is None:
        return None
    if row.ciphertext is None:
        raise TokenUnreadable(
            f"the GitHub token stored for {row.subject} is still waiting to be encrypted; "
            f"start ResolveFlow with {KEY_SETTING} set (or let them sign in again)"
        )
    return cipher.decrypt(row.ciphertext, _owner(tenant_id, principal_id, row.subject))


@dataclass
class TokenSweep:
    """What one pass over the stored tokens did."""

    changed: int = 0
    unreadable: list[str] = field(default_factory=list)  # subjects whose token could not be read


def reencrypt_github_tokens(conn: Connection, cipher: TokenCipher, tenant_id: UUID) -> TokenSweep:
    """Encrypt again with the primary key every token of the tenant that another key wrote."""
    sweep = TokenSweep()
    rows = conn.execute(q("tenants", "stored_github_tokens"), {"tenant_id": tenant_id}).fetchall()
    for row in rows:
        if cipher.is_current(row["ciphertext"]):
            continue
        owner = _owner(tenant_id, row["principal_id"], row["subject"])
        try:
            token = cipher.decrypt(row["ciphertext"], owner)
        except TokenUnreadable as exc:
            logger.warning("token not re-encrypted: %s", exc.message)
            sweep.unreadable.append(row["subject"])
            continue
        if _replace_ciphertext(conn, owner, row["ciphertext"], cipher.encrypt(token, owner)):
            sweep.changed += 1
    return sweep


def _replace_ciphertext(
    conn: Connection, owner: TokenOwner, previous: str | None, ciphertext: str
) -> bool:
    row = conn.execute(
        q("tenants", "replace_github_token_ciphertext"),
        {
            "tenant_id": owner.tenant_id,
            "principal_id": owner.principal_id,
            "previous": previous,
            "ciphertext": ciphertext,
        },
    ).fetchone()
    return row is not None


def seal_waiting_tokens(owner_conn: Connection, cipher: TokenCipher) -> TokenSweep:
    """Encrypt the tokens that migration 0010 set aside (clear-text CLI tokens, unbound Fernet
    sign-in tokens), as the database owner, the only role that can read them; then forget them.

    A token that was replaced meanwhile (a sign-in) is simply dropped; a Fernet token that no
    configured key opens stays set aside, and its principal's writes are refused, until a key that
    opens it is configured or they sign in again.
    """
    sweep = TokenSweep()
    for tenant in list_tenants(owner_conn):
        with owner_conn.transaction():
            # Row-level security is forced, so it applies to a non-superuser owner too.
            owner_conn.execute(q("tenants", "scope_to_tenant"), {"tenant_id": tenant.id})
            rows = owner_conn.execute(q("tenants", "tokens_to_seal"), {"tenant_id": tenant.id})
            for row in rows.fetchall():
                _seal(owner_conn, cipher, row, sweep)
    return sweep


def _seal(conn: Connection, cipher: TokenCipher, row: dict[str, Any], sweep: TokenSweep) -> None:
    stored = github_token_row(conn, row["tenant_id"], row["principal_id"])
    if stored is not None and stored.ciphertext is None:
        owner = _owner(row["tenant_id"], row["principal_id"], stored.subject)
        try:
            token = (
                cipher.decrypt_legacy(row["secret"], owner.subject)
                if row["legacy_fernet"]
                else row["secret"]
            )
        except TokenUnreadable as exc:
            logger.warning("token not sealed: %s", exc.message)
            sweep.unreadable.append(owner.subject)
            return
        sweep.changed += _replace_ciphertext(conn, owner, None, cipher.encrypt(token, owner))
    conn.execute(
        q("tenants", "token_sealed"),
        {"tenant_id": row["tenant_id"], "principal_id": row["principal_id"]},
    )
