"""Before a run is started by a person (the CLI's ``triage``, the API's ``POST /runs``): an issue
GitHub does not have is one line and no run, rather than a failed run left in the inbox and the
audit. A webhook's issue exists by definition and is not asked about again."""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from resolveflow.errors import NotFound, ProviderRejected, ResolveFlowError
from resolveflow.store import tenants as tenant_store

if TYPE_CHECKING:
    from resolveflow.bootstrap.app import App
    from resolveflow.domain.records import Principal


def missing_issue(app: App, tenant_id: UUID, repository: str, number: int) -> NotFound | None:
    """``NotFound`` when GitHub answers 404 for the issue; None when it is there, or when GitHub
    could not say (the run then records why it could not read it)."""
    from resolveflow.adapters.github.app_client import acting_for
    from resolveflow.adapters.github.protocol import RepoName

    try:
        acting_for(app.github, tenant_id).get_issue(RepoName.parse(repository), number)
    except ProviderRejected as exc:
        if exc.status == 404:
            return NotFound(
                f"{repository}#{number} does not exist (or the token cannot see it): "
                "GitHub answered 404"
            )
    except ResolveFlowError:
        pass
    return None


def check_issue(app: App, actor: Principal, repository: str, number: int) -> None:
    """Raises ``NotFound`` for an issue GitHub does not have. A repository off the allowlist is
    left to the run controller's ``start``, which refuses it before asking GitHub anything."""
    with app.db.tenant(actor.tenant_id) as conn:
        allowed = tenant_store.repository_allowed(conn, actor.tenant_id, repository)
    missing = missing_issue(app, actor.tenant_id, repository, number) if allowed else None
    if missing is not None:
        raise missing
