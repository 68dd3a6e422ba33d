"""What ``proposals show`` (and ``create`` and ``edit``) print of an action, kind by kind: the
fields a person approves, then its texts exactly as they will be (or were) written (issue 26: the
email kind had no rows of its own, and reading the labels it does not have crashed the command)."""

from __future__ import annotations

from enum import Enum

from resolveflow.domain.vocabulary import Decision, ExecutionState
from resolveflow.gate.domain.actions import (
    AnyAction,
    EmailSendAction,
    GitHubIssueAction,
    GitHubIssueCloseDuplicateAction,
    GitHubIssueCreateAction,
    GitLabIssueCreateAction,
)
from resolveflow.gate.domain.actions.github_issue_close_duplicate import grace_words

Rows = list[tuple[str, str]]


def _names(names: tuple[str, ...] | list[str]) -> str:
    return ", ".join(names) or "(none)"


def action_rows(action: AnyAction) -> Rows:
    """The fields of ``action`` as ``(name, value)`` lines, in the order a reviewer reads them."""
    if isinstance(action, GitHubIssueAction):
        suggest = " (as GitHub suggestions)" if action.suggest and action.labels else ""
        rows = [("labels", _names(action.labels) + suggest)]
        return rows + [
            (f"why {note.label}", f"{note.rationale} ({note.confidence.value})")
            for note in action.notes
        ]
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
    if isinstance(action, GitHubIssueCloseDuplicateAction):
        return [
            ("closes", f"{action.repository}#{action.target.issue} as a duplicate"),
            ("original", f"{action.repository}#{action.original}"),
            (
                "grace period",
                f"{grace_words(action.grace_hours)} after the notice, unless someone objects "
                "(a comment, a thumbs-down, an edit or a reopen by anyone else)",
            ),
            *_close_intent(action),
        ]
    return _email_rows(action)


def _close_intent(action: GitHubIssueCloseDuplicateAction) -> Rows:
    rows = []
    if action.rationale is not None:
        sure = action.confidence.value if action.confidence is not None else "no confidence"
        rows.append(("why", f"{action.rationale} ({sure})"))
    if action.suggest:
        rows.append(("sent", "as a GitHub suggestion a maintainer accepts or dismisses there"))
    return rows


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


POSTED, SENT = "posted", "sent"


class Fate(Enum):
    """How a text shown is titled, by what became of it."""

    WILL = "exactly as it will be {verb}"
    DONE = "as it was {verb}"
    NOT_DONE = "as approved; it was not {verb}"
    MAYBE = "exactly as approved; it may have been {verb}"
    REJECTED = "as proposed; rejected, never {verb}"
    SUPERSEDED = "as proposed in this version; a later version replaces it"

    def title(self, what: str, verb: str) -> str:
        return f"{what}, {self.value.format(verb=verb)}"


def fate(decision: str | None, execution_state: str | None, *, superseded: bool = False) -> Fate:
    """What became of a proposal's texts, for the titles above them: a text already written is
    not one that "will be" (issue 29)."""
    if decision == Decision.REJECTED.value:
        return Fate.REJECTED
    if execution_state in (ExecutionState.SENT.value, ExecutionState.PARTIAL.value):
        return Fate.DONE
    if execution_state in (ExecutionState.FAILED.value, ExecutionState.NOT_SENT.value):
        return Fate.NOT_DONE
    if execution_state == ExecutionState.UNKNOWN.value:
        return Fate.MAYBE
    if superseded and decision is None:
        return Fate.SUPERSEDED
    return Fate.WILL


def action_texts(action: AnyAction, shown: Fate = Fate.WILL) -> list[tuple[str, str]]:
    """``(text, title)`` of each text the action writes, verbatim; the titles say whether it
    will be, was, or was not written (``shown``)."""
    if isinstance(action, GitHubIssueAction):
        return [] if action.comment is None else [(action.comment, shown.title("comment", POSTED))]
    if isinstance(action, GitHubIssueCloseDuplicateAction):
        return [(action.comment, shown.title("notice comment", POSTED))]
    if isinstance(action, GitHubIssueCreateAction):
        return [(action.body, shown.title("issue body", POSTED))]
    if isinstance(action, GitLabIssueCreateAction):
        return [(action.description, shown.title("issue description", POSTED))]
    texts = [(action.text, shown.title("text", SENT))]
    if action.html is not None:
        texts.append((action.html, shown.title("HTML part (source)", SENT)))
    return texts
