"""Drafting a reply (issue 15): retrieve how the mailbox answered similar requests, draft, check,
record every version, and turn a version that passes every check into an ``email.send``
proposal, which a person approves by its digest like any other action.

The request and the examples are untrusted data. Recipients, the From, the thread headers and
the checks come from code; a model writes only the subject and the body, and its output is
checked like anyone's. A version that fails a check is recorded with its findings and becomes no
proposal: it cannot be approved until it is edited (``edit``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol
from uuid import UUID

from resolveflow.domain.records import Principal, Role
from resolveflow.domain.user_text import check_text, check_texts
from resolveflow.errors import InvalidInput, NotAuthorized
from resolveflow.gate.domain.actions import ActionChanges, AnyAction, action_digest
from resolveflow.gate.domain.actions.email_send import EmailSendAction, parse_email_send
from resolveflow.gate.proposals import edit_in, propose_prepared
from resolveflow.gate.quiet import DEFAULT_QUIET, Quiet
from resolveflow.gate.store import proposals as proposal_store
from resolveflow.llm.errors import ModelError
from resolveflow.llm.messages import ChatMessage
from resolveflow.llm.protocol import ChatModel, Purpose
from resolveflow.llm.structured import structured_call
from resolveflow.mail.domain.addresses import mailbox_key
from resolveflow.mail.domain.checks import CheckFinding, ExampleFit, check_draft, fit_words
from resolveflow.mail.domain.draft import (
    Draft,
    Facts,
    deterministic_draft,
    parse_facts,
    placeholders,
)
from resolveflow.mail.domain.example_fit import Vocabulary
from resolveflow.mail.domain.mailbox import MailboxPolicy
from resolveflow.mail.domain.message import MailExample, MailMessage
from resolveflow.mail.domain.model_draft import (
    PROMPT_VERSION,
    ModelDraft,
    draft_messages,
    parse_model_draft,
)
from resolveflow.mail.domain.recipients import ReceivedThread
from resolveflow.mail.importer import REPLY_DOCUMENT
from resolveflow.mail.store import drafts as store
from resolveflow.mail.store import grants as mail_grants
from resolveflow.mail.store import messages as messages_store
from resolveflow.mail.store.drafts import DraftRecord, VersionRecord
from resolveflow.store.database import Connection, Database

logger = logging.getLogger(__name__)

EXAMPLES = 3  # shown to the drafter and the reviewer; the first is the one reused
MODEL_ATTEMPTS = 2  # invalid model output is asked for again once, then the draft is deterministic
# Without a model, the closest past reply is reused only when it is this close (fused score, the
# mail search's [0, 1] scale); below it the draft is a skeleton with [[answer]], since reusing a
# reply to another question would read as an answer. A judgment, not a measurement: no real
# mailbox is among the dev data (docs/email.md).
REUSE_FLOOR = 0.30


class ExampleFinder(Protocol):
    def examples(
        self, tenant_id: UUID, mailboxes: frozenset[str], text: str, k: int = 5
    ) -> list[MailExample]: ...


@dataclass(frozen=True)
class Written:
    """A draft as someone wrote it, before it is recorded."""

    draft: Draft
    author_kind: str
    provider: str | None = None
    model: str | None = None
    prompt_version: str | None = None


@dataclass(frozen=True)
class Edit:
    """A reviewer's changes; None leaves a field as it was."""

    subject: str | None = None
    body: str | None = None
    to: tuple[str, ...] | None = None
    cc: tuple[str, ...] | None = None
    bcc: tuple[str, ...] | None = None
    # The staff facts, all of them (``name: value`` lines): the new version is checked with
    # these instead of the ones before (issue 29: adding a fact no longer means drafting again).
    facts: str | None = None


def _check_storable(change: Edit) -> None:
    """Every edge (the API, the /mail form, ``mail edit``) reaches this: text the database cannot
    hold is one line naming the field, before anything is read or written."""
    check_text("subject", change.subject)
    check_text("body", change.body)
    check_text("facts", change.facts)
    if change.facts is not None:
        parse_facts(change.facts)
    for name in ("to", "cc", "bcc"):
        check_texts(name, getattr(change, name))


