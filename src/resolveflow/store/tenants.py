"""Tenants, principals and the per-tenant repository allowlist."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from resolveflow.domain.records import Principal, Role, Tenant
from resolveflow.errors import NotFound
from resolveflow.store.database import Connection
from resolveflow.store.queries import q


def _tenant(row: dict[str, Any]) -> Tenant:
    return Tenant(id=row["id"], name=row["name"])


def _principal(row: dict[str, Any]) -> Principal:
    return Principal(
        id=row["id"],
        tenant_id=row["tenant_id"],
        subject=row["subject"],
        roles=frozenset(Role(role) for role in row["roles"]),
        has_github_token=row["has_github_token"],
    )


def insert_tenant(conn: Connection, name: str) -> Tenant:
    row = conn.execute(q("tenants", "insert_tenant"), {"name": name}).fetchone()
    assert row is not None
    return _tenant(row)


def tenant_by_name(conn: Connection, name: str) -> Tenant:
    row = conn.execute(q("tenants", "tenant_by_name"), {"name": name}).fetchone()
    if row is None:
        raise NotFound(f"no tenant named {name!r}")
    return _tenant(row)


def list_tenants(conn: Connection) -> list[Tenant]:
    return [_tenant(row) for row in conn.execute(q("tenants", "list_tenants")).fetchall()]


def insert_principal(
    conn: Connection,
    *,
    tenant_id: UUID,
    subject: str,
    roles: list[Role],
    token_hash: str,
    github_token: str | None,
) -> Principal:
    row = conn.execute(
        q("tenants", "insert_principal"),
        {
            "tenant_id": tenant_id,
            "subject": subject,
            "roles": [role.value for role in roles],
            "token_hash": token_hash,
            "github_token": github_token,
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
