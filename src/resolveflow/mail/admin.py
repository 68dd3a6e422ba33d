"""Operator use cases for mail: mailbox grants and mailbox secrets.

Like ``accounts.admin`` these run with database access and no API token. A grant or a secret is
accepted only for a mailbox the policy file configures for the tenant (``configured``), so a typo
never leaves a grant for a mailbox nobody can send from.
"""

from __future__ import annotations

from collections.abc import Iterable

from resolveflow.accounts.admin import find_tenant, operator_actor
from resolveflow.domain.vocabulary import AuditEvent
from resolveflow.errors import InvalidInput
from resolveflow.mail.domain.addresses import mailbox_key
from resolveflow.mail.store import grants as mail_grants
from resolveflow.mail.store.credentials import SecretKind, save_mailbox_secret
from resolveflow.store import audit
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Database
from resolveflow.store.token_cipher import TokenCipher


def configured_mailbox(tenant_name: str, mailbox: str, configured: Iterable[str]) -> str:
    """``mailbox`` in lower case, or one line saying it is not one of the tenant's mailboxes."""
    key = mailbox_key(mailbox)
    known = sorted(mailbox_key(address) for address in configured)
    if key not in known:
        listed = ", ".join(known) if known else "none"
        raise InvalidInput(
            f"{key} is not a mailbox of tenant {tenant_name} in the policy file "
            f"(configured: {listed})"
        )
    return key


def set_mailbox_grant(
    db: Database,
    tenant_name: str,
    subject: str,
    mailbox: str,
    configured: Iterable[str],
    *,
    granted: bool,
) -> bool:
    """Grant (or revoke) ``mailbox`` to the principal; True when something changed."""
    key = configured_mailbox(tenant_name, mailbox, configured)
    tenant = find_tenant(db, tenant_name)
    with db.tenant(tenant.id) as conn:
        principal = tenant_store.principal_by_subject(conn, tenant.id, subject)
        change = mail_grants.grant_mailbox if granted else mail_grants.revoke_mailbox
        changed = change(conn, tenant.id, principal.id, key)
        if changed:
            audit.record(
                conn,
                tenant_id=tenant.id,
                actor=operator_actor(),
                event=AuditEvent.MAILBOX_GRANTED if granted else AuditEvent.MAILBOX_REVOKED,
                subject_type="principal",
                subject_id=principal.id,
                details={"subject": principal.subject, "mailbox": key},
            )
    return changed


def set_mailbox_secret(
    db: Database,
    cipher: TokenCipher,
    tenant_name: str,
    mailbox: str,
    configured: Iterable[str],
    kind: SecretKind,
    secret: str,
) -> str:
    """Store (or replace) the mailbox's secret, encrypted; the audit names the kind, never the
    secret."""
    key = configured_mailbox(tenant_name, mailbox, configured)
    tenant = find_tenant(db, tenant_name)
    with db.tenant(tenant.id) as conn:
        save_mailbox_secret(conn, cipher, tenant.id, key, kind, secret)
        audit.record(
            conn,
            tenant_id=tenant.id,
            actor=operator_actor(),
            event=AuditEvent.MAILBOX_CREDENTIAL_SET,
            subject_type="mailbox",
            subject_id=key,
            details={"kind": kind},
        )
    return key
