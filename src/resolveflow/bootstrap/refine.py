"""Refine's dependencies, for the composition root's users (the CLI): from an opened ``App``, what
each step needs (``refine.step_runner.StepDeps``), built only when a step asks for it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

from resolveflow.accounts import admin
from resolveflow.accounts.model_budget import BudgetedModel, ModelCallBudget
from resolveflow.adapters.github.app_client import acting_for
from resolveflow.adapters.github.protocol import GitHub
from resolveflow.bootstrap.app import App, load_policy
from resolveflow.config import Settings
from resolveflow.domain.records import Principal
from resolveflow.errors import ResolveFlowError
from resolveflow.llm.protocol import ChatModel
from resolveflow.policy_file import PolicyFile
from resolveflow.refine.domain.document import RefineDocument
from resolveflow.refine.load import TicketReaders
from resolveflow.refine.step_runner import StepDeps

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from resolveflow.adapters.git.history import RepositoryHistory
    from resolveflow.refine.changes import ChangesDeps
    from resolveflow.refine.domain.rules import RefinePolicy


def refine_policy(
    settings: Settings, github: Callable[[], GitHub] | None = None
) -> Callable[[RefineDocument], RefinePolicy]:
    """The refine rules of the ticket's repository (the policy file's ``refine`` table), narrowed
    by the repository's own ``.github/resolveflow.yml`` when the ticket is a GitHub issue and a
    client is given (docs/repository-config.md): as for a triage run, a file with a problem is
    not applied at all, so it can never widen what the tenant allows."""

    def for_ticket(doc: RefineDocument) -> RefinePolicy:
        from resolveflow.refine.domain.document import TicketSource
        from resolveflow.refine.domain.rules import repository_refine

        policy = load_policy(settings)
        repository = doc.ticket.repository or ""
        if github is not None and repository and doc.ticket.source is TicketSource.GITHUB:
            policy = _narrowed_by_repository(github(), policy, repository)
        return repository_refine(policy, repository)

    return for_ticket


def _narrowed_by_repository(github: GitHub, policy: PolicyFile, repository: str) -> PolicyFile:
    from resolveflow.triage import repository_config

    read = repository_config.load(github, repository_config.PROCESS_CACHE, repository, policy)
    for error in read.errors:  # a triage run's page shows them; refine says so in its log
        logger.warning("repository config not applied", extra={"problem": error})
    return repository_config.effective_policy(
        policy, repository, read.as_state(), datetime.now(UTC)
    )


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
    policy = refine_policy(app.settings, lambda: acting_for(app.github, tenant_id()))

    def history(doc: RefineDocument) -> RepositoryHistory | None:
        repository = doc.ticket.repository
        if repository and repository not in histories:
            clone = policy(doc).clone
            if clone is not None:
                histories[repository] = _history(repository, Path(clone))
        return histories.get(repository) if repository else None

    def changes(doc: RefineDocument) -> ChangesDeps:
        from resolveflow.refine.changes import ChangesDeps

        history(doc)
        return ChangesDeps(db=app.db, tenant_id=tenant_id(), histories=histories,
                           files=policy(doc).file_rules())  # fmt: skip

    readers = TicketReaders(
        github=lambda: acting_for(app.github, tenant_id()),
        gitlab=lambda: app.gitlab().client_for(tenant_id()),
        stdin=stdin,
    )
    return StepDeps(
        readers=readers, tenant_id=tenant_id, db=lambda: app.db, searcher=app.searcher,
        model=lambda: _budgeted(app, principal), policy=policy, changes=changes,
        history=history,
    )  # fmt: skip


def clone_histories(
    policy: Callable[[], PolicyFile],
) -> Callable[[str], RepositoryHistory | None]:
    """A repository's local clone (the policy file's ``refine.clone``) for triage's likely files,
    read again only when its HEAD has moved (one ``git rev-parse`` a run), so commits pulled into
    it are known to the next run; None without one, or when it cannot be read (logged once while
    it stays so: the other parts still stand)."""
    from resolveflow.adapters.git import GitRepository
    from resolveflow.adapters.git.history import RepositoryHistory

    read: dict[str, tuple[str, RepositoryHistory]] = {}
    unreadable: set[str] = set()

    def history_for(repository: str) -> RepositoryHistory | None:
        from resolveflow.refine.domain.rules import repository_refine

        clone = repository_refine(policy(), repository).clone
        if not clone:
            return None
        repo = GitRepository(Path(clone))
        try:
            head = repo.head()
            known = read.get(repository)
            if known is None or known[0] != head or known[1].repo.path != repo.path:
                read[repository] = (head, RepositoryHistory.read(repository, repo))
        except ResolveFlowError as exc:
            if repository not in unreadable:
                logger.warning("no likely files: %s", exc.message, extra={"repo": repository})
            unreadable.add(repository)
            return None
        unreadable.discard(repository)
        return read[repository][1]

    return history_for


def _history(repository: str, clone: Path) -> RepositoryHistory:
    """A configured clone's history; a clone that is missing stops refine (``CloneMissing``)."""
    from resolveflow.adapters.git import GitRepository
    from resolveflow.adapters.git.history import RepositoryHistory

    return RepositoryHistory.read(repository, GitRepository(clone))


def _budgeted(app: App, principal: Principal | None) -> ChatModel | None:
    model = app.model()
    if model is None or principal is None:
        return model
    budget = ModelCallBudget(app.db, principal.tenant_id, app.settings.limits.model_calls_per_day,
                             principal_id=principal.id)  # fmt: skip
    return BudgetedModel(model, budget, principal.subject)
