"""API tokens: shown once, stored as a SHA-256 hash, carrying the tenant they belong to.

A token looks like ``rf_<tenant id hex>_<secret>``. Carrying the tenant lets authentication run inside
that tenant's row-level-security scope instead of searching every tenant's principals.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from uuid import UUID

from resolveflow.domain.records import Principal
from resolveflow.errors import AuthenticationFailed
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Database

_TOKEN = re.compile(r"^rf_([0-9a-f]{32})_([A-Za-z0-9_-]{40,64})$")


def new_token(tenant_id: UUID) -> str:
    return f"rf_{tenant_id.hex}_{secrets.token_urlsafe(32)}"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def tenant_of_token(token: str) -> UUID:
    match = _TOKEN.match(token.strip())
    if not match:
        raise AuthenticationFailed("the API token is malformed (expected rf_<tenant>_<secret>)")
    return UUID(hex=match.group(1))


def authenticate(db: Database, token: str | None) -> Principal:
    if not token:
        raise AuthenticationFailed("no API token: pass --token or set RESOLVEFLOW_TOKEN")
    tenant_id = tenant_of_token(token)
    with db.tenant(tenant_id) as conn:
        principal = tenant_store.principal_by_token_hash(conn, tenant_id, hash_token(token.strip()))
    if principal is None:
        raise AuthenticationFailed("the API token is not valid")
    return principal
