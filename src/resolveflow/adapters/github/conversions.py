"""githubkit's validated response models -> the protocol's dataclasses.

Fields GitHub may send as null or leave out become the protocol's neutral values ("" for a body,
"ghost" for a deleted author, "NONE" for an unknown association, an empty tuple for no assignees).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from resolveflow.adapters.github.protocol import (
    CheckRunData,
    CreatedIssue,
    IssueComment,
    IssueData,
    IssueEvent,
    IssueSuggestionData,
    Reaction,
)

if TYPE_CHECKING:
    from githubkit_schemas.latest.models import CheckRun as GitHubCheckRun
    from githubkit_schemas.latest.models import Issue as GitHubIssue
    from githubkit_schemas.latest.models import IssueComment as GitHubIssueComment
    from githubkit_schemas.latest.models import IssueEvent as GitHubIssueEvent
    from githubkit_schemas.latest.models import IssueSuggestion as GitHubIssueSuggestion
    from githubkit_schemas.latest.models import Reaction as GitHubReaction
    from githubkit_schemas.latest.models import WorkflowRun as GitHubWorkflowRun

GHOST = "ghost"  # GitHub's name for a deleted account


def issue_comment(comment: GitHubIssueComment) -> IssueComment:
    return IssueComment(
        id=comment.id,
        body=comment.body if isinstance(comment.body, str) else "",
        author=comment.user.login if comment.user is not None else GHOST,
        url=comment.html_url,
        author_association=comment.author_association or "NONE",
        created_at=comment.created_at,
    )


def issue_event(event: GitHubIssueEvent) -> IssueEvent:
    """GitHub's generic issue event; a label object without a name counts as no label."""
    label = event.label.name if event.label else None
    return IssueEvent(
        id=event.id,
        event=event.event,
        actor=event.actor.login if event.actor is not None else GHOST,
        label=label or None,
        created_at=event.created_at,
    )


def issue_suggestion(item: GitHubIssueSuggestion) -> IssueSuggestionData:
    """A suggestion; a value that is not one name (a field's list) is kept as no label."""
    value = item.target_value if isinstance(item.target_value, str) else None
    return IssueSuggestionData(
        id=item.id,
        action=item.action,
        state=item.state,
        target_value=value,
        resolved_by=item.resolved_by,
        created_at=item.created_at,
        updated_at=item.updated_at,
    )


def issue_data(issue: GitHubIssue) -> IssueData:
    pull = issue.pull_request or None
    return IssueData(
        number=issue.number,
        title=issue.title,
        body=issue.body if isinstance(issue.body, str) else "",
        state=issue.state,
        author=issue.user.login if issue.user is not None else GHOST,
        author_association=issue.author_association or "NONE",
        labels=label_names(issue),
        created_at=issue.created_at,
        updated_at=issue.updated_at,
        closed_at=issue.closed_at,
        is_pull_request=pull is not None,
        url=issue.html_url,
        merged_at=(pull.merged_at or None) if pull is not None else None,
        assignees=assignee_logins(issue),
        state_reason=issue.state_reason or None,
        closed_by=issue.closed_by.login if issue.closed_by else None,
        issue_id=issue.id,
    )


def reaction(item: GitHubReaction) -> Reaction:
    return Reaction(
        id=item.id,
        content=item.content,
        user=item.user.login if item.user is not None else GHOST,
        created_at=item.created_at,
    )


def created_issue(issue: GitHubIssue) -> CreatedIssue:
    return CreatedIssue(
        number=issue.number,
        url=issue.html_url,
        body=issue.body if isinstance(issue.body, str) else "",
        author=issue.user.login if issue.user is not None else GHOST,
        labels=label_names(issue),
        assignees=assignee_logins(issue),
    )


def label_names(issue: GitHubIssue) -> tuple[str, ...]:
    """Labels arrive as objects (or, in old payloads, bare names); nameless ones are dropped."""
    labels = (label if isinstance(label, str) else label.name for label in issue.labels)
    return tuple(name for name in labels if isinstance(name, str) and name)


def assignee_logins(issue: GitHubIssue) -> tuple[str, ...]:
    return tuple(user.login for user in issue.assignees or ())


def check_run_data(run: GitHubCheckRun) -> CheckRunData:
    """Summary: the output's title and summary (either may be missing), joined."""
    parts = [part for part in (run.output.title, run.output.summary) if part]
    return CheckRunData(
        id=run.id,
        name=run.name,
        status=run.status,
        conclusion=run.conclusion,
        url=run.html_url or run.details_url or run.url,
        summary="\n\n".join(dict.fromkeys(parts)) or None,
        head_sha=run.head_sha,
        kind="check_run",
    )


def workflow_run_data(run: GitHubWorkflowRun) -> CheckRunData:
    return CheckRunData(
        id=run.id,
        name=run.name or run.display_title,
        status=run.status or "unknown",
        conclusion=run.conclusion,
        url=run.html_url,
        summary=run.display_title,
        head_sha=run.head_sha,
        kind="workflow_run",
    )
