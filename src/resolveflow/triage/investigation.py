"""The ai_investigation branch: retrieve, diagnose (or not, with no model), review, propose.

``investigate`` retrieves within the tenant (as of a time when backtesting), then ``assess`` does the
rest without touching the index: with no model it proposes the related issues that clear the
relevance floor; with a model it asks for a ``Diagnosis``, then, in a separate call with a fresh
conversation, for a critique that is kept as narration. The outcome comes from the gates in
``triage.domain.review``. Any model failure (refusal, invalid output after the bounded attempts, timeout,
an unreachable endpoint, a spent budget) escalates to a person: the branch fails closed.

Every model call is counted against the run's principal's daily budget before it is made and
recorded afterwards (provider, model, tokens, latency, attempts, outcome). A shadow
``ModelCallBudget`` (backtests, the safety suite) counts nothing and writes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar
from uuid import UUID

from resolveflow.accounts.limits import LimitExceeded
from resolveflow.accounts.model_budget import CallRecord, ModelCallBudget, counted_call
from resolveflow.domain.vocabulary import AuditEvent
from resolveflow.errors import ResolveFlowError
from resolveflow.llm.errors import ModelError
from resolveflow.llm.messages import ChatMessage
from resolveflow.llm.protocol import ChatModel, Completion, Purpose
from resolveflow.llm.structured import structured_call
from resolveflow.policy_file import Classification, RepositoryPolicy
from resolveflow.retrieval.records import Hit
from resolveflow.store import audit
from resolveflow.store import model_calls as store
from resolveflow.store.database import Database
from resolveflow.triage.domain.diagnosis import (
    Diagnosis,
    Snippet,
    critique_messages,
    diagnosis_messages,
    is_same_issue,
)
from resolveflow.triage.domain.evidence import IssueEvidence
from resolveflow.triage.domain.investigation import (
    diagnosis_comment,
    escalation_action,
    neighbour_labels,
    related_comment,
    usable_labels,
)
from resolveflow.triage.domain.review import (
    Draft,
    Outcome,
    Review,
    ReviewPolicy,
    not_reviewable,
    review,
)
from resolveflow.triage.domain.rules import ProposedAction
from resolveflow.triage.investigation_config import (
    InvestigationConfig as InvestigationConfig,  # noqa: PLC0414 (re-export)
)

logger = logging.getLogger(__name__)

CRITIQUE_NOTE_CHARS = 1000
ACTOR = "workflow:triage"
V = TypeVar("V")


class Retriever(Protocol):
    """What the investigation needs from retrieval (``retrieval.search.Searcher``)."""

    def search(
        self,
        tenant_id: UUID,
        text: str,
        *,
        k: int = 10,
        as_of: datetime | None = None,
        exclude: tuple[str, str] | None = None,
    ) -> list[Hit]: ...


@dataclass(frozen=True)
class Investigation:
    provider: str
    model: str | None
    relevance_floor: float
    snippets: list[Snippet]
    diagnosis: Diagnosis | None
    review: Review
    action: ProposedAction
    author_kind: str  # "model" when the comment is the model's diagnosis, else "workflow"
    calls: tuple[CallRecord, ...] = ()
    citations: tuple[str, ...] = ()  # what the draft cited (the model's, or the related issues)

    @property
    def reason(self) -> str:
        return self.review.reason

    def record_json(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "model": self.model,
            "relevance_floor": self.relevance_floor,
            "snippets": [s.as_json() for s in self.snippets],
            "diagnosis": self.diagnosis.model_dump() if self.diagnosis else None,
            "citations": list(self.citations),
            "review": self.review.as_json(),
            "calls": [c.as_json() for c in self.calls],
        }

    def graph_outcome(self) -> dict[str, Any]:
        """What the triage graph's investigate node expects back."""
        return {
            "investigation": self.record_json(),
            "action": {
                "comment": self.action.comment,
                "labels": list(self.action.labels),
                "notes": list(self.action.notes),
                "author_kind": self.author_kind,
            },
            "reason": self.reason,
        }


