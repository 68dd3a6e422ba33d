"""Mail per tenant, for the composition root (``bootstrap/app.App.mail``): each mailbox's SMTP endpoint from
the policy file with its secret decrypted from the store, the approved attachments' bytes, and
the Sent folder search reconciliation uses; and the gate's settings widened so that one attempt's
window covers the slowest SMTP send (docs/email.md)."""

from __future__ import annotations

import dataclasses
import ssl
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING
from uuid import UUID

from resolveflow.adapters.smtp.protocol import Mailer, Security, SmtpEndpoint
from resolveflow.config import MailSettings, Settings
from resolveflow.errors import ConfigError, NotFound
from resolveflow.gate.lease import GateSettings
from resolveflow.mail.domain.addresses import mailbox_key
from resolveflow.mail.domain.mailbox import MailboxPolicy, tenant_mailboxes
from resolveflow.policy_file import PolicyFile
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Database

if TYPE_CHECKING:
    from resolveflow.mail.domain.recipients import ReceivedThread

    # cryptography (behind the store's cipher) loads only when a mailbox's secret is first read.
    from resolveflow.mail.store.credentials import MailboxSecret
    from resolveflow.store.token_cipher import TokenCipher

LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
QUIT_SECONDS = 2.0  # adapters/smtp/client.QUIT_TIMEOUT_SECONDS: after the final reply


def worst_case_seconds(mail: MailSettings) -> float:
    """The longest one SMTP send can take: each try to its deadline, the delays between them,
    and the QUIT after the final reply."""
    tries = mail.retries + 1
    return tries * mail.deadline_seconds + mail.retries * mail.retry_delay_seconds + QUIT_SECONDS


def widen_for_mail(gate: GateSettings, mail: MailSettings) -> GateSettings:
    """An attempt's window (no reconciler takes over inside it) and the lease cover the slowest
    SMTP send, so a slow server is never mistaken for an abandoned execution."""
    deadline = max(gate.request_deadline_seconds, worst_case_seconds(mail))
    lease = max(gate.lease_seconds, gate.send_slack_seconds + deadline)
    return dataclasses.replace(gate, request_deadline_seconds=deadline, lease_seconds=lease)


