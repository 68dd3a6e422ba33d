"""The triage graph's ``investigator``: the ai_investigation branch as one callable.

``make_investigator`` returns ``(state, evidence) -> outcome`` for ``TriageDeps.investigator``
(``bootstrap/app.App`` passes it the shared searcher and the configured model). It retrieves within the
run's tenant, diagnoses with the model (or none), reviews in code, records the investigation and
its model calls against the budget of the person who started the run, and hands back the action
for ``build_proposal``. The action's target is never in it: the graph proposes on the run's own
repository and issue.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any
from uuid import UUID

from resolveflow.accounts.model_budget import ModelCallBudget
from resolveflow.domain.vocabulary import SuggestionKind
from resolveflow.gate import feedback
from resolveflow.llm.protocol import ChatModel
from resolveflow.policy_file import PolicyFile
from resolveflow.store.database import Database
from resolveflow.triage import investigation as service
from resolveflow.triage.domain.evidence import IssueEvidence
from resolveflow.triage.investigation import InvestigationConfig, Retriever

logger = logging.getLogger(__name__)

Investigator = Callable[[dict[str, Any], IssueEvidence], dict[str, Any]]


def make_investigator(
    db: Database,
    retriever: Retriever,
    model: ChatModel | None,
    config: InvestigationConfig,
    policy: Callable[[], PolicyFile],
) -> Investigator:
    """The investigator from its parts (``bootstrap/app.App`` with the configured ones; tests with a
    scripted model)."""

    def investigator(state: dict[str, Any], evidence: IssueEvidence) -> dict[str, Any]:
        tenant_id, run_id = UUID(state["tenant_id"]), UUID(state["run_id"])
        budget = ModelCallBudget(
            db,
            tenant_id,
            daily_limit=config.daily_model_calls,
            principal_id=UUID(state["requested_by"]),
            run_id=run_id,
        )
        # The floor this repository's own decisions on duplicate suggestions set (issue 31):
        # never below the configured one, which stands until there are enough of them.
        with db.tenant(tenant_id) as conn:
            floor = feedback.fitted_threshold_in(
                conn,
                tenant_id,
                state["repository"],
                SuggestionKind.DUPLICATE,
                config.relevance_floor,
            )
        result = service.investigate(
            evidence,
            policy().for_repository(state["repository"]),
            retriever=retriever,
            tenant_id=tenant_id,
            model=model,
            config=dataclasses.replace(config, relevance_floor=floor.value),
            budget=budget,
        )
        service.record(db, tenant_id, run_id, result)
        logger.info(
            "investigated",
            extra={"run": str(run_id), "outcome": result.review.outcome.value},
        )
        outcome = result.graph_outcome()
        if floor.value > floor.default:
            outcome["action"]["notes"].append(
                f"relevance floor {floor.value:.2f} on this repository (default "
                f"{floor.default:.2f}), {floor.why}"
            )
        return outcome

    return investigator