class MailDrafts:
    def __init__(
        self,
        db: Database,
        mailboxes: dict[str, MailboxPolicy],
        finder: ExampleFinder,
        model: ChatModel | None = None,
        quiet: Quiet = DEFAULT_QUIET,
    ) -> None:
        self.db = db
        self.mailboxes = mailboxes  # this tenant's, by address in lower case
        self.finder = finder
        self.model = model
        self.quiet = quiet  # where a drafted reply goes: the inbox, the digest, or nowhere

    def permitted(self, principal: Principal) -> frozenset[str]:
        """The configured mailboxes this principal holds a grant for."""
        with self.db.tenant(principal.tenant_id) as conn:
            granted = mail_grants.granted_mailboxes(conn, principal.tenant_id, principal.id)
        return frozenset(m for m in granted if m in self.mailboxes)

    def _mailbox(self, principal: Principal, mailbox: str) -> tuple[str, MailboxPolicy]:
        if not (principal.has(Role.REQUESTER) or principal.has(Role.APPROVER)):
            raise NotAuthorized(f"{principal.subject} may not draft replies")
        key = mailbox_key(mailbox)
        policy = self.mailboxes.get(key)
        if policy is None:
            # the caller named it: bad input, not a broken configuration
            raise InvalidInput(f"{key} is not one of this tenant's mailboxes (the policy file)")
        if key not in self.permitted(principal):
            raise NotAuthorized(f"{principal.subject} has no grant for the mailbox {key}")
        return key, policy

    def draft(
        self, principal: Principal, mailbox: str, request: MailMessage, facts_text: str = ""
    ) -> tuple[DraftRecord, VersionRecord]:
        """Draft a reply to ``request`` from ``mailbox``: version 1 of a new draft."""
        key, policy = self._mailbox(principal, mailbox)
        if mailbox_key(request.from_address) == key:
            raise InvalidInput("the request was sent by the mailbox itself; reply to a request")
        facts = parse_facts(facts_text)
        query = f"{request.subject}\n\n{request.text}"
        examples = self.finder.examples(principal.tenant_id, frozenset({key}), query, EXAMPLES)
        written = write_draft(self.model, request, key, policy, facts, examples)
        with self.db.tenant(principal.tenant_id) as conn:
            record = store.insert_draft(
                conn,
                principal.tenant_id,
                mailbox=key,
                request=request,
                facts=facts_text,
                created_by=principal.id,
            )
        version = self._record(principal, record, written, facts_text, examples, based_on=None)
        return self.load(principal, record.id)[0], version

    def edit(
        self, principal: Principal, draft_id: UUID, seen_version: int, change: Edit
    ) -> VersionRecord:
        """A reviewer's edit of the version they saw: a new version, checked again."""
        _check_storable(change)
        record, versions = self.load(principal, draft_id)
        self._mailbox(principal, record.mailbox)
        latest = versions[-1]
        if seen_version != latest.version:
            raise InvalidInput(
                f"version {latest.version} was written after the version {seen_version} you "
                "edited; look at it first"
            )
        base = _as_draft(latest)
        draft = replace(
            base,
            subject=change.subject if change.subject is not None else base.subject,
            body=change.body if change.body is not None else base.body,
            to=change.to if change.to is not None else base.to,
            cc=change.cc if change.cc is not None else base.cc,
            bcc=change.bcc if change.bcc is not None else base.bcc,
        )
        # What is still missing is what the reviewer left as placeholders, not the list of the
        # version before: filling a [[...]] answers it.
        draft = replace(draft, missing_information=placeholders(draft.body))
        facts = change.facts if change.facts is not None else latest.facts
        if draft == base and facts == latest.facts:
            raise InvalidInput("the edit changes nothing")
        written = Written(draft, "reviewer")
        return self._record(principal, record, written, facts, None, based_on=latest)

    def _record(
        self,
        principal: Principal,
        record: DraftRecord,
        written: Written,
        facts: str,
        examples: Sequence[MailExample] | None,
        based_on: VersionRecord | None,
    ) -> VersionRecord:
        """Check ``written`` with ``facts`` (the staff facts it was written with) and record
        it as the draft's next version, proposed when every check passed."""
        policy = self.mailboxes[record.mailbox]
        seen = examples if examples is not None else _shown(based_on, record.mailbox)
        # Whom the reply may go to comes from the mail the mailbox received, never from the
        # request as given (an agent's argument, a paste): looked up at every version, so a
        # request imported after its draft was refused passes when drafted or edited again.
        with self.db.tenant(principal.tenant_id) as conn:
            thread = messages_store.received_thread(
                conn, principal.tenant_id, record.mailbox, record.request
            )
        findings = check_written(
            self.db,
            principal.tenant_id,
            record.mailbox,
            policy,
            written.draft,
            record.request,
            parse_facts(facts),
            seen,
            thread,
            carried=f"{based_on.subject}\n\n{based_on.body}" if based_on else None,
        )
        shown = (
            [_example_json(e) for e in examples]
            if examples is not None
            else list(based_on.examples if based_on else ())
        )
        # One writer at a time per draft: the row lock makes "the version you saw is still the
        # latest" and the proposal version this one becomes a single step.
        with self.db.tenant(principal.tenant_id) as conn:
            current = store.draft_by_id(conn, principal.tenant_id, record.id, lock=True)
            _check_latest(store.versions(conn, principal.tenant_id, record.id), based_on)
            proposal_id = None
            if not findings:
                proposal_id = self._propose(conn, principal, current, written.draft)
            return store.insert_version(
                conn,
                principal.tenant_id,
                {
                    **_version_fields(record, written, based_on, shown, findings, principal),
                    "facts": facts,
                    "proposal_id": proposal_id,
                },
            )

    def _propose(
        self, conn: Connection, principal: Principal, record: DraftRecord, draft: Draft
    ) -> UUID:
        """The first passing version starts the proposal lineage; a later one is its next
        version, or the latest version itself when the text came back to it (an unchanged
        digest is no new version). ``conn`` holds the draft's row lock, and the proposal is
        written in its transaction: if the version's insert fails, no proposal is left behind."""
        action = _action(record.mailbox, draft)
        if record.lineage_id is None:
            note = f"reply drafted for {record.request.message_id}"
            proposal = propose_prepared(conn, principal, action, note, self.quiet)
            store.set_lineage(conn, principal.tenant_id, record.id, proposal.lineage_id)
            return proposal.id
        latest = proposal_store.lineage_versions(conn, principal.tenant_id, record.lineage_id)[-1]
        if latest.digest == action_digest(action):
            return latest.id
        return edit_in(conn, principal, record.lineage_id, _changes(action)).id

    def load(self, principal: Principal, draft_id: UUID) -> tuple[DraftRecord, list[VersionRecord]]:
        with self.db.tenant(principal.tenant_id) as conn:
            record = store.draft_by_id(conn, principal.tenant_id, draft_id)
            versions = store.versions(conn, principal.tenant_id, draft_id)
        if record.mailbox not in self.permitted(principal):
            raise NotAuthorized(
                f"{principal.subject} has no grant for the mailbox {record.mailbox}"
            )
        return record, versions

    def recent(self, principal: Principal, limit: int = 50) -> list[store.RecentDraft]:
        with self.db.tenant(principal.tenant_id) as conn:
            return store.recent_drafts(conn, principal.tenant_id, self.permitted(principal), limit)


