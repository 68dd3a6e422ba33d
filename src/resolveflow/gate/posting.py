"""Who will write an approved action (before a decision) and what came of it (after): the facts
the run, proposal and execution pages show and the CLI says in one sentence
(``gate.outcome_words.outcome_text``).

GitHub shows the approver's own token's account, else the service account's
(``gate.credentials``). GitLab always shows the account of the tenant's own GitLab token,
whoever approved (``execution/kinds/gitlab_issue_create``), as GitLab reports it (``GET /user``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import UUID

from resolveflow.domain.records import Principal
from resolveflow.domain.vocabulary import Credential, ExecutionState
from resolveflow.errors import ConfigError, ResolveFlowError
from resolveflow.gate import executions as execution_service
from resolveflow.gate import proposals as proposal_service
from resolveflow.gate.credentials import ApproverTokenLookup, principal_token
from resolveflow.gate.outcome_words import EMAIL_KIND, GITLAB_KIND, NEW_ISSUE_KINDS, outcome_text
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Database

if TYPE_CHECKING:  # types only: the kinds' executors load with the executor, not to show an outcome
    from resolveflow.adapters.github.protocol import GitHub
    from resolveflow.gate.kinds.gitlab_issue_create import GitLabAccess


def who_posts(
    db: Database,
    tenant_id: UUID,
    principal_id: UUID,
    github: GitHub,
    lookup: ApproverTokenLookup | None,
    *,
    kind: str | None = None,
    gitlab: GitLabAccess | None = None,
    mailbox: str | None = None,
) -> dict[str, Any]:
    """Who the forge will show as the author of a write of ``kind`` approved by this principal.
    On GitHub: their own token's account, else the service account's (the executor's order),
    as GitHub reports it for that token (``GET /user``, cached by the client).

    ``login`` is ``None`` with a ``problem`` when it cannot be told (an unreadable token, the
    forge unreachable); the executor would refuse such a token rather than post as someone else."""
    if kind == GITLAB_KIND:
        return gitlab_poster(gitlab, tenant_id)
    if kind == EMAIL_KIND:  # sent as the mailbox, with its own SMTP account
        return _poster(mailbox, Credential.SERVICE, "smtp", None)
    credential = Credential.SERVICE
    try:
        with db.tenant(tenant_id) as conn:
            principal = tenant_store.principal_by_id(conn, tenant_id, principal_id)
            token = principal_token(conn, principal, lookup)
        credential = Credential.APPROVER if token is not None else Credential.SERVICE
        login = github.authenticated_login(token=token)
    except ResolveFlowError as exc:
        return _poster(None, credential, "github", exc.message)
    return _poster(login, credential, "github", None)


def gitlab_poster(gitlab: GitLabAccess | None, tenant_id: UUID) -> dict[str, Any]:
    """The account of the tenant's GitLab token (recorded as the service credential)."""
    try:
        if gitlab is None:
            raise ConfigError("GitLab is not configured: set RESOLVEFLOW_GITLAB_URL")
        _, login = gitlab.client_for(tenant_id).current_user()
    except ResolveFlowError as exc:
        return _poster(None, Credential.SERVICE, "gitlab", exc.message)
    return _poster(login, Credential.SERVICE, "gitlab", None)


def _poster(
    login: str | None, credential: Credential, forge: str, problem: str | None
) -> dict[str, Any]:
    return {"login": login, "credential": credential.value, "forge": forge, "problem": problem}


def outcome(
    db: Database,
    viewer: Principal,
    approval: dict[str, Any] | None,
    execution_id: str | None,
    github: GitHub,
    lookup: ApproverTokenLookup | None,
    gitlab: GitLabAccess | None = None,
) -> dict[str, Any] | None:
    """After approval: the execution's state, and once something was written who posted it
    (the credential its attempts used), when, where (a GitLab issue's project), and the link."""
    if approval is None or approval.get("decision") != "approved":
        return None
    if execution_id is None:
        return {"state": None, "login": None, "at": None, "url": None, "detail": None}
    shown = execution_service.show_execution(db, viewer, UUID(execution_id))
    done = [a for a in shown["attempts"] if a.get("outcome") == "sent"]
    url = shown["comment_url"] or shown["result_url"]
    login, where = None, None
    if shown["kind"] == EMAIL_KIND:
        where, url = "email", None  # a Message-ID to look up, not a page to open
    elif shown["kind"] == GITLAB_KIND:
        where = _gitlab_project(db, viewer, shown["proposal_id"])
        login = gitlab_poster(gitlab, viewer.tenant_id)["login"] if done or url else None
    elif done or url:
        login = _posted_as(db, viewer, approval, done, github, lookup)
    final = {ExecutionState.SENT.value, ExecutionState.PARTIAL.value}
    return {
        "id": shown["id"],
        "state": shown["state"],
        "login": login,
        "at": (done[-1].get("finished_at") if done else None) or shown["updated_at"],
        "url": url,
        "result_ref": shown["result_ref"],
        "message_id": shown["result_ref"] if shown["kind"] == EMAIL_KIND else None,
        "where": where,
        "detail": None if shown["state"] in final else shown["detail"],
    }


def _gitlab_project(db: Database, viewer: Principal, proposal_id: str) -> str | None:
    action = proposal_service.describe(db, viewer, UUID(proposal_id))["action"]
    project = (action.get("target") or {}).get("project")
    return str(project) if project else None


def _posted_as(
    db: Database,
    viewer: Principal,
    approval: dict[str, Any],
    done: list[dict[str, Any]],
    github: GitHub,
    lookup: ApproverTokenLookup | None,
) -> str | None:
    """The account a GitHub write went out as: the credential its sent attempt recorded."""
    if done and done[0]["credential"] == Credential.APPROVER.value:
        principal_id = UUID(approval["principal_id"])
        found: str | None = who_posts(db, viewer.tenant_id, principal_id, github, lookup)["login"]
        return found
    try:
        return github.authenticated_login()
    except ResolveFlowError:
        return None


def proposal_outcome(
    db: Database,
    viewer: Principal,
    view: dict[str, Any],
    github: GitHub,
    lookup: ApproverTokenLookup | None,
    gitlab: GitLabAccess | None = None,
) -> dict[str, Any] | None:
    """``outcome`` for a proposal as ``gate.proposals.describe`` tells it, with its sentence
    (``text``): what the CLI prints; ``None`` before an approval."""
    execution = view.get("execution") or {}
    found = outcome(db, viewer, view.get("approval"), execution.get("id"), github, lookup, gitlab)
    if found is not None:
        found["text"] = outcome_text(found, new_issue=view["kind"] in NEW_ISSUE_KINDS)
    return found


def execution_outcome(
    db: Database,
    viewer: Principal,
    execution_id: UUID,
    github: GitHub,
    lookup: ApproverTokenLookup | None,
    gitlab: GitLabAccess | None = None,
) -> dict[str, Any]:
    """``outcome`` for one execution (approved by whoever approved its proposal), with its
    sentence (``text``)."""
    shown = execution_service.show_execution(db, viewer, execution_id)
    proposal = proposal_service.describe(db, viewer, UUID(shown["proposal_id"]))
    approval = {
        "decision": "approved",
        "principal_id": (proposal["approval"] or {}).get("principal_id"),
    }
    found = outcome(db, viewer, approval, shown["id"], github, lookup, gitlab)
    assert found is not None  # an approval was given
    found["text"] = outcome_text(found, new_issue=shown["kind"] in NEW_ISSUE_KINDS)
    return found
