"""Drafts measured against the replies really sent (``resolveflow eval drafts``).

A mailbox's past mail (an mbox, a Maildir or ``.eml`` files) is imported into a scratch tenant
through the product's own import, the mailbox configured there in code (no policy file: nothing
is sent, and its greeting and signature are empty so that a draft's body is its own words). Each
incoming request of a JSONL file (the format of ``mail-rhelp-dev``: ``id``, ``request_eml``,
``reply_own_words``, optionally ``request_role``) is drafted exactly as ``mail draft`` drafts it
(with the configured model, if any: issue 30; without one, deterministically), checked by the same
checks, and compared with the reply really sent.

Figures (``overlap.token_f1`` on content words, each reply's frame left out: greeting, sign-off,
signature, quoted text, ``draft.reusable_text``), each a mean over the requests evaluated:

- ``example_reply_f1``: the chosen example's reply (the first of the search, the one the drafter
  reuses) against the real reply; beside it the same figure for a random past reply (the mean
  over *every* past reply: exact, no seed) and for the best past reply (an oracle: the most any
  example could score);
- ``draft_f1``: the draft's own words (placeholders left out) against the real reply's;
- ``complete_share``: drafts with no placeholder and every check passed, the ones a reviewer
  would be shown as ready;
- ``confidently_wrong``: the share of requests whose draft is complete yet scores a ``draft_f1``
  below the random past reply's mean: ready-looking and no better than chance.

When the JSONL has ``request_role``, only ``question`` and ``follow-up`` lines are evaluated (a
support mailbox answers its requester; the other roles are someone else's message in a list's
thread); otherwise every line is.
"""

from __future__ import annotations

import json
import logging
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from uuid import UUID

from resolveflow.accounts.scratch import scratch_tenant
from resolveflow.adapters.embedder.protocol import Embedder
from resolveflow.errors import InvalidInput
from resolveflow.llm.protocol import ChatModel
from resolveflow.mail.bounds import MailBounds, UnreadableMessage
from resolveflow.mail.domain.addresses import mailbox_key
from resolveflow.mail.domain.draft import Facts, placeholders, reusable_text
from resolveflow.mail.domain.mailbox import MailboxPolicy
from resolveflow.mail.domain.message import MailExample, MailMessage
from resolveflow.mail.domain.overlap import reply_words, token_f1
from resolveflow.mail.domain.recipients import as_received
from resolveflow.mail.drafts import EXAMPLES, check_written, write_draft
from resolveflow.mail.files import read_file
from resolveflow.mail.importer import MailImporter
from resolveflow.mail.loader import MailSource, own_words, parse_message
from resolveflow.mail.search import MailSearcher
from resolveflow.mail.store import messages as store
from resolveflow.retrieval.ingest import Indexer
from resolveflow.store.database import Database

logger = logging.getLogger(__name__)

EVALUATED_ROLES = frozenset({"question", "follow-up"})
# The scratch mailbox: nothing is sent from it; no greeting or signature of its own, so the draft's
# body is the drafted words alone.
EVAL_POLICY = MailboxPolicy(smtp_host="eval.invalid", greeting="", signature="")
RANDOM_TIMES = 2.0  # example_reply_f1 >= 2 x a random past reply's
TARGETS: dict[str, tuple[str, float]] = {
    "example_reply_f1": (">=", RANDOM_TIMES),  # times random_reply_f1
    "confidently_wrong": ("<=", 0.05),
}


@dataclass(frozen=True)
class Incoming:
    """One request to draft a reply to, and the reply really sent (its own words)."""

    id: str
    request: MailMessage
    real_reply: str
    reply_message_id: str | None = None


@dataclass(frozen=True)
class Incomings:
    cases: tuple[Incoming, ...]
    lines: int  # in the file; ``cases`` are those evaluated


@dataclass(frozen=True)
class PastReply:
    reply_id: str
    request_id: str
    words: frozenset[str]


@dataclass(frozen=True)
class DraftOutcome:
    id: str
    example: str | None  # the chosen example's reply Message-ID
    example_score: float | None
    reused: bool  # the draft reused it (else: the skeleton)
    example_reply_f1: float
    random_reply_f1: float
    best_reply_f1: float
    draft_f1: float
    placeholders: tuple[str, ...]
    failed_checks: tuple[str, ...]
    author: str = "deterministic"  # who wrote the draft: model | deterministic

    @property
    def complete(self) -> bool:
        return not self.placeholders and not self.failed_checks

    def as_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "example": self.example,
            "example_score": self.example_score,
            "reused": self.reused,
            "example_reply_f1": round(self.example_reply_f1, 4),
            "random_reply_f1": round(self.random_reply_f1, 4),
            "best_reply_f1": round(self.best_reply_f1, 4),
            "draft_f1": round(self.draft_f1, 4),
            "complete": self.complete,
            "author": self.author,
            "placeholders": list(self.placeholders),
            "failed_checks": list(self.failed_checks),
        }


