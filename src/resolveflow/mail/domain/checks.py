"""The checks every draft passes before it can become an ``email.send`` proposal, whoever wrote
it (the deterministic drafter, a model, a reviewer's edit). Each finding is one line a reviewer
can act on; no findings means the draft passes.

- no invented commitments: every amount, date, percentage, order or ticket number, URL and
  e-mail address in the subject and the body is in the request, the facts or the mailbox's
  signature (``mail_entities`` normalises the ways of writing one value);
- missing information is never papered over: a ``[[...]]`` placeholder left in fails, and so does
  a name listed as missing whose placeholder was replaced by a value nobody supplied;
- recipients: at least one To, and every To, Cc and Bcc is in the request's thread as the
  mailbox received it (its From, To and Cc, less the mailbox: ``recipients.ReceivedThread``) or
  in an allowed domain; an address of a request the mailbox never received is new, and passes
  only by an allowed domain;
- the From is the mailbox, and the reply stays in the request's thread;
- no credential is asked for ("send us your password", "reply with the code we texted you"):
  reused from a past reply word for word, written by a model or by a reviewer, such a sentence
  fails (``mail_credentials``), whatever the customer's own request says;
- the reused example fits (when the caller passes the examples the writer saw, ``ExampleFit``):
  a fact of the past case the draft still says and the new request does not support fails,
  named with what the request has instead ("the reply mentions 'mug'; the request is about
  'bowl'", ``example_fit``). An amount, date or number it names is not reported a second time
  as an invented commitment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from resolveflow.errors import one_line
from resolveflow.gate.domain.actions.email_fields import mail_address
from resolveflow.mail.domain.addresses import mailbox_key
from resolveflow.mail.domain.credential_requests import credential_requests
from resolveflow.mail.domain.draft import MAX_SUBJECT_CHARS, Draft, Facts, placeholders
from resolveflow.mail.domain.entities import EntityKind, allowed_keys, extract, is_allowed
from resolveflow.mail.domain.example_fit import (
    MAX_NAMED,
    FitKind,
    Misfit,
    Vocabulary,
    misfits,
    words_to_weigh,
)
from resolveflow.mail.domain.mailbox import MailboxPolicy
from resolveflow.mail.domain.message import MailExample, MailMessage
from resolveflow.mail.domain.recipients import NEVER_RECEIVED, ReceivedThread, new_recipients


class DraftCheck(StrEnum):
    INVENTED_COMMITMENT = "invented_commitment"
    MISSING_INFORMATION = "missing_information"
    RECIPIENTS = "recipients"
    SENDER = "sender"
    THREAD = "thread"
    FORM = "form"
    CREDENTIAL_REQUEST = "credential_request"
    EXAMPLE_FIT = "example_fit"


@dataclass(frozen=True)
class CheckFinding:
    check: DraftCheck
    message: str


@dataclass(frozen=True)
class ExampleFit:
    """What the fit check needs besides the draft: the past exchanges its writer saw (the
    drafter reuses the first; a model or a reviewer saw them all) and how often the mailbox's
    exchanges use the words in question (``fit_words``, counted by the service)."""

    examples: tuple[MailExample, ...]
    vocabulary: Vocabulary
    # A reviewer's edit: the text of the version it edits. Only what the edit still carries of
    # it is checked; words the reviewer typed are their own, not a past case's.
    carried: str | None = None


_KIND_WORDS = {
    EntityKind.AMOUNT: "the amount",
    EntityKind.DATE: "the date",
    EntityKind.PERCENTAGE: "the percentage",
    EntityKind.REFERENCE: "the number",
    EntityKind.URL: "the link",
    EntityKind.EMAIL: "the e-mail address",
}


def check_draft(
    draft: Draft,
    request: MailMessage,
    mailbox: str,
    policy: MailboxPolicy,
    facts: Facts,
    fit: ExampleFit | None = None,
    thread: ReceivedThread = NEVER_RECEIVED,
) -> tuple[CheckFinding, ...]:
    """Every finding on ``draft`` as a reply to ``request`` from ``mailbox``; empty: it passes.
    Without ``fit`` the reused example's fit is not checked (nothing says what was reused).
    ``thread``: the request as the mailbox received it; by default it never did, and only the
    allowed domains let a recipient through."""
    unfit = _misfits(draft, request, mailbox, policy, facts, fit) if fit is not None else []
    named = {m.key for m in unfit if m.kind is FitKind.SPECIFIC}
    return (
        *_form(draft),
        *_sender(mailbox),
        *_invented(draft, request, mailbox, policy, facts, named),
        *_missing(draft),
        *_recipients(draft, request, mailbox, policy, thread),
        *_thread(draft, request),
        *_credentials(draft),
        *_fit_findings(unfit),
    )


def _fit_texts(
    draft: Draft, request: MailMessage, mailbox: str, policy: MailboxPolicy, facts: Facts
) -> tuple[str, str, list[str]]:
    """The draft's text, the request's, and what else supports a specific: the facts (names
    too: "mug: replaced"), the mailbox's own greeting and signature, the participants."""
    supported = [
        *facts.names(),
        *facts.values(),
        policy.greeting,
        policy.signature,
        request.from_name or "",
        *request.participants(),
        mailbox,
    ]
    return f"{draft.subject}\n\n{draft.body}", f"{request.subject}\n{request.text}", supported


