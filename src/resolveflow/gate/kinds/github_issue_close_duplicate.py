"""``github.issue_close_duplicate``: a notice comment, a grace period, then the close.

Three passes over one execution, each a claim of it:

1. No notice yet: the execution's lineage claims the issue (one close-as-duplicate in flight per
   issue, ``gate/store/duplicate_claims.py``), the original is checked (chains, circles), the
   notice posted with the hidden marker, and the execution goes back to the queue until the
   notice's time on GitHub plus the grace period (``Recorder.awaiting_grace``). Nothing waits in
   a process; a restart changes nothing; the notice is never posted twice (its id is recorded
   with the move).
2. A notice found by reconciliation (or posted by an earlier execution) but no wait scheduled:
   the wait is scheduled from that notice's ``created_at``.
3. Due: the issue is read again; any objection since the notice (``gate/domain/duplicates.py``),
   an issue closed meanwhile, or an original that may no longer be pointed to ends the execution
   partial with an audit event, nothing closed. Otherwise one close request, as a duplicate.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

from resolveflow.adapters.github.protocol import (
    GitHub,
    IntentNote,
    IssueComment,
    IssueData,
    IssueSuggestionData,
    PostedComment,
    RepoName,
)
from resolveflow.domain.records import Execution, ExecutionState
from resolveflow.domain.vocabulary import AttemptStep
from resolveflow.errors import (
    AlreadyExists,
    InvalidInput,
    InvalidTransition,
    PolicyViolation,
    ProviderError,
)
from resolveflow.gate.domain.actions import (
    ActionKind,
    AnyAction,
    GitHubIssueCloseDuplicateAction,
    body_with_marker,
    parse_action,
)
from resolveflow.gate.domain.duplicates import Objection, Said, find_objection, text_digest
from resolveflow.gate.domain.pace import PaceTarget
from resolveflow.gate.duplicate_checks import check_chain
from resolveflow.gate.kinds.base import Evidence, KindSpec, Prepared, Settled, Settler
from resolveflow.gate.kinds.github_issue import LABEL_CLOCK_SKEW, find_marked_comment
from resolveflow.gate.kinds.sending import begin, send_outcome
from resolveflow.gate.recorder import Recorder
from resolveflow.gate.store import duplicate_claims as claims

SPEC = KindSpec(
    kind=ActionKind.GITHUB_ISSUE_CLOSE_DUPLICATE,
    writes_with=("post_comment", "close_issue_as_duplicate"),
    steps=(AttemptStep.COMMENT, AttemptStep.CLOSE),
    marker="at the end of the notice comment, after a blank line",
    reconciliation=(
        "the notice: every page of the issue's comments, one written by the executor's account "
        "whose body is exactly the approved notice plus the marker (the grace period then runs "
        "from its created_at); the close: the issue's state and every page of its events, a "
        "'closed' event by that account after the close request started (sent as a GitHub "
        "suggestion: a close suggestion on the issue made since then)"
    ),
    partial=(
        "the notice was posted but the close was withdrawn (someone objected, the issue was "
        "closed meanwhile, the original may no longer be pointed to) or definitely refused"
    ),
    paced_as=PaceTarget.GITHUB,
)


def _due(action: GitHubIssueCloseDuplicateAction, notice_at: datetime) -> datetime:
    return notice_at + timedelta(hours=action.grace_hours)


class GitHubIssueCloseDuplicateExecutor:
    spec = SPEC

    def __init__(self, github: GitHub, record: Recorder) -> None:
        self.github = github
        self.record = record

    def step_with_claim(self, action: AnyAction) -> AttemptStep | None:
        return None  # the issue and the original are read before anything is written

    def send(self, prepared: Prepared) -> Execution:
        action = prepared.verified.action
        assert isinstance(action, GitHubIssueCloseDuplicateAction)
        repo = RepoName.parse(action.repository)
        execution = prepared.execution
        try:
            if execution.comment_id is None:
                return self._notice(prepared, action, repo)
            if execution.notice_at is None:
                return self._wait_from_found_notice(execution, prepared, action, repo)
            return self._close_unless_objected(prepared, action, repo)
        except ProviderError as exc:  # a read failed: nothing more was written
            return self.record.read_failed(execution, exc, "the issue")

    # --- pass 1: the notice -------------------------------------------------------------------

    def _notice(
        self, prepared: Prepared, action: GitHubIssueCloseDuplicateAction, repo: RepoName
    ) -> Execution:
        execution, token = prepared.execution, prepared.verified.token
        held = self._claim(execution, action)
        if held is not None:
            return self.record.refused(execution, held)
        if prepared.prior:
            earlier = self._earlier_notice(prepared, action, repo)
            if earlier is not None:
                return earlier
        try:
            check_chain(self.github, self.record.db, execution.tenant_id, action, token)
        except PolicyViolation as exc:
            return self.record.refused(execution, exc)
        issue = self.github.get_issue(repo, action.target.issue, token=token)
        if issue.state == "closed" or issue.is_pull_request:
            what = "a pull request" if issue.is_pull_request else "already closed"
            return self.record.refused(execution, PolicyViolation(f"the issue is {what}"))
        attempt = begin(
            self.record,
            execution,
            AttemptStep.COMMENT,
            prepared.verified.sent_with,
            paced_as=SPEC.paced_as,
        )
        if isinstance(attempt, Execution):
            return attempt
        body = body_with_marker(action.comment, str(execution.id))
        try:
            posted = self.github.post_comment(repo, action.target.issue, body, token=token)
        except (ProviderError, InvalidInput) as exc:
            return send_outcome(self.record, execution, attempt.id, exc)
        return self._await_grace(execution, attempt.id, action, issue, posted)

    def _claim(
        self, execution: Execution, action: GitHubIssueCloseDuplicateAction
    ) -> AlreadyExists | None:
        """This execution's lineage claims the issue before anything is posted, so that of two
        close-as-duplicates of one issue (a lineage older than the claims, two executors at once)
        only one posts a notice; the other is refused, naming the one that holds the issue."""
        repository, issue = action.repository, action.target.issue
        with self.record.db.tenant(execution.tenant_id) as conn:
            held = claims.take(conn, execution.tenant_id, execution.proposal_id, repository, issue)
        return None if held is None else claims.in_flight(repository, issue, held)

    def _earlier_notice(
        self, prepared: Prepared, action: GitHubIssueCloseDuplicateAction, repo: RepoName
    ) -> Execution | None:
        """An earlier execution of this lineage ended unknown or not sent after its notice may
        have left: if that notice is on the issue, the grace period runs from it (the same
        action) or this one is refused (another version was posted)."""
        execution, token = prepared.execution, prepared.verified.token
        comments = self.github.list_issue_comments(repo, action.target.issue, token=token)
        for prior in prepared.prior:
            earlier = parse_action(prior.action)
            if not isinstance(earlier, GitHubIssueCloseDuplicateAction):
                continue
            found = find_marked_comment(comments, earlier.comment, str(prior.id), poster=None)
            if found is None:
                continue
            if earlier != action:
                return self.record.refused(
                    execution,
                    InvalidTransition(
                        f"an earlier version (execution {prior.id}) posted its notice after all: "
                        f"{found.url}; propose again if another notice is wanted"
                    ),
                )
            issue = self.github.get_issue(repo, action.target.issue, token=token)
            return self._await_grace(execution, None, action, issue, found)
        return None

    def _await_grace(
        self,
        execution: Execution,
        attempt_id: UUID | None,
        action: GitHubIssueCloseDuplicateAction,
        issue: IssueData,
        notice: PostedComment | IssueComment,
    ) -> Execution:
        """Back to the queue until the grace period after ``notice`` (its time on GitHub) has
        passed, remembering the issue's title and body as they were then."""
        notice_at = notice.created_at or datetime.now(UTC)
        return self.record.awaiting_grace(
            execution,
            attempt_id,
            notice=(notice.id, notice.url),
            notice_at=notice_at,
            watch_digest=text_digest(issue.title, issue.body),
            due=_due(action, notice_at),
        )

    # --- pass 2: a notice found, no wait scheduled --------------------------------------------

    def _wait_from_found_notice(
        self,
        execution: Execution,
        prepared: Prepared,
        action: GitHubIssueCloseDuplicateAction,
        repo: RepoName,
    ) -> Execution:
        """Reconciliation found the notice after its answer was lost: the grace period runs from
        the notice's created_at on GitHub, never from now."""
        token = prepared.verified.token
        assert execution.comment_id is not None and execution.comment_url is not None
        comments = self.github.list_issue_comments(repo, action.target.issue, token=token)
        notice = next((c for c in comments if c.id == execution.comment_id), None)
        if notice is None:
            return self.record.withdrawn(
                execution,
                "notice posted, then deleted by someone: not closed",
                objection="the notice was deleted",
            )
        issue = self.github.get_issue(repo, action.target.issue, token=token)
        return self._await_grace(execution, None, action, issue, notice)

    # --- pass 3: due ----------------------------------------------------------------------------

    def _close_unless_objected(
        self, prepared: Prepared, action: GitHubIssueCloseDuplicateAction, repo: RepoName
    ) -> Execution:
        execution, token = prepared.execution, prepared.verified.token
        issue = self.github.get_issue(repo, action.target.issue, token=token)
        if issue.state == "closed":
            by = issue.closed_by or "someone"
            return self.record.withdrawn(
                execution,
                f"notice posted; nothing to do: the issue was already closed by {by} "
                f"({issue.state_reason or 'no reason given'})",
                closed_by=by,
            )
        objection = self._objection(execution, action, repo, issue, token)
        if objection is not None:
            return self.record.withdrawn(
                execution,
                f"notice posted; not closed: {objection.words}",
                objected_by=objection.who,
                how=objection.how,
            )
        try:
            original = check_chain(self.github, self.record.db, execution.tenant_id, action, token)
        except PolicyViolation as exc:
            return self.record.withdrawn(
                execution, f"notice posted; not closed: {exc.message}", refused=exc.message
            )
        attempt = begin(
            self.record,
            execution,
            AttemptStep.CLOSE,
            prepared.verified.sent_with,
            paced_as=SPEC.paced_as,
        )
        if isinstance(attempt, Execution):
            return attempt
        try:
            closed = self.github.close_issue_as_duplicate(
                repo,
                action.target.issue,
                original.issue_id,
                note=close_note(action),
                suggest=action.suggest,
                token=token,
            )
        except (ProviderError, InvalidInput) as exc:
            return send_outcome(self.record, execution, attempt.id, exc)
        return self.record.created(
            execution,
            attempt.id,
            ref=str(action.target.issue),
            url=closed.url,
            state=ExecutionState.SENT,
            detail=(
                f"suggested in GitHub: close as a duplicate of #{action.original}"
                if action.suggest
                else f"closed as a duplicate of #{action.original}"
            ),
        )

    def _objection(
        self,
        execution: Execution,
        action: GitHubIssueCloseDuplicateAction,
        repo: RepoName,
        issue: IssueData,
        token: str | None,
    ) -> Objection | None:
        assert execution.notice_at is not None and execution.comment_id is not None
        number = action.target.issue
        comments = self.github.list_issue_comments(repo, number, token=token)
        if not any(c.id == execution.comment_id for c in comments):
            return Objection("someone", "deleted the notice", None)
        events = self.github.list_issue_events(repo, number, token=token)
        on_issue = self.github.list_issue_reactions(repo, number, token=token)
        on_notice = self.github.list_comment_reactions(repo, execution.comment_id, token=token)
        return find_objection(
            bot=self.github.authenticated_login(token=token),
            notice_id=execution.comment_id,
            notice_at=execution.notice_at,
            comments=[Said(c.author, "comment", c.created_at, c.id) for c in comments],
            issue_reactions=[Said(r.user, r.content, r.created_at, r.id) for r in on_issue],
            notice_reactions=[Said(r.user, r.content, r.created_at, r.id) for r in on_notice],
            events=[Said(e.actor, e.event, e.created_at, e.id) for e in events],
            watched_digest=execution.watch_digest,
            current_digest=text_digest(issue.title, issue.body),
        )

    # --- reconciliation -------------------------------------------------------------------------

    def _close_suggested(
        self,
        repo: RepoName,
        action: GitHubIssueCloseDuplicateAction,
        token: str | None,
        since: datetime,
    ) -> bool:
        """Sent as a suggestion, the issue stays open: GitHub's suggestions made since the
        request started say whether it arrived (so it is not suggested twice)."""
        found = self.github.list_issue_suggestions(repo, action.target.issue, token=token)
        return _suggested_close(found, since)

    def reconcile(self, evidence: Evidence, settle: Settler) -> Settled | None:
        execution, action, token = evidence.execution, evidence.action, evidence.token
        assert isinstance(action, GitHubIssueCloseDuplicateAction)
        repo = RepoName.parse(action.repository)
        poster = self.github.authenticated_login(token=token) if evidence.check_author else None
        if execution.comment_id is None:
            comments = self.github.list_issue_comments(repo, action.target.issue, token=token)
            found = find_marked_comment(comments, action.comment, str(execution.id), poster)
            if found is None:
                return settle.leave_unknown(execution, "no notice with this execution's marker")
            # Back to the queue: its next claim schedules the wait from the notice's created_at.
            return settle.requeue(
                execution,
                "notice found on GitHub; the grace period runs from it",
                comment_id=found.id,
                comment_url=found.url,
            )
        started = evidence.first_started.get(AttemptStep.CLOSE)
        if started is None:
            return settle.requeue(execution, "notice posted; the close was not attempted yet")
        issue = self.github.get_issue(repo, action.target.issue, token=token)
        events = self.github.list_issue_events(repo, action.target.issue, token=token)
        since = started - LABEL_CLOCK_SKEW
        ours = [
            e
            for e in events
            if e.event == "closed"
            and e.created_at >= since
            and (poster is None or e.actor.lower() == poster.lower())
        ]
        if ours:
            return settle.finish(
                execution,
                ExecutionState.SENT,
                f"closed as a duplicate of #{action.original}: confirmed by reconciliation",
                result_ref=str(action.target.issue),
                result_url=issue.url,
            )
        if action.suggest and self._close_suggested(repo, action, token, since):
            return settle.finish(
                execution,
                ExecutionState.SENT,
                f"the close as a duplicate of #{action.original} is a suggestion in GitHub: "
                "confirmed by reconciliation",
                result_ref=str(action.target.issue),
                result_url=issue.url,
            )
        if issue.state == "closed":
            return settle.finish(
                execution,
                ExecutionState.PARTIAL,
                f"notice posted; not closed by us: closed by {issue.closed_by or 'someone'}",
            )
        # Open, and no close of ours in its history: the request never arrived. The next claim
        # reads every objection again before closing.
        return settle.requeue(execution, "the close did not reach GitHub; checking again")


def _suggested_close(found: list[IssueSuggestionData], since: datetime) -> bool:
    return any(s.action == "close_issue" and s.created_at >= since for s in found)


def close_note(action: GitHubIssueCloseDuplicateAction) -> IntentNote | None:
    """Why the close and how sure, when the proposal said (both, or nothing: GitHub's object
    form carries the rationale with its confidence)."""
    if action.rationale is None or action.confidence is None:
        return None
    return IntentNote(action.rationale, action.confidence.value)
