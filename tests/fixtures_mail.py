"""Helpers for the email gate tests: a tenant's mailbox in a policy file pointing at the sandbox
SMTP (and IMAP) server on loopback, its grant, proposals of ``email.send``, executors over
``bootstrap/mail.TenantMail``."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from conftest import World
from resolveflow.bootstrap import kinds as gate_kinds
from resolveflow.bootstrap.mail import TenantMail
from resolveflow.config import MailSettings, Settings
from resolveflow.domain.records import Proposal
from resolveflow.gate import approvals, proposals
from resolveflow.gate.domain.actions import EmailSendAction
from resolveflow.gate.domain.actions.email_send import parse_email_send
from resolveflow.gate.executor import Executor
from resolveflow.gate.lease import GateSettings
from resolveflow.gate.reconcile import Reconciler
from resolveflow.mail import admin as mail_admin
from resolveflow.mail.domain.mailbox import tenant_mailboxes
from resolveflow.mail.domain.message import Direction, MailMessage
from resolveflow.mail.loader import parse_message
from resolveflow.mail.store import messages as messages_store
from resolveflow.policy_file import PolicyFile, parse_policy
from resolveflow.store.database import Database
from resolveflow.store.token_cipher import TokenCipher

MAILBOX = "support@acme.example"
# Short bounds: the sandbox answers at once, and a hung reply is cut in about a second.
FAST = MailSettings(timeout_seconds=1.0, deadline_seconds=1.5, retries=0, retry_delay_seconds=0.0)


def mailbox_toml(
    tenant: str,
    port: int,
    *,
    security: str = "plain",
    username: str | None = None,
    auth: str = "password",
    imap_port: int | None = None,
    host: str = "127.0.0.1",
) -> str:
    lines = [
        f'[tenants.{tenant}.mailboxes."{MAILBOX}"]',
        f'smtp_host = "{host}"',
        f"smtp_port = {port}",
        f'security = "{security}"',
        f'auth = "{auth}"',
        'allowed_domains = ["acme.example"]',
    ]
    if username is not None:
        lines.append(f'username = "{username}"')
    if imap_port is not None:
        lines += ['sent_folder = "Sent"', 'imap_host = "127.0.0.1"', f"imap_port = {imap_port}"]
    return "\n".join(lines) + "\n"


@dataclass
class MailWorld:
    world: World
    access: TenantMail
    policy: PolicyFile
    cipher: TokenCipher

    def configured(self, tenant_id: Any) -> frozenset[str]:
        return self.access.configured_mailboxes(tenant_id)


def make_mail(
    db: Database,
    world: World,
    policy_text: str,
    *,
    settings: MailSettings = FAST,
    tls_context: ssl.SSLContext | None = None,
    grant: tuple[str, ...] = ("alex",),
) -> MailWorld:
    policy = parse_policy(policy_text)
    cipher = TokenCipher(TokenCipher.generate_key())
    access = TenantMail(
        db, Settings(mail=settings), lambda: policy, cipher, tls_context=tls_context
    )
    for subject in grant:
        set_grant(db, policy, world.tenant.name, subject, granted=True)
    return MailWorld(world, access, policy, cipher)


def set_grant(
    db: Database, policy: PolicyFile, tenant: str, subject: str, *, granted: bool
) -> None:
    mail_admin.set_mailbox_grant(
        db, tenant, subject, MAILBOX, tenant_mailboxes(policy, tenant), granted=granted
    )


def received(
    db: Database, tenant_id: UUID, raw: bytes | str, mailbox: str = MAILBOX
) -> MailMessage:
    """The request ``raw`` as the mailbox received it (stored as ``mail import`` stores it): a
    reply drafted for it may go to its sender."""
    message = parse_message(raw.encode() if isinstance(raw, str) else raw, "request.eml")
    with db.tenant(tenant_id) as conn:
        messages_store.insert_message(conn, tenant_id, mailbox, message, Direction.RECEIVED)
    return message


def email_action(**changes: Any) -> EmailSendAction:
    data: dict[str, Any] = {
        "mailbox": MAILBOX,
        "to": ["alice@customer.example"],
        "cc": ["ops@acme.example"],
        "subject": "Re: Refund for order 1042",
        "text": "Hello Alice,\n\nThe refund was issued today.\n\nAcme Support",
        "in_reply_to": "<req-1@customer.example>",
        "references": ["<req-0@customer.example>", "<req-1@customer.example>"],
        **changes,
    }
    return parse_email_send(data)


def propose(db: Database, mail: MailWorld, action: EmailSendAction) -> Proposal:
    return proposals.create_prepared_proposal(db, mail.world.requester(db), action)


def approve(db: Database, mail: MailWorld, proposal: Proposal, principal: Any = None) -> Any:
    who = principal if principal is not None else mail.world.approver(db)
    return approvals.approve(db, who, proposal.id, proposal.digest, 3600, mailboxes=mail.configured)


def executor(db: Database, mail: MailWorld, **gate: Any) -> Executor:
    settings = GateSettings(**{"lease_seconds": 30.0, "unavailable_retry_seconds": 0.5, **gate})
    # No GitHub client: an email never touches GitHub.
    return Executor(db, None, settings, offered=gate_kinds.offered(mail.access))  # type: ignore[arg-type]


def reconciler(db: Database, mail: MailWorld) -> Reconciler:
    return Reconciler(
        db, None, GateSettings(lease_seconds=30.0), offered=gate_kinds.offered(mail.access)
    )  # type: ignore[arg-type]
