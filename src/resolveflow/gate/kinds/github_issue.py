"""``github.issue``: a comment, then labels, on one existing issue or pull request."""

from __future__ import annotations

from datetime import datetime, timedelta

from resolveflow.adapters.github.protocol import (
    GitHub,
    IntentNote,
    IssueComment,
    IssueEvent,
    LabelWrite,
    RepoName,
)
from resolveflow.domain.records import Execution, ExecutionState
from resolveflow.domain.vocabulary import AttemptStep
from resolveflow.errors import (
    InvalidInput,
    InvalidTransition,
    PolicyViolation,
    ProviderError,
    ProviderRejected,
)
from resolveflow.gate.domain.actions import (
    ActionKind,
    AnyAction,
    GitHubIssueAction,
    body_with_marker,
    execution_marker,
    parse_action,
)
from resolveflow.gate.domain.pace import PaceTarget
from resolveflow.gate.domain.policy import check_labels_exist
from resolveflow.gate.kinds.base import Evidence, KindSpec, Prepared, Settled, Settler
from resolveflow.gate.kinds.sending import begin, send_outcome
from resolveflow.gate.recorder import Recorder

# The suggestions endpoint answers these where the feature is off or unknown (GitHub's docs).
NO_SUGGESTIONS = frozenset({404, 410, 422})
STALE_READ = 412  # Precondition Failed: the issue changed after the read the write was built on

# GitHub's clock and ours differ a little.
LABEL_CLOCK_SKEW = timedelta(minutes=2)

