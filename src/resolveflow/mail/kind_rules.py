"""``email.send``'s rules for the gate (``gate/kind_rules.py``), installed by the wiring: its
proposals are read under the mailbox grant (``mail/readers.py``), and its approval checks know
the approver's grants and whether a drafted reply's version passed its draft checks."""

from __future__ import annotations

from dataclasses import dataclass

from resolveflow.domain.records import Principal, Proposal
from resolveflow.domain.vocabulary import ActionKind
from resolveflow.gate.kind_rules import KindFacts, KindReader, StoredAction
from resolveflow.mail.readers import MailReader, hidden, mail_reader, mailbox_of
from resolveflow.mail.store import grants as mail_grants
from resolveflow.store.database import Connection


@dataclass(frozen=True)
class _EmailReader:
    mail: MailReader

    def may_read(self, action: StoredAction) -> bool:
        return self.mail.may_read(mailbox_of(action))

    def require(self, action: StoredAction) -> None:
        self.mail.require(mailbox_of(action))

    def hidden(self, action: StoredAction) -> str:
        return hidden(str(mailbox_of(action)))


class EmailSendRules:
    kind = ActionKind.EMAIL_SEND

    def reader(self, conn: Connection, principal: Principal) -> KindReader:
        return _EmailReader(mail_reader(conn, principal))

    def approval_facts(self, conn: Connection, viewer: Principal, proposal: Proposal) -> KindFacts:
        granted = mail_grants.granted_mailboxes(conn, viewer.tenant_id, viewer.id)
        return KindFacts(
            granted_mailboxes=granted, checked_draft=_checked_draft(conn, viewer, proposal)
        )


def _checked_draft(conn: Connection, viewer: Principal, proposal: Proposal) -> bool | None:
    """A drafted reply's version is approvable only as a draft version that passed its checks
    (only those become proposal versions there); None when no draft made the lineage."""
    # The drafts' store (and the message model under it) loads when an approval is checked,
    # not with the wiring every command imports.
    from resolveflow.mail.store import drafts as mail_drafts

    tenant_id = viewer.tenant_id
    if mail_drafts.draft_of_lineage(conn, tenant_id, proposal.lineage_id) is None:
        return None
    return mail_drafts.draft_of_proposal(conn, tenant_id, proposal.id) is not None


RULES = EmailSendRules()
