"""What ``proposals show`` (and ``create`` and ``edit``) print of an action, kind by kind: the
fields a person approves, then its texts exactly as they will be written (issue 26: the email
kind had no rows of its own, and reading the labels it does not have crashed the command)."""

from __future__ import annotations

from resolveflow.gate.domain.actions import (
    AnyAction,
    EmailSendAction,
    GitHubIssueAction,
    GitHubIssueCreateAction,
    GitLabIssueCreateAction,
)

Rows = list[tuple[str, str]]


def _names(names: tuple[str, ...] | list[str]) -> str:
    return ", ".join(names) or "(none)"


def action_rows(action: AnyAction) -> Rows:
    """The fields of ``action`` as ``(name, value)`` lines, in the order a reviewer reads them."""
    if isinstance(action, GitHubIssueAction):
        return [("labels", _names(action.labels))]
    if isinstance(action, GitHubIssueCreateAction):
        return [
            ("title", action.title),
            ("labels", _names(action.labels)),
            ("assignees", _names(action.assignees)),
        ]
    if isinstance(action, GitLabIssueCreateAction):
        people = [f"{person.name} (id {person.id})" for person in action.assignees]
        return [
            ("project", f"{action.target.project} (id {action.target.project_id})"),
            ("title", action.title),
            ("labels", _names(action.labels)),
            ("assignees", _names(people)),
        ]
    return _email_rows(action)


def _email_rows(action: EmailSendAction) -> Rows:
    rows = [
        ("from", action.mailbox),
        ("to", _names(action.to)),
        ("cc", _names(action.cc)),
        ("bcc", _names(action.bcc)),
        ("subject", action.subject),
    ]
    if action.in_reply_to:
        rows.append(("in reply to", action.in_reply_to))
    attached = [
        f"{a.name} ({a.media_type}, {a.size} bytes, sha256 {a.sha256[:16]}…)"
        for a in action.attachments
    ]
    rows.append(("attachments", _names(attached)))
    return rows


def action_texts(action: AnyAction) -> list[tuple[str, str]]:
    """``(text, title)`` of each text the action writes, verbatim."""
    if isinstance(action, GitHubIssueAction):
        return (
            []
            if action.comment is None
            else [(action.comment, "comment, exactly as it will be posted")]
        )
    if isinstance(action, GitHubIssueCreateAction):
        return [(action.body, "issue body, exactly as it will be posted")]
    if isinstance(action, GitLabIssueCreateAction):
        return [(action.description, "issue description, exactly as it will be posted")]
    texts = [(action.text, "text, exactly as it will be sent")]
    if action.html is not None:
        texts.append((action.html, "HTML part (source), exactly as it will be sent"))
    return texts
