"""Chains and circles of ``github.issue_close_duplicate``, read from GitHub and our own records:
checked when it is proposed, and again before the notice and before the close.

"Closed as a duplicate of" is read from GitHub's ``state_reason: duplicate`` on the original,
and which issue it duplicates from our own records (a close-as-duplicate of it we carried out);
GitHub's REST API does not say which issue a duplicate points to, so one closed as a duplicate by
hand is refused without naming its original.
"""

from __future__ import annotations

from uuid import UUID

from resolveflow.adapters.github.protocol import GitHub, IssueData, RepoName
from resolveflow.domain.vocabulary import ExecutionState
from resolveflow.errors import ProviderRejected
from resolveflow.gate.domain.actions import GitHubIssueCloseDuplicateAction
from resolveflow.gate.domain.duplicates import OriginalState, check_original
from resolveflow.gate.store import executions as store
from resolveflow.store.database import Database


def check_chain(
    github: GitHub,
    db: Database,
    tenant_id: UUID,
    action: GitHubIssueCloseDuplicateAction,
    token: str | None = None,
) -> IssueData:
    """The original as GitHub describes it now; ``PolicyViolation`` for a chain, a circle, a pull
    request or a missing original. ``ProviderError`` when GitHub cannot be read."""
    repo = RepoName.parse(action.repository)
    try:
        original: IssueData | None = github.get_issue(repo, action.original, token=token)
    except ProviderRejected as exc:
        if exc.status not in (404, 410):
            raise
        original = None
    with db.tenant(tenant_id) as conn:
        records = store.live_close_duplicates(conn, tenant_id, action.repository, action.original)
    closed_as = [r.original for r in records if r.state is ExecutionState.SENT]
    under_way = [r.original for r in records if r.state is not ExecutionState.SENT]
    check_original(
        action.target.issue,
        OriginalState(
            number=action.original,
            exists=original is not None,
            is_pull_request=original is not None and original.is_pull_request,
            state=original.state if original is not None else "open",
            state_reason=original.state_reason if original is not None else None,
            duplicate_of=closed_as[-1] if closed_as else None,
        ),
        under_way,
        action.repository,
    )
    assert original is not None
    return original
