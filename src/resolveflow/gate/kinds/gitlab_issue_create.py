"""``gitlab.issue_create``: one new GitLab issue, created by one request.

GitLab is reached per tenant (``GitLabAccess``): the tenant's own token, decrypted from the store,
and the tenant's project aliases. Right before the issue is sent, everything the alias gave it is
checked against the aliases in force (``gate/domain/rechecks.check_gitlab_fields``): the project is
still an alias's, every label still allowed there, every assignee still mapped to the same user.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Protocol
from uuid import UUID

from resolveflow.adapters.gitlab.protocol import GitLab, GitLabIssue
from resolveflow.domain.records import Execution, ExecutionState
from resolveflow.domain.vocabulary import AttemptStep
from resolveflow.errors import (
    ConfigError,
    InvalidInput,
    PolicyViolation,
    ProviderError,
    ResolveFlowError,
)
from resolveflow.gate.domain.actions import (
    ActionKind,
    AnyAction,
    GitLabIssueCreateAction,
    body_with_marker,
    execution_marker,
)
from resolveflow.gate.domain.pace import PaceTarget
from resolveflow.gate.domain.policy import check_labels_exist
from resolveflow.gate.domain.rechecks import check_gitlab_fields
from resolveflow.gate.kinds.base import Evidence, KindSpec, Prepared, Settled, Settler, sent_with
from resolveflow.gate.kinds.sending import begin, opened_earlier, send_outcome
from resolveflow.gate.recorder import Recorder
from resolveflow.policy_file import ProjectAlias

CLOCK_SKEW = timedelta(minutes=10)  # GitLab's clock and ours; exact text makes it harmless

SPEC = KindSpec(
    kind=ActionKind.GITLAB_ISSUE_CREATE,
    writes_with=("create_issue",),
    steps=(AttemptStep.CREATE,),
    marker="at the end of the issue description, after a blank line",
    reconciliation=(
        "the project's issues created since the first attempt started (less 10 minutes of "
        "clock skew), every page, newest first, with `created_after`: one opened by the "
        "executor's GitLab account whose description is exactly the approved description plus "
        "the marker"
    ),
    partial="the issue was created but GitLab dropped some labels or assignees",
    paced_as=PaceTarget.GITLAB,
)


class GitLabAccess(Protocol):
    """GitLab as one tenant reaches it (wiring builds it from the settings and the store)."""

    def client_for(self, tenant_id: UUID) -> GitLab:
        """The tenant's client; ``ConfigError`` when no URL or no token is configured."""
        ...

    def project_aliases(self, tenant_id: UUID) -> tuple[ProjectAlias, ...]:
        """The tenant's GitLab project aliases in the policy file, as it is now."""
        ...


class NoGitLab:
    def client_for(self, tenant_id: UUID) -> GitLab:
        raise ConfigError("GitLab is not configured: set RESOLVEFLOW_GITLAB_URL")

    def project_aliases(self, tenant_id: UUID) -> tuple[ProjectAlias, ...]:
        return ()


