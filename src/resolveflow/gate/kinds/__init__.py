"""The registry of action kinds: one executor per ``ActionKind``.

The gate's own kinds (GitHub's and GitLab's) are built here; a kind a product carries out
(mail's ``email.send``) is offered by the wiring (``bootstrap/kinds.py``), so the gate never names
its executor. A kind offered by nothing in this process is refused at execution.
"""

from __future__ import annotations

from collections.abc import Iterable

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

# The gate's own kinds' declarations (``kinds list`` adds the offered ones').
SPECS: dict[ActionKind, KindSpec] = {
    ActionKind.GITHUB_ISSUE: github_issue.SPEC,
    ActionKind.GITHUB_ISSUE_CREATE: github_issue_create.SPEC,
    ActionKind.GITLAB_ISSUE_CREATE: gitlab_issue_create.SPEC,
    ActionKind.GITHUB_ISSUE_CLOSE_DUPLICATE: github_issue_close_duplicate.SPEC,
}


class KindRegistry:
    """Each kind's executor, built over one GitHub client, GitLab per tenant and one recorder,
    with the offered kinds' executors over the same recorder."""

    def __init__(
        self,
        github: GitHub,
        record: Recorder,
        gitlab: GitLabAccess | None = None,
        offered: Iterable[KindOffer] = (),
    ) -> None:
        own: list[KindExecutor] = [
            github_issue.GitHubIssueExecutor(github, record),
            github_issue_create.GitHubIssueCreateExecutor(github, record),
            gitlab_issue_create.GitLabIssueCreateExecutor(gitlab or NoGitLab(), record),
            github_issue_close_duplicate.GitHubIssueCloseDuplicateExecutor(github, record),
        ]
        self._executors = {executor.spec.kind: executor for executor in own}
        for offer in offered:
            executor = offer(record)
            if executor.spec.kind in self._executors:
                raise RuntimeError(f"{executor.spec.kind} is offered twice")
            self._executors[executor.spec.kind] = executor

    def for_action(self, action: AnyAction) -> KindExecutor:
        """``ConfigError`` for a kind no package offered in this process: refused, not sent."""
        executor = self._executors.get(ActionKind(action.kind))
        if executor is None:
            raise ConfigError(f"{action.kind} is not carried out in this process")
        return executor