def fit_words(
    draft: Draft,
    request: MailMessage,
    mailbox: str,
    policy: MailboxPolicy,
    facts: Facts,
    examples: Sequence[MailExample],
    carried: str | None = None,
) -> tuple[str, ...]:
    """The words whose counts in the mailbox the fit check needs (``Vocabulary.documents``)."""
    text, asked, supported = _fit_texts(draft, request, mailbox, policy, facts)
    return words_to_weigh(text, examples, asked, supported, carried)


def _misfits(
    draft: Draft,
    request: MailMessage,
    mailbox: str,
    policy: MailboxPolicy,
    facts: Facts,
    fit: ExampleFit,
) -> list[Misfit]:
    text, asked, supported = _fit_texts(draft, request, mailbox, policy, facts)
    return misfits(text, fit.examples, asked, supported, fit.vocabulary, fit.carried)


def _fit_findings(unfit: Sequence[Misfit]) -> list[CheckFinding]:
    found = [CheckFinding(DraftCheck.EXAMPLE_FIT, m.message()) for m in unfit[:MAX_NAMED]]
    rest = unfit[MAX_NAMED:]
    if rest:
        listed = ", ".join(repr(m.text) for m in rest[:20])
        more = f" and {len(rest) - 20} more" if len(rest) > 20 else ""
        found.append(
            CheckFinding(
                DraftCheck.EXAMPLE_FIT,
                f"the reply also mentions {listed}{more}, facts of the past case it was reused "
                "from that the request does not mention",
            )
        )
    return found


def _form(draft: Draft) -> list[CheckFinding]:
    found = []
    if not draft.subject.strip() or "\n" in draft.subject or "\r" in draft.subject:
        found.append(CheckFinding(DraftCheck.FORM, "the subject must be one line, not empty"))
    elif len(draft.subject) > MAX_SUBJECT_CHARS:
        found.append(
            CheckFinding(DraftCheck.FORM, f"the subject is over {MAX_SUBJECT_CHARS} characters")
        )
    if not draft.body.strip():
        found.append(CheckFinding(DraftCheck.FORM, "the body is empty"))
    return found


def _sender(mailbox: str) -> list[CheckFinding]:
    try:
        mail_address(mailbox)
    except ValueError:
        return [
            CheckFinding(DraftCheck.SENDER, f"the From {one_line(mailbox, 80)!r} is not a mailbox")
        ]
    return []


