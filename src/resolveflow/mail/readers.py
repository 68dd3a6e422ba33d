"""Who may read a mailbox's mail: the one rule every read of an email proposal, its draft, its
examples, its execution and their audit entries applies (issue 26).

The grant (``principals grant --mailbox``) bounds reading as the tenant does, whatever the role:
an approver or an admin without it sees no request, no reply, no past reply used as an example,
no recipient and no subject of that mailbox. A read of one such record is refused with 403
(``NotAuthorized``), as ``GET /api/v1/mail/drafts/{id}`` always was; a list keeps the row, so
that the work is seen to exist, with the mail left out (``HIDDEN``). The mailbox's own address
stays visible: it names the grant to ask for, and the tenant's mailboxes are its configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from resolveflow.domain.records import Principal
from resolveflow.domain.vocabulary import ActionKind
from resolveflow.errors import NotAuthorized
from resolveflow.mail.domain.addresses import mailbox_key
from resolveflow.mail.store import grants as mail_grants
from resolveflow.store.database import Connection


def hidden(mailbox: str) -> str:
    """What a list shows in place of the mail of a mailbox the reader holds no grant for."""
    return f"hidden: no grant for the mailbox {mailbox_key(mailbox)}"


@dataclass(frozen=True)
class MailReader:
    """A principal with the mailboxes whose mail they may read (lower case)."""

    principal: Principal
    granted: frozenset[str]

    def may_read(self, mailbox: str | None) -> bool:
        """``mailbox`` is None for a record that is not mail: the grant does not apply."""
        return mailbox is None or mailbox_key(mailbox) in self.granted

    def require(self, mailbox: str | None) -> None:
        if not self.may_read(mailbox):
            assert mailbox is not None
            raise NotAuthorized(
                f"{self.principal.subject} has no grant for the mailbox {mailbox_key(mailbox)}"
                " (principals grant --mailbox): its mail is not shown"
            )


def mail_reader(conn: Connection, principal: Principal) -> MailReader:
    granted = mail_grants.granted_mailboxes(conn, principal.tenant_id, principal.id)
    return MailReader(principal, granted)


def mailbox_of(action: Mapping[str, Any] | None) -> str | None:
    """The mailbox of a stored (canonical) action, None when it is not an email."""
    if not action or action.get("kind") != ActionKind.EMAIL_SEND.value:
        return None
    return str(action["mailbox"])
