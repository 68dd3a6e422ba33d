"""The registry of action kinds: one executor per ``ActionKind``."""

from __future__ import annotations

from resolveflow.adapters.github.protocol import GitHub
from resolveflow.gate.domain.actions import ActionKind, AnyAction
from resolveflow.gate.kinds import github_issue, github_issue_create, gitlab_issue_create
from resolveflow.gate.kinds.base import KindExecutor, KindSpec
from resolveflow.gate.kinds.gitlab_issue_create import GitLabAccess, NoGitLab
from resolveflow.gate.recorder import Recorder
from resolveflow.mail import kind as email_send
from resolveflow.mail.kind import MailAccess, NoMail

SPECS: dict[ActionKind, KindSpec] = {
    ActionKind.GITHUB_ISSUE: github_issue.SPEC,
    ActionKind.GITHUB_ISSUE_CREATE: github_issue_create.SPEC,
    ActionKind.GITLAB_ISSUE_CREATE: gitlab_issue_create.SPEC,
    ActionKind.EMAIL_SEND: email_send.SPEC,
}


class KindRegistry:
    """Each kind's executor, built over one GitHub client, GitLab and mailboxes per tenant and
    one recorder."""

    def __init__(
        self,
        github: GitHub,
        record: Recorder,
        gitlab: GitLabAccess | None = None,
        mail: MailAccess | None = None,
    ) -> None:
        self._executors: dict[ActionKind, KindExecutor] = {
            ActionKind.GITHUB_ISSUE: github_issue.GitHubIssueExecutor(github, record),
            ActionKind.GITHUB_ISSUE_CREATE: github_issue_create.GitHubIssueCreateExecutor(
                github, record
            ),
            ActionKind.GITLAB_ISSUE_CREATE: gitlab_issue_create.GitLabIssueCreateExecutor(
                gitlab or NoGitLab(), record
            ),
            ActionKind.EMAIL_SEND: email_send.EmailSendExecutor(mail or NoMail(), record),
        }
        missing = set(ActionKind) - set(self._executors)
        if missing:  # a kind without an executor could be approved but never sent
            raise RuntimeError(f"no executor for {sorted(missing)}")

    def for_action(self, action: AnyAction) -> KindExecutor:
        return self._executors[ActionKind(action.kind)]
