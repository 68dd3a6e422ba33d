"""Operator use cases: tenants, principals and the repository allowlist.

These run with database access and no API token: whoever can reach the database already holds more
power than any token grants.
"""

from __future__ import annotations

import getpass
import re
from dataclasses import dataclass, field, replace
from datetime import datetime

from resolveflow.accounts.auth import hash_token, new_token
from resolveflow.domain.records import Principal, Role, Tenant
from resolveflow.domain.repository_names import repository_name
from resolveflow.domain.vocabulary import AuditEvent
from resolveflow.errors import ConfigError, InvalidInput
from resolveflow.store import audit
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Database
from resolveflow.store.token_cipher import KEY_SETTING, TokenCipher

_TENANT_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


def operator_actor() -> str:
    try:
        return f"operator:{getpass.getuser()}"
    except (KeyError, OSError):
        return "operator"


@dataclass(frozen=True)
class IssuedPrincipal:
    principal: Principal
    token: str  # shown once; only its hash is stored


def add_tenant(db: Database, name: str, *, scratch: bool = False) -> Tenant:
    """A tenant; a ``scratch`` one (an evaluation's) is never picked as the only one by the CLI
    nor shown in ``tenants list``."""
    if not _TENANT_NAME.match(name):
        raise InvalidInput(
            "a tenant name is 1-63 lowercase letters, digits, '-' or '_', starting with a letter or digit"
        )
    with db.unscoped() as conn:
        tenant = tenant_store.insert_tenant(conn, name, scratch=scratch)
    with db.tenant(tenant.id) as conn:
        audit.record(
            conn,
            tenant_id=tenant.id,
            actor=operator_actor(),
            event=AuditEvent.TENANT_CREATED,
            subject_type="tenant",
            subject_id=tenant.id,
            details={"name": name},
        )
    return tenant


def list_tenants(db: Database) -> list[Tenant]:
    with db.unscoped() as conn:
        return tenant_store.list_tenants(conn)


def real_tenants(db: Database) -> list[Tenant]:
    """The tenants people work in: an evaluation's scratch tenants left out."""
    return [tenant for tenant in list_tenants(db) if not tenant.scratch]


def scratch_tenants(db: Database) -> list[Tenant]:
    """The evaluations' scratch tenants: running ones and the indexes kept for the next run."""
    return [tenant for tenant in list_tenants(db) if tenant.scratch]


def find_tenant(db: Database, name: str) -> Tenant:
    with db.unscoped() as conn:
        return tenant_store.tenant_by_name(conn, name)


def add_principal(
    db: Database,
    tenant_name: str,
    subject: str,
    roles: list[Role],
    github_token: str | None = None,
    cipher: TokenCipher | None = None,
) -> IssuedPrincipal:
    """Add a principal; ``github_token`` (their own) is stored encrypted with ``cipher``."""
    subject = subject.strip()
    if not subject or len(subject) > 100:
        raise InvalidInput("a subject is 1-100 characters (for example a GitHub login)")
    if not roles:
        raise InvalidInput("give at least one role")
    if github_token is not None and cipher is None:
        # Refused before anything is stored: own tokens are never kept in clear text.
        raise ConfigError(f"{KEY_SETTING} is not set; it is needed to store a GitHub token")
    tenant = find_tenant(db, tenant_name)
    token = new_token(tenant.id)
    with db.tenant(tenant.id) as conn:
        principal = tenant_store.insert_principal(
            conn,
            tenant_id=tenant.id,
            subject=subject,
            roles=sorted(set(roles)),
            token_hash=hash_token(token),
        )
        if github_token is not None and cipher is not None:
            tenant_store.save_github_token(conn, cipher, principal, github_token)
            principal = replace(principal, has_github_token=True)
        audit.record(
            conn,
            tenant_id=tenant.id,
            actor=operator_actor(),
            event=AuditEvent.PRINCIPAL_CREATED,
            subject_type="principal",
            subject_id=principal.id,
            details={
                "subject": subject,
                "roles": [r.value for r in sorted(set(roles))],
                "own_github_token": github_token is not None,
            },
        )
    return IssuedPrincipal(principal=principal, token=token)


@dataclass(frozen=True)
class Reencrypted:
    changed: int
    unreadable: list[str] = field(default_factory=list)  # "tenant/subject", kept as they were


