"""A drafted reply's recipients, re-checked against the mailbox's policy in force: by the
executor right before the send (``mail/kind.py``), as the gate re-checks every field an action
took from the policy file (``gate/domain/rechecks.py``).

Every To, Cc and Bcc is still the requester, one of the request's thread or in one of the
mailbox's allowed domains (``mail_checks`` at drafting). A recipient no longer allowed raises
``PolicyViolation`` naming it: the execution is refused with that reason, and nothing is sent.
"""

from __future__ import annotations

from collections.abc import Iterable

from resolveflow.errors import PolicyViolation
from resolveflow.gate.domain.actions import EmailSendAction
from resolveflow.mail.domain.addresses import mailbox_key


def check_recipients_allowed(
    action: EmailSendAction, thread: Iterable[str], allowed_domains: Iterable[str]
) -> None:
    """Every recipient of a drafted reply is still in the request's thread (less the mailbox) or
    in one of the mailbox's allowed domains, as the policy file says now."""
    own = mailbox_key(action.mailbox)
    participants = {mailbox_key(address) for address in thread} - {own}
    domains = {domain.lower() for domain in allowed_domains}
    refused = [
        address
        for address in action.envelope_recipients
        if mailbox_key(address) not in participants
        and mailbox_key(address).rsplit("@", 1)[1] not in domains
    ]
    if refused:
        raise PolicyViolation(
            f"recipient(s) {', '.join(refused)} no longer allowed from {action.mailbox}: not in "
            "the request's thread or an allowed domain of the mailbox"
        )