def _invented(
    draft: Draft,
    request: MailMessage,
    mailbox: str,
    policy: MailboxPolicy,
    facts: Facts,
    named: set[str],
) -> list[CheckFinding]:
    # Headers of the request count as "in the request": naming the requester's address is fine.
    allowed = allowed_keys(
        [
            request.subject,
            request.text,
            policy.signature,
            *facts.values(),
            *request.participants(),
            mailbox,
        ]
    )
    found: list[CheckFinding] = []
    seen: set[str] = set(named)  # the fit check names these with what the request has instead
    for where, text in (("subject", draft.subject), ("body", draft.body)):
        for entity in extract(text):
            if is_allowed(entity, allowed) or entity.key in seen:
                continue
            seen.add(entity.key)
            found.append(
                CheckFinding(
                    DraftCheck.INVENTED_COMMITMENT,
                    f"{_KIND_WORDS[entity.kind]} {one_line(entity.text, 80)!r} in the {where} is "
                    "not in the request, the facts or the signature: add it as a fact or remove it",
                )
            )
    return found


def _missing(draft: Draft) -> list[CheckFinding]:
    left = placeholders(f"{draft.subject}\n{draft.body}")
    found = [
        CheckFinding(
            DraftCheck.MISSING_INFORMATION,
            f"the placeholder [[{one_line(name, 80)}]] is still in the draft: fill it in",
        )
        for name in left
    ]
    found += [
        CheckFinding(
            DraftCheck.MISSING_INFORMATION,
            f"{one_line(name, 80)!r} is listed as missing but the draft has no [[{one_line(name, 80)}]] "
            "placeholder: was a value written without a fact?",
        )
        for name in draft.missing_information
        if " ".join(name.split()) not in left
    ]
    return found


def _recipients(
    draft: Draft,
    request: MailMessage,
    mailbox: str,
    policy: MailboxPolicy,
    thread: ReceivedThread,
) -> list[CheckFinding]:
    found = []
    if not draft.to:
        found.append(CheckFinding(DraftCheck.RECIPIENTS, "the draft has no To recipient"))
    for field, addresses in (("To", draft.to), ("Cc", draft.cc), ("Bcc", draft.bcc)):
        for address in addresses:
            try:
                key = mailbox_key(mail_address(address))
            except ValueError:
                found.append(
                    CheckFinding(
                        DraftCheck.RECIPIENTS,
                        f"{field} {one_line(address, 80)!r} is not an e-mail address",
                    )
                )
                continue
            domain = key.rsplit("@", 1)[1]
            if new_recipients([key], mailbox, thread) and domain not in policy.allowed_domains:
                found.append(
                    CheckFinding(DraftCheck.RECIPIENTS, _not_allowed(field, key, request, thread))
                )
    return found


def _not_allowed(field: str, key: str, request: MailMessage, thread: ReceivedThread) -> str:
    if thread.received:
        return (
            f"{field} {key} is not the requester, in the thread or in an allowed domain of the "
            "mailbox"
        )
    return (
        f"{field} {key} is new: the mailbox never received "
        f"{one_line(request.message_id, 120)} from {one_line(request.from_address, 120)} "
        "(resolveflow mail import brings it in), and its domain is not an allowed domain of the "
        "mailbox"
    )


def _thread(draft: Draft, request: MailMessage) -> list[CheckFinding]:
    if draft.in_reply_to != request.message_id or draft.references != request.thread_references():
        return [
            CheckFinding(
                DraftCheck.THREAD,
                f"the draft is not threaded as a reply to {one_line(request.message_id, 120)}",
            )
        ]
    return []


def _credentials(draft: Draft) -> list[CheckFinding]:
    # The whole text that would be sent: a past reply's words reused as they were are in it.
    return [
        CheckFinding(
            DraftCheck.CREDENTIAL_REQUEST,
            f"the draft asks the customer for a credential ({one_line(phrase, 80)!r}): support "
            "never asks for a password, code, PIN, card number or key by e-mail; reword it",
        )
        for phrase in credential_requests(f"{draft.subject}\n\n{draft.body}")
    ]
