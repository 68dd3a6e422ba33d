"""``github.issue``: a comment, then labels, on one existing issue or pull request."""

from __future__ import annotations

from resolveflow.adapters.github.protocol import GitHub, IssueComment, RepoName
from resolveflow.domain.actions import (
    ActionKind,
    AnyAction,
    GitHubIssueAction,
    body_with_marker,
    execution_marker,
)
from resolveflow.domain.policy import check_labels_exist
from resolveflow.domain.records import Execution, ExecutionState
from resolveflow.domain.vocabulary import AttemptStep
from resolveflow.errors import InvalidInput, LeaseLost, PolicyViolation, ProviderError
from resolveflow.execution.kinds.base import Evidence, KindSpec, Prepared, Settled, Settler
from resolveflow.execution.kinds.sending import send_outcome
from resolveflow.execution.outcomes import Recorder

SPEC = KindSpec(
    kind=ActionKind.GITHUB_ISSUE,
    writes_with=("post_comment", "add_labels"),
    steps=(AttemptStep.COMMENT, AttemptStep.LABELS),
    marker="at the end of the comment body, after a blank line",
    reconciliation=(
        "every page of the issue's comments: one written by the executor's account whose body is "
        "exactly the approved comment plus the marker; then the issue's labels"
    ),
    partial="the comment was posted but the labels were definitely refused",
)


class GitHubIssueExecutor:
    spec = SPEC

    def __init__(self, github: GitHub, record: Recorder) -> None:
        self.github = github
        self.record = record

    def step_with_claim(self, action: AnyAction) -> AttemptStep | None:
        # With labels, the repository's labels are read first; the attempt waits for that read.
        assert isinstance(action, GitHubIssueAction)
        return AttemptStep.COMMENT if action.comment is not None and not action.labels else None

    def send(self, prepared: Prepared) -> Execution:
        execution, verified = prepared.execution, prepared.verified
        action = verified.action
        assert isinstance(action, GitHubIssueAction)
        repo = RepoName.parse(action.target.repository)
        if action.labels and not execution.labels_done:
            try:
                known = self.github.list_repository_labels(repo, token=verified.token)
            except ProviderError as exc:
                return self.record.read_failed(execution, exc)
            except InvalidInput as exc:
                return self.record.refused(execution, exc)
            try:
                check_labels_exist(action, known)
            except PolicyViolation as exc:
                return self.record.refused(execution, exc)
        if action.comment is not None and execution.comment_id is None:
            after = self._send_comment(prepared, action, repo)
            if after.state is not ExecutionState.SENDING or after.comment_id is None:
                return after
            execution = after
        if action.labels and not execution.labels_done:
            return self._send_labels(execution, prepared, action, repo)
        return self.record.finished(execution, ExecutionState.SENT, "sent")

    def _send_comment(
        self, prepared: Prepared, action: GitHubIssueAction, repo: RepoName
    ) -> Execution:
        execution, verified = prepared.execution, prepared.verified
        assert action.comment is not None
        attempt_id = prepared.attempt_id
        if attempt_id is None:
            try:
                attempt_id = self.record.attempt_started(
                    execution, AttemptStep.COMMENT, verified.credential
                )
            except LeaseLost:
                return execution
        body = body_with_marker(action.comment, str(execution.id))
        try:
            posted = self.github.post_comment(repo, action.target.issue, body, token=verified.token)
        except (ProviderError, InvalidInput) as exc:
            return send_outcome(self.record, execution, attempt_id, exc)
        return self.record.comment_posted(
            execution, attempt_id, posted.id, posted.url, final=not action.labels
        )

    def _send_labels(
        self, execution: Execution, prepared: Prepared, action: GitHubIssueAction, repo: RepoName
    ) -> Execution:
        try:
            attempt_id = self.record.attempt_started(
                execution, AttemptStep.LABELS, prepared.verified.credential
            )
        except LeaseLost:
            return execution
        try:
            self.github.add_labels(
                repo, action.target.issue, list(action.labels), token=prepared.verified.token
            )
        except (ProviderError, InvalidInput) as exc:
            return send_outcome(self.record, execution, attempt_id, exc)
        return self.record.labels_applied(execution, attempt_id)

    def reconcile(self, evidence: Evidence, settle: Settler) -> Settled:
        execution, action, token = evidence.execution, evidence.action, evidence.token
        assert isinstance(action, GitHubIssueAction)
        repo = RepoName.parse(action.target.repository)
        comment_id, comment_url = execution.comment_id, execution.comment_url
        if action.comment is not None and comment_id is None:
            comments = self.github.list_issue_comments(repo, action.target.issue, token=token)
            poster = self.github.authenticated_login(token=token)
            found = find_marked_comment(comments, action.comment, str(execution.id), poster)
            if found is None:
                return settle.leave_unknown(execution, "no comment with this execution's marker")
            comment_id, comment_url = found.id, found.url
        if action.labels and not execution.labels_done:
            if AttemptStep.LABELS not in evidence.attempted:
                return settle.requeue(
                    execution,
                    "comment found; labels not yet applied",
                    comment_id=comment_id,
                    comment_url=comment_url,
                )
            present = set(self.github.list_issue_labels(repo, action.target.issue, token=token))
            if not set(action.labels) <= present:
                return settle.leave_unknown(
                    execution,
                    "comment found but labels are missing",
                    comment_id=comment_id,
                    comment_url=comment_url,
                )
        return settle.finish(
            execution,
            ExecutionState.SENT,
            "confirmed on GitHub by reconciliation",
            comment_id=comment_id,
            comment_url=comment_url,
            labels_done=True,
        )


def find_marked_comment(
    comments: list[IssueComment], approved_comment: str, execution_id: str, poster: str
) -> IssueComment | None:
    """The comment carrying this execution's marker, with exactly the approved text, written by
    the account the executor posts as.

    Exact body and author mean that nobody else, quoting the marker or even copying the whole
    comment from their own account, can make an undelivered action look delivered.
    """
    expected = body_with_marker(approved_comment, execution_id).strip()
    marker = execution_marker(execution_id)
    for comment in comments:
        if (
            marker in comment.body
            and comment.author.lower() == poster.lower()
            and comment.body.replace("\r\n", "\n").strip() == expected
        ):
            return comment
    return None