class GitLabIssueCreateExecutor:
    spec = SPEC

    def __init__(self, access: GitLabAccess, record: Recorder) -> None:
        self.access = access
        self.record = record

    def step_with_claim(self, action: AnyAction) -> AttemptStep | None:
        return None  # the client and the alias checks come first: they may refuse

    def send(self, prepared: Prepared) -> Execution:
        execution = prepared.execution
        action = prepared.verified.action
        assert isinstance(action, GitLabIssueCreateAction)
        try:
            gitlab = self.access.client_for(execution.tenant_id)
            aliases = self.access.project_aliases(execution.tenant_id)
            check_gitlab_fields(action, aliases, gitlab.user_id)
            if action.labels:
                check_labels_exist(action, gitlab.project_labels(action.target.project_id))
        except ProviderError as exc:
            return self.record.read_failed(execution, exc)
        except (InvalidInput, PolicyViolation, ConfigError) as exc:
            return self.record.refused(execution, exc)
        if prepared.prior:
            earlier = self._look_for_earlier(prepared, action, gitlab)
            if earlier is not None:
                return earlier
        # The tenant's token writes, whoever approved: recorded as the service credential.
        attempt = begin(
            self.record, execution, AttemptStep.CREATE, sent_with(None), paced_as=SPEC.paced_as
        )
        if isinstance(attempt, Execution):
            return attempt
        try:
            created = gitlab.create_issue(
                action.target.project_id,
                title=action.title,
                description=body_with_marker(action.description, str(execution.id)),
                labels=list(action.labels),
                assignee_ids=list(action.assignee_ids),
            )
        except (ProviderError, InvalidInput) as exc:
            return send_outcome(self.record, execution, attempt.id, exc)
        state, detail = judge(action, created, "issue created")
        return self.record.created(
            execution, attempt.id, ref=str(created.iid), url=created.url, state=state, detail=detail
        )

    def _look_for_earlier(
        self, prepared: Prepared, action: GitLabIssueCreateAction, gitlab: GitLab
    ) -> Execution | None:
        """An earlier execution of this digest or lineage may have opened the issue after all."""
        execution = prepared.execution
        since = min(prior.first_started for prior in prepared.prior) - CLOCK_SKEW
        try:
            issues = gitlab.issues_created_since(action.target.project_id, since)
        except ProviderError as exc:
            return self.record.read_failed(execution, exc)

        def opened_by(earlier: AnyAction, execution_id: str) -> tuple[str, str] | None:
            if not isinstance(earlier, GitLabIssueCreateAction):
                return None
            found = find_marked_issue(issues, earlier.description, execution_id, None)
            return None if found is None else (str(found.iid), found.url)

        return opened_earlier(self.record, prepared, action, opened_by)

    def reconcile(self, evidence: Evidence, settle: Settler) -> Settled | None:
        execution, action = evidence.execution, evidence.action
        assert isinstance(action, GitLabIssueCreateAction)
        started = evidence.first_started.get(AttemptStep.CREATE)
        if started is None:
            return settle.requeue(execution, "no request had left; returned to the queue")
        try:
            gitlab = self.access.client_for(execution.tenant_id)
        except ResolveFlowError as exc:
            return settle.leave_unknown(execution, f"cannot read GitLab: {exc.message}")
        issues = gitlab.issues_created_since(action.target.project_id, started - CLOCK_SKEW)
        poster, _ = gitlab.current_user()
        found = find_marked_issue(issues, action.description, str(execution.id), poster)
        if found is None:
            return settle.leave_unknown(execution, "no issue with this execution's marker")
        state, detail = judge(action, found, "confirmed on GitLab by reconciliation")
        return settle.finish(
            execution, state, detail, result_ref=str(found.iid), result_url=found.url
        )


def judge(
    action: GitLabIssueCreateAction, issue: GitLabIssue, done: str
) -> tuple[ExecutionState, str]:
    """Sent when the issue carries every approved label and assignee; partial otherwise."""
    missing_labels = sorted(set(action.labels) - set(issue.labels))
    missing_people = sorted(
        person.name for person in action.assignees if person.id not in issue.assignee_ids
    )
    if not missing_labels and not missing_people:
        return ExecutionState.SENT, done
    parts = [
        f"labels {', '.join(missing_labels)}" if missing_labels else "",
        f"assignees {', '.join(missing_people)}" if missing_people else "",
    ]
    return ExecutionState.PARTIAL, f"{done}, but GitLab dropped {', '.join(p for p in parts if p)}"


def find_marked_issue(
    issues: list[GitLabIssue], approved: str, execution_id: str, poster_id: int | None
) -> GitLabIssue | None:
    """The issue whose description is exactly the approved description plus this execution's
    marker, opened by the account the executor writes as; a copy by anyone else does not count."""
    expected = body_with_marker(approved, execution_id).strip()
    marker = execution_marker(execution_id)
    for issue in issues:
        if (
            marker in issue.description
            and (poster_id is None or issue.author_id == poster_id)
            and issue.description.replace("\r\n", "\n").strip() == expected
        ):
            return issue
    return None
