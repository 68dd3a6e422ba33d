"""The triage graph: fetch_evidence -> normalize -> classify -> (investigate) -> build_proposal
-> await_approval -> execute.

State is plain JSON. ``await_approval`` calls ``interrupt()`` and does nothing else, because resuming
re-runs the interrupted node from its start. Resuming carries only an approval id; ``execute`` looks
it up under the run's tenant and hands the proposal's execution to the executor gate, which
re-verifies everything from the database, so a forged resume value cannot cause a write.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import interrupt

from resolveflow.adapters.github.app_client import acting_for
from resolveflow.adapters.github.protocol import GitHub
from resolveflow.domain.vocabulary import AuditEvent, RunStatus, SuggestionKind, SuggestionMode
from resolveflow.errors import ResolveFlowError
from resolveflow.gate.domain.quiet import QuietRules, off_reason, place_modes
from resolveflow.gate.executor import Executor
from resolveflow.gate.quiet import Quiet
from resolveflow.policy_file import Classification, PolicyFile, RepositoryPolicy
from resolveflow.telemetry import span
from resolveflow.triage import evidence as evidence_service
from resolveflow.triage import repository_config
from resolveflow.triage.domain.composition import PART_KINDS, compose
from resolveflow.triage.domain.evidence import IssueEvidence, normalize
from resolveflow.triage.domain.parts import TriageParts
from resolveflow.triage.domain.rules import (
    INVESTIGATION_NOT_CONFIGURED,
    ProposedAction,
    classify,
)
from resolveflow.triage.graph import steps
from resolveflow.triage.graph.state import TriageState

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TriageDeps:
    db: Any  # store.database.Database (kept loose to avoid a cycle in type-only imports)
    github: GitHub
    policy: Callable[[], PolicyFile]
    executor: Callable[[], Executor]
    # The ai_investigation step, when configured: (state, evidence) -> outcome (see _investigate).
    investigator: Callable[[dict[str, Any], IssueEvidence], dict[str, Any]] | None = None
    # The automatic move to the digest (RESOLVEFLOW_SUGGESTIONS_*); the modes are the policy's.
    quiet_rules: QuietRules = field(default_factory=QuietRules)
    # Parsed .github/resolveflow.yml files by blob sha (one per process unless a test passes its
    # own), and the clock the file's quiet hours are read by.
    configs: repository_config.ConfigCache = repository_config.PROCESS_CACHE
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    # The parts every run joins to its proposal, whatever its branch (``triage/parts.py``):
    # (tenant, evidence, the repository's policy) -> TriageParts. None: the branch's action only.
    parts: Callable[[UUID, IssueEvidence, RepositoryPolicy], TriageParts] | None = None


def _traced(step: str, node: Callable[[TriageState], Any]) -> Any:
    """Each step of a run is a span (``triage.STEP``) carrying the run's id. (``Any``: LangGraph's
    node protocols are generic in a way a wrapper's type cannot name.)"""

    def run(state: TriageState) -> Any:
        with span(f"triage.{step}", step=step, run_id=str(state.get("run_id") or "") or None):
            return node(state)

    return run


def build_triage_graph(
    deps: TriageDeps, checkpointer: BaseCheckpointSaver[Any] | None
) -> CompiledStateGraph[Any, Any, Any, Any]:
    graph = StateGraph(TriageState)
    graph.add_node("fetch_evidence", _traced("fetch_evidence", lambda s: _fetch(deps, s)))
    graph.add_node("normalize", _traced("normalize", lambda s: _normalize(deps, s)))
    graph.add_node("classify", _traced("classify", lambda s: _classify(deps, s)))
    graph.add_node("investigate", _traced("investigate", lambda s: _investigate(deps, s)))
    graph.add_node("build_proposal", _traced("build_proposal", lambda s: _build(deps, s)))
    graph.add_node("await_approval", _traced("await_approval", _await_approval))
    graph.add_node("execute", _traced("execute", lambda s: _execute(deps, s)))
    graph.add_node("fail", _traced("fail", lambda s: _fail(deps, s)))
    graph.add_edge(START, "fetch_evidence")
    graph.add_conditional_edges("fetch_evidence", _ok_or_fail("normalize"))
    graph.add_conditional_edges("normalize", _ok_or_fail("classify"))
    graph.add_conditional_edges("classify", _after_classify)
    graph.add_edge("investigate", "build_proposal")
    graph.add_conditional_edges("build_proposal", _after_build)
    graph.add_edge("await_approval", "execute")
    graph.add_conditional_edges("execute", _after_execute)
    graph.add_edge("fail", END)
    return graph.compile(checkpointer=checkpointer)