def snippets_from_hits(hits: Sequence[Hit], issue: IssueEvidence) -> list[Snippet]:
    """Short citable ids in rank order; the issue's own indexed copy is never a snippet."""
    snippets: list[Snippet] = []
    for hit in hits:
        candidate = Snippet(
            id=f"S{len(snippets) + 1}",
            source=hit.source,
            external_id=hit.external_id,
            kind=hit.kind,
            title=hit.title,
            url=hit.url,
            state=hit.state,
            labels=tuple(hit.labels),
            text=hit.snippet,
            relevance=float(hit.relevance),
            resolved_by=tuple(hit.resolved_by),
            created_at=hit.created_at,
        )
        if not is_same_issue(candidate, issue):
            snippets.append(candidate)
    return snippets


def investigate(
    issue: IssueEvidence,
    policy: RepositoryPolicy,
    *,
    retriever: Retriever,
    tenant_id: UUID,
    model: ChatModel | None,
    config: InvestigationConfig,
    budget: ModelCallBudget,
    as_of: datetime | None = None,
) -> Investigation:
    exclude = (f"github:{issue.repository.lower()}", str(issue.number))
    try:
        hits = retriever.search(
            tenant_id,
            f"{issue.title}\n\n{issue.body}",
            k=config.top_k,
            as_of=as_of,
            exclude=exclude,
        )
    except ResolveFlowError as exc:
        logger.warning("retrieval failed", extra={"error": exc.message})
        failed = not_reviewable("retrieval", f"retrieval failed: {exc.message}")
        return _finish(issue, policy, model, config, [], None, failed, budget)
    return assess(
        issue, policy, snippets_from_hits(hits, issue), model=model, config=config, budget=budget
    )


def review_policy(issue: IssueEvidence, policy: RepositoryPolicy, floor: float) -> ReviewPolicy:
    return ReviewPolicy(
        relevance_floor=floor,
        repository_labels=frozenset(issue.repository_labels),
        policy_labels=frozenset(policy.labels_for(Classification.AI_INVESTIGATION)),
    )


def assess(
    issue: IssueEvidence,
    policy: RepositoryPolicy,
    snippets: list[Snippet],
    *,
    model: ChatModel | None,
    config: InvestigationConfig,
    budget: ModelCallBudget,
) -> Investigation:
    """Everything after retrieval: the diagnosis (if any), the review, the proposed action."""
    rules = review_policy(issue, policy, config.relevance_floor)
    if model is None:
        related = [s for s in snippets if s.relevance >= rules.relevance_floor]
        related = related[: config.max_related]
        draft = Draft(
            citations=tuple(s.id for s in related),
            severity=None,
            labels=neighbour_labels(related, rules.allowed_labels),
        )
        verdict = review(draft, snippets, issue, rules)
        return _finish(issue, policy, None, config, snippets, None, verdict, budget, draft)
    if not snippets:
        verdict = not_reviewable(
            "groundedness", "nothing was retrieved, so there is nothing to cite; no model call made"
        )
        return _finish(issue, policy, model, config, snippets, None, verdict, budget)
    answer = _diagnose(
        budget, model, diagnosis_messages(issue, snippets, sorted(rules.allowed_labels))
    )
    if isinstance(answer, Review):
        return _finish(issue, policy, model, config, snippets, None, answer, budget)
    diagnosis = answer.value
    critique: str | None = None
    notes: tuple[str, ...] = ()
    said = _fail_closed(
        "critique",
        lambda: counted_call(
            budget,
            model,
            "critique",
            lambda: model.text(
                critique_messages(issue, snippets, diagnosis), purpose=Purpose.CRITIQUE
            ),
        ),
    )
    if isinstance(said, Review):
        notes = (f"no critique: {said.failed[0].reason}",)
    else:
        critique = said.value
    draft = Draft(
        citations=tuple(diagnosis.citations),
        severity=diagnosis.severity,
        labels=tuple(diagnosis.suggested_labels),
        duplicate_of=diagnosis.duplicate_of,
    )
    verdict = review(draft, snippets, issue, rules, critique=critique, notes=notes)
    return _finish(issue, policy, model, config, snippets, diagnosis, verdict, budget, draft)