def reencrypt_tokens(db: Database, cipher: TokenCipher) -> Reencrypted:
    """Encrypt every stored GitHub token again with the primary key, tenant by tenant (the
    runtime role may read and replace ciphertexts, never clear text)."""
    changed, unreadable = 0, []
    for tenant in list_tenants(db):
        with db.tenant(tenant.id) as conn:
            sweep = tenant_store.reencrypt_github_tokens(conn, cipher, tenant.id)
        changed += sweep.changed
        unreadable += [f"{tenant.name}/{subject}" for subject in sweep.unreadable]
    return Reencrypted(changed=changed, unreadable=unreadable)


def set_roles(db: Database, tenant_name: str, subject: str, roles: list[Role]) -> Principal:
    tenant = find_tenant(db, tenant_name)
    with db.tenant(tenant.id) as conn:
        principal = tenant_store.principal_by_subject(conn, tenant.id, subject)
        tenant_store.set_principal_roles(conn, tenant.id, principal.id, sorted(set(roles)))
        audit.record(
            conn,
            tenant_id=tenant.id,
            actor=operator_actor(),
            event=AuditEvent.PRINCIPAL_ROLES_SET,
            subject_type="principal",
            subject_id=principal.id,
            details={"roles": [r.value for r in sorted(set(roles))]},
        )
        return tenant_store.principal_by_subject(conn, tenant.id, subject)


@dataclass(frozen=True)
class RevokedToken:
    principal: Principal
    revoked_at: datetime
    changed: bool  # False: it was revoked already, at ``revoked_at``


def revoke_token(db: Database, tenant_name: str, subject: str) -> RevokedToken:
    """Revoke the principal's API token, audited. Every request looks its token up (no cache),
    so the next one made with it is refused. The principal stays, with its records, its roles and
    its browser sessions (a sign-in, not the token, made those)."""
    tenant = find_tenant(db, tenant_name)
    with db.tenant(tenant.id) as conn:
        principal = tenant_store.principal_by_subject(conn, tenant.id, subject)
        revoked_at = tenant_store.revoke_token(conn, tenant.id, principal.id)
        if revoked_at is None:
            assert principal.token_revoked_at is not None
            return RevokedToken(principal, principal.token_revoked_at, changed=False)
        audit.record(
            conn,
            tenant_id=tenant.id,
            actor=operator_actor(),
            event=AuditEvent.PRINCIPAL_TOKEN_REVOKED,
            subject_type="principal",
            subject_id=principal.id,
            details={"subject": principal.subject},
        )
    return RevokedToken(replace(principal, token_revoked_at=revoked_at), revoked_at, changed=True)


def list_principals(db: Database, tenant_name: str) -> list[Principal]:
    tenant = find_tenant(db, tenant_name)
    with db.tenant(tenant.id) as conn:
        return tenant_store.list_principals(conn, tenant.id)


def normalize_repository(full_name: str) -> str:
    try:
        return repository_name(full_name.strip())
    except ValueError:
        raise InvalidInput(f"repository must look like OWNER/REPO, got {full_name!r}") from None


def add_repository(db: Database, tenant_name: str, full_name: str) -> str:
    name = normalize_repository(full_name)
    tenant = find_tenant(db, tenant_name)
    with db.tenant(tenant.id) as conn:
        tenant_store.insert_repository(conn, tenant.id, name)
        audit.record(
            conn,
            tenant_id=tenant.id,
            actor=operator_actor(),
            event=AuditEvent.REPOSITORY_ALLOWED,
            subject_type="repository",
            subject_id=name,
        )
    return name


def remove_repository(db: Database, tenant_name: str, full_name: str) -> str:
    name = normalize_repository(full_name)
    tenant = find_tenant(db, tenant_name)
    with db.tenant(tenant.id) as conn:
        tenant_store.delete_repository(conn, tenant.id, name)
        audit.record(
            conn,
            tenant_id=tenant.id,
            actor=operator_actor(),
            event=AuditEvent.REPOSITORY_REMOVED,
            subject_type="repository",
            subject_id=name,
        )
    return name


def list_repositories(db: Database, tenant_name: str) -> list[str]:
    tenant = find_tenant(db, tenant_name)
    with db.tenant(tenant.id) as conn:
        return tenant_store.list_repositories(conn, tenant.id)