# --- routing ---------------------------------------------------------------------------------


def _ok_or_fail(next_node: str) -> Callable[[TriageState], str]:
    def route(state: TriageState) -> str:
        return "fail" if state.get("error") else next_node

    return route


def _after_classify(state: TriageState) -> str:
    if state.get("error"):
        return "fail"
    if state["classification"] == Classification.AI_INVESTIGATION.value:
        return "investigate"
    return "build_proposal"


def _after_build(state: TriageState) -> str:
    if state.get("error"):
        return "fail"
    return "await_approval" if state.get("proposal_id") else END


def _after_execute(state: TriageState) -> str:
    # A refused resume (unknown approval, another run's approval) leaves the run paused.
    return "await_approval" if state.get("resume_refused") else END


# --- nodes -----------------------------------------------------------------------------------


def _fetch(deps: TriageDeps, state: TriageState) -> dict[str, Any]:
    github = acting_for(deps.github, UUID(state["tenant_id"]))  # the run's tenant reads
    try:
        raw = evidence_service.gather(github, state["repository"], state["issue_number"])
    except ResolveFlowError as exc:
        return {"error": f"could not read the issue from GitHub: {exc.message}"}
    try:
        policy = deps.policy()
    except ResolveFlowError as exc:
        return {"error": exc.message}
    config = repository_config.load(github, deps.configs, state["repository"], policy)
    kept = config.as_state()
    if config.sha is not None or config.errors:
        steps.record_config(deps.db, state, kept)
    return {"raw": raw, "repo_config": kept, "error": None}


def _policy(deps: TriageDeps, state: TriageState) -> PolicyFile:
    """The tenant's policy file as it holds for this run: narrowed by the repository's own file
    when the run read one without problems (``triage/repository_config.py``)."""
    now = deps.clock()
    kept = state.get("repo_config")
    return repository_config.effective_policy(deps.policy(), state["repository"], kept, now)


def _normalize(deps: TriageDeps, state: TriageState) -> dict[str, Any]:
    raw = state.get("raw") or {}
    try:
        evidence = normalize(raw)
    except ResolveFlowError as exc:
        return {"error": exc.message}
    facts = {name: fact.model_dump() for name, fact in evidence.facts.items()}
    steps.record_snapshot(deps.db, state, raw, facts)
    return {"facts": facts}


def _classify(deps: TriageDeps, state: TriageState) -> dict[str, Any]:
    evidence = normalize(state.get("raw") or {})
    try:
        policy = _policy(deps, state).for_repository(state["repository"])
    except ResolveFlowError as exc:
        return {"error": exc.message}
    result = classify(evidence, policy)
    steps.audit_run(
        deps.db,
        state,
        AuditEvent.RUN_CLASSIFIED,
        classification=result.classification.value,
        rule=result.rule,
        reason=result.reason,
    )
    return {
        "classification": result.classification.value,
        "rule": result.rule,
        "reason": result.reason,
        "branch": result.classification.value,
        "route_reason": None,
    }


def _investigate(deps: TriageDeps, state: TriageState) -> dict[str, Any]:
    if deps.investigator is None:
        # No diagnosis step (retrieval + model + review) is configured: a person decides.
        steps.audit_run(
            deps.db,
            state,
            AuditEvent.RUN_ROUTED,
            to="human_review",
            reason=INVESTIGATION_NOT_CONFIGURED,
        )
        return {
            "branch": Classification.HUMAN_REVIEW.value,
            "route_reason": INVESTIGATION_NOT_CONFIGURED,
        }
    try:
        modes = place_modes(_policy(deps, state), state["repository"])
    except ResolveFlowError as exc:
        return {"error": exc.message}
    if modes.get(SuggestionKind.DUPLICATE) is SuggestionMode.OFF:
        # Nothing it found could be proposed: no retrieval and no model call (``_build`` records
        # why nothing is proposed).
        quiet: dict[str, Any] = {
            "comment": None,
            "labels": [],
            "notes": [],
            "author_kind": "workflow",
        }
        return {
            "investigation_action": quiet,
            "route_reason": off_reason(SuggestionKind.DUPLICATE, state["repository"]),
        }
    evidence = normalize(state.get("raw") or {})
    try:
        outcome = deps.investigator(dict(state), evidence)
    except ResolveFlowError as exc:
        return {"error": f"the investigation failed: {exc.message}"}
    # outcome: {"investigation": JSON for the record, "action": {"comment", "labels", "notes"},
    #           "escalated": bool, "reason": str}
    action = outcome.get("action")
    if not isinstance(action, dict):
        return {"error": "the investigation returned no action"}
    return {
        "investigation": outcome.get("investigation"),
        "investigation_action": action,
        "route_reason": outcome.get("reason"),
    }


