"""Refine's dependencies, for the composition root's users (the CLI): from an opened ``App``, what
each step needs (``refine.step_runner.StepDeps``), built only when a step asks for it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

from resolveflow.accounts import admin
from resolveflow.accounts.model_budget import BudgetedModel, ModelCallBudget
from resolveflow.bootstrap.app import App, load_policy
from resolveflow.config import Settings
from resolveflow.domain.records import Principal
from resolveflow.llm.protocol import ChatModel
from resolveflow.refine.domain.document import RefineDocument
from resolveflow.refine.load import TicketReaders
from resolveflow.refine.step_runner import StepDeps

if TYPE_CHECKING:
    from resolveflow.refine.changes import ChangesDeps, RepositoryHistory
    from resolveflow.refine.domain.rules import RefinePolicy


def refine_policy(settings: Settings) -> Callable[[RefineDocument], RefinePolicy]:
    """The refine rules of the ticket's repository (the policy file's ``refine`` table)."""

    def for_ticket(doc: RefineDocument) -> RefinePolicy:
        from resolveflow.refine.domain.rules import repository_refine

        return repository_refine(load_policy(settings), doc.ticket.repository or "")

    return for_ticket


def step_deps(
    app: App,
    tenant_name: Callable[[], str],
    stdin: Callable[[], str] | None,
    principal: Principal | None = None,
) -> StepDeps:
    """``principal``: who the work is for; the model's calls then count against their daily
    budget (a spent budget leaves relevance and the summary to the rules)."""
    tenant: dict[str, UUID] = {}

    def tenant_id() -> UUID:
        if "id" not in tenant:
            tenant["id"] = admin.find_tenant(app.db, tenant_name()).id
        return tenant["id"]

    histories: dict[str, RepositoryHistory] = {}
    policy = refine_policy(app.settings)

    def changes(doc: RefineDocument) -> ChangesDeps:
        from resolveflow.refine.changes import ChangesDeps

        repository = doc.ticket.repository
        if repository and repository not in histories:
            clone = policy(doc).clone
            if clone is not None:
                histories[repository] = _history(repository, Path(clone))
        return ChangesDeps(db=app.db, tenant_id=tenant_id(), histories=histories,
                           files=policy(doc).file_rules())  # fmt: skip

    readers = TicketReaders(
        github=lambda: app.github,
        gitlab=lambda: app.gitlab().client_for(tenant_id()),
        stdin=stdin,
    )
    return StepDeps(
        readers=readers, tenant_id=tenant_id, db=lambda: app.db, searcher=app.searcher,
        model=lambda: _budgeted(app, principal), policy=policy, changes=changes,
    )  # fmt: skip


def _history(repository: str, clone: Path) -> RepositoryHistory:
    """A configured clone's history; a clone that is missing stops refine (``CloneMissing``)."""
    from resolveflow.adapters.git import GitRepository
    from resolveflow.refine.changes import RepositoryHistory

    return RepositoryHistory.read(repository, GitRepository(clone))


def _budgeted(app: App, principal: Principal | None) -> ChatModel | None:
    model = app.model()
    if model is None or principal is None:
        return model
    budget = ModelCallBudget(app.db, principal.tenant_id, app.settings.limits.model_calls_per_day,
                             principal_id=principal.id)  # fmt: skip
    return BudgetedModel(model, budget, principal.subject)