class TenantMail:
    """``MailAccess`` over the settings, the policy file, the credential store and the cipher."""

    def __init__(
        self,
        db: Database,
        settings: Settings,
        policy: Callable[[], PolicyFile],
        cipher: TokenCipher | None,
        *,
        tls_context: ssl.SSLContext | None = None,
    ) -> None:
        self.db = db
        self.mail = settings.mail
        self.policy = policy
        self.cipher = cipher
        self.tls_context = tls_context  # tests: a context trusting their own CA
        self._lock = threading.Lock()
        self._names: dict[UUID, str] = {}

    def tenant_name(self, tenant_id: UUID) -> str:
        with self._lock:
            if tenant_id in self._names:
                return self._names[tenant_id]
        with self.db.unscoped() as conn:
            names = {tenant.id: tenant.name for tenant in tenant_store.list_tenants(conn)}
        if tenant_id not in names:
            raise NotFound("no such tenant")
        with self._lock:
            self._names.update(names)
        return names[tenant_id]

    def _mailboxes(self, tenant_id: UUID) -> dict[str, MailboxPolicy]:
        return tenant_mailboxes(self.policy(), self.tenant_name(tenant_id))

    def configured_mailboxes(self, tenant_id: UUID) -> frozenset[str]:
        return frozenset(self._mailboxes(tenant_id))

    def _policy_of(self, tenant_id: UUID, mailbox: str) -> MailboxPolicy:
        found = self._mailboxes(tenant_id).get(mailbox_key(mailbox))
        if found is None:
            raise ConfigError(f"mailbox {mailbox} is not one of the tenant's mailboxes")
        return found

    def approver_granted(self, tenant_id: UUID, approval_id: UUID, mailbox: str) -> bool:
        from resolveflow.mail.store import grants as mail_grants

        with self.db.tenant(tenant_id) as conn:
            return mail_grants.approver_holds_grant(conn, tenant_id, approval_id, mailbox)

    def allowed_domains(self, tenant_id: UUID, mailbox: str) -> tuple[str, ...]:
        return self._policy_of(tenant_id, mailbox).allowed_domains

    def reply_thread(self, tenant_id: UUID, proposal_id: UUID) -> ReceivedThread | None:
        from resolveflow.gate.store import proposals as proposal_store
        from resolveflow.mail.store import drafts as mail_drafts
        from resolveflow.mail.store import messages as mail_messages

        with self.db.tenant(tenant_id) as conn:
            proposal = proposal_store.proposal_by_id(conn, tenant_id, proposal_id)
            draft_id = mail_drafts.draft_of_lineage(conn, tenant_id, proposal.lineage_id)
            if draft_id is None:
                return None
            draft = mail_drafts.draft_by_id(conn, tenant_id, draft_id)
            return mail_messages.received_thread(conn, tenant_id, draft.mailbox, draft.request)

    def _secret(self, tenant_id: UUID, mailbox: str, policy: MailboxPolicy) -> MailboxSecret:
        from resolveflow.mail.store import credentials as mail_credentials
        from resolveflow.store.token_cipher import KEY_SETTING

        key = mailbox_key(mailbox)
        if self.cipher is None:
            raise ConfigError(f"the secret of mailbox {key} cannot be decrypted: set {KEY_SETTING}")
        with self.db.tenant(tenant_id) as conn:
            secret = mail_credentials.mailbox_secret(conn, self.cipher, tenant_id, key)
        if secret is None:
            tenant = self.tenant_name(tenant_id)
            raise ConfigError(
                f"mailbox {key} has no secret: resolveflow mail credentials set --tenant {tenant} "
                f"--mailbox {key} --stdin" + (" --xoauth2" if policy.auth == "xoauth2" else "")
            )
        if secret.kind != policy.auth:
            raise ConfigError(
                f"mailbox {key} is configured for {policy.auth} but its stored secret is a "
                f"{secret.kind}; give it again with resolveflow mail credentials set"
            )
        return secret

    def endpoint(self, tenant_id: UUID, mailbox: str) -> SmtpEndpoint:
        policy = self._policy_of(tenant_id, mailbox)
        security = Security(policy.security)
        if security is Security.PLAIN and policy.smtp_host not in LOOPBACK:
            raise ConfigError(f"mailbox {mailbox}: plain SMTP is for loopback only; use starttls")
        secret = None if policy.username is None else self._secret(tenant_id, mailbox, policy)
        return SmtpEndpoint(
            host=policy.smtp_host,
            port=policy.smtp_port,
            security=security,
            username=policy.username,
            password=secret.secret if secret else None,
            auth=policy.auth,
            timeout_seconds=self.mail.timeout_seconds,
            deadline_seconds=self.mail.deadline_seconds,
            retries=self.mail.retries,
            retry_delay_seconds=self.mail.retry_delay_seconds,
            ca_file=self.mail.ca_file,
        )

    def mailer(self, endpoint: SmtpEndpoint) -> Mailer:
        # aiosmtplib loads only when a message is first sent.
        from resolveflow.adapters.smtp.client import AioSmtpMailer

        return AioSmtpMailer(endpoint, tls_context=self.tls_context)

    def attachments(self, tenant_id: UUID, sha256s: Iterable[str]) -> dict[str, bytes]:
        from resolveflow.mail.store import credentials as mail_credentials

        with self.db.tenant(tenant_id) as conn:
            return mail_credentials.attachments(conn, tenant_id, sha256s)

    def in_sent_folder(self, tenant_id: UUID, mailbox: str, message_id: str) -> bool | None:
        from resolveflow.adapters.smtp.imap import ImapEndpoint, sent_folder_has

        policy = self._policy_of(tenant_id, mailbox)
        if policy.sent_folder is None or policy.imap_host is None or policy.username is None:
            return None
        secret = self._secret(tenant_id, mailbox, policy)
        plain = policy.security == "plain" and policy.imap_host in LOOPBACK
        endpoint = ImapEndpoint(
            host=policy.imap_host,
            port=policy.imap_port,
            folder=policy.sent_folder,
            username=policy.username,
            secret=secret.secret,
            auth=secret.kind,
            tls=not plain,
            timeout_seconds=self.mail.imap_timeout_seconds,
            ca_file=self.mail.ca_file,
        )
        return sent_folder_has(endpoint, message_id, tls_context=self.tls_context)
