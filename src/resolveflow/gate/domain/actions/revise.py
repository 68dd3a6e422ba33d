"""Edits: a new version of an action, built from the latest one and a person's changes."""

from __future__ import annotations

from dataclasses import dataclass

from resolveflow.errors import InvalidInput
from resolveflow.gate.domain.actions.email_send import EmailSendAction
from resolveflow.gate.domain.actions.github_issue import GitHubIssueAction
from resolveflow.gate.domain.actions.github_issue_close_duplicate import (
    GitHubIssueCloseDuplicateAction,
)
from resolveflow.gate.domain.actions.github_issue_create import GitHubIssueCreateAction
from resolveflow.gate.domain.actions.gitlab_issue_create import GitLabIssueCreateAction
from resolveflow.gate.domain.actions.intent import notes_kept
from resolveflow.gate.domain.actions.parsing import AnyAction, parse_action


@dataclass(frozen=True)
class ActionChanges:
    """What a person changed; ``None`` keeps the field. An empty comment drops the comment."""

    comment: str | None = None
    labels: tuple[str, ...] | None = None
    title: str | None = None
    body: str | None = None
    assignees: tuple[str, ...] | None = None
    # email.send: recipients replace the whole list (``()`` empties Cc or Bcc); an empty HTML
    # part drops it
    to: tuple[str, ...] | None = None
    cc: tuple[str, ...] | None = None
    bcc: tuple[str, ...] | None = None
    subject: str | None = None
    text: str | None = None
    html: str | None = None

    def texts(self) -> list[str]:
        """Every text in the change, for input checks at the edges."""
        parts = [self.comment, self.title, self.body, *(self.labels or ()), *(self.assignees or ())]
        parts += [self.subject, self.text, self.html]
        parts += [*(self.to or ()), *(self.cc or ()), *(self.bcc or ())]
        return [part for part in parts if part is not None]

    @classmethod
    def for_email(cls, action: EmailSendAction) -> ActionChanges:
        """The changes that turn any version of a message into ``action`` (a new draft version
        becoming the proposal's next version)."""
        return cls(
            to=action.to,
            cc=action.cc,
            bcc=action.bcc,
            subject=action.subject,
            text=action.text,
            html=action.html or "",
        )

    def touches_email(self) -> bool:
        fields = (self.to, self.cc, self.bcc, self.subject, self.text, self.html)
        return any(value is not None for value in fields)

    def touches_issue(self) -> bool:
        fields = (self.comment, self.labels, self.title, self.body, self.assignees)
        return any(value is not None for value in fields)


def revise(action: AnyAction, changes: ActionChanges) -> AnyAction:
    """The changed action, validated like a new one; a change the kind has no field for is an
    error rather than silently ignored."""
    if not isinstance(action, EmailSendAction) and changes.touches_email():
        raise InvalidInput(
            "only an email has recipients, a subject, a text or an HTML part; "
            "no recipients or mail fields can be set on an issue"
        )
    match action:
        case GitHubIssueAction():
            if changes.title is not None or changes.body is not None or changes.assignees:
                raise InvalidInput("a comment on an issue has no title, body or assignees")
            comment = action.comment if changes.comment is None else changes.comment
            labels = action.labels if changes.labels is None else changes.labels
            data = {
                **action.canonical(),
                "comment": comment or None,
                "labels": list(labels),
                "notes": notes_kept(action.notes, tuple(labels)),
            }
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
        case GitHubIssueCloseDuplicateAction():
            # The notice is the one text a person writes; the issue, the original and the grace
            # period are what was proposed (propose again to change them).
            if (
                changes.labels is not None
                or changes.title is not None
                or changes.body is not None
                or changes.assignees
            ):
                raise InvalidInput(
                    "a close-as-duplicate's notice comment can be edited; propose again to "
                    "change the issue, the original or the grace period"
                )
            comment = action.comment if changes.comment is None else changes.comment
            data = {**action.canonical(), "comment": comment}
        case EmailSendAction():
            data = _revised_email(action, changes)
    return parse_action(data)


def _revised_email(action: EmailSendAction, changes: ActionChanges) -> dict[str, object]:
    if changes.touches_issue():
        raise InvalidInput(
            "an email has recipients (to, cc, bcc), a subject, a text and an HTML part; "
            "not a comment, labels, a title, a body or assignees"
        )

    def pick(new: tuple[str, ...] | None, old: tuple[str, ...]) -> list[str]:
        return list(old if new is None else new)

    html = action.html if changes.html is None else (changes.html or None)
    return {
        **action.canonical(),
        "to": pick(changes.to, action.to),
        "cc": pick(changes.cc, action.cc),
        "bcc": pick(changes.bcc, action.bcc),
        "subject": action.subject if changes.subject is None else changes.subject,
        "text": action.text if changes.text is None else changes.text,
        "html": html,
    }
