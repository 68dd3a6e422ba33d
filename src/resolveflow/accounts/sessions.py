"""Signing in with GitHub: the login maps to a principal, the user's token is stored encrypted,
and the browser gets a session whose cookie, like an API token, carries its tenant.

Only logins listed in ``RESOLVEFLOW_WEB_USERS`` may sign in; the tenant and roles there are
authoritative and applied at each sign-in. A principal that already exists with that subject (for
example one made by ``principals add``) is the same principal, so its API token keeps working.
A one-time sign-in link (``accounts/sign_in_links.py``) starts the same session, with no GitHub
token.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from uuid import UUID

from resolveflow.accounts.admin import find_tenant
from resolveflow.accounts.auth import hash_token, new_token
from resolveflow.domain.records import Principal, Role, actor_of
from resolveflow.domain.vocabulary import AuditEvent
from resolveflow.errors import AuthenticationFailed, ConfigError, NotAuthorized, NotFound
from resolveflow.store import audit
from resolveflow.store import sessions as session_store
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Connection, Database
from resolveflow.store.token_cipher import TokenCipher

_SESSION = re.compile(r"^rf_([0-9a-f]{32})_([A-Za-z0-9_-]{40,64})$")
_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")


class SignInRefused(NotAuthorized):
    """This GitHub account may not sign in here; ask an operator to add it."""


@dataclass(frozen=True)
class UserGrant:
    tenant: str
    roles: tuple[Role, ...]


@dataclass(frozen=True)
class Session:
    principal: Principal
    csrf_token: str


@dataclass(frozen=True)
class NewSession:
    principal: Principal
    cookie: str  # shown to the browser once; only its hash is stored
    csrf_token: str


def parse_users(mapping: dict[str, str]) -> dict[str, UserGrant]:
    """``{"alice": "acme:approver,requester"}`` -> grants, keyed by lower-cased login."""
    grants: dict[str, UserGrant] = {}
    for login, spec in mapping.items():
        tenant, sep, roles_text = spec.partition(":")
        try:
            roles = tuple(sorted({Role(r.strip()) for r in roles_text.split(",") if r.strip()}))
        except ValueError:
            roles = ()
        if not _LOGIN.match(login) or not sep or not tenant.strip() or not roles:
            raise ConfigError(
                f"RESOLVEFLOW_WEB_USERS: {login!r} must map to 'tenant:role[,role]' "
                "with roles requester, approver or admin"
            )
        grants[login.lower()] = UserGrant(tenant.strip(), roles)
    return grants


def _principal_for(db: Database, login: str, grant: UserGrant) -> Principal:
    tenant = find_tenant(db, grant.tenant)
    with db.tenant(tenant.id) as conn:
        try:
            principal = tenant_store.principal_by_subject(conn, tenant.id, login)
        except NotFound:
            principal = tenant_store.insert_principal(
                conn,
                tenant_id=tenant.id,
                subject=login,
                roles=list(grant.roles),
                token_hash=hash_token(new_token(tenant.id)),  # an API token nobody ever sees
            )
            audit.record(
                conn,
                tenant_id=tenant.id,
                actor=f"github:{login}",
                event=AuditEvent.PRINCIPAL_CREATED,
                subject_type="principal",
                subject_id=principal.id,
                details={"subject": login, "roles": list(grant.roles), "via": "sign-in"},
            )
        if principal.roles != frozenset(grant.roles):
            tenant_store.set_principal_roles(conn, tenant.id, principal.id, list(grant.roles))
            audit.record(
                conn,
                tenant_id=tenant.id,
                actor="configuration:RESOLVEFLOW_WEB_USERS",
                event=AuditEvent.PRINCIPAL_ROLES_SET,
                subject_type="principal",
                subject_id=principal.id,
                details={"roles": list(grant.roles)},
            )
            principal = tenant_store.principal_by_subject(conn, tenant.id, login)
    return principal


def sign_in(
    db: Database,
    *,
    login: str,
    github_token: str,
    grants: dict[str, UserGrant],
    cipher: TokenCipher,
    ttl_seconds: int,
) -> NewSession:
    grant = grants.get(login.lower())
    if grant is None:
        raise SignInRefused(f"the GitHub account {login} is not allowed to sign in here")
    principal = _principal_for(db, login, grant)
    with db.tenant(principal.tenant_id) as conn:
        # The principal's one own token: this sign-in's replaces any earlier one, including one
        # an operator gave with `principals add --github-token-stdin` (docs/web.md).
        tenant_store.save_github_token(conn, cipher, principal, github_token, github_login=login)
        return start_session(conn, principal, ttl_seconds, {"via": "github", "login": login})


def start_session(
    conn: Connection, principal: Principal, ttl_seconds: int, details: dict[str, str]
) -> NewSession:
    """A new browser session for ``principal``, in the caller's transaction (inside the
    principal's tenant), audited as started with ``details`` (how it was signed in)."""
    cookie = new_token(principal.tenant_id)
    csrf = secrets.token_urlsafe(32)
    session_store.insert_session(
        conn,
        tenant_id=principal.tenant_id,
        principal_id=principal.id,
        token_hash=hash_token(cookie),
        csrf_token=csrf,
        ttl_seconds=ttl_seconds,
    )
    audit.record(
        conn,
        tenant_id=principal.tenant_id,
        actor=actor_of(principal),
        event=AuditEvent.SESSION_STARTED,
        subject_type="principal",
        subject_id=principal.id,
        details=dict(details),
    )
    return NewSession(principal=principal, cookie=cookie, csrf_token=csrf)


def _tenant_of(cookie: str) -> UUID:
    match = _SESSION.match(cookie.strip())
    if not match:
        raise AuthenticationFailed("the session cookie is malformed; sign in again")
    return UUID(hex=match.group(1))


def session_for(db: Database, cookie: str) -> Session:
    tenant_id = _tenant_of(cookie)
    with db.tenant(tenant_id) as conn:
        row = session_store.live_session(conn, tenant_id, hash_token(cookie.strip()))
        principal = tenant_store.principal_by_id(conn, tenant_id, row.principal_id) if row else None
    if row is None or principal is None:
        raise AuthenticationFailed("the session has ended; sign in again")
    return Session(principal=principal, csrf_token=row.csrf_token)


def sign_out(db: Database, cookie: str) -> None:
    try:
        tenant_id = _tenant_of(cookie)
    except AuthenticationFailed:
        return
    with db.tenant(tenant_id) as conn:
        ended = session_store.end_session(conn, tenant_id, hash_token(cookie.strip()))
        if ended:
            audit.record(
                conn,
                tenant_id=tenant_id,
                actor="web",
                event=AuditEvent.SESSION_ENDED,
                subject_type="session",
                subject_id=hashlib.sha256(cookie.encode()).hexdigest()[:16],
            )


def csrf_matches(expected: str, supplied: str | None) -> bool:
    return bool(supplied) and hmac.compare_digest(expected.encode(), (supplied or "").encode())
