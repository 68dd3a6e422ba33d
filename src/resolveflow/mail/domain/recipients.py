"""Whom a drafted reply may go to: the request's thread as the mailbox really received it, and
the mailbox's allowed domains.

The request a reply is drafted for is given by whoever asks (a file on the CLI, a paste on the
page, an agent's argument over MCP): its From, To and Cc are only their word. The thread a reply
may answer without an allowed domain is the From, To and Cc of the message the mailbox received
with the request's Message-ID from the request's From (``mail import``): ``ReceivedThread``. A
request the mailbox never received has none, and every address in it is new: flagged on the
pages, and allowed only by one of the mailbox's allowed domains (``checks.py`` at drafting).

The executor checks the same right before the send (``mail/kind.py``), as the gate re-checks
every field an action took from the policy file (``gate/domain/rechecks.py``): a recipient no
longer allowed raises ``PolicyViolation`` naming it, and nothing is sent.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from resolveflow.domain.counted import plural
from resolveflow.errors import PolicyViolation
from resolveflow.gate.domain.actions import EmailSendAction
from resolveflow.mail.domain.addresses import mailbox_key
from resolveflow.mail.domain.message import MailMessage


@dataclass(frozen=True)
class ReceivedMessage:
    """The addresses of a message as the mailbox received it (its stored copy)."""

    from_address: str
    to: tuple[str, ...]
    cc: tuple[str, ...]


@dataclass(frozen=True)
class ReceivedThread:
    """The addresses (lower case) a reply may go to beyond the mailbox's allowed domains: the
    From, To and Cc of the request as the mailbox received it. Empty: it never received it."""

    participants: frozenset[str] = frozenset()

    @property
    def received(self) -> bool:
        return bool(self.participants)


NEVER_RECEIVED = ReceivedThread()


def received_thread(request: MailMessage, stored: ReceivedMessage | None) -> ReceivedThread:
    """The thread of ``request`` as ``stored`` (the mailbox's received message with the
    request's Message-ID) has it; none when there is no such message, or it came from someone
    else than the request says (a real Message-ID under a forged From)."""
    if stored is None or mailbox_key(stored.from_address) != mailbox_key(request.from_address):
        return NEVER_RECEIVED
    addresses = (stored.from_address, *stored.to, *stored.cc)
    return ReceivedThread(frozenset(mailbox_key(a) for a in addresses))


def as_received(request: MailMessage) -> ReceivedThread:
    """``request`` taken as received: only for mail that is the mailbox's own by construction
    (``eval drafts`` reads the operator's file of the mailbox's incoming mail)."""
    return ReceivedThread(frozenset(mailbox_key(a) for a in request.participants()))


def new_recipients(addresses: Iterable[str], mailbox: str, thread: ReceivedThread) -> list[str]:
    """Those of ``addresses`` that are not in the received thread (the mailbox left out): new
    to this mailbox, whatever the request said."""
    known = thread.participants - {mailbox_key(mailbox)}
    return [address for address in addresses if mailbox_key(address) not in known]


def check_recipients_allowed(
    action: EmailSendAction, thread: ReceivedThread, allowed_domains: Iterable[str]
) -> None:
    """Every recipient of a drafted reply is still in the thread the mailbox received (less the
    mailbox) or in one of the mailbox's allowed domains, as the policy file says now."""
    domains = {domain.lower() for domain in allowed_domains}
    refused = [
        address
        for address in new_recipients(action.envelope_recipients, action.mailbox, thread)
        if mailbox_key(address).rsplit("@", 1)[1] not in domains
    ]
    if refused:
        raise PolicyViolation(
            f"{plural(len(refused), 'recipient')} {', '.join(refused)} no longer allowed from "
            f"{action.mailbox}: not in "
            "a message the mailbox received or an allowed domain of the mailbox"
        )
