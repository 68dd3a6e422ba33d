"""A tenant's own webhook secret, for ``POST /webhooks/github/{tenant}``.

With one global secret, whoever holds it can sign deliveries for every tenant. A tenant's own
secret signs only deliveries for that tenant: they fan out to that tenant alone. The secret has to
be retrievable (an HMAC is verified with the secret itself, not a hash of it), so it is stored
encrypted with ``RESOLVEFLOW_TOKEN_ENCRYPTION_KEY`` by the token cipher (AES-256-GCM, key rotation),
with associated data of its own that names the tenant: a ciphertext copied onto another tenant's
row, or into a GitHub token's, does not decrypt there.
"""

from __future__ import annotations

import logging
import re
import secrets
from dataclasses import dataclass
from uuid import UUID

from resolveflow.accounts.admin import find_tenant, operator_actor
from resolveflow.domain.vocabulary import AuditEvent
from resolveflow.errors import ConfigError, InvalidInput, NotFound
from resolveflow.store import audit
from resolveflow.store.database import Database
from resolveflow.store.token_cipher import TokenCipher, TokenOwner, TokenUnreadable
from resolveflow.triage.store import webhooks as webhook_store

logger = logging.getLogger(__name__)

MIN_LENGTH = 20
MAX_LENGTH = 200
# A tenant name as accounts/admin.py accepts it; anything else in the URL names no tenant.
_TENANT_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
_NO_KEY = (
    "a tenant's webhook secret is stored encrypted: set RESOLVEFLOW_TOKEN_ENCRYPTION_KEY "
    "(a Fernet key) first"
)


@dataclass(frozen=True)
class TenantSecret:
    tenant: str
    path: str  # where GitHub sends this tenant's deliveries
    secret: str | None  # shown once when ResolveFlow made it; None when it was given


@dataclass(frozen=True)
class _SecretOwner(TokenOwner):
    """The cipher's owner for a tenant's webhook secret: associated data of its own purpose, so
    it never decrypts as anyone's GitHub token, nor as another tenant's secret."""

    def associated_data(self) -> bytes:
        return f"resolveflow webhook secret v1|{self.tenant_id}".encode()


def _owner(tenant_id: UUID, tenant: str) -> _SecretOwner:
    # A tenant's secret has no principal; the tenant id fills that field and is all that binds.
    return _SecretOwner(tenant_id, tenant_id, f"tenant {tenant}'s webhook secret")


def set_secret(
    db: Database, cipher: TokenCipher | None, tenant: str, given: str | None = None
) -> TenantSecret:
    """Store the tenant's secret (``given``, or a new random one), replacing any earlier one."""
    if cipher is None:
        raise ConfigError(_NO_KEY)
    secret = secrets.token_urlsafe(32) if given is None else given.strip()
    if not MIN_LENGTH <= len(secret) <= MAX_LENGTH or not secret.isprintable():
        raise InvalidInput(
            f"a webhook secret is {MIN_LENGTH}-{MAX_LENGTH} printable characters"
            " (leave it out and one is made for you)"
        )
    found = find_tenant(db, tenant)
    with db.tenant(found.id) as conn:
        webhook_store.save_secret(
            conn, found.id, cipher.encrypt(secret, _owner(found.id, found.name))
        )
        audit.record(
            conn,
            tenant_id=found.id,
            actor=operator_actor(),
            event=AuditEvent.WEBHOOK_SECRET_SET,
            subject_type="tenant",
            subject_id=found.id,
            details={"generated": given is None},
        )
    return TenantSecret(
        found.name, f"/webhooks/github/{found.name}", secret if given is None else None
    )


def remove_secret(db: Database, tenant: str) -> bool:
    """False when the tenant had no secret of its own."""
    found = find_tenant(db, tenant)
    with db.tenant(found.id) as conn:
        removed = webhook_store.delete_secret(conn, found.id)
        if removed:
            audit.record(
                conn,
                tenant_id=found.id,
                actor=operator_actor(),
                event=AuditEvent.WEBHOOK_SECRET_REMOVED,
                subject_type="tenant",
                subject_id=found.id,
                details={},
            )
    return removed


def verification_secret(
    db: Database, cipher: TokenCipher | None, tenant: str
) -> tuple[UUID, bytes] | None:
    """The tenant's id and secret for checking a signature; None when the name is not a tenant
    or the tenant has no secret of its own (the caller answers as for a wrong signature)."""
    if not _TENANT_NAME.fullmatch(tenant):
        return None
    try:
        found = find_tenant(db, tenant)
    except NotFound:
        return None
    with db.tenant(found.id) as conn:
        ciphertext = webhook_store.secret_ciphertext(conn, found.id)
    if ciphertext is None:
        return None
    if cipher is None:
        raise ConfigError(_NO_KEY)
    unreadable = ConfigError(
        f"the webhook secret of tenant {tenant} cannot be read with RESOLVEFLOW_TOKEN_ENCRYPTION_KEY;"
        f" set it again: resolveflow webhooks secret set --tenant {tenant}"
    )
    try:
        secret = cipher.decrypt(ciphertext, _owner(found.id, found.name))
    except TokenUnreadable:
        logger.warning("webhook secret unreadable", extra={"tenant": tenant})
        raise unreadable from None
    return found.id, secret.encode("utf-8")
