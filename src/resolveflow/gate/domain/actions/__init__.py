"""Canonical actions and the digest a person approves.

An action is what the executor may do to an outside system; its ``kind`` says which. Its canonical
JSON is the exact text that is hashed: two actions that mean the same thing (labels in another
order, a repeated label, the same text in another Unicode normal form or with CRLF line endings)
share a digest; any change a reader would notice gives another.

Adding a kind: a frozen, ``extra="forbid"`` model with a ``kind`` literal, ``canonical()``,
``repository`` and ``summary``; a member of ``ActionKind``; a member of the ``Action`` union; and
its executor in ``resolveflow.gate.kinds``.
"""

from __future__ import annotations

import hashlib
import json
import re

from resolveflow.domain.vocabulary import ActionKind, Confidence
from resolveflow.errors import InvalidInput
from resolveflow.gate.domain.actions.email_send import EmailSendAction
from resolveflow.gate.domain.actions.github_issue import (
    MAX_COMMENT_CHARS,
    GitHubIssueAction,
    IssueTarget,
)
from resolveflow.gate.domain.actions.github_issue_close_duplicate import (
    DEFAULT_GRACE_HOURS,
    GitHubIssueCloseDuplicateAction,
    default_notice,
)
from resolveflow.gate.domain.actions.github_issue_create import (
    GitHubIssueCreateAction,
    RepositoryTarget,
)
from resolveflow.gate.domain.actions.gitlab_issue_create import (
    GitLabAssignee,
    GitLabIssueCreateAction,
    GitLabProjectTarget,
)
from resolveflow.gate.domain.actions.intent import MAX_RATIONALE, LabelNote
from resolveflow.gate.domain.actions.parsing import (
    ACTION_KIND,
    Action,
    AnyAction,
    parse_action,
)
from resolveflow.gate.domain.actions.revise import ActionChanges, revise
from resolveflow.gate.domain.actions.text import (
    MARKER_PREFIX,
    body_with_marker,
    execution_marker,
    normalize_text,
)

DIGEST_PATTERN = re.compile(r"^[0-9a-f]{64}$")

__all__ = [
    "ACTION_KIND",
    "DEFAULT_GRACE_HOURS",
    "MARKER_PREFIX",
    "MAX_COMMENT_CHARS",
    "MAX_RATIONALE",
    "Action",
    "ActionChanges",
    "ActionKind",
    "AnyAction",
    "EmailSendAction",
    "GitHubIssueAction",
    "GitHubIssueCloseDuplicateAction",
    "GitHubIssueCreateAction",
    "GitLabAssignee",
    "GitLabIssueCreateAction",
    "GitLabProjectTarget",
    "IssueTarget",
    "LabelNote",
    "RepositoryTarget",
    "action_digest",
    "body_with_marker",
    "build_action",
    "build_close_duplicate",
    "build_issue_create",
    "canonical_json",
    "check_digest_format",
    "default_notice",
    "execution_marker",
    "normalize_text",
    "parse_action",
    "revise",
]


def build_action(
    repository: str,
    issue: int,
    comment: str | None,
    labels: list[str] | tuple[str, ...],
    notes: tuple[LabelNote, ...] = (),
    suggest: bool = False,
) -> GitHubIssueAction:
    data: dict[str, object] = {
        "kind": ActionKind.GITHUB_ISSUE.value,
        "target": {"repository": repository, "issue": issue},
        "comment": comment,
        "labels": labels,
    }
    if notes:
        data["notes"] = [note.canonical() for note in notes]
    if suggest:
        data["suggest"] = True
    action = parse_action(data)
    assert isinstance(action, GitHubIssueAction)
    return action


def build_issue_create(
    repository: str,
    title: str,
    body: str,
    labels: list[str] | tuple[str, ...] = (),
    assignees: list[str] | tuple[str, ...] = (),
) -> GitHubIssueCreateAction:
    action = parse_action(
        {
            "kind": ActionKind.GITHUB_ISSUE_CREATE.value,
            "target": {"repository": repository},
            "title": title,
            "body": body,
            "labels": labels,
            "assignees": assignees,
        }
    )
    assert isinstance(action, GitHubIssueCreateAction)
    return action


def build_close_duplicate(
    repository: str,
    issue: int,
    original: int,
    grace_hours: int,
    comment: str | None = None,
    rationale: str | None = None,
    confidence: Confidence | None = None,
    suggest: bool = False,
) -> GitHubIssueCloseDuplicateAction:
    """A close-as-duplicate action; without a comment, the default notice."""
    action = parse_action(
        {
            "kind": ActionKind.GITHUB_ISSUE_CLOSE_DUPLICATE.value,
            "target": {"repository": repository, "issue": issue},
            "original": original,
            "comment": comment if comment is not None else default_notice(original, grace_hours),
            "grace_hours": grace_hours,
            "rationale": rationale,
            "confidence": confidence,
            "suggest": suggest,
        }
    )
    assert isinstance(action, GitHubIssueCloseDuplicateAction)
    return action


def canonical_json(action: AnyAction) -> str:
    return json.dumps(action.canonical(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def action_digest(action: AnyAction) -> str:
    return hashlib.sha256(canonical_json(action).encode("utf-8")).hexdigest()


def check_digest_format(digest: str) -> str:
    value = digest.strip().lower()
    if value.startswith("sha256:"):
        value = value.removeprefix("sha256:")
    if not DIGEST_PATTERN.match(value):
        raise InvalidInput("a digest is 64 hexadecimal characters (SHA-256)")
    return value
