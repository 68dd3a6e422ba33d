"""``github.issue_create``: one new issue, created by one request."""

from __future__ import annotations

from datetime import timedelta

from resolveflow.adapters.github.protocol import GitHub, IssueData, RepoName
from resolveflow.domain.records import Execution, ExecutionState
from resolveflow.domain.vocabulary import AttemptStep
from resolveflow.errors import (
    InvalidInput,
    PolicyViolation,
    ProviderError,
)
from resolveflow.gate.domain.actions import (
    ActionKind,
    AnyAction,
    GitHubIssueCreateAction,
    body_with_marker,
    execution_marker,
)
from resolveflow.gate.domain.pace import PaceTarget
from resolveflow.gate.domain.policy import check_labels_exist
from resolveflow.gate.kinds.base import Evidence, KindSpec, Prepared, Settled, Settler
from resolveflow.gate.kinds.sending import begin, opened_earlier, send_outcome
from resolveflow.gate.recorder import Recorder

# GitHub's clock and ours differ a little; the exact body and marker make a wider window harmless.
CLOCK_SKEW = timedelta(minutes=10)

SPEC = KindSpec(
    kind=ActionKind.GITHUB_ISSUE_CREATE,
    writes_with=("create_issue",),
    steps=(AttemptStep.CREATE,),
    marker="at the end of the issue body, after a blank line",
    reconciliation=(
        "the repository's issues created since the first attempt started (less 10 minutes of "
        "clock skew), every page, newest first, with `since`: one opened by the executor's "
        "account whose body is exactly the approved body plus the marker"
    ),
    partial=(
        "the issue was created but GitHub dropped some labels or assignees (it does so silently "
        "when the account lacks push access)"
    ),
    paced_as=PaceTarget.GITHUB,
)


class GitHubIssueCreateExecutor:
    spec = SPEC

    def __init__(self, github: GitHub, record: Recorder) -> None:
        self.github = github
        self.record = record

    def step_with_claim(self, action: AnyAction) -> AttemptStep | None:
        assert isinstance(action, GitHubIssueCreateAction)
        return None if action.labels else AttemptStep.CREATE

    def send(self, prepared: Prepared) -> Execution:
        execution, verified = prepared.execution, prepared.verified
        action = verified.action
        assert isinstance(action, GitHubIssueCreateAction)
        repo = RepoName.parse(action.target.repository)
        if action.labels:
            try:
                check_labels_exist(
                    action, self.github.list_repository_labels(repo, token=verified.token)
                )
            except ProviderError as exc:
                return self.record.read_failed(execution, exc)
            except (InvalidInput, PolicyViolation) as exc:
                return self.record.refused(execution, exc)
        if prepared.prior:
            earlier = self._look_for_earlier(prepared, action, repo)
            if earlier is not None:
                return earlier
        attempt = begin(
            self.record,
            execution,
            AttemptStep.CREATE,
            verified.sent_with,
            prepared.attempt,
            paced_as=SPEC.paced_as,
        )
        if isinstance(attempt, Execution):
            return attempt
        try:
            created = self.github.create_issue(
                repo,
                title=action.title,
                body=body_with_marker(action.body, str(execution.id)),
                labels=list(action.labels),
                assignees=list(action.assignees),
                token=verified.token,
            )
        except (ProviderError, InvalidInput) as exc:
            return send_outcome(self.record, execution, attempt.id, exc)
        state, detail = judge(action, created.labels, created.assignees, "issue created")
        return self.record.created(
            execution,
            attempt.id,
            ref=str(created.number),
            url=created.url,
            state=state,
            detail=detail,
        )

    def _look_for_earlier(
        self, prepared: Prepared, action: GitHubIssueCreateAction, repo: RepoName
    ) -> Execution | None:
        """An earlier execution of this digest or lineage may have opened the issue after all:
        look among the issues created since its first attempt; None when none did."""
        execution = prepared.execution
        since = min(prior.first_started for prior in prepared.prior) - CLOCK_SKEW
        try:
            issues = self.github.list_issues_created_since(
                repo, since, token=prepared.verified.token
            )
        except ProviderError as exc:
            return self.record.read_failed(execution, exc)

        def opened_by(earlier: AnyAction, execution_id: str) -> tuple[str, str] | None:
            if not isinstance(earlier, GitHubIssueCreateAction):
                return None
            found = find_marked_issue(issues, earlier.body, execution_id, poster=None)
            return None if found is None else (str(found.number), found.url)

        return opened_earlier(self.record, prepared, action, opened_by)

    def reconcile(self, evidence: Evidence, settle: Settler) -> Settled | None:
        execution, action, token = evidence.execution, evidence.action, evidence.token
        assert isinstance(action, GitHubIssueCreateAction)
        started = evidence.first_started.get(AttemptStep.CREATE)
        if started is None:
            return settle.requeue(execution, "no request had left; returned to the queue")
        repo = RepoName.parse(action.target.repository)
        issues = self.github.list_issues_created_since(repo, started - CLOCK_SKEW, token=token)
        poster = self.github.authenticated_login(token=token) if evidence.check_author else None
        found = find_marked_issue(issues, action.body, str(execution.id), poster)
        if found is None:
            return settle.leave_unknown(execution, "no issue with this execution's marker")
        state, detail = judge(
            action, found.labels, found.assignees, "confirmed on GitHub by reconciliation"
        )
        return settle.finish(
            execution, state, detail, result_ref=str(found.number), result_url=found.url
        )


def judge(
    action: GitHubIssueCreateAction,
    labels: tuple[str, ...],
    assignees: tuple[str, ...],
    done: str,
) -> tuple[ExecutionState, str]:
    """Sent when the issue carries every approved label and assignee; partial otherwise."""
    missing_labels = sorted(set(action.labels) - set(labels))
    missing_people = sorted(set(action.assignees) - {login.lower() for login in assignees})
    if not missing_labels and not missing_people:
        return ExecutionState.SENT, done
    dropped = ", ".join(
        part
        for part in (
            f"labels {', '.join(missing_labels)}" if missing_labels else "",
            f"assignees {', '.join(missing_people)}" if missing_people else "",
        )
        if part
    )
    return ExecutionState.PARTIAL, f"{done}, but GitHub dropped {dropped}"


def find_marked_issue(
    issues: list[IssueData], approved_body: str, execution_id: str, poster: str | None
) -> IssueData | None:
    """The issue whose body is exactly the approved body plus this execution's marker, opened by
    the account the executor writes as; a stranger copying the text does not count."""
    expected = body_with_marker(approved_body, execution_id).strip()
    marker = execution_marker(execution_id)
    for issue in issues:
        if (
            not issue.is_pull_request
            and marker in issue.body
            and (poster is None or issue.author.lower() == poster.lower())
            and issue.body.replace("\r\n", "\n").strip() == expected
        ):
            return issue
    return None