@dataclass(frozen=True)
class DraftReport:
    lines: int
    evaluated: int
    past_replies: int
    example_reply_f1: float
    random_reply_f1: float
    best_reply_f1: float
    draft_f1: float
    complete_share: float
    confidently_wrong: float
    confidently_wrong_of_complete: float  # the same drafts as a share of the complete ones
    reused_share: float
    failed_checks: dict[str, int] = field(default_factory=dict)  # drafts failing each check
    failing_share: float = 0.0  # drafts failing at least one check
    model_share: float = 0.0  # drafts a model wrote (its output valid), the rest deterministic

    def as_json(self) -> dict[str, object]:
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in self.__dict__.items()}

    def checks(self) -> dict[str, dict[str, object]]:
        """Each targeted figure with its dev target and whether it is met."""
        wanted = RANDOM_TIMES * self.random_reply_f1
        confident = TARGETS["confidently_wrong"][1]
        return {
            "example_reply_f1": {
                "value": round(self.example_reply_f1, 4),
                "target": f">= {RANDOM_TIMES:g} x random ({wanted:.4f})",
                "met": self.example_reply_f1 >= wanted,
            },
            "confidently_wrong": {
                "value": round(self.confidently_wrong, 4),
                "target": f"<= {confident}",
                "met": self.confidently_wrong <= confident,
            },
        }


# --- the incoming requests ---------------------------------------------------------------------


def read_incoming(path: Path, bounds: MailBounds | None = None) -> Incomings:
    """The JSONL's requests to evaluate; one ``InvalidInput`` naming the line for a bad one."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InvalidInput(f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from None
    cases: list[Incoming] = []
    count = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        count += 1
        where = f"{path.name} line {number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{where}: not JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise InvalidInput(f"{where}: not a JSON object")
        role = record.get("request_role")
        if role is not None and str(role) not in EVALUATED_ROLES:
            continue
        cases.append(_incoming(record, path.parent, where, bounds or MailBounds()))
    if not cases:
        raise InvalidInput(f"{path.name}: no request to evaluate")
    return Incomings(tuple(cases), count)


def _incoming(record: dict[str, object], folder: Path, where: str, bounds: MailBounds) -> Incoming:
    case_id, eml = record.get("id"), record.get("request_eml")
    if not isinstance(case_id, str) or not case_id:
        raise InvalidInput(f"{where}: no id")
    if not isinstance(eml, str) or not eml:
        raise InvalidInput(f"{where}: no request_eml (the request as a .eml file)")
    real = record.get("reply_own_words")
    if not isinstance(real, str):
        whole = record.get("reply_text")
        if not isinstance(whole, str):
            raise InvalidInput(f"{where}: no reply_own_words or reply_text (the real reply)")
        real = own_words(whole)
    target = folder / eml
    if not target.is_file():
        raise InvalidInput(f"{where}: no such file {eml}")
    try:
        request = parse_message(read_file(target, bounds.message_max_bytes), eml, bounds)
    except UnreadableMessage as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    reply_id = record.get("reply_message_id")
    return Incoming(case_id, request, real, reply_id if isinstance(reply_id, str) else None)


# --- drafting and scoring ----------------------------------------------------------------------


def past_replies(db: Database, tenant_id: UUID, mailbox: str) -> list[PastReply]:
    with db.tenant(tenant_id) as conn:
        rows = store.exchanges(conn, tenant_id, mailbox)
    return [PastReply(r.reply_id, r.request_id, _words(r.reply_text)) for r in rows]


def _words(reply: str) -> frozenset[str]:
    """A reply's content words, its frame (greeting, sign-off, signature, quoted request) left
    out: the mailbox's constant text is not what a draft is measured on."""
    return reply_words(reusable_text(reply))


def _own_examples(case: Incoming, examples: Sequence[MailExample]) -> list[MailExample]:
    """Never the real reply itself, nor another reply to the same request (a past file that
    overlaps the incoming one would otherwise score its own answer)."""
    return [
        e
        for e in examples
        if e.reply_message_id != case.reply_message_id
        and e.request_message_id != case.request.message_id
    ]


