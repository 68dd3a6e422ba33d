"""The registry of action kinds: one executor per ``ActionKind``.

The gate's own kinds (GitHub's and GitLab's) are built here; a kind a product carries out
(mail's ``email.send``) is offered by the wiring (``bootstrap/kinds.py``), so the gate never names
its executor. A kind offered by nothing in this process is refused at execution.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from uuid import UUID

from resolveflow.adapters.github.app_client import acting_for
from resolveflow.adapters.github.protocol import GitHub
from resolveflow.errors import ConfigError
from resolveflow.gate.domain.actions import ActionKind, AnyAction
from resolveflow.gate.kinds import (
    github_issue,
    github_issue_close_duplicate,
    github_issue_create,
    gitlab_issue_create,
)
from resolveflow.gate.kinds.base import KindExecutor, KindOffer, KindSpec
from resolveflow.gate.kinds.gitlab_issue_create import GitLabAccess, NoGitLab
from resolveflow.gate.recorder import Recorder

# The gate's GitHub kinds, each built over a GitHub client and the recorder.
GITHUB_KINDS: dict[ActionKind, Callable[[GitHub, Recorder], KindExecutor]] = {
    ActionKind.GITHUB_ISSUE: github_issue.GitHubIssueExecutor,
    ActionKind.GITHUB_ISSUE_CREATE: github_issue_create.GitHubIssueCreateExecutor,
    ActionKind.GITHUB_ISSUE_CLOSE_DUPLICATE: (
        github_issue_close_duplicate.GitHubIssueCloseDuplicateExecutor
    ),
}

# The gate's own kinds' declarations (``kinds list`` adds the offered ones').
SPECS: dict[ActionKind, KindSpec] = {
    ActionKind.GITHUB_ISSUE: github_issue.SPEC,
    ActionKind.GITHUB_ISSUE_CREATE: github_issue_create.SPEC,
    ActionKind.GITLAB_ISSUE_CREATE: gitlab_issue_create.SPEC,
    ActionKind.GITHUB_ISSUE_CLOSE_DUPLICATE: github_issue_close_duplicate.SPEC,
}


class KindRegistry:
    """Each kind's executor, built over one GitHub client, GitLab per tenant and one recorder,
    with the offered kinds' executors over the same recorder. GitHub's kinds are built per
    tenant, over the client as it acts for that tenant (a GitHub App's installation serves one
    tenant: ``adapters/github/app_client.py``)."""

    def __init__(
        self,
        github: GitHub,
        record: Recorder,
        gitlab: GitLabAccess | None = None,
        offered: Iterable[KindOffer] = (),
    ) -> None:
        self._github = github
        self._record = record
        self._per_tenant: dict[UUID, dict[ActionKind, KindExecutor]] = {}
        gitlab_kind = gitlab_issue_create.GitLabIssueCreateExecutor(gitlab or NoGitLab(), record)
        self._executors: dict[ActionKind, KindExecutor] = {gitlab_kind.spec.kind: gitlab_kind}
        for offer in offered:
            executor = offer(record)
            if executor.spec.kind in self._executors or executor.spec.kind in GITHUB_KINDS:
                raise RuntimeError(f"{executor.spec.kind} is offered twice")
            self._executors[executor.spec.kind] = executor

    def for_action(self, action: AnyAction, tenant_id: UUID) -> KindExecutor:
        """``ConfigError`` for a kind no package offered in this process: refused, not sent."""
        kind = ActionKind(action.kind)
        executor = self._github_kinds(tenant_id).get(kind) or self._executors.get(kind)
        if executor is None:
            raise ConfigError(f"{action.kind} is not carried out in this process")
        return executor

    def _github_kinds(self, tenant_id: UUID) -> dict[ActionKind, KindExecutor]:
        built = self._per_tenant.get(tenant_id)
        if built is None:
            github = acting_for(self._github, tenant_id)
            built = {kind: make(github, self._record) for kind, make in GITHUB_KINDS.items()}
            self._per_tenant[tenant_id] = built  # two threads may both build it: alike
        return built
