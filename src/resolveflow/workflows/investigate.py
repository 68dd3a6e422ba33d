"""The triage graph's ``investigator``: the ai_investigation branch as one callable.

``build_investigator`` returns ``(state, evidence) -> outcome`` for ``TriageDeps.investigator``. It
retrieves within the run's tenant, diagnoses with the configured model (or none), reviews in code,
records the investigation and its model calls, and hands back the action for ``build_proposal``.
The action's target is never in it: the graph proposes on the run's own repository and issue.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from uuid import UUID

from resolveflow.adapters.embedder.protocol import Embedder
from resolveflow.adapters.llm.protocol import ChatModel
from resolveflow.config import Settings
from resolveflow.domain.evidence import IssueEvidence
from resolveflow.domain.triage_policy import PolicyFile
from resolveflow.errors import ConfigError
from resolveflow.retrieval.search import Searcher, SearchParams
from resolveflow.service import investigation as service
from resolveflow.service.investigation import InvestigationConfig, Retriever
from resolveflow.service.model_calls import CallBook
from resolveflow.store.database import Database

logger = logging.getLogger(__name__)

Investigator = Callable[[dict[str, Any], IssueEvidence], dict[str, Any]]


def build_model(settings: Settings) -> ChatModel | None:
    """The configured model provider; None for ``none`` (the default)."""
    if settings.model_provider == "none":
        return None
    if settings.model_provider == "scripted":
        from resolveflow.adapters.llm.scripted import ScriptedModel, load_script

        if settings.scripted_model_file is None:
            raise ConfigError(
                "RESOLVEFLOW_MODEL_PROVIDER=scripted needs RESOLVEFLOW_SCRIPTED_MODEL_FILE"
            )
        return ScriptedModel(
            load_script(settings.scripted_model_file),
            model=settings.model,
            invalid_output_attempts=settings.model_invalid_output_attempts,
        )
    from resolveflow.adapters.llm.openai_chat import OpenAIChatModel

    key = settings.openai_api_key
    return OpenAIChatModel(
        settings.openai_base_url,
        key.get_secret_value() if key else None,
        settings.model,
        timeout_seconds=settings.model_timeout_seconds,
        max_retries=settings.model_max_retries,
        max_wait_seconds=settings.model_max_wait_seconds,
        invalid_output_attempts=settings.model_invalid_output_attempts,
    )


def investigation_config(settings: Settings) -> InvestigationConfig:
    return InvestigationConfig(
        relevance_floor=settings.relevance_floor,
        top_k=settings.investigation_top_k,
        daily_model_calls=settings.model_daily_calls_per_principal,
    )


def make_investigator(
    db: Database,
    retriever: Retriever,
    model: ChatModel | None,
    config: InvestigationConfig,
    policy: Callable[[], PolicyFile],
) -> Investigator:
    """The investigator from its parts (tests build it this way with a scripted model)."""

    def investigator(state: dict[str, Any], evidence: IssueEvidence) -> dict[str, Any]:
        tenant_id, run_id = UUID(state["tenant_id"]), UUID(state["run_id"])
        book = CallBook(
            db,
            tenant_id,
            principal_id=UUID(state["requested_by"]),
            run_id=run_id,
            daily_limit=config.daily_model_calls,
        )
        result = service.investigate(
            evidence,
            policy().for_repository(state["repository"]),
            retriever=retriever,
            tenant_id=tenant_id,
            model=model,
            config=config,
            book=book,
        )
        service.record(db, tenant_id, run_id, result)
        logger.info(
            "investigated",
            extra={"run": str(run_id), "outcome": result.review.outcome.value},
        )
        return result.graph_outcome()

    return investigator


def build_investigator(
    db: Database,
    settings: Settings,
    policy: Callable[[], PolicyFile],
    *,
    embedder: Embedder,
    search_params: SearchParams | None = None,
) -> Investigator:
    """What ``wiring.App.run_controller`` passes as ``TriageDeps(investigator=...)``."""
    return make_investigator(
        db,
        Searcher(db, embedder, search_params),
        build_model(settings),
        investigation_config(settings),
        policy,
    )