def draft_outcome(
    db: Database,
    searcher: MailSearcher,
    tenant_id: UUID,
    mailbox: str,
    case: Incoming,
    past: Sequence[PastReply],
    model: ChatModel | None = None,
) -> DraftOutcome:
    query = f"{case.request.subject}\n\n{case.request.text}"
    found = searcher.examples(tenant_id, frozenset({mailbox}), query, EXAMPLES + 1)
    examples = _own_examples(case, found)[:EXAMPLES]
    written = write_draft(model, case.request, mailbox, EVAL_POLICY, Facts(), examples)
    # The file is the mailbox's own incoming mail, given by the operator: each request was
    # received, and its requester is whom the reply goes to.
    thread = as_received(case.request)
    findings = check_written(
        db, tenant_id, mailbox, EVAL_POLICY, written.draft, case.request, Facts(), examples, thread
    )
    real = _words(case.real_reply)
    pool = [
        token_f1(p.words, real)
        for p in past
        if p.reply_id != case.reply_message_id and p.request_id != case.request.message_id
    ]
    chosen = examples[0] if examples else None
    return DraftOutcome(
        id=case.id,
        example=chosen.reply_message_id if chosen else None,
        example_score=chosen.score if chosen else None,
        reused=bool(written.draft.used_examples),
        example_reply_f1=token_f1(_words(chosen.reply_text), real) if chosen else 0.0,
        random_reply_f1=statistics.fmean(pool) if pool else 0.0,
        best_reply_f1=max(pool, default=0.0),
        draft_f1=token_f1(reply_words(written.draft.body), real),
        placeholders=placeholders(written.draft.body),
        failed_checks=tuple(dict.fromkeys(str(f.check) for f in findings)),
        author=written.author_kind,
    )


def report(outcomes: Sequence[DraftOutcome], lines: int, past: int) -> DraftReport:
    if not outcomes:
        raise InvalidInput("no request to evaluate")
    n = len(outcomes)
    random_mean = statistics.fmean(o.random_reply_f1 for o in outcomes)
    complete = [o for o in outcomes if o.complete]
    wrong = [o for o in complete if o.draft_f1 < random_mean]
    failed = Counter(check for o in outcomes for check in o.failed_checks)
    return DraftReport(
        lines=lines,
        evaluated=n,
        past_replies=past,
        example_reply_f1=statistics.fmean(o.example_reply_f1 for o in outcomes),
        random_reply_f1=random_mean,
        best_reply_f1=statistics.fmean(o.best_reply_f1 for o in outcomes),
        draft_f1=statistics.fmean(o.draft_f1 for o in outcomes),
        complete_share=len(complete) / n,
        confidently_wrong=len(wrong) / n,
        confidently_wrong_of_complete=len(wrong) / len(complete) if complete else 0.0,
        reused_share=sum(1 for o in outcomes if o.reused) / n,
        failed_checks=dict(sorted(failed.items())),
        failing_share=sum(1 for o in outcomes if o.failed_checks) / n,
        model_share=sum(1 for o in outcomes if o.author == "model") / n,
    )


def evaluate_in(
    db: Database,
    embedder: Embedder,
    tenant_id: UUID,
    mailbox: str,
    cases: Incomings,
    model: ChatModel | None = None,
) -> tuple[DraftReport, list[DraftOutcome]]:
    """The figures on a tenant whose mailbox already holds the past mail; drafted by ``model``
    when one is given (its invalid output falls back to the deterministic draft, as in ``mail
    draft``)."""
    searcher = MailSearcher(db, embedder)
    past = past_replies(db, tenant_id, mailbox)
    if not past:
        raise InvalidInput(f"the past mail holds no reply of {mailbox} to a request in it")
    outcomes = [
        draft_outcome(db, searcher, tenant_id, mailbox, c, past, model) for c in cases.cases
    ]
    return report(outcomes, cases.lines, len(past)), outcomes


def evaluate_drafts(
    db: Database,
    embedder: Embedder,
    mailbox: str,
    past_mail: Path,
    incoming: Path,
    bounds: MailBounds | None = None,
    model: ChatModel | None = None,
    limit: int | None = None,
) -> tuple[DraftReport, list[DraftOutcome]]:
    """Import ``past_mail`` into a scratch tenant and draft a reply to every incoming request
    (the first ``limit``)."""
    key = mailbox_key(mailbox)
    if "@" not in key:
        raise InvalidInput(f"--mailbox is an address like support@acme.example, got {mailbox!r}")
    source = MailSource(past_mail, bounds or MailBounds())
    cases = read_incoming(incoming, bounds)
    if limit is not None:
        cases = Incomings(cases.cases[:limit], cases.lines)
    with scratch_tenant(db) as tenant_id:
        MailImporter(db, Indexer(db, embedder)).run(tenant_id, key, source, source.skipped)
        result, outcomes = evaluate_in(db, embedder, tenant_id, key, cases, model)
    logger.info("drafts evaluated", extra=_logged(result))
    return result, outcomes


def _logged(result: DraftReport) -> dict[str, object]:
    data = result.as_json()
    data.pop("failed_checks")
    return data