SPEC = KindSpec(
    kind=ActionKind.GITHUB_ISSUE,
    writes_with=("post_comment", "set_issue_labels"),
    steps=(AttemptStep.COMMENT, AttemptStep.LABELS),
    marker="at the end of the comment body, after a blank line",
    reconciliation=(
        "every page of the issue's comments: one written by the executor's account whose body is "
        "exactly the approved comment plus the marker; then every page of the issue's events: "
        "each label added by that account after the labels request started (or already there); "
        "labels sent as GitHub suggestions: the issue's suggestions made since that request"
    ),
    partial="the comment was posted but the labels were definitely refused",
    paced_as=PaceTarget.GITHUB,
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
        if action.comment is not None and execution.comment_id is None and prepared.prior:
            execution = self._look_for_earlier(prepared, action, repo)
            if execution.state is not ExecutionState.SENDING:
                return execution
        if action.comment is not None and execution.comment_id is None:
            execution = self._send_comment(prepared, action, repo)
            if execution.state is not ExecutionState.SENDING or execution.comment_id is None:
                return execution
        if action.labels and not execution.labels_done:
            return self._send_labels(execution, prepared, action, repo)
        return self.record.finished(execution, ExecutionState.SENT, "sent")

    def _look_for_earlier(
        self, prepared: Prepared, action: GitHubIssueAction, repo: RepoName
    ) -> Execution:
        """An earlier execution of this digest or lineage ended unknown or not sent after its
        request may have left; if its comment is on the issue, do not post another.

        Marker and exact text decide, not the author: an earlier execution's id appears nowhere
        outside this tenant's records unless that execution posted it.
        """
        execution = prepared.execution
        try:
            comments = self.github.list_issue_comments(
                repo, action.target.issue, token=prepared.verified.token
            )
        except ProviderError as exc:
            return self.record.read_failed(execution, exc)
        for prior in prepared.prior:
            earlier = parse_action(prior.action)
            if not isinstance(earlier, GitHubIssueAction) or earlier.comment is None:
                continue
            found = find_marked_comment(comments, earlier.comment, str(prior.id), poster=None)
            if found is None:
                continue
            if earlier != action:  # another version of it was posted
                return self.record.refused(
                    execution,
                    InvalidTransition(
                        f"an earlier version (execution {prior.id}) was posted after all: "
                        f"{found.url}; propose again if another comment is wanted"
                    ),
                )
            return self.record.delivered_earlier(
                execution, prior.id, final=not action.labels, comment=(found.id, found.url)
            )
        return execution

    def _send_comment(
        self, prepared: Prepared, action: GitHubIssueAction, repo: RepoName
    ) -> Execution:
        execution, verified = prepared.execution, prepared.verified
        assert action.comment is not None
        attempt = begin(
            self.record,
            execution,
            AttemptStep.COMMENT,
            verified.sent_with,
            prepared.attempt,
            paced_as=SPEC.paced_as,
        )
        if isinstance(attempt, Execution):
            return attempt
        body = body_with_marker(action.comment, str(execution.id))
        try:
            posted = self.github.post_comment(repo, action.target.issue, body, token=verified.token)
        except (ProviderError, InvalidInput) as exc:
            return send_outcome(self.record, execution, attempt.id, exc)
        return self.record.comment_posted(
            execution, attempt.id, posted.id, posted.url, final=not action.labels
        )

    def _send_labels(
        self, execution: Execution, prepared: Prepared, action: GitHubIssueAction, repo: RepoName
    ) -> Execution:
        attempt = begin(
            self.record,
            execution,
            AttemptStep.LABELS,
            prepared.verified.sent_with,
            paced_as=SPEC.paced_as,
        )
        if isinstance(attempt, Execution):
            return attempt
        try:
            self._write_labels(repo, action, prepared.verified.token)
        except (ProviderError, InvalidInput) as exc:
            return send_outcome(self.record, execution, attempt.id, exc)
        return self.record.labels_applied(execution, attempt.id)

    def _write_labels(self, repo: RepoName, action: GitHubIssueAction, token: str | None) -> None:
        """The issue update replaces the whole label set, so it carries the labels the issue has
        now (read just before it: a label a maintainer added meanwhile stays, one they removed
        is not put back unless proposed) plus ours, with their notes. The read's ``ETag`` goes
        as ``If-Match``: where the forge honours it, a label changed between the read and the
        write gets a 412 (nothing written) and the set is read and sent once more."""
        # Sent as suggestions: one GitHub already holds pending (an earlier attempt's whose
        # answer was lost) is not suggested a second time.
        waiting = self._pending(repo, action, token) if action.suggest else frozenset()
        for last in (False, True):
            seen = self.github.read_issue_labels(repo, action.target.issue, token=token)
            writes = label_writes(seen.labels, action, waiting)
            if writes is None:  # every label is on the issue already: nothing to write
                return
            try:
                self.github.set_issue_labels(
                    repo, action.target.issue, writes, if_match=seen.etag, token=token
                )
                return
            except ProviderRejected as exc:
                if exc.status != STALE_READ or last:
                    raise

    def _suggested(
        self, repo: RepoName, action: GitHubIssueAction, token: str | None, since: datetime | None
    ) -> frozenset[str]:
        """The labels (lower case) GitHub holds as suggestions on the issue: made since
        ``since``, in any state; or, without it, those still pending."""
        found = self.github.list_issue_suggestions(repo, action.target.issue, token=token)
        return frozenset(
            s.target_value.lower()
            for s in found
            if s.action == "add_label"
            and s.target_value
            and (s.created_at >= since if since is not None else s.state == "pending")
        )

    def _pending(
        self, repo: RepoName, action: GitHubIssueAction, token: str | None
    ) -> frozenset[str]:
        """The labels pending as suggestions; none where the forge has no suggestions to list
        (the feature off, an older server): the write itself says what it makes of ``suggest``."""
        try:
            return self._suggested(repo, action, token, None)
        except ProviderRejected as exc:
            if exc.status not in NO_SUGGESTIONS:
                raise
            return frozenset()

    def _unconfirmed_labels(
        self, evidence: Evidence, action: GitHubIssueAction, repo: RepoName
    ) -> list[str]:
        """Labels carry no marker: their presence proves nothing about our request. The issue's
        events say who added each label and when; sent as suggestions, the issue's suggestions
        made since the attempt started say it (accepted, dismissed or still pending), so a
        request that reached GitHub is not suggested twice."""
        started = evidence.first_started.get(AttemptStep.LABELS)
        if started is None:
            return list(action.labels)
        token = evidence.token
        since = started - LABEL_CLOCK_SKEW
        labels = list(action.labels)
        if action.suggest:
            suggested = self._suggested(repo, action, token, since)
            labels = [label for label in labels if label.lower() not in suggested]
            if not labels:
                return []
        events = self.github.list_issue_events(repo, action.target.issue, token=token)
        poster = self.github.authenticated_login(token=token) if evidence.check_author else None
        return [label for label in labels if not _labelled_by(events, label, poster, since)]

    def reconcile(self, evidence: Evidence, settle: Settler) -> Settled | None:
        execution, action, token = evidence.execution, evidence.action, evidence.token
        assert isinstance(action, GitHubIssueAction)
        repo = RepoName.parse(action.target.repository)
        comment_id, comment_url = execution.comment_id, execution.comment_url
        if action.comment is not None and comment_id is None:
            comments = self.github.list_issue_comments(repo, action.target.issue, token=token)
            poster = self.github.authenticated_login(token=token) if evidence.check_author else None
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
            unconfirmed = self._unconfirmed_labels(evidence, action, repo)
            if unconfirmed:
                # Unlike a comment, adding a label twice changes nothing: the labels step goes
                # back to the queue (its request is over: the deadline passed) and is sent again.
                return settle.requeue(
                    execution,
                    "comment found; labels not confirmed by the issue's history "
                    f"({', '.join(unconfirmed)}): adding them again",
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


def label_writes(
    on_issue: tuple[str, ...], action: GitHubIssueAction, waiting: frozenset[str] = frozenset()
) -> list[LabelWrite] | None:
    """The whole set to write: the issue's labels as they are, then each proposed label it lacks
    with its note (and ``suggest``), less those ``waiting`` as pending suggestions (lower case);
    None when it lacks none. Label names are case-insensitive on GitHub."""
    present = {name.lower() for name in on_issue} | waiting
    ours = []
    for label in action.labels:
        if label.lower() in present:
            continue
        note = action.note_for(label)
        intent = None if note is None else IntentNote(note.rationale, note.confidence.value)
        ours.append(LabelWrite(label, intent, action.suggest))
    if not ours:
        return None
    return [*(LabelWrite(name) for name in on_issue), *ours]


def _labelled_by(events: list[IssueEvent], label: str, poster: str | None, since: datetime) -> str:
    """How the issue's history explains ``label``: "ours" (labelled by the executor's account
    after its attempt started), "before" (already on the issue before the attempt: adding it
    changed nothing), or "" (not explained)."""
    last = None
    for event in events:
        if event.label == label and event.event in {"labeled", "unlabeled"}:
            last = event
    if last is None or last.event != "labeled":
        return ""
    if last.created_at >= since:
        return "ours" if poster is None or last.actor.lower() == poster.lower() else ""
    return "before"


def find_marked_comment(
    comments: list[IssueComment], approved_comment: str, execution_id: str, poster: str | None
) -> IssueComment | None:
    """The comment carrying this execution's marker, with exactly the approved text, written by
    the account the executor posts as (``poster``; None when that account is no longer known:
    then marker and exact text alone decide).

    Exact body and author mean that nobody else, quoting the marker or even copying the whole
    comment from their own account, can make an undelivered action look delivered.
    """
    expected = body_with_marker(approved_comment, execution_id).strip()
    marker = execution_marker(execution_id)
    for comment in comments:
        if (
            marker in comment.body
            and (poster is None or comment.author.lower() == poster.lower())
            and comment.body.replace("\r\n", "\n").strip() == expected
        ):
            return comment
    return None
