"""Edits: a new version of an action, built from the latest one and a person's changes."""

from __future__ import annotations

from dataclasses import dataclass

from resolveflow.domain.actions.github_issue import GitHubIssueAction
from resolveflow.domain.actions.github_issue_create import GitHubIssueCreateAction
from resolveflow.domain.actions.gitlab_issue_create import GitLabIssueCreateAction
from resolveflow.domain.actions.parsing import AnyAction, parse_action
from resolveflow.errors import InvalidInput


@dataclass(frozen=True)
class ActionChanges:
    """What a person changed; ``None`` keeps the field. An empty comment drops the comment."""

    comment: str | None = None
    labels: tuple[str, ...] | None = None
    title: str | None = None
    body: str | None = None
    assignees: tuple[str, ...] | None = None

    def texts(self) -> list[str]:
        """Every text in the change, for input checks at the edges."""
        parts = [self.comment, self.title, self.body, *(self.labels or ()), *(self.assignees or ())]
        return [part for part in parts if part is not None]


def revise(action: AnyAction, changes: ActionChanges) -> AnyAction:
    """The changed action, validated like a new one; a change the kind has no field for is an
    error rather than silently ignored."""
    match action:
        case GitHubIssueAction():
            if changes.title is not None or changes.body is not None or changes.assignees:
                raise InvalidInput("a comment on an issue has no title, body or assignees")
            comment = action.comment if changes.comment is None else changes.comment
            labels = action.labels if changes.labels is None else changes.labels
            data = {**action.canonical(), "comment": comment or None, "labels": list(labels)}
        case GitHubIssueCreateAction():
            if changes.comment is not None:
                raise InvalidInput("a new issue has a body, not a comment")
            data = {
                **action.canonical(),
                "title": action.title if changes.title is None else changes.title,
                "body": action.body if changes.body is None else changes.body,
                "labels": list(action.labels if changes.labels is None else changes.labels),
                "assignees": list(
                    action.assignees if changes.assignees is None else changes.assignees
                ),
            }
        case GitLabIssueCreateAction():
            # Labels and assignees were resolved from the tenant's configuration; an edit could
            # only bypass that, so they change by preparing the issue again.
            if changes.comment is not None or changes.labels is not None or changes.assignees:
                raise InvalidInput(
                    "a GitLab issue's title and description can be edited; prepare it again "
                    "(resolveflow issues prepare) to change labels or assignees"
                )
            data = {
                **action.canonical(),
                "title": action.title if changes.title is None else changes.title,
                "description": action.description if changes.body is None else changes.body,
            }
    return parse_action(data)
