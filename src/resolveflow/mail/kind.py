"""``email.send``: one exact message from a tenant's mailbox, handed to its SMTP server once.

The mailbox is reached per tenant (``MailAccess``): where it sends and its secret (decrypted
from the store), whether it is still one of the tenant's mailboxes, the approved attachments'
bytes, and, where the mailbox has an IMAP Sent folder, a search of it for a Message-ID. The marker
is the Message-ID header, ``<resolveflow.EXECUTION_ID@mailbox-domain>``. A message whose outcome
is unknown is never sent again: the Sent folder, or a person, settles it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol
from uuid import UUID

from resolveflow.adapters.smtp.message import build_message
from resolveflow.adapters.smtp.protocol import (
    Attachment,
    Mailer,
    MessageFields,
    OutgoingMessage,
    SmtpEndpoint,
)
from resolveflow.domain.records import Execution, ExecutionState
from resolveflow.domain.vocabulary import AttemptStep
from resolveflow.errors import (
    ConfigError,
    Conflict,
    Forbidden,
    InvalidInput,
    NotAuthorized,
    ProviderError,
    ProviderOutcomeUnknown,
    ResolveFlowError,
)
from resolveflow.gate.domain.actions import ActionKind, AnyAction, EmailSendAction
from resolveflow.gate.domain.pace import PaceTarget
from resolveflow.gate.domain.policy import check_mailbox_configured
from resolveflow.gate.kinds.base import (
    Evidence,
    KindExecutor,
    KindOffer,
    KindSpec,
    Prepared,
    Settled,
    Settler,
    sent_with,
)
from resolveflow.gate.kinds.sending import begin, opened_earlier, send_outcome
from resolveflow.gate.recorder import Recorder
from resolveflow.mail.domain.recipients import ReceivedThread, check_recipients_allowed

SPEC = KindSpec(
    kind=ActionKind.EMAIL_SEND,
    writes_with=("send_message",),
    steps=(AttemptStep.SEND,),
    marker="the Message-ID header, <resolveflow.EXECUTION_ID@mailbox-domain>",
    reconciliation=(
        "the mailbox's IMAP Sent folder (when the policy file gives `sent_folder` and "
        "`imap_host`), searched for the Message-ID: found is sent, not found stays unknown; "
        "without one a person resolves it, with the Message-ID shown"
    ),
    partial="never: one SMTP transaction delivers the whole message or none of it",
    paced_as=PaceTarget.SMTP,
)


class MailAccess(Protocol):
    """A tenant's mailboxes as the executor reaches them (wiring builds it)."""

    def configured_mailboxes(self, tenant_id: UUID) -> frozenset[str]:
        """The tenant's mailboxes in the policy file, lower case."""
        ...

    def approver_granted(self, tenant_id: UUID, approval_id: UUID, mailbox: str) -> bool:
        """Whether whoever gave the approval still holds the grant for the mailbox."""
        ...

    def allowed_domains(self, tenant_id: UUID, mailbox: str) -> tuple[str, ...]:
        """The mailbox's allowed recipient domains in the policy file, as it is now."""
        ...

    def reply_thread(self, tenant_id: UUID, proposal_id: UUID) -> ReceivedThread | None:
        """The thread of the request a draft made this version reply to, as the mailbox
        received it (empty when it never did); None when no draft made it."""
        ...

    def endpoint(self, tenant_id: UUID, mailbox: str) -> SmtpEndpoint:
        """Where the mailbox sends, with its decrypted secret; ``ConfigError`` when it cannot."""
        ...

    def mailer(self, endpoint: SmtpEndpoint) -> Mailer: ...

    def attachments(self, tenant_id: UUID, sha256s: Iterable[str]) -> dict[str, bytes]: ...

    def in_sent_folder(self, tenant_id: UUID, mailbox: str, message_id: str) -> bool | None:
        """Whether the Sent folder holds the Message-ID; None when the mailbox has none."""
        ...


def person_settles(execution_id: UUID, message_id: str) -> str:
    """What an unknown outcome shows: the Message-ID to look up, and the command that settles it."""
    return (
        f"look for Message-ID {message_id} in the mailbox's Sent folder or the server's log, "
        f"then: resolveflow executions resolve {execution_id} --was-sent|--not-sent"
    )


def message_fields(action: EmailSendAction, execution_id: str) -> MessageFields:
    """What the SMTP adapter sends of ``action``, with the execution's Message-ID."""
    return MessageFields(
        mailbox=action.mailbox,
        to=action.to,
        cc=action.cc,
        envelope_to=action.envelope_recipients,
        subject=action.subject,
        text=action.text,
        html=action.html,
        in_reply_to=action.in_reply_to,
        references=action.references,
        attachments=tuple(
            Attachment(item.name, item.media_type, item.size, item.sha256)
            for item in action.attachments
        ),
        message_id=action.message_id(execution_id),
    )


def offer(access: MailAccess) -> KindOffer:
    """``email.send``'s executor over ``access``, for the gate's registry (the wiring offers it)."""

    def executor(record: Recorder) -> KindExecutor:
        return EmailSendExecutor(access, record)

    return executor