def _build(deps: TriageDeps, state: TriageState) -> dict[str, Any]:
    evidence = normalize(state.get("raw") or {})
    try:
        policy_file = _policy(deps, state)
        policy = policy_file.for_repository(state["repository"])
        modes = place_modes(policy_file, state["repository"])
    except ResolveFlowError as exc:
        return {"error": exc.message}
    investigated = state.get("investigation_action")
    parts = _parts(deps, state, evidence, policy)
    # Each part's floor is raised where this repository's decisions on its kind say so; a
    # learned label's confidence comes from how its score band fared.
    history = steps.part_history(deps.db, state, parts, PART_KINDS)
    parts = parts.under(history.floors)
    composed = compose(
        evidence,
        classify(evidence, policy),
        policy,
        Classification(state["branch"]),
        modes,
        parts,
        _investigated(investigated),
        history.acceptance,
    )
    # Where the repository's file turns GitHub suggestions on, what is approved goes as them.
    action = dataclasses.replace(
        composed.action, suggest=repository_config.github_suggestions(state)
    )
    author = (investigated or {}).get("author_kind", "workflow") if investigated else "workflow"
    quiet = Quiet(policy_file, deps.quiet_rules)
    try:
        records = composed.parts.records(PART_KINDS)
        proposal = steps.create_run_proposal(
            deps.db, state, action, author, quiet, composed.parts, records
        )
    except ResolveFlowError as exc:
        return {"error": f"could not create the proposal: {exc.message}"}
    update: dict[str, Any] = {"raw": None}  # the snapshot holds it; keep checkpoints small
    if proposal is None:
        update["outcome"] = "nothing to propose: " + ("; ".join(action.notes) or "empty action")
        return update
    update.update(proposal_id=str(proposal.id), digest=proposal.digest)
    return update


def _investigated(kept: dict[str, Any] | None) -> ProposedAction | None:
    """The investigation's action as the state keeps it (plain JSON), read back."""
    if kept is None:
        return None
    comment = kept.get("comment")
    return ProposedAction(
        comment=comment if isinstance(comment, str) else None,
        labels=tuple(label for label in kept.get("labels") or () if isinstance(label, str)),
        notes=tuple(str(note) for note in kept.get("notes") or ()),
    )


def _parts(
    deps: TriageDeps, state: TriageState, evidence: IssueEvidence, policy: RepositoryPolicy
) -> TriageParts:
    """The run's parts (``compose`` leaves out those whose kind is off in this place)."""
    if deps.parts is None:
        return TriageParts()
    try:
        return deps.parts(UUID(state["tenant_id"]), evidence, policy)
    except ResolveFlowError as exc:  # the branch's own action still stands
        logger.warning("triage parts not made: %s", exc.message, extra={"run": state["run_id"]})
        return TriageParts()


def _await_approval(state: TriageState) -> dict[str, Any]:
    # No side effect may come before interrupt(): the node re-runs from its start on resume.
    answer = interrupt({"proposal_id": state.get("proposal_id"), "digest": state.get("digest")})
    approval_id = answer.get("approval_id") if isinstance(answer, dict) else None
    return {"approval_id": approval_id if isinstance(approval_id, str) else None}


def _execute(deps: TriageDeps, state: TriageState) -> dict[str, Any]:
    try:
        approval_id = UUID(state.get("approval_id") or "")
    except ValueError:
        with deps.db.tenant(UUID(state["tenant_id"])) as conn:
            return steps.refuse_resume(conn, state, "the resume value is not an approval id")
    return steps.execute_approved(deps.db, deps.executor(), state, approval_id)


def _fail(deps: TriageDeps, state: TriageState) -> dict[str, Any]:
    steps.mark_failed(deps.db, state, state.get("error") or "unknown error")
    return {"outcome": RunStatus.FAILED.value}