def write_draft(
    model: ChatModel | None,
    request: MailMessage,
    mailbox: str,
    policy: MailboxPolicy,
    facts: Facts,
    examples: Sequence[MailExample],
) -> Written:
    """The model's draft when one is configured and its output is valid (asked twice at most),
    else the deterministic draft. Either is checked afterwards like any other version. A spent
    budget (``LimitExceeded``) goes to the caller."""
    if model is not None:
        messages = [
            ChatMessage(role="system" if m["role"] == "system" else "user", content=m["content"])
            for m in draft_messages(request, examples, facts, policy)
        ]
        try:
            draft = structured_call(
                model,
                messages,
                ModelDraft,
                lambda answer: parse_model_draft(answer, request, mailbox, policy, examples),
                purpose=Purpose.MAIL_DRAFT,
                attempts=MODEL_ATTEMPTS,
            ).value
        except (ModelError, InvalidInput) as exc:
            logger.warning("model draft refused", extra={"error": exc.message})
        else:
            return Written(draft, "model", model.provider, model.model, PROMPT_VERSION)
    reusable = [example for example in examples if example.score >= REUSE_FLOOR]
    return Written(deterministic_draft(request, mailbox, policy, facts, reusable), "deterministic")


def _check_latest(versions: Sequence[VersionRecord], based_on: VersionRecord | None) -> None:
    latest = versions[-1].version if versions else 0
    seen = based_on.version if based_on else 0
    if latest != seen:
        raise InvalidInput(
            f"version {latest} was written after the version {seen} you edited; look at it first"
        )