class EmailSendExecutor:
    spec = SPEC

    def __init__(self, access: MailAccess, record: Recorder) -> None:
        self.access = access
        self.record = record

    def step_with_claim(self, action: AnyAction) -> AttemptStep | None:
        return None  # the mailbox check, the secret and the attachments come first: they may refuse

    def send(self, prepared: Prepared) -> Execution:
        execution = prepared.execution
        action = prepared.verified.action
        assert isinstance(action, EmailSendAction)
        try:
            mailer, message = self._prepare(execution, action)
        except (InvalidInput, Forbidden, Conflict, ConfigError, ProviderError) as exc:
            return self.record.refused(execution, exc)  # PolicyViolation is a Forbidden
        if prepared.prior:
            earlier = self._look_for_earlier(prepared, action)
            if earlier is not None:
                return earlier
        # The mailbox's own secret sends, whoever approved: recorded as the service credential.
        attempt = begin(
            self.record, execution, AttemptStep.SEND, sent_with(None), paced_as=SPEC.paced_as
        )
        if isinstance(attempt, Execution):
            return attempt
        try:
            receipt = mailer.send_message(message)
        except ProviderOutcomeUnknown as exc:
            told = ProviderOutcomeUnknown(
                f"{exc.message} Never resent automatically; "
                f"{person_settles(execution.id, message.message_id)}"
            )
            return send_outcome(self.record, execution, attempt.id, told)
        except (ProviderError, InvalidInput) as exc:
            return send_outcome(self.record, execution, attempt.id, exc)
        detail = f"accepted by the server ({receipt.code} {_short(receipt.text)})"
        return self.record.created(
            execution,
            attempt.id,
            ref=message.message_id,
            url=f"mid:{message.message_id[1:-1]}",
            state=ExecutionState.SENT,
            detail=detail,
        )

    def _prepare(
        self, execution: Execution, action: EmailSendAction
    ) -> tuple[Mailer, OutgoingMessage]:
        """Re-checked right before sending: the mailbox is still configured, the approver still
        holds its grant, and a drafted reply's recipients are still allowed by the mailbox's
        policy (mail/domain/recipients.py); then the secret and the bytes."""
        tenant_id = execution.tenant_id
        check_mailbox_configured(action, self.access.configured_mailboxes(tenant_id))
        if not self.access.approver_granted(tenant_id, execution.approval_id, action.mailbox):
            raise NotAuthorized(f"the approver no longer holds the grant for {action.mailbox}")
        thread = self.access.reply_thread(tenant_id, execution.proposal_id)
        if thread is not None:
            domains = self.access.allowed_domains(tenant_id, action.mailbox)
            check_recipients_allowed(action, thread, domains)
        endpoint = self.access.endpoint(tenant_id, action.mailbox)
        files = self.access.attachments(tenant_id, [item.sha256 for item in action.attachments])
        message = build_message(message_fields(action, str(execution.id)), files)
        return self.access.mailer(endpoint), message

    def _look_for_earlier(self, prepared: Prepared, action: EmailSendAction) -> Execution | None:
        """An earlier execution of this digest or lineage (unknown, or said not sent) may have
        delivered it after all: where the Sent folder can tell, it is asked for that Message-ID."""
        tenant_id = prepared.execution.tenant_id

        def sent_by(earlier: AnyAction, execution_id: str) -> tuple[str, str] | None:
            if not isinstance(earlier, EmailSendAction):
                return None
            earlier_id = earlier.message_id(execution_id)
            found = self.access.in_sent_folder(tenant_id, earlier.mailbox, earlier_id)
            return (earlier_id, f"mid:{earlier_id[1:-1]}") if found else None

        try:
            return opened_earlier(self.record, prepared, action, sent_by)
        except ProviderError as exc:
            return self.record.read_failed(prepared.execution, exc)

    def reconcile(self, evidence: Evidence, settle: Settler) -> Settled | None:
        execution, action = evidence.execution, evidence.action
        assert isinstance(action, EmailSendAction)
        if evidence.first_started.get(AttemptStep.SEND) is None:
            return settle.requeue(execution, "no message had left; returned to the queue")
        message_id = action.message_id(str(execution.id))
        person = person_settles(execution.id, message_id)
        try:
            found = self.access.in_sent_folder(execution.tenant_id, action.mailbox, message_id)
        except ResolveFlowError as exc:
            return settle.leave_unknown(
                execution, f"cannot search the Sent folder: {exc.message}; {person}"
            )
        if found is None:
            return settle.leave_unknown(execution, f"no Sent folder to search; {person}")
        if not found:
            return settle.leave_unknown(execution, f"not in the Sent folder; {person}")
        return settle.finish(
            execution,
            ExecutionState.SENT,
            f"found in the Sent folder by reconciliation ({message_id})",
            result_ref=message_id,
            result_url=f"mid:{message_id[1:-1]}",
        )


def _short(text: str) -> str:
    return " ".join(text.split())[:200]