def _diagnose(
    budget: ModelCallBudget, model: ChatModel, messages: Sequence[ChatMessage]
) -> Completion[Diagnosis] | Review:
    """The diagnosis: one attempt (the provider asks again for invalid output itself), counted
    and recorded; the review, not a check here, judges what it says."""
    return _fail_closed(
        "diagnosis",
        lambda: structured_call(
            model,
            messages,
            Diagnosis,
            lambda diagnosis: diagnosis,
            purpose=Purpose.DIAGNOSIS,
            attempts=1,
            each_attempt=lambda attempt: counted_call(budget, model, "diagnosis", attempt),
        ),
    )


def _fail_closed(purpose: str, call: Callable[[], Completion[V]]) -> Completion[V] | Review:
    """``call``'s completion; a spent budget or a failed model becomes an escalation."""
    try:
        return call()
    except LimitExceeded as exc:
        return not_reviewable("budget", exc.message)
    except ModelError as exc:
        return not_reviewable("model_output", f"{purpose}: {exc.message}")


def _finish(
    issue: IssueEvidence,
    policy: RepositoryPolicy,
    model: ChatModel | None,
    config: InvestigationConfig,
    snippets: list[Snippet],
    diagnosis: Diagnosis | None,
    verdict: Review,
    budget: ModelCallBudget,
    draft: Draft | None = None,
) -> Investigation:
    rules = review_policy(issue, policy, config.relevance_floor)
    author = "workflow"
    if verdict.outcome is Outcome.ESCALATE or draft is None:
        action = escalation_action(verdict, policy.triage_label, rules.allowed_labels, issue.labels)
    else:
        kept, notes = usable_labels(draft.labels, issue.labels)
        if diagnosis is None:
            related = [s for s in snippets if s.id in draft.citations]
            comment = related_comment(related, issue.repository)
        else:
            comment = diagnosis_comment(diagnosis, snippets, issue.repository)
            author = "model"
        if verdict.critique:
            critique = " ".join(verdict.critique.split())[:CRITIQUE_NOTE_CHARS]
            notes += (f"model critique (narration; it decides nothing): {critique}",)
        action = ProposedAction(comment=comment, labels=kept, notes=notes + verdict.notes)
    return Investigation(
        provider=model.provider if model else "none",
        model=model.model if model else None,
        relevance_floor=config.relevance_floor,
        snippets=snippets,
        diagnosis=diagnosis,
        review=verdict,
        action=action,
        author_kind=author,
        calls=tuple(budget.records),
        citations=draft.citations if draft else (),
    )


def record(db: Database, tenant_id: UUID, run_id: UUID, result: Investigation) -> UUID:
    """The investigation record and its audit event, in one transaction."""
    with db.tenant(tenant_id) as conn:
        investigation_id = store.insert_investigation(
            conn,
            tenant_id=tenant_id,
            run_id=run_id,
            provider=result.provider,
            model=result.model,
            relevance_floor=result.relevance_floor,
            snippets=[s.as_json() for s in result.snippets],
            diagnosis=result.diagnosis.model_dump() if result.diagnosis else None,
            critique=result.review.critique,
            gates=[g.as_json() for g in result.review.gates],
            outcome=result.review.outcome.value,
            reason=result.reason,
        )
        audit.record(
            conn,
            tenant_id=tenant_id,
            actor=ACTOR,
            event=AuditEvent.RUN_INVESTIGATED,
            subject_type="run",
            subject_id=run_id,
            run_id=run_id,
            details={
                "investigation_id": str(investigation_id),
                "provider": result.provider,
                "model": result.model,
                "outcome": result.review.outcome.value,
                "gates": [g.as_json() for g in result.review.gates],
                "snippets": [
                    {"id": s.id, "external_id": s.external_id, "relevance": round(s.relevance, 4)}
                    for s in result.snippets
                ],
            },
        )
    return investigation_id


def investigation_view(db: Database, tenant_id: UUID, run_id: UUID) -> dict[str, Any]:
    """The run's investigation records and model calls, for `runs show` and the web."""
    with db.tenant(tenant_id) as conn:
        records = store.investigations_for_run(conn, tenant_id, run_id)
        calls = store.model_calls_for_run(conn, tenant_id, run_id)
    return {
        "investigations": [asdict(record) for record in records],
        "model_calls": [asdict(call) for call in calls],
    }