def _version_fields(
    record: DraftRecord,
    written: Written,
    based_on: VersionRecord | None,
    shown: list[dict[str, Any]],
    findings: Sequence[CheckFinding],
    principal: Principal,
) -> dict[str, Any]:
    draft = written.draft
    return {
        "draft_id": record.id,
        "author_kind": written.author_kind,
        "based_on": based_on.version if based_on else None,
        "provider": written.provider,
        "model": written.model,
        "prompt_version": written.prompt_version,
        "subject": draft.subject,
        "to_addresses": list(draft.to),
        "cc_addresses": list(draft.cc),
        "bcc_addresses": list(draft.bcc),
        "body": draft.body,
        "in_reply_to": draft.in_reply_to,
        "reference_ids": list(draft.references),
        "examples": shown,
        "missing_information": list(draft.missing_information),
        "findings": [_finding_json(f) for f in findings],
        "created_by": principal.id,
    }


def _as_draft(version: VersionRecord) -> Draft:
    return Draft(
        subject=version.subject,
        to=version.to,
        cc=version.cc,
        bcc=version.bcc,
        body=version.body,
        in_reply_to=version.in_reply_to,
        references=version.references,
        used_examples=tuple(str(e.get("reply_message_id")) for e in version.examples),
        missing_information=version.missing_information,
    )


def _action(mailbox: str, draft: Draft) -> EmailSendAction:
    return parse_email_send(
        {
            "kind": "email.send",
            "mailbox": mailbox,
            "to": list(draft.to),
            "cc": list(draft.cc),
            "bcc": list(draft.bcc),
            "subject": draft.subject,
            "text": draft.body,
            "in_reply_to": draft.in_reply_to,
            "references": list(draft.references),
        }
    )


def _changes(action: AnyAction) -> ActionChanges:
    assert isinstance(action, EmailSendAction)
    return ActionChanges.for_email(action)


def _example_json(example: MailExample) -> dict[str, Any]:
    return {
        "reply_message_id": example.reply_message_id,
        "subject": example.subject,
        "score": round(example.score, 4),
        "agreement": round(example.agreement, 4) if example.agreement is not None else None,
        "request_text": example.request_text[:2000],
        "reply_text": example.reply_text[:4000],
    }


def _finding_json(finding: CheckFinding) -> dict[str, str]:
    return {"check": str(finding.check), "message": finding.message}


def check_written(
    db: Database,
    tenant_id: UUID,
    mailbox: str,
    policy: MailboxPolicy,
    draft: Draft,
    request: MailMessage,
    facts: Facts,
    examples: Sequence[MailExample],
    thread: ReceivedThread,
    carried: str | None = None,
) -> tuple[CheckFinding, ...]:
    """Every check of ``check_draft``, the examples' fit included: the examples the writer saw,
    and how often the mailbox's examples use the draft's words that only the past case used
    (one read of the index). ``thread``: the request as the mailbox received it. ``carried``: a
    reviewer's edit is checked for what it still carries of the version it edits. ``eval
    drafts`` checks its drafts through here too."""
    fit = None
    if examples:
        asked = fit_words(draft, request, mailbox, policy, facts, examples, carried)
        with db.tenant(tenant_id) as conn:
            total, counts = messages_store.word_counts(
                conn, tenant_id, mailbox, asked, REPLY_DOCUMENT
            )
        vocabulary = Vocabulary(
            exchanges=total,
            documents={c.word: c.exchanges for c in counts},
            common=frozenset(c.word for c in counts if c.stop),
        )
        fit = ExampleFit(tuple(examples), vocabulary, carried)
    return check_draft(draft, request, mailbox, policy, facts, fit, thread)


def _shown(version: VersionRecord | None, mailbox: str) -> list[MailExample]:
    """The examples a version's writer was shown, as the version recorded them."""
    if version is None:
        return []
    return [
        MailExample(
            reply_message_id=str(e.get("reply_message_id") or ""),
            mailbox=mailbox,
            subject=str(e.get("subject") or ""),
            request_text=str(e.get("request_text") or ""),
            reply_text=str(e.get("reply_text") or ""),
            score=float(e.get("score") or 0.0),
        )
        for e in version.examples
    ]
